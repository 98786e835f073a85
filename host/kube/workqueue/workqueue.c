/* workqueue.c — the deduplicating FIFO with dirty/processing sets (see workqueue.h). */
#include "host/kube/workqueue/workqueue_impl.h"

#include "host/util/buf.h"

#include <stdlib.h>
#include <string.h>

#define BOX(t)   ((void *)(intptr_t)(t))
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
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    q->shutting_down = true;
    pthread_cond_broadcast(&q->cond);
    bool pinned = q->batch_pins > 0;
    q->freed = pinned;
    pthread_mutex_unlock(&q->mu);
    if (!pinned) release(q);
}

static void release(lop_workqueue_t *q)
{
    for (size_t i = 0; i < q->count; i++) free(q->fifo[(q->head + i) % q->cap]);
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

static void fifo_push_owned(lop_workqueue_t *q, char *item)
{
    if (q->count == q->cap) {
        size_t nc = q->cap ? q->cap * 2 : 16;
        char **n = lop_xmalloc(nc * sizeof *n);
        for (size_t i = 0; i < q->count; i++) n[i] = q->fifo[(q->head + i) % q->cap];
        free(q->fifo);
        q->fifo = n;
        q->cap = nc;
        q->head = 0;
    }
    q->fifo[(q->head + q->count) % q->cap] = item;
    q->count++;
}

static char *fifo_pop(lop_workqueue_t *q)
{
    char *s = q->fifo[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    return s;
}

void lop_wq_wake_one_locked(lop_workqueue_t *q)
{
    if (q->idle_getters > q->wakes_pending) {
        q->wakes_pending++;
        pthread_cond_signal(&q->cond);
    }
}

/* This thread's open batch: for each queue it added to, the adds held back until the batch
 * ends (owned copies, in order) and the wake-ups deferred for items already queued (held adds
 * queued early by this thread's own reads, delaying-queue items coming due, add_after(0)). A
 * queue beyond BATCH_MAX gets no slot: its adds go in at once and wake at once. */
#define BATCH_MAX 16
typedef struct batch_slot {
    lop_workqueue_t *q;
    char **items;
    size_t n, cap;
    unsigned wakes;
} batch_slot_t;
static _Thread_local struct {
    int depth;
    size_t n;
    batch_slot_t s[BATCH_MAX];
} tl_batch;

static bool add_owned_locked(lop_workqueue_t *q, char *item);

/* Queue the slot's held items (mu held). Returns how many reached the FIFO. */
static unsigned slot_flush_locked(batch_slot_t *b)
{
    unsigned pushed = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (b->q->freed)
            free(b->items[i]);
        else
            pushed += add_owned_locked(b->q, b->items[i]);
    }
    b->n = 0;
    return pushed;
}

/* This thread's slot for q, pinning q on first use; NULL outside a batch or when it is full. */
static batch_slot_t *batch_slot(lop_workqueue_t *q, bool pin_locked)
{
    if (tl_batch.depth <= 0) return NULL;
    for (size_t i = 0; i < tl_batch.n; i++)
        if (tl_batch.s[i].q == q) return &tl_batch.s[i];
    if (tl_batch.n == BATCH_MAX) return NULL;
    if (!pin_locked) pthread_mutex_lock(&q->mu);
    q->batch_pins++;
    if (!pin_locked) pthread_mutex_unlock(&q->mu);
    batch_slot_t *b = &tl_batch.s[tl_batch.n++];
    b->q = q;
    b->n = 0;
    b->wakes = 0;
    return b;
}

/* The calling thread's held adds for q become visible to its own reads (len, stats). mu held. */
static void flush_own_locked(lop_workqueue_t *q)
{
    if (tl_batch.depth <= 0) return;
    for (size_t i = 0; i < tl_batch.n; i++)
        if (tl_batch.s[i].q == q) {
            tl_batch.s[i].wakes += slot_flush_locked(&tl_batch.s[i]);
            return;
        }
}

void lop_workqueue_batch_begin(void) { tl_batch.depth++; }

/* Queue slot b's held items and wake as many idle workers as it owes (its queue's mu held). */
static void slot_publish_locked(batch_slot_t *b)
{
    lop_workqueue_t *q = b->q;
    if (!q->freed) lop_wq_pump_locked(q);
    unsigned w = b->wakes + slot_flush_locked(b);
    b->wakes = 0;
    for (; w > 0 && q->idle_getters > q->wakes_pending; w--) {
        q->wakes_pending++;
        pthread_cond_signal(&q->cond);
    }
}

void lop_workqueue_batch_flush(void)
{
    if (tl_batch.depth <= 0) return;
    for (size_t i = 0; i < tl_batch.n; i++) {
        pthread_mutex_lock(&tl_batch.s[i].q->mu);
        slot_publish_locked(&tl_batch.s[i]);
        pthread_mutex_unlock(&tl_batch.s[i].q->mu);
    }
}

void lop_workqueue_batch_end(void)
{
    if (tl_batch.depth <= 0 || --tl_batch.depth > 0) return;
    for (size_t i = 0; i < tl_batch.n; i++) {
        batch_slot_t *b = &tl_batch.s[i];
        lop_workqueue_t *q = b->q;
        pthread_mutex_lock(&q->mu);
        slot_publish_locked(b);
        bool last = --q->batch_pins == 0 && q->freed;
        pthread_mutex_unlock(&q->mu);
        if (last) release(q);
        free(b->items);
        b->items = NULL;
        b->cap = 0;
    }
    tl_batch.n = 0;
}

/* Defer one wake-up of q to this thread's batch end; false when no batch is open (or it is
 * full). Called with mu held. */
static bool batch_defer(lop_workqueue_t *q)
{
    batch_slot_t *b = batch_slot(q, true);
    if (!b) return false;
    b->wakes++;
    return true;
}

/* An add's wake-up: deferred inside a batch, else at once. Called with mu held. */
static void wake_for_add_locked(lop_workqueue_t *q)
{
    if (q->idle_getters > q->wakes_pending && !batch_defer(q)) lop_wq_wake_one_locked(q);
}

/* Add taking ownership of item (freed when it is not queued). True when it entered the FIFO
 * (the caller owes a wake-up). Called with mu held. */
static bool add_owned_locked(lop_workqueue_t *q, char *item)
{
    if (q->shutting_down || lop_strmap_has(&q->dirty, item)) {
        free(item);
        return false;
    }
    q->st.adds++;
    lop_strmap_put(&q->dirty, item, BOX(lop_clock_mono(q->clock)));
    if (lop_strmap_has(&q->processing, item)) { /* queued again by Done */
        free(item);
        return false;
    }
    fifo_push_owned(q, item);
    return true;
}

void lop_wq_add_locked(lop_workqueue_t *q, const char *item)
{
    if (q->shutting_down || lop_strmap_has(&q->dirty, item)) return;
    if (add_owned_locked(q, lop_xstrdup(item))) wake_for_add_locked(q);
}

void lop_workqueue_add(lop_workqueue_t *q, const char *item)
{
    /* inside a batch: held by this thread, no lock taken, queued at the batch end */
    batch_slot_t *b = batch_slot(q, false);
    if (b) {
        if (b->n == b->cap) {
            b->cap = b->cap ? 2 * b->cap : 32;
            b->items = lop_xrealloc(b->items, b->cap * sizeof *b->items);
        }
        b->items[b->n++] = lop_xstrdup(item);
        return;
    }
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
    flush_own_locked(q);
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
    flush_own_locked(q);
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
            fifo_push_owned(q, lop_xstrdup(item));
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
    flush_own_locked(q);
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
            if (out_ns) out_ns[n] = now - UNBOX(e->val);
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
    flush_own_locked(q);
    lop_wq_pump_locked(q);
    *out = q->st;
    out->depth = q->count;
    out->waiting = q->heap_len;
    out->processing = q->processing.count;
    int64_t now = lop_clock_mono(q->clock);
    out->unfinished_work_ns = 0;
    out->longest_running_ns = 0;
    lop_strmap_iter_t it;
    for (lop_strmap_ent_t *e = lop_strmap_first(&q->processing, &it); e; e = lop_strmap_next(&q->processing, &it, e)) {
        int64_t d = now - UNBOX(e->val);
        out->unfinished_work_ns += d;
        if (d > out->longest_running_ns) out->longest_running_ns = d;
    }
    pthread_mutex_unlock(&q->mu);
}
