/* SPDX-License-Identifier: Apache-2.0 */
/*
 * patch.h — the patch types the local API server accepts (apiserver pkg/endpoints/handlers/patch.go):
 *   RFC 7386 JSON merge patch, RFC 6902 JSON patch, and strategic merge patch for built-in types.
 *
 * All functions are pure: they never modify their inputs and return a new jansson reference the
 * caller owns (json_decref). Thread-safety: safe from any thread (no shared state).
 */
#ifndef LOP_APISERVER_PATCH_H
#define LOP_APISERVER_PATCH_H

#include "host/util/err.h"

#include <jansson.h>

/* RFC 7386: null deletes a key, objects merge recursively, anything else (arrays) replaces. */
json_t *as_patch_merge(const json_t *target, const json_t *patch);

/* RFC 6902 (add, remove, replace, move, copy, test). On failure returns NULL and err: code 422,
 * reason "Invalid", message "the server rejected our request due to an error in our request"
 * (a failing test or a bad path); code 400 "invalid JSON patch" if ops is not an array of
 * operation objects; code 413 with more than 10000 operations. */
json_t *as_patch_json(const json_t *target, const json_t *ops, lop_err_t *err);

/* Strategic merge patch for built-in kinds, keyed by apiVersion+kind: lists with a merge key
 * (containers/initContainers/ephemeralContainers by name, env by name, ports by containerPort,
 * volumes by name, volumeMounts by mountPath, ownerReferences by uid, conditions by type, ...)
 * are merged element-wise; `$patch: delete|replace|merge` and `$retainKeys`,
 * `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>` directives are honoured;
 * other lists replace; null deletes. Returns NULL with err (400) on a malformed patch. */
json_t *as_patch_strategic(const json_t *target, const json_t *patch, const char *api_version, const char *kind,
                           lop_err_t *err);

/* 1 when apiVersion/kind is a built-in type that accepts strategic merge patch, else 0. */
int as_patch_strategic_supported(const char *api_version, const char *kind);

#endif
