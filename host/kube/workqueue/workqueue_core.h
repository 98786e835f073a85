/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workqueue_core.h — the queue's state and the locked primitives every part of the queue shares:
 * the FIFO, the add path (dedup, the thread's batch of held adds and deferred wake-ups), moving
 * due delayed items into the FIFO, and the final release. Defined in workqueue_core.c, which calls
 * only the delay heap (workqueue_heap.h); used by workqueue.c (the queue's API) and
 * workqueue_delaying.c (AddAfter). Not a public header.
 */
#ifndef LOP_KUBE_WORKQUEUE_WORKQUEUE_CORE_H
#define LOP_KUBE_WORKQUEUE_WORKQUEUE_CORE_H

#include "host/codec/strmap.h"
#include "host/kube/workqueue/workqueue.h"
#include "host/kube/workqueue/workqueue_heap.h"

#include <pthread.h>

struct lop_workqueue {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    const lop_clock_t *clock;
    char *name;
    lop_ratelimiter_t *limiter;

    /* FIFO ring of owned strings */
    char **fifo;
    size_t head, count, cap;

    lop_strmap_t dirty;      /* item -> (int64_t) first-add time, boxed */
    lop_strmap_t processing; /* item -> (int64_t) get time, boxed */
    bool shutting_down, draining;

    lop_wq_delay_t delay; /* AddAfter's waiting items */

    /* Getters blocked in lop_workqueue_get, and how many of them were signalled and have not
     * yet woken: an add signals only when some blocked getter has no wake-up on its way, so a
     * busy worker costs no futex call and a burst of adds wakes a sleeping worker once. */
    unsigned idle_getters, wakes_pending;
    /* threads holding wake-ups for this queue in a batch; freed = lop_workqueue_free was called
     * while some were, and the last batch_end releases the queue */
    unsigned batch_pins;
    bool freed;

    lop_workqueue_stats_t st; /* counters; gauges are computed on demand */

    lop_workqueue_observer_fn observer; /* guarded by mu; called after unlocking */
    void *observer_ud;
};

#define LOP_WQ_BOX(t)   ((void *)(intptr_t)(t))
#define LOP_WQ_UNBOX(p) ((int64_t)(intptr_t)(p))

/* Append item to the FIFO, taking ownership. Called with mu held. */
void lop_wq_fifo_push_owned(lop_workqueue_t *q, char *item);
/* Remove and return the FIFO head (the caller owns it). Called with mu held, count > 0. */
char *lop_wq_fifo_pop(lop_workqueue_t *q);
/* Wake one blocked getter for a newly queued item, if one needs waking. Called with mu held. */
void lop_wq_wake_one_locked(lop_workqueue_t *q);
/* Add item (copied): dedup, then the FIFO, its wake-up deferred to this thread's batch when one is
 * open. Called with mu held. */
void lop_wq_add_locked(lop_workqueue_t *q, const char *item);
/* Inside this thread's batch: hold a copy of item for q until the batch publishes it and return
 * true (no lock taken, unless this is q's first use in the batch). False outside a batch or when
 * the batch has no slot left: the caller adds at once. */
bool lop_wq_batch_hold(lop_workqueue_t *q, const char *item);
/* The calling thread's held adds for q become visible to its own reads (len, stats). mu held. */
void lop_wq_flush_own_locked(lop_workqueue_t *q);
/* Move every waiting item whose time has come into the FIFO. Returns the earliest remaining
 * ready time, INT64_MAX when none. Called with mu held. */
int64_t lop_wq_pump_locked(lop_workqueue_t *q);
/* Free q and everything it holds (mu not held; no thread uses q any more, no batch pins it). */
void lop_wq_release(lop_workqueue_t *q);

#endif
