/* scriptrt.c — the script runtime: installing a script set (built and validated on the side, then
 * made current), the workers' VM slots rebuilt between reconciles when the generation moves, and
 * the event VM for predicates and map functions (see scriptrt.h). Installs run on the main thread
 * (start-up, reloads); workers take their slots; informer threads lock the event VM. No upstream
 * counterpart. */
#include "host/runtime/scriptrt.h"

#include "host/runtime/scripts.h"
#include "host/util/buf.h"
#include "host/util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A script set shared by the VMs built from it: freed when the last user lets go. */
typedef struct shared_set {
    lop_script_set_t *set;
    int refs; /* under rt->mu */
} shared_set_t;

struct lop_scriptrt {
    const lop_engine_t *engine;
    const lop_engine_opts_t *opts;
    const lop_host_api_t *host;
    pthread_mutex_t mu; /* guards current, gen */
    shared_set_t *current;
    uint64_t gen;
    pthread_mutex_t event_mu; /* guards the event VMs and their use */
    lop_vm_t *event_vm;       /* built from generation event_gen (the current set) */
    uint64_t event_gen;
    lop_vm_t *prev_event_vm; /* the one before, kept while handlers of its wiring may run */
    uint64_t prev_gen;
};

lop_scriptrt_t *lop_scriptrt_new(const lop_engine_t *engine, const lop_engine_opts_t *opts, const lop_host_api_t *host)
{
    lop_scriptrt_t *rt = lop_xcalloc(1, sizeof *rt);
    rt->engine = engine;
    rt->opts = opts;
    rt->host = host;
    pthread_mutex_init(&rt->mu, NULL);
    pthread_mutex_init(&rt->event_mu, NULL);
    return rt;
}

static void shared_unref(lop_scriptrt_t *rt, shared_set_t *s)
{
    if (!s) return;
    pthread_mutex_lock(&rt->mu);
    int left = --s->refs;
    pthread_mutex_unlock(&rt->mu);
    if (left == 0) {
        lop_script_set_free(s->set);
        free(s);
    }
}

void lop_scriptrt_free(lop_scriptrt_t *rt)
{
    if (!rt) return;
    if (rt->event_vm) rt->engine->vm_free(rt->event_vm);
    if (rt->prev_event_vm) rt->engine->vm_free(rt->prev_event_vm);
    shared_unref(rt, rt->current);
    pthread_mutex_destroy(&rt->mu);
    pthread_mutex_destroy(&rt->event_mu);
    free(rt);
}

lop_rc_t lop_scriptrt_install(lop_scriptrt_t *rt, lop_script_set_t *set, lop_vm_validate_fn validate, void *ud,
                              lop_err_t *err)
{
    lop_vm_t *vm = rt->engine->vm_new(set, rt->opts, rt->host, err);
    if (!vm) return LOP_EINVAL;
    if (validate) {
        lop_rc_t rc = validate(ud, vm, err);
        if (rc != LOP_OK) {
            rt->engine->vm_free(vm);
            return rc;
        }
    }
    shared_set_t *s = lop_xcalloc(1, sizeof *s);
    s->set = set;
    s->refs = 1;
    pthread_mutex_lock(&rt->event_mu);
    /* The previous event VM stays until lop_scriptrt_event_release_prev: handlers wired for it
     * may still run with its callback ids while the new wiring is set up. */
    lop_vm_t *older = rt->prev_event_vm;
    rt->prev_event_vm = rt->event_vm;
    rt->prev_gen = rt->event_gen;
    rt->event_vm = vm;
    pthread_mutex_lock(&rt->mu);
    shared_set_t *old = rt->current;
    rt->current = s;
    rt->gen++;
    rt->event_gen = rt->gen;
    pthread_mutex_unlock(&rt->mu);
    pthread_mutex_unlock(&rt->event_mu);
    if (older) rt->engine->vm_free(older);
    shared_unref(rt, old);
    return LOP_OK;
}

uint64_t lop_scriptrt_generation(lop_scriptrt_t *rt)
{
    pthread_mutex_lock(&rt->mu);
    uint64_t g = rt->gen;
    pthread_mutex_unlock(&rt->mu);
    return g;
}

void lop_scriptrt_version(lop_scriptrt_t *rt, char *buf, size_t len)
{
    pthread_mutex_lock(&rt->mu);
    snprintf(buf, len, "%s", rt->current ? rt->current->set->version : "");
    pthread_mutex_unlock(&rt->mu);
}

lop_vm_t *lop_scriptrt_vm(lop_scriptrt_t *rt, lop_vm_slot_t *slot, lop_err_t *err)
{
    pthread_mutex_lock(&rt->mu);
    uint64_t gen = rt->gen;
    shared_set_t *s = rt->current;
    if (s && slot->gen != gen) s->refs++;
    pthread_mutex_unlock(&rt->mu);
    if (!s || slot->gen == gen) return slot->vm;
    /* Build outside the lock: the set stays alive through our reference. */
    lop_vm_t *vm = rt->engine->vm_new(s->set, rt->opts, rt->host, err);
    shared_unref(rt, s);
    if (!vm) {
        lop_log(LOP_LOG_ERROR, "building a worker VM failed; keeping the previous one", "error",
                err ? err->message : "", NULL);
        return slot->vm;
    }
    if (slot->vm) rt->engine->vm_free(slot->vm);
    slot->vm = vm;
    slot->gen = gen;
    return vm;
}

void lop_scriptrt_vm_broken(lop_scriptrt_t *rt, lop_vm_slot_t *slot)
{
    (void)rt;
    slot->gen = 0; /* next lop_scriptrt_vm rebuilds */
}

void lop_vm_slot_release(lop_scriptrt_t *rt, lop_vm_slot_t *slot)
{
    if (slot->vm) rt->engine->vm_free(slot->vm);
    slot->vm = NULL;
    slot->gen = 0;
}

lop_vm_t *lop_scriptrt_event_lock(lop_scriptrt_t *rt)
{
    pthread_mutex_lock(&rt->event_mu);
    return rt->event_vm;
}

lop_vm_t *lop_scriptrt_event_lock_gen(lop_scriptrt_t *rt, uint64_t gen)
{
    pthread_mutex_lock(&rt->event_mu);
    if (gen == rt->event_gen) return rt->event_vm;
    if (gen == rt->prev_gen) return rt->prev_event_vm;
    return NULL;
}

void lop_scriptrt_event_rebuild_locked(lop_scriptrt_t *rt, uint64_t gen)
{
    if (gen != rt->event_gen) return; /* an old generation: its wiring is about to go */
    pthread_mutex_lock(&rt->mu);
    shared_set_t *s = rt->current;
    if (s) s->refs++;
    pthread_mutex_unlock(&rt->mu);
    if (!s) return;
    lop_err_t err;
    lop_err_clear(&err);
    lop_vm_t *vm = rt->engine->vm_new(s->set, rt->opts, rt->host, &err);
    shared_unref(rt, s);
    if (!vm) {
        lop_log(LOP_LOG_ERROR, "rebuilding the event VM failed", "error", err.message, NULL);
        return;
    }
    lop_log(LOP_LOG_WARN, "event VM rebuilt (it hit its memory limit)", NULL);
    rt->engine->vm_free(rt->event_vm);
    rt->event_vm = vm;
}

void lop_scriptrt_event_release_prev(lop_scriptrt_t *rt)
{
    pthread_mutex_lock(&rt->event_mu);
    lop_vm_t *prev = rt->prev_event_vm;
    rt->prev_event_vm = NULL;
    rt->prev_gen = 0;
    pthread_mutex_unlock(&rt->event_mu);
    if (prev) rt->engine->vm_free(prev);
}

void lop_scriptrt_event_unlock(lop_scriptrt_t *rt) { pthread_mutex_unlock(&rt->event_mu); }

const lop_engine_t *lop_scriptrt_engine(lop_scriptrt_t *rt) { return rt->engine; }
