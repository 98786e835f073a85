/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the leader elector on its own thread (lop_elector_start/stop): acquisition,
 * a standby that stays standby, and the watch-driven handover on release — with fake clocks that
 * never move, so the handover can only come from the Lease notification, not from time passing.
 * The test waits for callbacks on a condition variable (bounded by a generous real-time safety
 * timeout that only matters when the code is broken).
 */
#include "host/kube/leaderelection/leaderelection.h"
#include "host/kube/leaderelection/lease.h"
#include "host/util/log.h"
#include "t.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

typedef struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started, stopped, new_leader;
} waiter_t;

static void on_new_leader(void *ud, const char *id)
{
    waiter_t *w = ud;
    (void)id;
    pthread_mutex_lock(&w->mu);
    w->new_leader++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void on_started(void *ud)
{
    waiter_t *w = ud;
    pthread_mutex_lock(&w->mu);
    w->started++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void on_stopped(void *ud)
{
    waiter_t *w = ud;
    pthread_mutex_lock(&w->mu);
    w->stopped++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Wait until *field >= n; false after 10 s of real time (a failure, not a timing). */
static bool wait_for(waiter_t *w, int *field, int n)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    pthread_mutex_lock(&w->mu);
    int rc = 0;
    while (*field < n && rc == 0) rc = pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    bool ok = *field >= n;
    pthread_mutex_unlock(&w->mu);
    return ok;
}

typedef struct pair {
    lop_elector_t *e[2];
} pair_t;

static void feed_watch(void *ud, const lop_lease_record_t *rec, const char *rv)
{
    pair_t *p = ud;
    for (int i = 0; i < 2; i++)
        if (p->e[i]) lop_elector_notify_lease_changed(p->e[i], rec, rv);
}

static void test_threaded_handover_on_release(void)
{
    lop_lease_store_t *store = lop_lease_store_new();
    pair_t pair = {{NULL, NULL}};
    lop_fake_clock_t clk[2];
    lop_lease_client_t *cl[2];
    waiter_t w[2];
    const char *ids[2] = {"replica-a", "replica-b"};
    for (int i = 0; i < 2; i++) {
        lop_fake_clock_init(&clk[i], 0);
        cl[i] = lop_lease_client_memory_new(store, ids[i]);
        pthread_mutex_init(&w[i].mu, NULL);
        pthread_cond_init(&w[i].cv, NULL);
        w[i].started = w[i].stopped = w[i].new_leader = 0;
        lop_elector_config_t cfg;
        lop_elector_config_defaults(&cfg);
        cfg.identity = ids[i];
        cfg.client = cl[i];
        cfg.clock = &clk[i].base;
        cfg.callbacks = (lop_elector_callbacks_t){on_started, on_stopped, on_new_leader, &w[i]};
        pair.e[i] = lop_elector_new(&cfg, NULL);
        T_CHECK(pair.e[i] != NULL);
    }
    lop_lease_store_on_change(store, feed_watch, &pair);

    T_EQ_INT(lop_elector_start(pair.e[0]), LOP_OK);
    T_EQ_INT(lop_elector_start(pair.e[0]), LOP_EINVAL); /* once only */
    T_CHECK(wait_for(&w[0], &w[0].started, 1));
    T_CHECK(lop_elector_is_leader(pair.e[0]));

    T_EQ_INT(lop_elector_start(pair.e[1]), LOP_OK);
    /* b's first attempt reads a's lease and reports a as leader; it does not write. */
    T_CHECK(wait_for(&w[1], &w[1].new_leader, 1));
    T_CHECK(!lop_elector_is_leader(pair.e[1]));
    char *leader = lop_elector_leader(pair.e[1]);
    T_EQ_STR(leader, "replica-a");
    free(leader);

    /* a shuts down: releases; b, woken by the watch, takes over with no clock movement. */
    int64_t mono_before = lop_clock_mono(&clk[1].base);
    lop_elector_stop(pair.e[0]);
    T_EQ_INT(w[0].stopped, 1);
    T_CHECK(!lop_elector_is_leader(pair.e[0]));
    T_CHECK(wait_for(&w[1], &w[1].started, 1));
    T_CHECK(lop_elector_is_leader(pair.e[1]));
    T_EQ_INT(lop_clock_mono(&clk[1].base), mono_before);
    lop_lease_record_t r = LOP_LEASE_RECORD_INIT;
    T_EQ_INT(lop_lease_store_peek(store, &r, NULL), LOP_OK);
    T_EQ_STR(lop_lease_record_holder(&r), "replica-b");
    T_EQ_INT(r.lease_transitions, 1);
    lop_lease_record_cleanup(&r);

    lop_lease_store_on_change(store, NULL, NULL);
    lop_elector_stop(pair.e[1]);
    T_EQ_INT(w[1].stopped, 1);
    T_EQ_INT(lop_elector_start(pair.e[1]), LOP_EINVAL); /* no restart after stop */
    for (int i = 0; i < 2; i++) {
        lop_elector_free(pair.e[i]);
        lop_lease_client_free(cl[i]);
        pthread_mutex_destroy(&w[i].mu);
        pthread_cond_destroy(&w[i].cv);
    }
    lop_lease_store_free(store);
}

/* A lease client whose updates can be made to hang (a request stuck on a dead connection). */
typedef struct hang_client {
    lop_lease_client_t *inner;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool hang;
    int blocked; /* updates currently blocked */
} hang_client_t;

static lop_rc_t hc_get(void *ud, lop_lease_record_t *out, char *rv, lop_err_t *err)
{
    hang_client_t *h = ud;
    return lop_lease_get(h->inner, out, rv, err);
}

static lop_rc_t hc_create(void *ud, const lop_lease_record_t *rec, char *rv, lop_err_t *err)
{
    hang_client_t *h = ud;
    return lop_lease_create(h->inner, rec, rv, err);
}

static lop_rc_t hc_update(void *ud, const lop_lease_record_t *rec, const char *rv, char *rv_out, lop_err_t *err)
{
    hang_client_t *h = ud;
    pthread_mutex_lock(&h->mu);
    if (h->hang) {
        h->blocked++;
        pthread_cond_broadcast(&h->cv);
        while (h->hang) pthread_cond_wait(&h->cv, &h->mu);
        h->blocked--;
    }
    pthread_mutex_unlock(&h->mu);
    (void)rec;
    (void)rv;
    (void)rv_out;
    return lop_err_set(err, LOP_EAGAIN, 0, NULL, "connection reset");
}

static const lop_lease_client_ops_t hang_ops = {hc_get, hc_create, hc_update, NULL};

/* The renew request hangs past the renew deadline: the watchdog ends leadership on time
 * (is_leader false AND on_stopped_leading called) although the elector thread is stuck. */
static void test_watchdog_ends_leadership_while_request_hangs(void)
{
    lop_lease_store_t *store = lop_lease_store_new();
    hang_client_t h;
    memset(&h, 0, sizeof h);
    h.inner = lop_lease_client_memory_new(store, "inner");
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    lop_lease_client_t *client = lop_lease_client_new(&hang_ops, &h, "hanging");
    lop_fake_clock_t clk;
    lop_fake_clock_init(&clk, 0);
    waiter_t w;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    lop_elector_config_t cfg;
    lop_elector_config_defaults(&cfg);
    cfg.identity = "stuck";
    cfg.client = client;
    cfg.clock = &clk.base;
    cfg.callbacks = (lop_elector_callbacks_t){on_started, on_stopped, NULL, &w};
    lop_elector_t *e = lop_elector_new(&cfg, NULL);
    T_EQ_INT(lop_elector_start(e), LOP_OK);
    T_CHECK(wait_for(&w, &w.started, 1)); /* created the Lease: no update needed */

    pthread_mutex_lock(&h.mu);
    h.hang = true;
    pthread_mutex_unlock(&h.mu);
    lop_fake_clock_step(&clk, 2 * LOP_NS_PER_S); /* renew is due: it hangs */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    pthread_mutex_lock(&h.mu);
    while (h.blocked < 1 && pthread_cond_timedwait(&h.cv, &h.mu, &ts) == 0) {}
    T_EQ_INT(h.blocked, 1);
    pthread_mutex_unlock(&h.mu);
    T_CHECK(lop_elector_is_leader(e));
    T_EQ_INT(w.stopped, 0);

    lop_fake_clock_step(&clk, 8 * LOP_NS_PER_S); /* exactly the renew deadline (10 s) */
    T_CHECK(!lop_elector_is_leader(e));
    T_CHECK(wait_for(&w, &w.stopped, 1)); /* from the watchdog: the elector thread is stuck */
    T_CHECK(lop_elector_lost(e));
    pthread_mutex_lock(&h.mu);
    T_EQ_INT(h.blocked, 1); /* still stuck when leadership ended */
    h.hang = false;
    pthread_cond_broadcast(&h.cv);
    pthread_mutex_unlock(&h.mu);

    lop_elector_stop(e);
    T_EQ_INT(w.stopped, 1); /* exactly once */
    T_EQ_INT(w.started, 1);
    lop_elector_free(e);
    lop_lease_client_free(client);
    lop_lease_client_free(h.inner);
    lop_lease_store_free(store);
    pthread_mutex_destroy(&h.mu);
    pthread_cond_destroy(&h.cv);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
}

int main(void)
{
    lop_log_setup(LOP_LOG_ERROR, LOP_LOG_TEXT);
    T_RUN(test_threaded_handover_on_release);
    T_RUN(test_watchdog_ends_leadership_while_request_hangs);
    return T_DONE();
}
