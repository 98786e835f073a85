/* SPDX-License-Identifier: Apache-2.0 */
/* manager_events.c — informer events → predicates → reconcile requests (controller-runtime's
 * handler package: EnqueueRequestForObject, EnqueueRequestForOwner(OnlyControllerOwner),
 * EnqueueRequestsFromMapFunc). Runs on informer threads. */
#include "host/runtime/manager_internal.h"
#include "host/runtime/predicate.h"
#include "host/util/log.h"

#include <stdlib.h>
#include <string.h>

/* Count a failed Lua predicate or map function: luaop_lua_event_errors_total{controller,
 * function, reason}, reason "timeout" (its deadline), "memory" (the VM's cap) or "error". */
static void count_event_error(binding_t *b, const char *function, lop_rc_t rc)
{
    if (!b->m->cfg.metrics) return;
    const char *reason = rc == LOP_ETIMEDOUT ? "timeout" : rc == LOP_ENOMEM ? "memory" : "error";
    lop_metric_counter_add(b->m->cfg.metrics->lua_event_errors_total, (const char *[]){b->ctrl->name, function, reason},
                           1, NULL);
}

/* luaop_lua_memory_bytes{vm="<controller>/event"}: the controller's event VM (its workers' VMs
 * are "<controller>/<worker>"). Called with the VM acquired. */
static void report_event_vm_memory(binding_t *b, lop_vm_t *vm)
{
    const lop_engine_t *e = lop_scriptrt_engine(b->m->rt);
    if (!b->m->cfg.metrics || !vm || !e->memory) return;
    char name[300];
    snprintf(name, sizeof name, "%s/event", b->ctrl->name);
    lop_metric_gauge_set(b->m->cfg.metrics->lua_memory_bytes, (const char *[]){name}, (double)e->memory(vm), NULL);
}

/* Run a Lua predicate in the controller's own event VM. A predicate that fails (raises, hits its
 * deadline or the memory cap) lets the event through, logged and counted: dropping it would lose
 * work, and the reconcile is idempotent (predicate.h). */
static bool lua_predicate(void *ud, int lua_id, lop_event_type_t type, const lop_obj_t *old, const lop_obj_t *obj)
{
    binding_t *b = ud;
    lop_event_view_t ev = {type, old ? old->json : NULL, old ? old->json_len : 0, obj->json, obj->json_len};
    bool pass = true;
    lop_err_t err;
    lop_err_clear(&err);
    lop_event_vm_t *slot = NULL;
    lop_vm_t *vm = NULL;
    lop_rc_t rc = lop_scriptrt_event_acquire(b->m->rt, b->gen, b->ctrl->name, &vm, &slot, &err);
    if (rc == LOP_OK) {
        rc = lop_scriptrt_engine(b->m->rt)->predicate(vm, lua_id, &ev, &pass, &err);
        report_event_vm_memory(b, vm);
    }
    if (rc == LOP_EGONE) rc = LOP_OK; /* an old wiring being removed: as if nothing ran */
    lop_scriptrt_event_release(b->m->rt, slot, rc == LOP_ENOMEM);
    if (rc != LOP_OK) {
        count_event_error(b, "predicate", rc);
        lop_log(LOP_LOG_ERROR, "predicate failed; letting the event through", "controller", b->ctrl->name, "namespace",
                obj->namespace_, "name", obj->name, "error", err.message, NULL);
        return true;
    }
    return pass;
}

/* The group of an apiVersion ("apps/v1" -> "apps", "v1" -> ""), into buf. */
static void group_of(const char *api_version, char *buf, size_t len)
{
    const char *slash = strchr(api_version, '/');
    if (!slash)
        snprintf(buf, len, "%s", "");
    else
        snprintf(buf, len, "%.*s", (int)(slash - api_version), api_version);
}

static void enqueue_owner(binding_t *b, const lop_obj_t *obj)
{
    if (!obj || !obj->has_controller) return;
    char group[128];
    group_of(obj->controller.api_version, group, sizeof group);
    const lop_rest_mapping_t *p = &b->ctrl->primary;
    if (strcmp(obj->controller.kind, p->kind) != 0 || strcmp(group, p->group) != 0) return;
    /* A namespaced owner lives in its dependent's namespace; a cluster-scoped one has none. */
    lop_controller_enqueue(b->ctrl->ctrl, p->namespaced ? obj->namespace_ : "", obj->controller.name);
}

static void enqueue_mapped(binding_t *b, lop_event_type_t type, const lop_obj_t *old, const lop_obj_t *obj)
{
    lop_event_view_t ev = {type, old ? old->json : NULL, old ? old->json_len : 0, obj->json, obj->json_len};
    lop_request_list_t reqs = {NULL, NULL, 0};
    lop_err_t err;
    lop_err_clear(&err);
    lop_event_vm_t *slot = NULL;
    lop_vm_t *vm = NULL;
    lop_rc_t rc = lop_scriptrt_event_acquire(b->m->rt, b->gen, b->ctrl->name, &vm, &slot, &err);
    if (rc == LOP_OK) {
        rc = lop_scriptrt_engine(b->m->rt)->map(vm, b->map_lua_id, &ev, &reqs, &err);
        report_event_vm_memory(b, vm);
    }
    if (rc == LOP_EGONE) rc = LOP_OK; /* an old wiring being removed: as if nothing ran */
    lop_scriptrt_event_release(b->m->rt, slot, rc == LOP_ENOMEM);
    if (rc != LOP_OK) {
        count_event_error(b, "map", rc);
        lop_log(LOP_LOG_ERROR, "map function failed; event dropped", "controller", b->ctrl->name, "namespace",
                obj->namespace_, "name", obj->name, "error", err.message, NULL);
        return;
    }
    for (size_t i = 0; i < reqs.n; i++) lop_controller_enqueue(b->ctrl->ctrl, reqs.namespaces[i], reqs.names[i]);
    lop_request_list_free(&reqs);
}

static void dispatch(binding_t *b, lop_event_type_t type, const lop_obj_t *old, const lop_obj_t *obj)
{
    if (!lop_predicates_all(b->preds, b->npreds, type, old, obj, lua_predicate, b)) return;
    switch (b->map) {
    case LOP_MAP_SELF: lop_controller_enqueue(b->ctrl->ctrl, obj->namespace_, obj->name); break;
    case LOP_MAP_OWNER:
        enqueue_owner(b, obj);
        if (old) enqueue_owner(b, old); /* the owner may have changed: tell the old one too */
        break;
    case LOP_MAP_LUA: enqueue_mapped(b, type, old, obj); break;
    }
}

void lop_binding_on_add(void *ud, lop_obj_t *obj) { dispatch(ud, LOP_EV_ADD, NULL, obj); }

void lop_binding_on_update(void *ud, lop_obj_t *old, lop_obj_t *obj) { dispatch(ud, LOP_EV_UPDATE, old, obj); }

void lop_binding_on_delete(void *ud, lop_obj_t *obj, bool tombstone)
{
    (void)tombstone; /* a delete seen on relist is still a delete */
    dispatch(ud, LOP_EV_DELETE, NULL, obj);
}

void lop_ctrl_check_synced(const ctrl_entry_t *c)
{
    for (size_t i = 0; i < c->nbindings; i++)
        if (!lop_informer_has_synced(c->bindings[i]->inf->inf)) return;
    lop_controller_sources_synced(c->ctrl);
}

void lop_binding_on_synced(void *ud)
{
    /* This binding's informer has synced. The controller's workers start once every one of its
     * bindings' informers has: each informer sets HasSynced before telling its handlers, so the
     * one that syncs last sees all of them set. A binding of an entry whose controller a reload
     * is moving to new bindings stands down: the new ones decide (the reload checks them once
     * registered; a reload that fails gives the controller back and checks the old ones).
     * Telling a controller whose workers already run does nothing. */
    binding_t *b = ud;
    if (__atomic_load_n(&b->ctrl->moved, __ATOMIC_SEQ_CST)) return;
    lop_ctrl_check_synced(b->ctrl);
}
