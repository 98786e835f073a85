/* SPDX-License-Identifier: Apache-2.0 */
/*
 * patch_schema.h — internal: the list semantics of built-in kinds that strategic merge patch
 * (patch_smp.c) and server-side apply (ssa*.c) share: which lists merge element-wise by a key
 * (containers by name, ports by containerPort, ...), which are sets of scalars (finalizers) and
 * which are atomic (everything else). Not a public contract of apiserver/.
 *
 * Thread-safety: static read-only tables; safe from any thread.
 */
#ifndef LOP_APISERVER_PATCH_SCHEMA_H
#define LOP_APISERVER_PATCH_SCHEMA_H

#include <stdbool.h>

typedef enum as_patch_list_type {
    AS_PATCH_LIST_ATOMIC = 0, /* replaced as a whole */
    AS_PATCH_LIST_MAP = 1,    /* list of objects merged by key; keys[0] is the SMP patchMergeKey */
    AS_PATCH_LIST_SET = 2,    /* list of scalars merged as a set */
} as_patch_list_type_t;

/*
 * The list type of the field at `path` of a built-in kind. path is the dotted chain of field
 * names from the object root with list items left out, e.g. "spec.template.spec.containers.env"
 * for a Deployment. When the answer is AS_PATCH_LIST_MAP, *keys (if keys is non-NULL) receives a
 * static NULL-terminated array of the associative keys (first = strategic merge key).
 */
as_patch_list_type_t as_patch_builtin_list_type(const char *kind, const char *path, const char *const **keys);

/* true when apiVersion names a group served by kube-apiserver itself (core "v1", apps/v1, ...). */
bool as_patch_builtin_api_version(const char *api_version);

#endif
