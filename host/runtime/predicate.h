/* SPDX-License-Identifier: Apache-2.0 */
/*
 * predicate.h — event filters evaluated natively (controller-runtime pkg/predicate):
 *
 *   generation_changed:      update passes when metadata.generation differs (GenerationChangedPredicate);
 *   resource_version_changed update passes when metadata.resourceVersion differs;
 *   labels_changed / annotations_changed: update passes when the map differs;
 *   and / or / not:          combinations, per event.
 * Create and delete events pass every built-in predicate (so deletes always reach the reconciler
 * through generation_changed, as in controller-runtime). Lua predicates are delegated to a
 * callback (the script engine), and an error there lets the event pass (logged by the caller):
 * dropping an event on a script bug would lose work.
 *
 * Thread-safety: pure functions; the Lua callback decides its own.
 */
#ifndef LOP_RUNTIME_PREDICATE_H
#define LOP_RUNTIME_PREDICATE_H

#include "host/kube/cache/object.h"
#include "host/runtime/engine.h"

#include <stdbool.h>

/* Evaluate a Lua predicate by id: return true to pass. */
typedef bool (*lop_lua_pred_fn)(void *ud, int lua_id, lop_event_type_t type, const lop_obj_t *old,
                                const lop_obj_t *obj);

/* old is NULL except for updates. */
bool lop_predicate_eval(const lop_pred_t *p, lop_event_type_t type, const lop_obj_t *old, const lop_obj_t *obj,
                        lop_lua_pred_fn lua, void *ud);
/* All of preds[0..n) pass (true for n == 0). */
bool lop_predicates_all(const lop_pred_t *preds, size_t n, lop_event_type_t type, const lop_obj_t *old,
                        const lop_obj_t *obj, lop_lua_pred_fn lua, void *ud);

#endif
