/* workqueue.c — the deduplicating FIFO with dirty/processing sets (see workqueue.h). */
#include "host/kube/workqueue_impl.h"

#include "host/util/buf.h"

#include <stdlib.h>
#include <string.h>

#define BOX(t) ((void *)(intptr_t)(t))
#define UNBOX(p) ((int64_t)(intptr_t)(p))

lop_workqueue_t *lop_workqueue_new(const char *name, const lop_clock_t *clock, lop_ratelimiter_t *limiter)
{
    lop_workqueue_t *q = lop_xcalloc(1, sizeof *q);
    pthread_mutex_init(&q->mu, NULL);
    lop_cond_init(&q->cond);
    q->clock = clock ? clock : &lop_clock_system;
    q->name = lop_xstrdup(name ? name : "");
    q->limiter = limiter;
    return q;
}

static void release(lop_workqueue_t *q);

void lop_workqueue_free(lop_workqueue_t *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->shutting_down = true;
    pthread_cond_broadcast(&q->cond);
    bool pinned = q->batch_pins > 0;
    q->freed = pinned;
    pthread_mutex_unlock(&q->mu);
    if (!pinned)
        release(q);
}

static void release(lop_workqueue_t *q)
{
    for (size_t i = 0; i < q->count; i++)
        free(q->fifo[(q->head + i) % q->cap]);
    free(q->fifo);
    lop_strmap_clear(&q->dirty);
    lop_strmap_clear(&q->processing);
    lop_wq_heap_free(q);
    lop_ratelimiter_free(q->limiter);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->mu);
    free(q->name);
    free(q);
}

static void fifo_push(lop_workqueue_t *q, const char *item)
{
    if (q->count == q->cap) {
        size_t nc = q->cap ? q->cap * 2 : 16;
        char **n = lop_xmalloc(nc * sizeof *n);
        for (size_t i = 0; i < q->count; i++)
            n[i] = q->fifo[(q->head + i) % q->cap];
        free(q->fifo);
        q->fifo = n;
        q->cap = nc;
        q->head = 0;
    }
    q->fifo[(q->head + q->count) % q->cap] = lop_xstrdup(item);
    q->count++;
}

static char *fifo_pop(lop_workqueue_t *q)
{
    char *s = q->fifo[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    return s;
}

/* This thread's open batch: the queues it holds wake-ups for, and how many for each. */
#define BATCH_MAX 16
static _Thread_local struct {
    int depth;
    size_t n;
    lop_workqueue_t *q[BATCH_MAX];
    unsigned wakes[BATCH_MAX];
} tl_batch;

void lop_workqueue_batch_begin(void) { tl_batch.depth++; }

void lop_workqueue_batch_end(void)
{
    if (tl_batch.depth <= 0 || --tl_batch.depth > 0)
        return;
    for (size_t i = 0; i < tl_batch.n; i++) {
        lop_workqueue_t *q = tl_batch.q[i];
        pthread_mutex_lock(&q->mu);
        for (unsigned w = tl_batch.wakes[i]; w > 0 && q->idle_getters > q->wakes_pending; w--) {
            q->wakes_pending++;
            pthread_cond_signal(&q->cond);
        }
        bool last = --q->batch_pins == 0 && q->freed;
        pthread_mutex_unlock(&q->mu);
        if (last)
            release(q);
    }
    tl_batch.n = 0;
}

/* Defer one wake-up of q to this thread's batch end; false when no batch is open (or it is
 * full). Called with mu held. */
static bool batch_defer(lop_workqueue_t *q)
{
    if (tl_batch.depth <= 0)
        return false;
    for (size_t i = 0; i < tl_batch.n; i++)
        if (tl_batch.q[i] == q) {
            tl_batch.wakes[i]++;
            return true;
        }
    if (tl_batch.n == BATCH_MAX)
        return false;
    tl_batch.q[tl_batch.n] = q;
    tl_batch.wakes[tl_batch.n++] = 1;
    q->batch_pins++;
    return true;
}

void lop_wq_wake_one_locked(lop_workqueue_t *q)
{
    if (q->idle_getters > q->wakes_pending) {
        q->wakes_pending++;
        pthread_cond_signal(&q->cond);
    }
}

/* An add's wake-up: deferred inside a batch, else at once. Called with mu held. */
static void wake_for_add_locked(lop_workqueue_t *q)
{
    if (q->idle_getters > q->wakes_pending && !batch_defer(q))
        lop_wq_wake_one_locked(q);
}

void lop_wq_add_locked(lop_workqueue_t *q, const char *item)
{
    if (q->shutting_down || lop_strmap_has(&q->dirty, item))
        return;
    q->st.adds++;
    lop_strmap_put(&q->dirty, item, BOX(lop_clock_mono(q->clock)));
    if (lop_strmap_has(&q->processing, item))
        return; /* queued again by Done */
    fifo_push(q, item);
    wake_for_add_locked(q);
}

void lop_workqueue_add(lop_workqueue_t *q, const char *item)
{
    pthread_mutex_lock(&q->mu);
    lop_wq_pump_locked(q);
    lop_wq_add_locked(q, item);
    pthread_mutex_unlock(&q->mu);
}

/* Hand out the FIFO head (mu held, count > 0). *latency gets the queue latency (-1 if unknown). */
static char *take_locked(lop_workqueue_t *q, int64_t *latency)
{
    char *item = fifo_pop(q);
    int64_t now = lop_clock_mono(q->clock);
    bool found;
    /* dirty -> processing: the map entry moves (an item taken is never in processing, see add) */
    int64_t added = UNBOX(lop_strmap_move(&q->dirty, &q->processing, item, BOX(now), &found));
    *latency = found ? now - added : -1;
    if (found)
        q->st.queue_latency_sum_ns += now - added;
    else
        lop_strmap_put(&q->processing, item, BOX(now));
    q->st.gets++;
    return item;
}

/* Unlock mu, then report ns (when >= 0) to the observer read under the lock. */
static void observe_unlock(lop_workqueue_t *q, lop_wq_observe_kind_t kind, int64_t ns)
{
    lop_workqueue_observer_fn fn = q->observer;
    void *ud = q->observer_ud;
    pthread_mutex_unlock(&q->mu);
    if (fn && ns >= 0)
        fn(ud, kind, ns);
}

void lop_workqueue_set_observer(lop_workqueue_t *q, lop_workqueue_observer_fn fn, void *ud)
{
    pthread_mutex_lock(&q->mu);
    q->observer = fn;
    q->observer_ud = ud;
    pthread_mutex_unlock(&q->mu);
}

lop_rc_t lop_workqueue_get(lop_workqueue_t *q, char **item)
{
    pthread_mutex_lock(&q->mu);
    for (;;) {
        int64_t next = lop_wq_pump_locked(q);
        if (q->count > 0 || q->shutting_down)
            break;
        q->idle_getters++;
        lop_clock_wait_until(q->clock, &q->cond, &q->mu, next);
        q->idle_getters--;
        /* whatever woke us (signal, broadcast, timeout), one pending wake-up is used up; an
         * undercount only costs an extra signal later, never a missed one */
        if (q->wakes_pending > 0)
            q->wakes_pending--;
    }
    if (q->count == 0) {
        pthread_mutex_unlock(&q->mu);
        *item = NULL;
        return LOP_ECLOSED;
    }
    int64_t latency;
    *item = take_locked(q, &latency);
    observe_unlock(q, LOP_WQ_OBSERVE_QUEUE_LATENCY, latency);
    return LOP_OK;
}

lop_rc_t lop_workqueue_try_get(lop_workqueue_t *q, char **item)
{
    pthread_mutex_lock(&q->mu);
    lop_wq_pump_locked(q);
    lop_rc_t rc = LOP_OK;
    *item = NULL;
    int64_t latency = -1;
    if (q->count > 0)
        *item = take_locked(q, &latency);
    else
        rc = q->shutting_down ? LOP_ECLOSED : LOP_EAGAIN;
    observe_unlock(q, LOP_WQ_OBSERVE_QUEUE_LATENCY, latency);
    return rc;
}

void lop_workqueue_done(lop_workqueue_t *q, const char *item)
{
    pthread_mutex_lock(&q->mu);
    bool found;
    int64_t started = UNBOX(lop_strmap_del(&q->processing, item, &found));
    int64_t worked = -1;
    if (found) {
        worked = lop_clock_mono(q->clock) - started;
        q->st.work_duration_sum_ns += worked;
        q->st.work_done++;
        if (lop_strmap_has(&q->dirty, item)) {
            fifo_push(q, item);
            lop_wq_wake_one_locked(q);
        }
        /* A drain waits for processing to empty, also when this item was requeued (added again
         * while processing): its worker may stop without taking it again. */
        if (q->draining && q->processing.count == 0)
            pthread_cond_broadcast(&q->cond);
    }
    observe_unlock(q, LOP_WQ_OBSERVE_WORK_DURATION, worked);
}

size_t lop_workqueue_len(lop_workqueue_t *q)
{
    pthread_mutex_lock(&q->mu);
    lop_wq_pump_locked(q);
    size_t n = q->count;
    pthread_mutex_unlock(&q->mu);
    return n;
}

void lop_workqueue_shutdown(lop_workqueue_t *q)
{
    pthread_mutex_lock(&q->mu);
    q->shutting_down = true;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->mu);
}

void lop_workqueue_shutdown_with_drain(lop_workqueue_t *q)
{
    pthread_mutex_lock(&q->mu);
    q->shutting_down = true;
    q->draining = true;
    pthread_cond_broadcast(&q->cond);
    while (q->processing.count > 0)
        lop_clock_wait_until(&lop_clock_system, &q->cond, &q->mu, INT64_MAX);
    pthread_mutex_unlock(&q->mu);
}

bool lop_workqueue_shutdown_with_drain_until(lop_workqueue_t *q, int64_t deadline_ns)
{
    pthread_mutex_lock(&q->mu);
    q->shutting_down = true;
    q->draining = true;
    pthread_cond_broadcast(&q->cond);
    while (q->processing.count > 0 && lop_clock_mono(q->clock) < deadline_ns)
        lop_clock_wait_until(q->clock, &q->cond, &q->mu, deadline_ns);
    bool drained = q->processing.count == 0;
    pthread_mutex_unlock(&q->mu);
    return drained;
}

size_t lop_workqueue_processing_items(lop_workqueue_t *q, char **out, int64_t *out_ns, size_t max)
{
    pthread_mutex_lock(&q->mu);
    int64_t now = lop_clock_mono(q->clock);
    size_t n = 0;
    lop_strmap_iter_t it;
    for (lop_strmap_ent_t *e = lop_strmap_first(&q->processing, &it); e;
         e = lop_strmap_next(&q->processing, &it, e), n++) {
        if (n < max) {
            out[n] = lop_xstrdup(e->key);
            if (out_ns)
                out_ns[n] = now - UNBOX(e->val);
        }
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

bool lop_workqueue_shutting_down(lop_workqueue_t *q)
{
    pthread_mutex_lock(&q->mu);
    bool s = q->shutting_down;
    pthread_mutex_unlock(&q->mu);
    return s;
}

void lop_workqueue_stats(lop_workqueue_t *q, lop_workqueue_stats_t *out)
{
    pthread_mutex_lock(&q->mu);
    lop_wq_pump_locked(q);
    *out = q->st;
    out->depth = q->count;
    out->waiting = q->heap_len;
    out->processing = q->processing.count;
    int64_t now = lop_clock_mono(q->clock);
    out->unfinished_work_ns = 0;
    out->longest_running_ns = 0;
    lop_strmap_iter_t it;
    for (lop_strmap_ent_t *e = lop_strmap_first(&q->processing, &it); e;
         e = lop_strmap_next(&q->processing, &it, e)) {
        int64_t d = now - UNBOX(e->val);
        out->unfinished_work_ns += d;
        if (d > out->longest_running_ns)
            out->longest_running_ns = d;
    }
    pthread_mutex_unlock(&q->mu);
}
