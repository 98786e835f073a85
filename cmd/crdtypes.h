/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crdtypes.h — LuaLS type annotations (`---@meta` files) from a CustomResourceDefinition's
 * openAPIV3Schema, for `luaop types` (cmd/cmd_types.c, docs/cli.md "luaop types").
 *
 * The CRD YAML is the source of truth: it is what the API server enforces (apiserver/as_schema.h
 * here, kube-apiserver's structural schema in a cluster), whether it was written by hand or
 * generated from Go types by controller-gen; the annotations and luaop.testing's validation
 * (luaop.core.schema) are derived from it, never the other way round.
 *
 * Mapping (kubebuilder/controller-gen's Go types, read back): an object with properties → a
 * `---@class` (the root `Kind`, then `KindSpec`, `KindStatus`, nested `<Parent><Field>`, array
 * items `<Parent><Field>Item`, map values `<Parent><Field>Value`; a version other than the storage
 * version prefixes the kind with it: `KindV1alpha1...`); string/integer/number/boolean as
 * themselves; enum → a union of literals (`"a"|"b"`); array → `T[]`; additionalProperties →
 * `table<string, T>`; x-kubernetes-int-or-string → `integer|string`; preserve-unknown or
 * embedded without properties → `table` (with properties: the class plus `[string] any`); a
 * property not in `required` → `name?`; description → the field's comment (one line), with the
 * default. apiVersion and kind are the version's literals; metadata is `k8s.ObjectMeta`
 * (lop_crdtypes_objectmeta). Properties are emitted in byte order of their names: the output is
 * a function of the schema alone.
 *
 * Thread-safety: pure functions.
 */
#ifndef LOP_CMD_CRDTYPES_H
#define LOP_CMD_CRDTYPES_H

#include "host/util/buf.h"
#include "host/util/err.h"

#include <jansson.h>
#include <stdbool.h>

/* One generated file: name (e.g. "memcached_v1.lua") and text, both owned by the list. */
typedef struct lop_crdtypes_file {
    char *name;
    lop_buf_t text;
} lop_crdtypes_file_t;

/* The files of crd (a decoded CustomResourceDefinition, borrowed): one per version that has an
 * openAPIV3Schema. source names the CRD in each file's header; spdx, when non-NULL, adds an
 * `-- SPDX-License-Identifier: <spdx>` line. Files are appended to *files (*n counts them; the
 * caller frees with lop_crdtypes_files_free). LOP_EINVAL (err names the problem) when crd is not a
 * CustomResourceDefinition with spec.names.kind and spec.group. */
lop_rc_t lop_crdtypes_render(const json_t *crd, const char *source, const char *spdx, lop_crdtypes_file_t **files,
                             size_t *n, lop_err_t *err);
/* The shared file "objectmeta.lua": `k8s.ObjectMeta` and `k8s.OwnerReference` (metav1.ObjectMeta's
 * fields scripts read). Appended to *files like lop_crdtypes_render. */
void lop_crdtypes_objectmeta(const char *spdx, lop_crdtypes_file_t **files, size_t *n);
void lop_crdtypes_files_free(lop_crdtypes_file_t *files, size_t n);

/* What `luaop types` does (cmd_types.c): render the CRDs of the files crds[0..ncrds) (paths, each
 * of one or more YAML documents) plus objectmeta.lua, then write them under out (created if
 * missing; NULL: all on stdout) or, with check, compare them with the files there. Messages go
 * to stderr. Returns the exit status: 0, or 1 (an unreadable file, no CRD in a file, two CRDs
 * making one file name, a write error, or with check a file that differs). */
int lop_types_generate(const char *const *crds, size_t ncrds, const char *out, const char *spdx, bool check);

#endif
