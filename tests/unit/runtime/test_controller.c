/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/runtime/controller: reconcile results map to the queue as in
 * controller-runtime; reload switches workers between reconciles. A C fake engine stands in for
 * Lua; the clock is fake. */
#include "host/runtime/controller.h"
#include "host/runtime/scripts.h"
#include "t.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <stdlib.h>

typedef struct fake_vm {
    int built_from; /* the "version" file content of the set */
} fake_vm_t;

/* Updated from worker threads: atomics and a mutex (the threaded test runs 3 workers). */
static int vms_built, vms_freed, reconciles;
static char last_code[64];
static pthread_mutex_t last_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reconciled = PTHREAD_COND_INITIALIZER; /* broadcast after every reconcile */

static lop_vm_t *fake_vm_new(const lop_script_set_t *set, const lop_engine_opts_t *opts, const lop_host_api_t *host,
                             lop_err_t *err)
{
    (void)opts;
    (void)host;
    const lop_script_file_t *f = lop_scripts_find(set, "main.lua");
    if (!f || strstr(f->data, "syntax error")) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "main.lua:1: syntax error");
        return NULL;
    }
    fake_vm_t *vm = calloc(1, sizeof *vm);
    vm->built_from = atoi(f->data);
    __atomic_add_fetch(&vms_built, 1, __ATOMIC_RELAXED);
    return (lop_vm_t *)vm;
}

static void fake_reconcile(lop_vm_t *v, const char *controller, const lop_reconcile_req_t *req,
                           lop_reconcile_result_t *res)
{
    fake_vm_t *vm = (fake_vm_t *)v;
    (void)controller;
    pthread_mutex_lock(&last_mu);
    __atomic_add_fetch(&reconciles, 1, __ATOMIC_RELAXED);
    snprintf(last_code, sizeof last_code, "%d:%s", vm->built_from, req->name);
    pthread_cond_broadcast(&reconciled);
    pthread_mutex_unlock(&last_mu);
    memset(res, 0, sizeof *res);
    if (strcmp(req->name, "requeue") == 0)
        res->kind = LOP_RESULT_REQUEUE;
    else if (strcmp(req->name, "after") == 0) {
        res->kind = LOP_RESULT_REQUEUE_AFTER;
        res->requeue_after_ns = 30 * LOP_NS_PER_S;
    } else if (strcmp(req->name, "error") == 0) {
        res->kind = LOP_RESULT_ERROR;
        snprintf(res->message, sizeof res->message, "boom");
    } else if (strcmp(req->name, "terminal") == 0)
        res->kind = LOP_RESULT_TERMINAL;
    else
        res->kind = LOP_RESULT_DONE;
}

/* Wait until n reconciles have run on the workers' threads (bounded: 20 s of the real clock,
 * which only limits a hang; nothing is timed). Returns how many ran. */
static int wait_reconciles(int n)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&last_mu);
    while (__atomic_load_n(&reconciles, __ATOMIC_RELAXED) < n &&
           pthread_cond_timedwait(&reconciled, &last_mu, &until) == 0) {}
    int got = __atomic_load_n(&reconciles, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&last_mu);
    return got;
}

/* The last reconcile's "vm:name", read under its lock. */
static const char *last(void)
{
    static char copy[64];
    pthread_mutex_lock(&last_mu);
    memcpy(copy, last_code, sizeof copy);
    pthread_mutex_unlock(&last_mu);
    return copy;
}

static void fake_vm_free(lop_vm_t *vm)
{
    __atomic_add_fetch(&vms_freed, 1, __ATOMIC_RELAXED);
    free(vm);
}

static const lop_engine_t fake_engine = {
    .name = "fake",
    .vm_new = fake_vm_new,
    .reconcile = fake_reconcile,
    .vm_free = fake_vm_free,
};

static lop_script_set_t *set_with(const char *main)
{
    lop_script_file_t f = {"main.lua", (char *)main, strlen(main)};
    return lop_scripts_from_files(&f, 1, "test");
}

typedef struct fixture {
    lop_fake_clock_t fc;
    lop_engine_opts_t opts;
    lop_host_api_t host;
    lop_scriptrt_t *rt;
    lop_controller_t *c;
    lop_vm_slot_t slot;
} fixture_t;

static void setup(fixture_t *f)
{
    memset(f, 0, sizeof *f);
    lop_fake_clock_init(&f->fc, 0);
    f->opts.clock = &f->fc.base;
    f->rt = lop_scriptrt_new(&fake_engine, &f->opts, &f->host);
    lop_err_t err;
    T_EQ_INT(lop_scriptrt_install(f->rt, set_with("1"), NULL, NULL, &err), LOP_OK);
    lop_controller_opts_t co = {.name = "test", .workers = 1, .clock = &f->fc.base, .rt = f->rt};
    f->c = lop_controller_new(&co);
}

static void teardown(fixture_t *f)
{
    lop_vm_slot_release(f->rt, &f->slot);
    lop_controller_free(f->c);
    lop_scriptrt_free(f->rt);
}

static void test_done_forgets_and_does_not_requeue(void)
{
    fixture_t f;
    setup(&f);
    lop_controller_enqueue(f.c, "ns", "ok");
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    T_EQ_STR(last(), "1:ok");
    T_EQ_INT(lop_workqueue_num_requeues(lop_controller_queue(f.c), "ns/ok"), 0);
    lop_fake_clock_step(&f.fc, 3600 * LOP_NS_PER_S);
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_EAGAIN);
    teardown(&f);
}

static void test_error_is_rate_limited_with_growing_backoff(void)
{
    fixture_t f;
    setup(&f);
    lop_controller_enqueue(f.c, "ns", "error");
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    T_EQ_INT(lop_workqueue_num_requeues(lop_controller_queue(f.c), "ns/error"), 1);
    /* first retry after 5 ms, not before */
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_EAGAIN);
    lop_fake_clock_step(&f.fc, 5 * LOP_NS_PER_MS);
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    T_EQ_INT(lop_workqueue_num_requeues(lop_controller_queue(f.c), "ns/error"), 2);
    lop_fake_clock_step(&f.fc, 5 * LOP_NS_PER_MS);
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_EAGAIN); /* now 10 ms */
    lop_fake_clock_step(&f.fc, 5 * LOP_NS_PER_MS);
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    lop_controller_stats_t st;
    lop_controller_stats(f.c, &st);
    T_EQ_INT(st.errors, 3);
    teardown(&f);
}

/* A controller declared with rate_limiter = {base_delay = 0.05, max_delay = 0.08}: its queue
 * retries after 50 ms, then 80 ms (capped), not the default 5 ms, 10 ms. */
static void test_declared_rate_limiter_sets_the_backoff(void)
{
    fixture_t f;
    setup(&f);
    lop_controller_free(f.c);
    lop_controller_opts_t co = {
        .name = "test",
        .workers = 1,
        .clock = &f.fc.base,
        .rt = f.rt,
        .rate_limiter = {.base_delay_ns = 50 * LOP_NS_PER_MS, .max_delay_ns = 80 * LOP_NS_PER_MS}};
    f.c = lop_controller_new(&co);
    lop_controller_enqueue(f.c, "ns", "error");
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    lop_fake_clock_step(&f.fc, 49 * LOP_NS_PER_MS);
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_EAGAIN);
    lop_fake_clock_step(&f.fc, 1 * LOP_NS_PER_MS);
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    lop_fake_clock_step(&f.fc, 79 * LOP_NS_PER_MS);
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_EAGAIN); /* 100 ms would be uncapped */
    lop_fake_clock_step(&f.fc, 1 * LOP_NS_PER_MS);
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    T_EQ_INT(lop_workqueue_num_requeues(lop_controller_queue(f.c), "ns/error"), 3);
    teardown(&f);
}

static void test_requeue_after_forgets_then_adds_after(void)
{
    fixture_t f;
    setup(&f);
    lop_controller_enqueue(f.c, "ns", "after");
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    T_EQ_INT(lop_workqueue_num_requeues(lop_controller_queue(f.c), "ns/after"), 0);
    lop_fake_clock_step(&f.fc, 29 * LOP_NS_PER_S);
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_EAGAIN);
    lop_fake_clock_step(&f.fc, 1 * LOP_NS_PER_S);
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    teardown(&f);
}

static void test_requeue_and_terminal(void)
{
    fixture_t f;
    setup(&f);
    lop_controller_enqueue(f.c, NULL, "requeue"); /* cluster-scoped key */
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    T_EQ_INT(lop_workqueue_num_requeues(lop_controller_queue(f.c), "requeue"), 1);
    lop_controller_enqueue(f.c, "ns", "terminal");
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    T_EQ_INT(lop_workqueue_num_requeues(lop_controller_queue(f.c), "ns/terminal"), 0);
    lop_fake_clock_step(&f.fc, 3600 * LOP_NS_PER_S);
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);     /* the requeue */
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_EAGAIN); /* terminal never retried */
    lop_controller_stats_t st;
    lop_controller_stats(f.c, &st);
    T_EQ_INT(st.terminal_errors, 1);
    teardown(&f);
}

static void test_reload_switches_between_reconciles_and_failed_reload_keeps_old(void)
{
    fixture_t f;
    setup(&f);
    lop_controller_enqueue(f.c, "ns", "a");
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    T_EQ_STR(last(), "1:a");
    lop_err_t err;
    lop_script_set_t *bad = set_with("syntax error");
    T_EQ_INT(lop_scriptrt_install(f.rt, bad, NULL, NULL, &err), LOP_EINVAL);
    lop_script_set_free(bad);
    T_CHECK(strstr(err.message, "main.lua:1") != NULL);
    lop_controller_enqueue(f.c, "ns", "b");
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    T_EQ_STR(last(), "1:b");
    T_EQ_INT(lop_scriptrt_install(f.rt, set_with("2"), NULL, NULL, &err), LOP_OK);
    lop_controller_enqueue(f.c, "ns", "c");
    T_EQ_INT(lop_controller_process_one(f.c, &f.slot), LOP_OK);
    T_EQ_STR(last(), "2:c");
    teardown(&f);
    T_EQ_INT(vms_built, vms_freed);
}

static void test_threaded_workers_process_everything_once(void)
{
    fixture_t f;
    setup(&f);
    lop_controller_free(f.c);
    lop_controller_opts_t co = {.name = "mt", .workers = 3, .clock = &f.fc.base, .rt = f.rt};
    f.c = lop_controller_new(&co);
    reconciles = 0;
    lop_err_t err;
    T_EQ_INT(lop_controller_start(f.c, &err), LOP_OK);
    char name[32];
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof name, "obj%d", i);
        lop_controller_enqueue(f.c, "ns", name);
    }
    T_EQ_INT(wait_reconciles(200), 200); /* the workers are real threads */
    lop_controller_stop(f.c, 0);
    lop_controller_stats_t st;
    lop_controller_stats(f.c, &st);
    T_EQ_INT(st.reconciles, reconciles);
    T_EQ_INT(reconciles, 200);
    teardown(&f);
}

/* A controller with wait_for_sync, replacing the fixture's; started. */
static void start_gated(fixture_t *f, const char *name, int workers)
{
    lop_controller_free(f->c);
    lop_controller_opts_t co = {
        .name = name, .workers = workers, .clock = &f->fc.base, .rt = f->rt, .wait_for_sync = true};
    f->c = lop_controller_new(&co);
    T_CHECK(!lop_controller_sources_ready(f->c));
    lop_err_t err;
    T_EQ_INT(lop_controller_start(f->c, &err), LOP_OK);
}

/* Wait until n workers hold at the sources gate (the workers are real threads; there is no event
 * to wait on, so this yields between reads, bounded by 20 s of the real clock); returns how many
 * do. */
static int wait_gated(lop_controller_t *c, int n)
{
    lop_controller_stats_t st = {0};
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        lop_controller_stats(c, &st);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((int)st.waiting_for_sync == n || now.tv_sec - t0.tv_sec > 20) return (int)st.waiting_for_sync;
        sched_yield();
    }
}

static void test_workers_wait_for_the_sources_to_sync(void)
{
    fixture_t f;
    setup(&f);
    reconciles = 0;
    start_gated(&f, "gated", 2);
    lop_controller_enqueue(f.c, "ns", "early");
    T_EQ_INT(wait_gated(f.c, 2), 2); /* both workers reach the sources gate */
    /* held there, they took nothing: the request waits in the queue */
    T_EQ_INT(__atomic_load_n(&reconciles, __ATOMIC_RELAXED), 0);
    lop_workqueue_stats_t qs;
    lop_workqueue_stats(lop_controller_queue(f.c), &qs);
    T_EQ_INT(qs.depth, 1);
    lop_controller_sources_synced(f.c);
    lop_controller_sources_synced(f.c); /* idempotent */
    T_CHECK(lop_controller_sources_ready(f.c));
    T_EQ_INT(wait_reconciles(1), 1);
    T_EQ_STR(last(), "1:early");
    lop_controller_stop(f.c, 0);
    lop_controller_stats_t st;
    lop_controller_stats(f.c, &st);
    T_EQ_INT(st.waiting_for_sync, 0);
    teardown(&f);
}

static void test_stop_releases_workers_still_waiting_for_sync(void)
{
    fixture_t f;
    setup(&f);
    reconciles = 0;
    start_gated(&f, "never-synced", 2);
    lop_controller_enqueue(f.c, "ns", "queued");
    /* both workers wait at the sources gate before the stop (else they would see the stop flag
     * first, and this would not test that the stop releases them) */
    T_EQ_INT(wait_gated(f.c, 2), 2);
    /* the workers are joined although the sources never synced; the item is not reconciled */
    T_EQ_INT(lop_controller_stop(f.c, 0), 0);
    T_EQ_INT(__atomic_load_n(&reconciles, __ATOMIC_RELAXED), 0);
    teardown(&f);
}

int main(void)
{
    T_RUN(test_done_forgets_and_does_not_requeue);
    T_RUN(test_error_is_rate_limited_with_growing_backoff);
    T_RUN(test_declared_rate_limiter_sets_the_backoff);
    T_RUN(test_requeue_after_forgets_then_adds_after);
    T_RUN(test_requeue_and_terminal);
    T_RUN(test_reload_switches_between_reconciles_and_failed_reload_keeps_old);
    T_RUN(test_threaded_workers_process_everything_once);
    T_RUN(test_workers_wait_for_the_sources_to_sync);
    T_RUN(test_stop_releases_workers_still_waiting_for_sync);
    return T_DONE();
}
