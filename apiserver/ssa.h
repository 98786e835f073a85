/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssa.h — field ownership for server-side apply and metadata.managedFields
 * (kubernetes.io/docs/reference/using-api/server-side-apply/).
 *
 * Field sets are kept in the FieldsV1 JSON form the API server uses (`{"f:spec":{"f:replicas":{}}}`,
 * list items keyed `k:{"name":"x"}` for associative lists, `v:...` for sets, `.` for the item
 * itself). Custom resources without x-kubernetes-list-type treat lists as atomic; built-in
 * kinds use the same merge keys as strategic merge patch (see patch.h).
 *
 * All functions are pure; outputs are new references the caller owns.
 */
#ifndef LOP_APISERVER_SSA_H
#define LOP_APISERVER_SSA_H

#include "host/util/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct as_ssa_ctx {
    const char *manager;     /* field manager name (required for apply) */
    const char *api_version; /* apiVersion recorded in the managedFields entry */
    const char *subresource; /* NULL or "status" */
    int64_t now_wall_ns;     /* for the entry's time (metav1.Time) */
    bool builtin;            /* true: built-in kind (associative lists by merge key) */
    const char *kind;
} as_ssa_ctx_t;

/*
 * Apply `applied` (the request body: apiVersion, kind, metadata.name, the fields the manager
 * wants to own) to `live` (NULL when the object does not exist yet). Fields the manager owned
 * before but no longer applies are removed when no other manager owns them.
 * On success returns the merged object with updated metadata.managedFields (operation "Apply").
 * On conflict (another manager owns a field the request changes, and !force) returns NULL and
 * *status_out is a complete metav1.Status JSON (409, reason Conflict, details.causes with
 * FieldManagerConflict entries and messages formatted as apimachinery pkg/util/managedfields does).
 * *status_out is NULL otherwise. Other failures: NULL with err (422 / 400).
 */
json_t *as_ssa_apply(const json_t *live, const json_t *applied, bool force, const as_ssa_ctx_t *ctx,
                     json_t **status_out, lop_err_t *err);

/*
 * Record a non-apply write (create, update, patch) by ctx->manager (operation "Update"):
 * the fields that changed between old (NULL on create) and new_obj become owned by the manager
 * and are removed from other managers' sets. Modifies new_obj's metadata.managedFields in place.
 */
void as_ssa_track_update(const json_t *old, json_t *new_obj, const as_ssa_ctx_t *ctx);

/* The default manager name for a request without ?fieldManager=: the User-Agent up to the first
 * '/', non-printables dropped, truncated to 128. Returns a malloc'd string. */
char *as_ssa_manager_from_user_agent(const char *user_agent);

#endif
