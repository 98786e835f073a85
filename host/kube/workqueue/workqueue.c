/* SPDX-License-Identifier: Apache-2.0 */
/* workqueue.c — the deduplicating FIFO with dirty/processing sets (see workqueue.h). */
#include "host/kube/workqueue/workqueue_core.h"

#include "host/util/buf.h"

#include <stdlib.h>
#include <string.h>

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

void lop_workqueue_free(lop_workqueue_t *q)
{
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    q->shutting_down = true;
    pthread_cond_broadcast(&q->cond);
    bool pinned = q->batch_pins > 0;
    q->freed = pinned;
    pthread_mutex_unlock(&q->mu);
    if (!pinned) lop_wq_release(q);
}

void lop_workqueue_add(lop_workqueue_t *q, const char *item)
{
    /* inside a batch: held by this thread, no lock taken, queued at the batch end */
    if (lop_wq_batch_hold(q, item)) return;
    pthread_mutex_lock(&q->mu);
    lop_wq_pump_locked(q);
    lop_wq_add_locked(q, item);
    pthread_mutex_unlock(&q->mu);
}

/* Hand out the FIFO head (mu held, count > 0). *latency gets the queue latency (-1 if unknown). */
static char *take_locked(lop_workqueue_t *q, int64_t *latency)
{
    char *item = lop_wq_fifo_pop(q);
    int64_t now = lop_clock_mono(q->clock);
    bool found;
    /* dirty -> processing: the map entry moves (an item taken is never in processing, see add) */
    int64_t added = LOP_WQ_UNBOX(lop_strmap_move(&q->dirty, &q->processing, item, LOP_WQ_BOX(now), &found));
    *latency = found ? now - added : -1;
    if (found)
        q->st.queue_latency_sum_ns += now - added;
    else
        lop_strmap_put(&q->processing, item, LOP_WQ_BOX(now));
    q->st.gets++;
    return item;
}

/* Unlock mu, then report ns (when >= 0) to the observer read under the lock. */
static void observe_unlock(lop_workqueue_t *q, lop_wq_observe_kind_t kind, int64_t ns)
{
    lop_workqueue_observer_fn fn = q->observer;
    void *ud = q->observer_ud;
    pthread_mutex_unlock(&q->mu);
    if (fn && ns >= 0) fn(ud, kind, ns);
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
    lop_wq_flush_own_locked(q);
    for (;;) {
        int64_t next = lop_wq_pump_locked(q);
        if (q->count > 0 || q->shutting_down) break;
        q->idle_getters++;
        lop_clock_wait_until(q->clock, &q->cond, &q->mu, next);
        q->idle_getters--;
        /* whatever woke us (signal, broadcast, timeout), one pending wake-up is used up; an
         * undercount only costs an extra signal later, never a missed one */
        if (q->wakes_pending > 0) q->wakes_pending--;
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
    lop_wq_flush_own_locked(q);
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
    int64_t started = LOP_WQ_UNBOX(lop_strmap_del(&q->processing, item, &found));
    int64_t worked = -1;
    if (found) {
        worked = lop_clock_mono(q->clock) - started;
        q->st.work_duration_sum_ns += worked;
        q->st.work_done++;
        if (lop_strmap_has(&q->dirty, item)) {
            lop_wq_fifo_push_owned(q, lop_xstrdup(item));
            lop_wq_wake_one_locked(q);
        }
        /* A drain waits for processing to empty, also when this item was requeued (added again
         * while processing): its worker may stop without taking it again. */
        if (q->draining && q->processing.count == 0) pthread_cond_broadcast(&q->cond);
    }
    observe_unlock(q, LOP_WQ_OBSERVE_WORK_DURATION, worked);
}

size_t lop_workqueue_len(lop_workqueue_t *q)
{
    pthread_mutex_lock(&q->mu);
    lop_wq_flush_own_locked(q);
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
    while (q->processing.count > 0) lop_clock_wait_until(&lop_clock_system, &q->cond, &q->mu, INT64_MAX);
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
            if (out_ns) out_ns[n] = now - LOP_WQ_UNBOX(e->val);
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
    lop_wq_flush_own_locked(q);
    lop_wq_pump_locked(q);
    *out = q->st;
    out->depth = q->count;
    out->waiting = q->delay.len;
    out->processing = q->processing.count;
    int64_t now = lop_clock_mono(q->clock);
    out->unfinished_work_ns = 0;
    out->longest_running_ns = 0;
    lop_strmap_iter_t it;
    for (lop_strmap_ent_t *e = lop_strmap_first(&q->processing, &it); e; e = lop_strmap_next(&q->processing, &it, e)) {
        int64_t d = now - LOP_WQ_UNBOX(e->val);
        out->unfinished_work_ns += d;
        if (d > out->longest_running_ns) out->longest_running_ns = d;
    }
    pthread_mutex_unlock(&q->mu);
}
