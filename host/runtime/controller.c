/* SPDX-License-Identifier: Apache-2.0 */
/* controller.c — one controller: its workqueue, N worker threads each reconciling with its own VM
 * slot, and the mapping of reconcile results to Forget/AddAfter/AddRateLimited (see controller.h).
 * Workers run worker_main; informer threads enqueue; the manager (main thread) starts and stops
 * it. Upstream: controller-runtime pkg/internal/controller/controller.go. */
#include "host/runtime/controller.h"

#include "host/codec/strmap.h"
#include "host/util/buf.h"
#include "host/util/log.h"
#include "host/util/rand.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct lop_controller {
    char *name;
    char *group, *kind; /* of the for_ kind: controllerGroup / controllerKind in the log lines */
    int nworkers;
    const lop_clock_t *clock;
    lop_scriptrt_t *rt;
    lop_gate_t *gate;
    lop_gate_t sources; /* open once every source has synced (or at once without wait_for_sync) */
    bool sources_told;  /* lop_controller_sources_synced was called (atomic) */
    lop_workqueue_t *queue;
    lop_reconcile_observer_fn observer;
    void *observer_ud;
    lop_vm_memory_observer_fn memory_observer;
    pthread_t *threads;
    struct worker_arg *args;
    int started;
    pthread_mutex_t mu; /* guards stats and failing */
    lop_controller_stats_t stats;
    lop_strmap_t failing; /* key -> malloc'd message, for keys whose last reconcile was an error */
    size_t abandoned;     /* reconciles left running by a bounded stop; owner thread only */
    bool stopping;        /* set by stop: workers finish their current item and take no other */
};

lop_controller_t *lop_controller_new(const lop_controller_opts_t *opts)
{
    lop_controller_t *c = lop_xcalloc(1, sizeof *c);
    c->name = lop_xstrdup(opts->name);
    c->group = lop_xstrdup(opts->group ? opts->group : "");
    c->kind = lop_xstrdup(opts->kind ? opts->kind : "");
    c->nworkers = opts->workers > 0 ? opts->workers : 1;
    c->clock = opts->clock ? opts->clock : &lop_clock_system;
    c->rt = opts->rt;
    c->gate = opts->gate;
    lop_gate_init(&c->sources, !opts->wait_for_sync);
    c->observer = opts->observer;
    c->observer_ud = opts->observer_ud;
    c->memory_observer = opts->memory_observer;
    const lop_ratelimit_decl_t *rl = &opts->rate_limiter;
    lop_ratelimiter_t *limiter =
        lop_ratelimiter_controller_new(c->clock, rl->base_delay_ns, rl->max_delay_ns, rl->qps, rl->burst);
    if (!limiter) limiter = lop_ratelimiter_default_controller_new(c->clock); /* declarations are checked */
    c->queue = lop_workqueue_new(c->name, c->clock, limiter);
    pthread_mutex_init(&c->mu, NULL);
    c->failing = (lop_strmap_t)LOP_STRMAP_INIT;
    return c;
}

const char *lop_controller_name(const lop_controller_t *c) { return c->name; }

lop_workqueue_t *lop_controller_queue(lop_controller_t *c) { return c->queue; }

size_t lop_controller_failing(lop_controller_t *c, lop_buf_t *out)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->failing.count;
    lop_strmap_iter_t it;
    if (out)
        for (lop_strmap_ent_t *e = lop_strmap_first(&c->failing, &it); e; e = lop_strmap_next(&c->failing, &it, e))
            lop_buf_printf(out, "%s %s: %s\n", c->name, e->key, (const char *)e->val);
    pthread_mutex_unlock(&c->mu);
    return n;
}

void lop_controller_enqueue(lop_controller_t *c, const char *ns, const char *name)
{
    lop_buf_t key = LOP_BUF_INIT;
    if (ns && *ns)
        lop_buf_printf(&key, "%s/%s", ns, name);
    else
        lop_buf_puts(&key, name);
    lop_workqueue_add(c->queue, key.data);
    lop_buf_free(&key);
}

void lop_controller_stats(lop_controller_t *c, lop_controller_stats_t *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->stats;
    pthread_mutex_unlock(&c->mu);
}

static const char *result_name(lop_result_kind_t k)
{
    switch (k) {
    case LOP_RESULT_DONE: return "success";
    case LOP_RESULT_REQUEUE: return "requeue";
    case LOP_RESULT_REQUEUE_AFTER: return "requeue_after";
    case LOP_RESULT_ERROR: return "error";
    case LOP_RESULT_TERMINAL: return "terminal_error";
    }
    return "unknown";
}
/*
 * One reconcile's log line with controller-runtime's keys (pkg/internal/controller/controller.go):
 * controller, controllerGroup, controllerKind, the object under its Kind as {name, namespace},
 * namespace, name, reconcileID, then duration (seconds, a number), result and error when failed.
 */
static void log_reconcile(const lop_controller_t *c, lop_log_level_t level, const char *msg, const char *ns,
                          const char *name, const char *rid, int64_t dur_ns, const lop_reconcile_result_t *res)
{
    lop_buf_t obj = LOP_BUF_INIT;
    lop_buf_puts(&obj, "{\"name\":");
    lop_buf_json_str(&obj, name, strlen(name));
    if (ns && *ns) {
        lop_buf_puts(&obj, ",\"namespace\":");
        lop_buf_json_str(&obj, ns, strlen(ns));
    }
    lop_buf_putc(&obj, '}');
    lop_log_field_t f[12];
    int n = 0;
    f[n++] = LOP_LOG_F_STR("controller", c->name);
    f[n++] = LOP_LOG_F_STR("controllerGroup", c->group);
    f[n++] = LOP_LOG_F_STR("controllerKind", c->kind);
    if (*c->kind) f[n++] = LOP_LOG_F_JSON(c->kind, obj.data);
    f[n++] = LOP_LOG_F_STR("namespace", ns ? ns : "");
    f[n++] = LOP_LOG_F_STR("name", name);
    f[n++] = LOP_LOG_F_STR("reconcileID", rid);
    f[n++] = LOP_LOG_F_NUM("duration", (double)dur_ns / 1e9);
    if (level == LOP_LOG_DEBUG) f[n++] = LOP_LOG_F_STR("result", result_name(res->kind));
    if (res->kind == LOP_RESULT_ERROR || res->kind == LOP_RESULT_TERMINAL)
        f[n++] = LOP_LOG_F_STR("error", res->message);
    if (res->timed_out) f[n++] = LOP_LOG_F_BOOL("timeout", true);
    lop_log_fields(level, msg, f, n);
    lop_buf_free(&obj);
}

/* Reconcile key with the slot's VM and apply the result to the queue. Caller calls Done. */
static void reconcile_key(lop_controller_t *c, lop_vm_slot_t *slot, int worker, const char *key)
{
    char ns[256] = "", name[256];
    const char *slash = strchr(key, '/');
    if (slash) {
        snprintf(ns, sizeof ns, "%.*s", (int)(slash - key), key);
        snprintf(name, sizeof name, "%s", slash + 1);
    } else {
        snprintf(name, sizeof name, "%s", key);
    }
    pthread_mutex_lock(&c->mu);
    c->stats.active_workers++;
    pthread_mutex_unlock(&c->mu);
    char rid[LOP_UUID_LEN + 1];
    lop_uuid4(rid); /* controller-runtime gives every reconcile a random UUID (reconcileID) */

    lop_reconcile_result_t res;
    memset(&res, 0, sizeof res);
    lop_err_t err;
    lop_err_clear(&err);
    int64_t t0 = lop_clock_mono(c->clock);
    lop_vm_t *vm = lop_scriptrt_vm(c->rt, slot, &err);
    if (!vm) {
        res.kind = LOP_RESULT_ERROR;
        snprintf(res.message, sizeof res.message, "no VM: %s", err.message);
    } else {
        lop_reconcile_req_t req = {ns, name, rid};
        lop_scriptrt_engine(c->rt)->reconcile(vm, c->name, &req, &res);
        if (res.vm_broken) lop_scriptrt_vm_broken(c->rt, slot);
    }
    int64_t dur = lop_clock_mono(c->clock) - t0;

    switch (res.kind) {
    case LOP_RESULT_DONE: lop_workqueue_forget(c->queue, key); break;
    case LOP_RESULT_REQUEUE: lop_workqueue_add_rate_limited(c->queue, key); break;
    case LOP_RESULT_REQUEUE_AFTER:
        lop_workqueue_forget(c->queue, key);
        lop_workqueue_add_after(c->queue, key, res.requeue_after_ns);
        break;
    case LOP_RESULT_ERROR:
        lop_workqueue_add_rate_limited(c->queue, key);
        log_reconcile(c, LOP_LOG_ERROR, "reconciler error", ns, name, rid, dur, &res);
        break;
    case LOP_RESULT_TERMINAL:
        lop_workqueue_forget(c->queue, key);
        log_reconcile(c, LOP_LOG_ERROR, "terminal reconciler error, not retried", ns, name, rid, dur, &res);
        break;
    }
    if (lop_log_enabled(LOP_LOG_DEBUG)) log_reconcile(c, LOP_LOG_DEBUG, "reconciled", ns, name, rid, dur, &res);

    pthread_mutex_lock(&c->mu);
    c->stats.active_workers--;
    c->stats.reconciles++;
    switch (res.kind) {
    case LOP_RESULT_DONE:
    case LOP_RESULT_REQUEUE_AFTER: c->stats.successes++; break;
    case LOP_RESULT_REQUEUE: c->stats.requeues++; break;
    case LOP_RESULT_ERROR: c->stats.errors++; break;
    case LOP_RESULT_TERMINAL: c->stats.terminal_errors++; break;
    }
    if (res.timed_out) c->stats.timeouts++;
    bool failed = res.kind == LOP_RESULT_ERROR || res.kind == LOP_RESULT_TERMINAL;
    free(failed ? lop_strmap_put(&c->failing, key, lop_xstrdup(res.message)) : lop_strmap_del(&c->failing, key, NULL));
    pthread_mutex_unlock(&c->mu);
    if (c->observer) c->observer(c->observer_ud, c->name, res.kind, dur);
    if (c->memory_observer && slot->vm && lop_scriptrt_engine(c->rt)->memory)
        c->memory_observer(c->observer_ud, c->name, worker, lop_scriptrt_engine(c->rt)->memory(slot->vm));
}

lop_rc_t lop_controller_process_one(lop_controller_t *c, lop_vm_slot_t *slot)
{
    char *key = NULL;
    lop_rc_t rc = lop_workqueue_try_get(c->queue, &key);
    if (rc != LOP_OK) return rc;
    reconcile_key(c, slot, 0, key);
    lop_workqueue_done(c->queue, key);
    free(key);
    return LOP_OK;
}

typedef struct worker_arg {
    lop_controller_t *c;
    int index;
} worker_arg_t;

static void *worker_main(void *arg)
{
    worker_arg_t *wa = arg;
    lop_controller_t *c = wa->c;
    lop_vm_slot_t slot = {NULL, 0};
    if (!lop_gate_is_open(&c->sources)) {
        pthread_mutex_lock(&c->mu);
        c->stats.waiting_for_sync++;
        pthread_mutex_unlock(&c->mu);
        bool go = lop_gate_wait_or(&c->sources, &c->stopping);
        pthread_mutex_lock(&c->mu);
        c->stats.waiting_for_sync--;
        pthread_mutex_unlock(&c->mu);
        if (!go) goto out;
    }
    for (;;) {
        if (c->gate && !lop_gate_wait_or(c->gate, &c->stopping)) break;
        if (__atomic_load_n(&c->stopping, __ATOMIC_ACQUIRE)) break;
        char *key = NULL;
        if (lop_workqueue_get(c->queue, &key) != LOP_OK) break;
        if (__atomic_load_n(&c->stopping, __ATOMIC_ACQUIRE)) { /* stopping: take no new work */
            lop_workqueue_done(c->queue, key);
            free(key);
            break;
        }
        /* Leadership may have been lost while we waited for an item: put it back. */
        if (c->gate && !lop_gate_is_open(c->gate)) {
            lop_workqueue_done(c->queue, key);
            lop_workqueue_add(c->queue, key);
            free(key);
            continue;
        }
        reconcile_key(c, &slot, wa->index, key);
        lop_workqueue_done(c->queue, key);
        free(key);
    }
out:
    lop_vm_slot_release(c->rt, &slot);
    return NULL;
}

void lop_controller_sources_synced(lop_controller_t *c)
{
    if (__atomic_exchange_n(&c->sources_told, true, __ATOMIC_ACQ_REL) || lop_gate_is_open(&c->sources)) return;
    lop_gate_set(&c->sources, true);
    lop_log(LOP_LOG_INFO, "sources synced; starting workers", "controller", c->name, NULL);
}

bool lop_controller_sources_ready(lop_controller_t *c) { return lop_gate_is_open(&c->sources); }

lop_rc_t lop_controller_start(lop_controller_t *c, lop_err_t *err)
{
    if (c->started) return LOP_OK;
    c->threads = lop_xcalloc((size_t)c->nworkers, sizeof *c->threads);
    c->args = lop_xcalloc((size_t)c->nworkers, sizeof *c->args);
    for (int i = 0; i < c->nworkers; i++) {
        c->args[i] = (worker_arg_t){c, i};
        if (pthread_create(&c->threads[i], NULL, worker_main, &c->args[i]) != 0) {
            lop_workqueue_shutdown(c->queue);
            for (int j = 0; j < i; j++) pthread_join(c->threads[j], NULL);
            free(c->threads);
            free(c->args);
            c->threads = NULL;
            c->args = NULL;
            return lop_err_set(err, LOP_ERR, 0, NULL, "controller %s: cannot start worker threads", c->name);
        }
    }
    c->started = 1;
    return LOP_OK;
}

/* Join worker i until the deadline on the controller's clock; false when it is still running. */
static bool join_until(lop_controller_t *c, int i, int64_t deadline_ns)
{
    if (deadline_ns == INT64_MAX || c->clock->fake) return pthread_join(c->threads[i], NULL) == 0;
    int64_t left = deadline_ns - lop_clock_mono(c->clock);
    if (left < 0) left = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t abs = (int64_t)ts.tv_sec * LOP_NS_PER_S + ts.tv_nsec + left;
    ts.tv_sec = (time_t)(abs / LOP_NS_PER_S);
    ts.tv_nsec = (long)(abs % LOP_NS_PER_S);
    return pthread_timedjoin_np(c->threads[i], NULL, &ts) == 0;
}

size_t lop_controller_stop_until(lop_controller_t *c, int64_t deadline_ns)
{
    if (c->abandoned) return c->abandoned;
    /* Stop intake: workers finish the item they hold and take no other; gated workers wake. */
    __atomic_store_n(&c->stopping, true, __ATOMIC_RELEASE);
    lop_workqueue_shutdown(c->queue);
    if (c->gate) lop_gate_kick(c->gate);
    lop_gate_kick(&c->sources);
    bool drained = true;
    if (deadline_ns == INT64_MAX)
        lop_workqueue_shutdown_with_drain(c->queue);
    else
        drained = lop_workqueue_shutdown_with_drain_until(c->queue, deadline_ns);
    if (!drained) {
        char *items[16];
        int64_t ns[16];
        size_t n = lop_workqueue_processing_items(c->queue, items, ns, 16);
        for (size_t i = 0; i < n && i < 16; i++) {
            char running[32];
            snprintf(running, sizeof running, "%.3fs", (double)ns[i] / 1e9);
            lop_log(LOP_LOG_WARN, "graceful shutdown timeout: abandoning an in-flight reconcile", "controller", c->name,
                    "key", items[i], "running", running, NULL);
            free(items[i]);
        }
        if (n > 16) {
            char more[24];
            snprintf(more, sizeof more, "%zu", n - 16);
            lop_log(LOP_LOG_WARN, "graceful shutdown timeout: more reconciles abandoned", "controller", c->name,
                    "count", more, NULL);
        }
        if (n > 0) {
            c->abandoned = n; /* the workers keep running: never join or free them */
            return n;
        }
    }
    if (c->started) {
        size_t left = 0;
        for (int i = 0; i < c->nworkers; i++)
            if (!join_until(c, i, deadline_ns)) left++;
        if (left) {
            lop_log(LOP_LOG_WARN, "graceful shutdown timeout: workers still running", "controller", c->name, NULL);
            c->abandoned = left;
            return left;
        }
        free(c->threads);
        free(c->args);
        c->threads = NULL;
        c->args = NULL;
        c->started = 0;
    }
    return 0;
}

size_t lop_controller_stop(lop_controller_t *c, int64_t grace_ns)
{
    int64_t deadline = INT64_MAX;
    if (grace_ns > 0) {
        int64_t now = lop_clock_mono(c->clock);
        deadline = grace_ns > INT64_MAX - now ? INT64_MAX : now + grace_ns;
    }
    return lop_controller_stop_until(c, deadline);
}

void lop_controller_shutdown_intake(lop_controller_t *c) { lop_workqueue_shutdown(c->queue); }

void lop_controller_free(lop_controller_t *c)
{
    if (!c) return;
    if (c->abandoned) return; /* workers still use it; the process is about to exit */
    lop_controller_stop(c, 0);
    lop_workqueue_free(c->queue);
    lop_gate_cleanup(&c->sources);
    lop_strmap_iter_t it;
    for (lop_strmap_ent_t *e = lop_strmap_first(&c->failing, &it); e; e = lop_strmap_next(&c->failing, &it, e))
        free(e->val);
    lop_strmap_clear(&c->failing);
    pthread_mutex_destroy(&c->mu);
    free(c->name);
    free(c->group);
    free(c->kind);
    free(c);
}
