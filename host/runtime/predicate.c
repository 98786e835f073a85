/* SPDX-License-Identifier: Apache-2.0 */
/* predicate.c — the native event predicates (generation, resourceVersion, labels, annotations
 * changed; and/or/not) and the hand-off of Lua predicates to the engine (see predicate.h). Runs on
 * the informer thread delivering the event. Upstream: controller-runtime pkg/predicate/predicate.go. */
#include "host/runtime/predicate.h"

#include <string.h>

bool lop_predicate_eval(const lop_pred_t *p, lop_event_type_t type, const lop_obj_t *old, const lop_obj_t *obj,
                        lop_lua_pred_fn lua, void *ud)
{
    bool update = type == LOP_EV_UPDATE && old && obj;
    switch (p->kind) {
    case LOP_PRED_GENERATION_CHANGED: return !update || old->generation != obj->generation;
    case LOP_PRED_RV_CHANGED: return !update || strcmp(old->rv, obj->rv) != 0;
    case LOP_PRED_LABELS_CHANGED: return !update || !lop_obj_labels_equal(old, obj);
    case LOP_PRED_ANNOTATIONS_CHANGED: return !update || !lop_obj_annotations_equal(old, obj);
    case LOP_PRED_AND:
        for (size_t i = 0; i < p->nargs; i++)
            if (!lop_predicate_eval(&p->args[i], type, old, obj, lua, ud)) return false;
        return true;
    case LOP_PRED_OR:
        for (size_t i = 0; i < p->nargs; i++)
            if (lop_predicate_eval(&p->args[i], type, old, obj, lua, ud)) return true;
        return p->nargs == 0;
    case LOP_PRED_NOT: return p->nargs == 1 ? !lop_predicate_eval(&p->args[0], type, old, obj, lua, ud) : true;
    case LOP_PRED_LUA: return lua ? lua(ud, p->lua_id, type, old, obj) : true;
    }
    return true;
}

bool lop_predicates_all(const lop_pred_t *preds, size_t n, lop_event_type_t type, const lop_obj_t *old,
                        const lop_obj_t *obj, lop_lua_pred_fn lua, void *ud)
{
    for (size_t i = 0; i < n; i++)
        if (!lop_predicate_eval(&preds[i], type, old, obj, lua, ud)) return false;
    return true;
}
