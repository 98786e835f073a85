/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workqueue_heap.h — the delaying queue's waiting items: a min-heap of (ready time, item) with an
 * index by item, so an item waits at most once (scheduling it again keeps the earlier time). A
 * plain data structure: no lock (the queue's mutex guards it), no clock, no knowledge of the FIFO.
 * Used by workqueue_core.c (moving due items) and workqueue_delaying.c (AddAfter). Not a public
 * header.
 */
#ifndef LOP_KUBE_WORKQUEUE_WORKQUEUE_HEAP_H
#define LOP_KUBE_WORKQUEUE_WORKQUEUE_HEAP_H

#include "host/codec/strmap.h"

#include <stddef.h>
#include <stdint.h>

typedef struct lop_wq_waiting {
    int64_t ready_ns;
    uint64_t seq; /* insertion order breaks ties, so equal times fire FIFO */
    char *item;
} lop_wq_waiting_t;

typedef struct lop_wq_delay {
    lop_wq_waiting_t *v;
    size_t len, cap;
    uint64_t seq;
    lop_strmap_t index; /* item -> (void *)(heap position + 1) */
} lop_wq_delay_t;       /* zero-initialised = empty */

/* item (copied) becomes ready at ready_ns; when it is already waiting, the earlier time stays. */
void lop_wq_delay_schedule(lop_wq_delay_t *h, const char *item, int64_t ready_ns);
/* The earliest waiting item when it is ready at now (removed; the caller owns and frees it), else
 * NULL. */
char *lop_wq_delay_pop_due(lop_wq_delay_t *h, int64_t now);
/* The earliest ready time, INT64_MAX when nothing waits. */
static inline int64_t lop_wq_delay_next(const lop_wq_delay_t *h) { return h->len ? h->v[0].ready_ns : INT64_MAX; }
/* Frees every waiting item; h is empty afterwards. */
void lop_wq_delay_clear(lop_wq_delay_t *h);

#endif
