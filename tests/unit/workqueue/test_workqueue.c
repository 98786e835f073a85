/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/workqueue: client-go's queue_test.go, delaying_queue_test.go and
 * rate_limiting_queue_test.go expectations, with a fake clock (no sleeps). */
#include "host/kube/workqueue/workqueue.h"
#include "t.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define MS LOP_NS_PER_MS
#define S  LOP_NS_PER_S

static char *get_now(lop_workqueue_t *q)
{
    char *it = NULL;
    if (lop_workqueue_try_get(q, &it) != LOP_OK) return NULL;
    return it;
}

/* ---- basic producer/consumer: every item processed, never by two workers at once ---- */

typedef struct basic_ctx {
    lop_workqueue_t *q;
    pthread_mutex_t mu;
    int in_flight[10];
    int processed;
    int overlaps;
} basic_ctx_t;

static void *producer(void *arg)
{
    basic_ctx_t *c = arg;
    char key[16];
    for (int i = 0; i < 500; i++) {
        snprintf(key, sizeof key, "ns/k%d", i % 10);
        lop_workqueue_add(c->q, key);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    basic_ctx_t *c = arg;
    char *item;
    while (lop_workqueue_get(c->q, &item) == LOP_OK) {
        int k = atoi(item + 4);
        pthread_mutex_lock(&c->mu);
        if (c->in_flight[k]++) c->overlaps++;
        c->processed++;
        pthread_mutex_unlock(&c->mu);
        sched_yield();
        pthread_mutex_lock(&c->mu);
        c->in_flight[k]--;
        pthread_mutex_unlock(&c->mu);
        lop_workqueue_done(c->q, item);
        free(item);
    }
    return NULL;
}

static void test_basic_concurrent_never_two_workers(void)
{
    basic_ctx_t c = {.q = lop_workqueue_new("basic", NULL, NULL)};
    pthread_mutex_init(&c.mu, NULL);
    pthread_t p[4], w[4];
    for (int i = 0; i < 4; i++) pthread_create(&w[i], NULL, consumer, &c);
    for (int i = 0; i < 4; i++) pthread_create(&p[i], NULL, producer, &c);
    for (int i = 0; i < 4; i++) pthread_join(p[i], NULL);
    lop_workqueue_shutdown_with_drain(c.q);
    for (int i = 0; i < 4; i++) pthread_join(w[i], NULL);
    T_EQ_INT(c.overlaps, 0);
    T_CHECK(c.processed >= 10);
    T_EQ_INT(lop_workqueue_len(c.q), 0);
    lop_workqueue_free(c.q);
    pthread_mutex_destroy(&c.mu);
}

static void test_dedup_and_len(void)
{
    lop_workqueue_t *q = lop_workqueue_new("dedup", NULL, NULL);
    lop_workqueue_add(q, "a");
    lop_workqueue_add(q, "a");
    lop_workqueue_add(q, "b");
    T_EQ_INT(lop_workqueue_len(q), 2);
    char *a = get_now(q);
    T_EQ_STR(a, "a");
    T_EQ_INT(lop_workqueue_len(q), 1);
    lop_workqueue_done(q, a);
    free(a);
    lop_workqueue_free(q);
}

static void test_add_while_processing_requeues_once_at_done(void)
{
    lop_workqueue_t *q = lop_workqueue_new("reinsert", NULL, NULL);
    lop_workqueue_add(q, "foo");
    char *it = get_now(q);
    T_EQ_STR(it, "foo");
    lop_workqueue_add(q, "foo");
    lop_workqueue_add(q, "foo");
    T_EQ_INT(lop_workqueue_len(q), 0); /* not handed to a second worker */
    T_CHECK(get_now(q) == NULL);
    lop_workqueue_done(q, it);
    free(it);
    T_EQ_INT(lop_workqueue_len(q), 1);
    it = get_now(q);
    T_EQ_STR(it, "foo");
    lop_workqueue_done(q, it);
    free(it);
    T_EQ_INT(lop_workqueue_len(q), 0);
    lop_workqueue_free(q);
}

static void test_shutdown_hands_out_queued_then_closes(void)
{
    lop_workqueue_t *q = lop_workqueue_new("shutdown", NULL, NULL);
    lop_workqueue_add(q, "a");
    lop_workqueue_shutdown(q);
    lop_workqueue_add(q, "b"); /* ignored */
    T_CHECK(lop_workqueue_shutting_down(q));
    char *it;
    T_EQ_INT(lop_workqueue_get(q, &it), LOP_OK);
    T_EQ_STR(it, "a");
    lop_workqueue_done(q, it);
    free(it);
    T_EQ_INT(lop_workqueue_get(q, &it), LOP_ECLOSED);
    T_CHECK(it == NULL);
    lop_workqueue_free(q);
}

typedef struct drain_ctx {
    lop_workqueue_t *q;
    atomic_int finished;
} drain_ctx_t;

static void *drainer(void *arg)
{
    drain_ctx_t *d = arg;
    lop_workqueue_shutdown_with_drain(d->q);
    atomic_store(&d->finished, 1);
    return NULL;
}

static void test_shutdown_with_drain_waits_for_done(void)
{
    drain_ctx_t d = {.q = lop_workqueue_new("drain", NULL, NULL)};
    lop_workqueue_add(d.q, "a");
    lop_workqueue_add(d.q, "b");
    char *a = get_now(d.q), *b = get_now(d.q);
    pthread_t t;
    pthread_create(&t, NULL, drainer, &d);
    while (!lop_workqueue_shutting_down(d.q)) sched_yield();
    lop_workqueue_done(d.q, a);
    T_EQ_INT(atomic_load(&d.finished), 0); /* b still processing */
    lop_workqueue_done(d.q, b);
    pthread_join(t, NULL);
    T_EQ_INT(atomic_load(&d.finished), 1);
    free(a);
    free(b);
    lop_workqueue_free(d.q);
}

/* "a" taken, added again while processing (dirty), then a drain started on thread *t; Done
 * for the first take. */
static void drain_after_requeue(drain_ctx_t *d, const char *name, pthread_t *t)
{
    d->q = lop_workqueue_new(name, NULL, NULL);
    lop_workqueue_add(d->q, "a");
    char *a = get_now(d->q);
    lop_workqueue_add(d->q, "a"); /* dirty while processing */
    pthread_create(t, NULL, drainer, d);
    while (!lop_workqueue_shutting_down(d->q)) sched_yield();
    lop_workqueue_done(d->q, a);
    free(a);
}

static void test_shutdown_with_drain_dirty_item_is_handed_out(void)
{
    drain_ctx_t d = {0};
    pthread_t t;
    drain_after_requeue(&d, "drain-dirty", &t);
    char *again = NULL;
    T_EQ_INT(lop_workqueue_get(d.q, &again), LOP_OK); /* requeued item still handed out */
    T_EQ_STR(again, "a");
    lop_workqueue_done(d.q, again);
    free(again);
    T_EQ_INT(lop_workqueue_get(d.q, &again), LOP_ECLOSED); /* now really done */
    pthread_join(t, NULL);
    lop_workqueue_free(d.q);
}

/* A controller's worker stops after Done without taking its item again, even when the item was
 * added while it was processed (dirty): the drain must end at that Done, not at its deadline. */
static void test_shutdown_with_drain_ends_when_requeued_item_is_left(void)
{
    drain_ctx_t d = {0};
    pthread_t t;
    drain_after_requeue(&d, "drain-left", &t); /* the worker stops here: nobody takes "a" again */
    /* a bound on a wait for an event, not a sleep: before the fix the drain never ended */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    int jr = pthread_timedjoin_np(t, NULL, &until);
    T_EQ_INT(jr, 0);
    if (jr != 0) return; /* the drainer still waits on the queue: leak it rather than free it */
    T_EQ_INT(atomic_load(&d.finished), 1);
    lop_workqueue_free(d.q);
}

typedef struct getter_ctx {
    lop_workqueue_t *q;
    char *item;
    lop_rc_t rc;
} getter_ctx_t;

static void *getter(void *arg)
{
    getter_ctx_t *g = arg;
    g->rc = lop_workqueue_get(g->q, &g->item);
    return NULL;
}

typedef struct peek_ctx {
    lop_workqueue_t *q;
    lop_rc_t rc;
    char *item;
} peek_ctx_t;

static void *peeker(void *arg) /* another thread's view: try_get once */
{
    peek_ctx_t *p = arg;
    p->rc = lop_workqueue_try_get(p->q, &p->item);
    return NULL;
}

static lop_rc_t try_get_elsewhere(lop_workqueue_t *q, char **item)
{
    peek_ctx_t p = {q, LOP_ERR, NULL};
    pthread_t t;
    pthread_create(&t, NULL, peeker, &p);
    pthread_join(t, NULL);
    *item = p.item;
    return p.rc;
}

/* Inside a batch, this thread's adds are held: other threads see them at batch_end, in order and
 * deduplicated; the adding thread's own reads see them at once; a queue shut down before the end
 * drops them like any later add. */
static void test_batch_holds_adds_until_its_end(void)
{
    lop_workqueue_t *q = lop_workqueue_new("held", NULL, NULL);
    char *it = NULL;
    lop_workqueue_batch_begin();
    lop_workqueue_add(q, "a");
    lop_workqueue_add(q, "b");
    lop_workqueue_add(q, "a");
    T_EQ_INT(try_get_elsewhere(q, &it), LOP_EAGAIN); /* held by this thread */
    lop_workqueue_batch_end();
    T_EQ_INT(try_get_elsewhere(q, &it), LOP_OK);
    T_EQ_STR(it, "a");
    lop_workqueue_done(q, it);
    free(it);
    T_EQ_INT(try_get_elsewhere(q, &it), LOP_OK);
    T_EQ_STR(it, "b");
    lop_workqueue_done(q, it);
    free(it);
    T_EQ_INT(try_get_elsewhere(q, &it), LOP_EAGAIN); /* the second "a" was a duplicate */

    lop_workqueue_batch_begin();
    lop_workqueue_add(q, "c");
    T_EQ_INT((long)lop_workqueue_len(q), 1); /* the adding thread sees its own add */
    lop_workqueue_add(q, "d");
    lop_workqueue_stats_t st;
    lop_workqueue_stats(q, &st);
    T_EQ_INT((long)st.depth, 2);
    lop_workqueue_add(q, "e");
    lop_workqueue_shutdown(q); /* "e" is still held: dropped at the end, not leaked */
    lop_workqueue_batch_end();
    T_EQ_INT((long)lop_workqueue_len(q), 2);
    lop_workqueue_free(q);
}

/* lop_workqueue_batch_flush publishes the held items while the batch stays open (a relist's
 * steps), at any nesting depth; a queue freed by another thread while this one holds items for
 * it drops them and is released at the batch's end. */
static void *free_queue(void *arg)
{
    lop_workqueue_free(arg);
    return NULL;
}

static void test_batch_flush_publishes_and_frees_elsewhere(void)
{
    lop_workqueue_t *q = lop_workqueue_new("flush", NULL, NULL);
    char *it = NULL;
    lop_workqueue_batch_begin();
    lop_workqueue_batch_begin(); /* nested, as a watch-list's replace inside a read */
    lop_workqueue_add(q, "a");
    T_EQ_INT(try_get_elsewhere(q, &it), LOP_EAGAIN);
    lop_workqueue_batch_flush();
    T_EQ_INT(try_get_elsewhere(q, &it), LOP_OK);
    T_EQ_STR(it, "a");
    lop_workqueue_done(q, it);
    free(it);
    lop_workqueue_add(q, "b"); /* held again: the batch is still open */
    T_EQ_INT(try_get_elsewhere(q, &it), LOP_EAGAIN);
    lop_workqueue_batch_end();
    T_EQ_INT(try_get_elsewhere(q, &it), LOP_EAGAIN); /* the outer batch still holds it */
    lop_workqueue_batch_end();
    T_EQ_INT(try_get_elsewhere(q, &it), LOP_OK);
    T_EQ_STR(it, "b");
    lop_workqueue_done(q, it);
    free(it);
    lop_workqueue_batch_flush(); /* outside a batch: nothing to do */

    lop_workqueue_batch_begin();
    lop_workqueue_add(q, "c"); /* held for a queue freed below: dropped, not leaked (ASan) */
    pthread_t t;
    pthread_create(&t, NULL, free_queue, q); /* pinned: released by batch_end below */
    pthread_join(t, NULL);
    lop_workqueue_batch_end();
}

static void test_get_blocks_until_add_or_shutdown(void)
{
    getter_ctx_t g = {.q = lop_workqueue_new("block", NULL, NULL)};
    pthread_t t;
    pthread_create(&t, NULL, getter, &g);
    lop_workqueue_add(g.q, "x");
    pthread_join(t, NULL);
    T_EQ_INT(g.rc, LOP_OK);
    T_EQ_STR(g.item, "x");
    lop_workqueue_done(g.q, g.item);
    free(g.item);
    g.item = NULL;
    pthread_create(&t, NULL, getter, &g);
    lop_workqueue_shutdown(g.q);
    pthread_join(t, NULL);
    T_EQ_INT(g.rc, LOP_ECLOSED);
    lop_workqueue_free(g.q);
}

/* ---- delaying ---- */

static void test_add_after_fires_when_clock_reaches_it(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_workqueue_t *q = lop_workqueue_new("delay", &fc.base, NULL);
    lop_workqueue_add_after(q, "foo", 50 * MS);
    T_EQ_INT(lop_workqueue_len(q), 0);
    lop_fake_clock_step(&fc, 49 * MS);
    T_EQ_INT(lop_workqueue_len(q), 0);
    lop_fake_clock_step(&fc, 11 * MS);
    T_EQ_INT(lop_workqueue_len(q), 1);
    char *it = get_now(q);
    T_EQ_STR(it, "foo");
    lop_workqueue_done(q, it);
    free(it);
    lop_fake_clock_step(&fc, 1 * S);
    T_EQ_INT(lop_workqueue_len(q), 0);
    lop_workqueue_add_after(q, "now", 0);
    T_EQ_INT(lop_workqueue_len(q), 1);
    lop_workqueue_free(q);
}

static void test_add_after_dedup_keeps_earliest(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_workqueue_t *q = lop_workqueue_new("delay-dedup", &fc.base, NULL);
    lop_workqueue_add_after(q, "foo", 50 * MS);
    lop_workqueue_add_after(q, "foo", 70 * MS); /* later: ignored */
    lop_fake_clock_step(&fc, 60 * MS);
    T_EQ_INT(lop_workqueue_len(q), 1);
    char *it = get_now(q);
    lop_workqueue_done(q, it);
    free(it);
    lop_workqueue_add_after(q, "foo", 70 * MS);
    lop_workqueue_add_after(q, "foo", 50 * MS); /* earlier: wins */
    lop_fake_clock_step(&fc, 60 * MS);
    T_EQ_INT(lop_workqueue_len(q), 1);
    lop_workqueue_stats_t st;
    lop_workqueue_stats(q, &st);
    T_EQ_INT(st.waiting, 0);
    lop_workqueue_free(q);
}

static void test_add_two_fire_early(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_workqueue_t *q = lop_workqueue_new("fire-early", &fc.base, NULL);
    lop_workqueue_add_after(q, "first", 1 * S);
    lop_workqueue_add_after(q, "second", 50 * MS);
    lop_fake_clock_step(&fc, 60 * MS);
    T_EQ_INT(lop_workqueue_len(q), 1);
    char *it = get_now(q);
    T_EQ_STR(it, "second");
    free(it);
    lop_workqueue_add_after(q, "third", 2 * S);
    lop_fake_clock_step(&fc, 1 * S);
    T_EQ_INT(lop_workqueue_len(q), 1);
    it = get_now(q);
    T_EQ_STR(it, "first");
    free(it);
    lop_fake_clock_step(&fc, 2 * S);
    it = get_now(q);
    T_EQ_STR(it, "third");
    free(it);
    lop_workqueue_free(q);
}

static void test_copy_shifting_order_by_ready_time(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_workqueue_t *q = lop_workqueue_new("shift", &fc.base, NULL);
    lop_workqueue_add_after(q, "foo", 1 * S);
    lop_workqueue_add_after(q, "bar", 500 * MS);
    lop_workqueue_add_after(q, "baz", 250 * MS);
    lop_fake_clock_step(&fc, 2 * S);
    T_EQ_INT(lop_workqueue_len(q), 3);
    const char *want[] = {"baz", "bar", "foo"};
    for (int i = 0; i < 3; i++) {
        char *it = get_now(q);
        T_EQ_STR(it, want[i]);
        free(it);
    }
    lop_workqueue_free(q);
}

static void test_blocked_get_wakes_on_clock_step(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    getter_ctx_t g = {.q = lop_workqueue_new("wake", &fc.base, NULL)};
    lop_workqueue_add_after(g.q, "later", 10 * S);
    pthread_t t;
    pthread_create(&t, NULL, getter, &g);
    lop_fake_clock_step(&fc, 10 * S);
    pthread_join(t, NULL);
    T_EQ_INT(g.rc, LOP_OK);
    T_EQ_STR(g.item, "later");
    free(g.item);
    lop_workqueue_free(g.q);
}

static void test_add_after_ignored_after_shutdown(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_workqueue_t *q = lop_workqueue_new("late", &fc.base, NULL);
    lop_workqueue_shutdown(q);
    lop_workqueue_add_after(q, "x", 1 * MS);
    lop_fake_clock_step(&fc, 1 * S);
    T_EQ_INT(lop_workqueue_len(q), 0);
    lop_workqueue_free(q);
}

/* ---- rate limited ---- */

static void test_rate_limited_queue(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_workqueue_t *q = lop_workqueue_new("rl", &fc.base, lop_ratelimiter_exponential_new(1 * MS, 1 * S));
    lop_workqueue_add_rate_limited(q, "one");
    lop_workqueue_stats_t st;
    lop_workqueue_stats(q, &st);
    T_EQ_INT(st.waiting, 1);
    T_EQ_INT(lop_workqueue_num_requeues(q, "one"), 1);
    lop_fake_clock_step(&fc, 1 * MS);
    T_EQ_INT(lop_workqueue_len(q), 1);
    char *it = get_now(q);
    lop_workqueue_add_rate_limited(q, "one"); /* 2 ms */
    lop_fake_clock_step(&fc, 1 * MS);
    lop_workqueue_stats(q, &st);
    T_EQ_INT(st.waiting, 1);
    lop_fake_clock_step(&fc, 1 * MS);
    lop_workqueue_stats(q, &st);
    T_EQ_INT(st.waiting, 0);
    T_EQ_INT(lop_workqueue_len(q), 0); /* dirty, but still processing */
    lop_workqueue_done(q, it);
    free(it);
    T_EQ_INT(lop_workqueue_len(q), 1);
    T_EQ_INT(lop_workqueue_num_requeues(q, "one"), 2);
    lop_workqueue_forget(q, "one");
    T_EQ_INT(lop_workqueue_num_requeues(q, "one"), 0);
    lop_workqueue_stats(q, &st);
    T_EQ_INT(st.retries, 2);
    lop_workqueue_free(q);
}

static void test_metrics(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_workqueue_t *q = lop_workqueue_new("metrics", &fc.base, NULL);
    lop_workqueue_add(q, "a");
    lop_workqueue_add(q, "a");
    lop_workqueue_add(q, "b");
    lop_workqueue_stats_t st;
    lop_workqueue_stats(q, &st);
    T_EQ_INT(st.adds, 2);
    T_EQ_INT(st.depth, 2);
    lop_fake_clock_step(&fc, 3 * MS);
    char *a = get_now(q);
    lop_fake_clock_step(&fc, 2 * MS);
    char *b = get_now(q);
    lop_fake_clock_step(&fc, 10 * MS);
    lop_workqueue_stats(q, &st);
    T_EQ_INT(st.queue_latency_sum_ns, 3 * MS + 5 * MS);
    T_EQ_INT(st.processing, 2);
    T_EQ_INT(st.longest_running_ns, 12 * MS);
    T_EQ_INT(st.unfinished_work_ns, 22 * MS);
    lop_workqueue_done(q, a);
    lop_workqueue_done(q, b);
    lop_workqueue_stats(q, &st);
    T_EQ_INT(st.work_duration_sum_ns, 22 * MS);
    T_EQ_INT(st.work_done, 2);
    T_EQ_INT(st.unfinished_work_ns, 0);
    T_EQ_INT(st.depth, 0);
    free(a);
    free(b);
    lop_workqueue_free(q);
}

int main(void)
{
    T_RUN(test_basic_concurrent_never_two_workers);
    T_RUN(test_dedup_and_len);
    T_RUN(test_add_while_processing_requeues_once_at_done);
    T_RUN(test_shutdown_hands_out_queued_then_closes);
    T_RUN(test_shutdown_with_drain_waits_for_done);
    T_RUN(test_shutdown_with_drain_dirty_item_is_handed_out);
    T_RUN(test_shutdown_with_drain_ends_when_requeued_item_is_left);
    T_RUN(test_get_blocks_until_add_or_shutdown);
    T_RUN(test_add_after_fires_when_clock_reaches_it);
    T_RUN(test_add_after_dedup_keeps_earliest);
    T_RUN(test_add_two_fire_early);
    T_RUN(test_copy_shifting_order_by_ready_time);
    T_RUN(test_blocked_get_wakes_on_clock_step);
    T_RUN(test_add_after_ignored_after_shutdown);
    T_RUN(test_rate_limited_queue);
    T_RUN(test_metrics);
    T_RUN(test_batch_holds_adds_until_its_end);
    T_RUN(test_batch_flush_publishes_and_frees_elsewhere);
    return T_DONE();
}
