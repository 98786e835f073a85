/* SPDX-License-Identifier: Apache-2.0 */
/* scriptrt.c — the script runtime: installing a script set (built and validated on the side, then
 * made current), the workers' VM slots rebuilt between reconciles when the generation moves, and
 * the event VMs for predicates and map functions, one per controller and generation (see
 * scriptrt.h). Installs run on the main thread (start-up, reloads); workers take their slots;
 * informer threads acquire a controller's event VM. No upstream counterpart. */
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

/* One controller's event VM for one generation (scriptrt.h "event VMs"). */
struct lop_event_vm {
    char *controller;
    uint64_t gen;
    shared_set_t *set;  /* the set of gen (a reference), to build the VM from */
    pthread_mutex_t mu; /* held by the caller between acquire and release */
    lop_vm_t *vm;       /* NULL until the first event, or after a broken one was dropped */
    int64_t busy_since; /* monotonic ns when the running call began, 0 when idle (atomic) */
    struct lop_event_vm *next;
};

struct lop_scriptrt {
    const lop_engine_t *engine;
    const lop_engine_opts_t *opts;
    const lop_host_api_t *host;
    pthread_mutex_t mu; /* guards current, gen */
    shared_set_t *current;
    uint64_t gen;
    pthread_mutex_t event_mu; /* guards the fields below (not the VMs: each event VM has its lock) */
    lop_event_vm_t *event_vms;
    lop_vm_t *spare_vm; /* the install's VM (generation spare_gen), handed to its first user: an event VM or a worker */
    uint64_t spare_gen;
    shared_set_t *prev_set; /* the set before the current one, while handlers of its wiring may run */
    uint64_t prev_gen;
};

static const lop_clock_t *rt_clock(const lop_scriptrt_t *rt)
{
    return rt->opts && rt->opts->clock ? rt->opts->clock : &lop_clock_system;
}

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

static void event_vm_free(lop_scriptrt_t *rt, lop_event_vm_t *e)
{
    if (e->vm) rt->engine->vm_free(e->vm);
    shared_unref(rt, e->set);
    pthread_mutex_destroy(&e->mu);
    free(e->controller);
    free(e);
}

void lop_scriptrt_free(lop_scriptrt_t *rt)
{
    if (!rt) return;
    for (lop_event_vm_t *e = rt->event_vms, *next; e; e = next) {
        next = e->next;
        event_vm_free(rt, e);
    }
    if (rt->spare_vm) rt->engine->vm_free(rt->spare_vm);
    shared_unref(rt, rt->prev_set);
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
    /* The previous set stays until lop_scriptrt_event_release_prev: handlers wired for it may
     * still run with its callback ids while the new wiring is set up. */
    shared_set_t *older = rt->prev_set;
    lop_vm_t *spare = rt->spare_vm;
    pthread_mutex_lock(&rt->mu);
    shared_set_t *old = rt->current;
    rt->prev_set = old; /* our reference to it moves to prev_set */
    rt->prev_gen = rt->gen;
    rt->current = s;
    rt->gen++;
    rt->spare_vm = vm;
    rt->spare_gen = rt->gen;
    pthread_mutex_unlock(&rt->mu);
    pthread_mutex_unlock(&rt->event_mu);
    if (spare) rt->engine->vm_free(spare);
    shared_unref(rt, older);
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
    /* The install's VM, when no event VM took it yet: the first VM user of a generation, worker
     * or event VM, takes it over, so an operator whose controllers have no Lua predicates or map
     * functions does not hold it idle next to its workers' VMs (bench startup-idle). Lock order
     * as in install: event_mu, then mu. */
    lop_vm_t *vm = NULL;
    pthread_mutex_lock(&rt->event_mu);
    if (rt->spare_vm && rt->spare_gen == gen) {
        vm = rt->spare_vm;
        rt->spare_vm = NULL;
    }
    pthread_mutex_unlock(&rt->event_mu);
    /* Build outside the lock: the set stays alive through our reference. */
    if (!vm) vm = rt->engine->vm_new(s->set, rt->opts, rt->host, err);
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

void lop_vm_slot_return(lop_scriptrt_t *rt, lop_vm_slot_t *slot)
{
    lop_vm_t *vm = slot->vm;
    slot->vm = NULL;
    if (vm && slot->gen) {
        pthread_mutex_lock(&rt->event_mu); /* lock order as in install */
        pthread_mutex_lock(&rt->mu);
        if (!rt->spare_vm && slot->gen == rt->gen) {
            rt->spare_vm = vm;
            rt->spare_gen = slot->gen;
            vm = NULL;
        }
        pthread_mutex_unlock(&rt->mu);
        pthread_mutex_unlock(&rt->event_mu);
    }
    if (vm) rt->engine->vm_free(vm);
    slot->gen = 0;
}

lop_rc_t lop_scriptrt_event_acquire(lop_scriptrt_t *rt, uint64_t gen, const char *controller, lop_vm_t **vm,
                                    lop_event_vm_t **out, lop_err_t *err)
{
    *out = NULL;
    *vm = NULL;
    pthread_mutex_lock(&rt->event_mu);
    lop_event_vm_t *e = rt->event_vms;
    while (e && (e->gen != gen || strcmp(e->controller, controller) != 0)) e = e->next;
    if (!e) {
        pthread_mutex_lock(&rt->mu);
        shared_set_t *set = gen == rt->gen ? rt->current : gen == rt->prev_gen ? rt->prev_set : NULL;
        if (set) set->refs++;
        pthread_mutex_unlock(&rt->mu);
        if (!set) {
            pthread_mutex_unlock(&rt->event_mu);
            return lop_err_set(err, LOP_EGONE, 0, NULL, "script generation %llu is gone", (unsigned long long)gen);
        }
        e = lop_xcalloc(1, sizeof *e);
        e->controller = lop_xstrdup(controller);
        e->gen = gen;
        e->set = set;
        pthread_mutex_init(&e->mu, NULL);
        e->next = rt->event_vms;
        rt->event_vms = e;
    }
    lop_vm_t *spare = NULL;
    if (rt->spare_vm && rt->spare_gen == gen) { /* (e->vm is only read under e->mu) */
        spare = rt->spare_vm;                   /* the install's VM: no build for the first controller */
        rt->spare_vm = NULL;
    }
    pthread_mutex_unlock(&rt->event_mu);

    /* Only this controller's events wait here (another controller has its own VM and lock). */
    pthread_mutex_lock(&e->mu);
    if (!e->vm && spare) {
        e->vm = spare;
        spare = NULL;
    }
    if (spare) rt->engine->vm_free(spare); /* e already had a VM (rebuilt after a broken one) */
    if (!e->vm) {
        e->vm = rt->engine->vm_new(e->set->set, rt->opts, rt->host, err);
        if (!e->vm) {
            pthread_mutex_unlock(&e->mu);
            return LOP_ERR;
        }
    }
    *out = e;
    *vm = e->vm;
    __atomic_store_n(&e->busy_since, lop_clock_mono(rt_clock(rt)), __ATOMIC_RELAXED);
    return LOP_OK;
}

void lop_scriptrt_event_release(lop_scriptrt_t *rt, lop_event_vm_t *e, bool broken)
{
    if (!e) return;
    __atomic_store_n(&e->busy_since, 0, __ATOMIC_RELAXED);
    lop_vm_t *drop = NULL;
    if (broken) {
        drop = e->vm; /* the next event builds a fresh one */
        e->vm = NULL;
    }
    pthread_mutex_unlock(&e->mu);
    if (drop) {
        lop_log(LOP_LOG_WARN, "event VM dropped (it hit its memory limit); the next event builds a fresh one",
                "controller", e->controller, NULL);
        rt->engine->vm_free(drop);
    }
}

void lop_scriptrt_event_release_prev(lop_scriptrt_t *rt)
{
    pthread_mutex_lock(&rt->event_mu);
    pthread_mutex_lock(&rt->mu);
    uint64_t cur = rt->gen;
    shared_set_t *prev = rt->prev_set;
    rt->prev_set = NULL;
    rt->prev_gen = 0;
    pthread_mutex_unlock(&rt->mu);
    lop_event_vm_t *gone = NULL;
    for (lop_event_vm_t **pp = &rt->event_vms; *pp;) {
        lop_event_vm_t *e = *pp;
        if (e->gen != cur) {
            *pp = e->next;
            e->next = gone;
            gone = e;
        } else {
            pp = &e->next;
        }
    }
    pthread_mutex_unlock(&rt->event_mu);
    for (lop_event_vm_t *e = gone, *next; e; e = next) {
        next = e->next;
        pthread_mutex_lock(&e->mu); /* a handler of the old wiring may still be finishing */
        pthread_mutex_unlock(&e->mu);
        event_vm_free(rt, e);
    }
    shared_unref(rt, prev);
}

const lop_engine_t *lop_scriptrt_engine(lop_scriptrt_t *rt) { return rt->engine; }

bool lop_scriptrt_event_check_stuck(lop_scriptrt_t *rt, int64_t limit_ns, char *reason, size_t len)
{
    int64_t now = lop_clock_mono(rt_clock(rt));
    bool ok = true;
    pthread_mutex_lock(&rt->event_mu);
    for (lop_event_vm_t *e = rt->event_vms; e && ok; e = e->next) {
        int64_t since = __atomic_load_n(&e->busy_since, __ATOMIC_RELAXED);
        if (since && now - since > limit_ns) {
            ok = false;
            snprintf(reason, len, "controller %s: a Lua predicate or map function has run %.1fs (limit %.1fs)",
                     e->controller, (double)(now - since) / 1e9, (double)limit_ns / 1e9);
        }
    }
    pthread_mutex_unlock(&rt->event_mu);
    return ok;
}
