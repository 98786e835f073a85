/* SPDX-License-Identifier: Apache-2.0 */
/* workqueue_core.c — the locked primitives the queue's API (workqueue.c) and AddAfter
 * (workqueue_delaying.c) share: the FIFO ring, the add path with its dedup and this thread's batch
 * of held adds and deferred wake-ups (lop_workqueue_batch_*), moving due delayed items into the
 * FIFO, and the release of a freed queue (see workqueue_core.h). Calls only the delay heap. */
#include "host/kube/workqueue/workqueue_core.h"

#include "host/util/buf.h"

#include <stdlib.h>
#include <string.h>

void lop_wq_release(lop_workqueue_t *q)
{
    for (size_t i = 0; i < q->count; i++) free(q->fifo[(q->head + i) % q->cap]);
    free(q->fifo);
    lop_strmap_clear(&q->dirty);
    lop_strmap_clear(&q->processing);
    lop_wq_delay_clear(&q->delay);
    lop_ratelimiter_free(q->limiter);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->mu);
    free(q->name);
    free(q);
}

void lop_wq_fifo_push_owned(lop_workqueue_t *q, char *item)
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

char *lop_wq_fifo_pop(lop_workqueue_t *q)
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

void lop_wq_flush_own_locked(lop_workqueue_t *q)
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
        if (last) lop_wq_release(q);
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
    lop_strmap_put(&q->dirty, item, LOP_WQ_BOX(lop_clock_mono(q->clock)));
    if (lop_strmap_has(&q->processing, item)) { /* queued again by Done */
        free(item);
        return false;
    }
    lop_wq_fifo_push_owned(q, item);
    return true;
}

void lop_wq_add_locked(lop_workqueue_t *q, const char *item)
{
    if (q->shutting_down || lop_strmap_has(&q->dirty, item)) return;
    if (add_owned_locked(q, lop_xstrdup(item))) wake_for_add_locked(q);
}

bool lop_wq_batch_hold(lop_workqueue_t *q, const char *item)
{
    batch_slot_t *b = batch_slot(q, false);
    if (!b) return false;
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 32;
        b->items = lop_xrealloc(b->items, b->cap * sizeof *b->items);
    }
    b->items[b->n++] = lop_xstrdup(item);
    return true;
}

int64_t lop_wq_pump_locked(lop_workqueue_t *q)
{
    if (q->delay.len == 0) return INT64_MAX;
    int64_t now = lop_clock_mono(q->clock);
    char *item;
    while ((item = lop_wq_delay_pop_due(&q->delay, now)) != NULL) {
        lop_wq_add_locked(q, item);
        free(item);
    }
    return lop_wq_delay_next(&q->delay);
}
