/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fieldpath.h — the field paths of declared field indexes (op.index, docs/lua-api.md "Field
 * indexes"; controller-runtime's FieldIndexer.IndexField with an IndexerFunc that reads one
 * field): a path compiled once, evaluated in C over a cached object's JSON on the informer's
 * thread (no Lua VM there), and the lop_fieldindex_fn that keys its values by namespace.
 *
 * Path syntax (a subset of kubectl's JSONPath, without the braces): members joined by '.', an
 * optional leading '.', and after a member any number of subscripts:
 *   name          a member (letters, digits, '_', '-', '$')
 *   [*]           every element of an array (a member that is not an array gives nothing)
 *   [N]           element N of an array, from 0
 *   ['key'] ["key"] a member whose name holds other characters ('.', '/', ...); no escapes
 * e.g. "spec.template.spec.volumes[*].secret.secretName", "metadata.labels['app.kubernetes.io/name']",
 * "spec.containers[*].env[*].valueFrom.secretKeyRef.name", "spec.ports[0].port".
 * Values: what the path reaches that is a scalar — a string as is, a number as JSON writes it
 * (an integer in decimal, a real in its shortest round-tripping form), true/false as "true"/"false";
 * null, objects, arrays and absent members give no value. One object may give many values.
 *
 * Namespaces (controller-runtime's cache keys an index value by namespace, KeyToNamespacedKey):
 * lop_fieldpath_index_fn gives each value v of an object in namespace ns as "ns/v" and as "*\/v";
 * of a cluster-scoped object as "*\/v" only. lop_fieldpath_lookup_key builds the value to find:
 * "ns/v" for a list in namespace ns, "*\/v" for all namespaces ('*' is no namespace name).
 *
 * Thread-safety: a compiled path is immutable; evaluate it from any thread.
 */
#ifndef LOP_KUBE_CACHE_FIELDPATH_H
#define LOP_KUBE_CACHE_FIELDPATH_H

#include "host/kube/cache/object.h"
#include "host/util/err.h"

#include <stddef.h>

typedef struct lop_fieldpath lop_fieldpath_t;

/* Compile path. LOP_OK with *out (free with lop_fieldpath_free); LOP_EINVAL with err naming the
 * offending position ("field path \"a..b\": empty member at 2"). */
lop_rc_t lop_fieldpath_compile(const char *path, lop_fieldpath_t **out, lop_err_t *err);
void lop_fieldpath_free(lop_fieldpath_t *p); /* NULL accepted */
/* The path as given (borrowed, lives with p). */
const char *lop_fieldpath_text(const lop_fieldpath_t *p);

/* The values p reaches in json[0..len): sets *vals to a malloc'd array of malloc'd strings (free
 * each, then the array; NULL when none) and returns their number, in document order, repeats
 * kept; -1 when json does not parse (*vals NULL). */
int lop_fieldpath_eval(const lop_fieldpath_t *p, const char *json, size_t len, char ***vals);

/* lop_fieldindex_fn for a declared index: ud is a lop_fieldpath_t (borrowed; it must outlive
 * the index). Values keyed as above. < 0 when the object's JSON does not parse. */
int lop_fieldpath_index_fn(void *ud, const lop_obj_t *o, char ***vals);
/* Key raw values of o by namespace as lop_fieldpath_index_fn does (any index function may use
 * it: the Lua extract functions do): takes raw[0..n) (each string and the array), sets *vals to
 * the keyed values and returns their number. */
int lop_fieldpath_ns_keys(const lop_obj_t *o, char **raw, int n, char ***vals);
/* The value to find in such an index for value in ns (NULL or "" = all namespaces). malloc'd. */
char *lop_fieldpath_lookup_key(const char *ns, const char *value);

#endif
