/*
 * workqueue_impl.h — internals shared by workqueue.c, workqueue_delaying.c and
 * workqueue_ratelimited.c. Not a public header.
 */
#ifndef LOP_KUBE_WORKQUEUE_WORKQUEUE_IMPL_H
#define LOP_KUBE_WORKQUEUE_WORKQUEUE_IMPL_H

#include "host/codec/strmap.h"
#include "host/kube/workqueue/workqueue.h"

#include <pthread.h>

typedef struct lop_wq_waiting {
    int64_t ready_ns;
    uint64_t seq; /* insertion order breaks ties, so equal times fire FIFO */
    char *item;
} lop_wq_waiting_t;

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

    /* delay heap */
    lop_wq_waiting_t *heap;
    size_t heap_len, heap_cap;
    uint64_t heap_seq;
    lop_strmap_t waiting; /* item -> (void *)(heap index + 1) */

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

/* Wake one blocked getter for a newly queued item, if one needs waking. Called with mu held. */
void lop_wq_wake_one_locked(lop_workqueue_t *q);
/* Called with mu held. */
void lop_wq_add_locked(lop_workqueue_t *q, const char *item);
/* Move every waiting item whose time has come into the FIFO. Returns the earliest remaining
 * ready time, INT64_MAX when none. Called with mu held. */
int64_t lop_wq_pump_locked(lop_workqueue_t *q);
void lop_wq_heap_free(lop_workqueue_t *q);

#endif
