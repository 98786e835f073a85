/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workqueue.h — the controller work queue with client-go's semantics (util/workqueue):
 *
 *   queue (workqueue.c):   FIFO of string items ("namespace/name") with dedup. An item is "dirty"
 *     from Add until a worker Gets it and "processing" from Get until Done. An item is never handed
 *     to two workers at once: re-added while processing, it is queued again only at Done, once.
 *     Get blocks until an item is available or the queue shuts down.
 *   delaying (workqueue_delaying.c): AddAfter puts an item on a min-heap keyed by its ready time
 *     (read from the injected clock); adding an item already waiting keeps the earlier time.
 *     Ready items move into the FIFO whenever the queue is touched (Get, Len, Add, stats), and a
 *     blocked Get waits until the earliest ready time, so no background thread is needed.
 *   rate limited (workqueue_ratelimited.c): AddRateLimited = AddAfter(limiter.When(item));
 *     Forget and NumRequeues forward to the limiter.
 *   (Internally, workqueue.c and workqueue_delaying.c stand on workqueue_core.c: the FIFO, the add
 *   path and batching; it stands on workqueue_heap.c, the delay heap.)
 *
 * Shutdown: ShutDown makes Get return LOP_ECLOSED once the FIFO is empty (items already queued are
 * still handed out, as client-go does) and makes Add/AddAfter no-ops. ShutDownWithDrain also
 * waits until every item being processed is Done.
 *
 * Thread-safety: every function may be called from any thread, concurrently (one mutex).
 * Time: lop_clock_t (ns). Tests use a lop_fake_clock_t and step it.
 */
#ifndef LOP_KUBE_WORKQUEUE_WORKQUEUE_H
#define LOP_KUBE_WORKQUEUE_WORKQUEUE_H

#include "host/kube/workqueue/ratelimiter.h"
#include "host/util/clock.h"
#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lop_workqueue lop_workqueue_t;

/* Metrics, as client-go's workqueue metrics provider reports them. Counters are monotonic. */
typedef struct lop_workqueue_stats {
    size_t depth;                 /* items in the FIFO (ready, not processing) */
    size_t waiting;               /* items waiting on the delay heap */
    size_t processing;            /* items handed out and not yet Done */
    uint64_t adds;                /* Adds that were not deduplicated away */
    uint64_t retries;             /* AddAfter (and so AddRateLimited) calls, as client-go counts */
    uint64_t gets;                /* items handed to workers */
    int64_t queue_latency_sum_ns; /* sum over gets of (get time - first add time) */
    int64_t work_duration_sum_ns; /* sum over Done of (done time - get time) */
    uint64_t work_done;           /* number of Done calls that ended processing */
    int64_t unfinished_work_ns;   /* sum over processing items of (now - get time) */
    int64_t longest_running_ns;   /* max over processing items of (now - get time) */
} lop_workqueue_stats_t;

/*
 * Create a queue. name is for logs (copied, may be NULL). clock is borrowed and must outlive the
 * queue (NULL = the system clock). limiter (may be NULL: AddRateLimited then behaves as Add) is
 * owned by the queue from now on. Returns NULL only on bad arguments (none today).
 */
lop_workqueue_t *lop_workqueue_new(const char *name, const lop_clock_t *clock, lop_ratelimiter_t *limiter);
/* Shut down (if not yet) and free. No thread may be using the queue any more. NULL accepted. */
void lop_workqueue_free(lop_workqueue_t *q);

/* Queue item (copied). No-op if it is already dirty or the queue is shutting down. */
void lop_workqueue_add(lop_workqueue_t *q, const char *item);
/*
 * Block until an item is ready, then mark it processing and return it in *item (malloc'd, the
 * caller frees it after calling Done). Returns LOP_OK, or LOP_ECLOSED (with *item = NULL) once the
 * queue is shut down and its FIFO is empty.
 */
LOP_MUST_CHECK lop_rc_t lop_workqueue_get(lop_workqueue_t *q, char **item);
/* Like get but never blocks: LOP_EAGAIN when nothing is ready. */
LOP_MUST_CHECK lop_rc_t lop_workqueue_try_get(lop_workqueue_t *q, char **item);
/* Mark item (borrowed) as finished. If it was re-added meanwhile, it is queued again now. */
void lop_workqueue_done(lop_workqueue_t *q, const char *item);
/* Number of ready items (FIFO depth; excludes processing and waiting items). */
size_t lop_workqueue_len(lop_workqueue_t *q);
void lop_workqueue_shutdown(lop_workqueue_t *q);
/* Shut down and block until every processing item is Done. */
void lop_workqueue_shutdown_with_drain(lop_workqueue_t *q);
bool lop_workqueue_shutting_down(lop_workqueue_t *q);
void lop_workqueue_stats(lop_workqueue_t *q, lop_workqueue_stats_t *out);

/*
 * Per-item observer (client-go's queue_duration / work_duration histograms): called with
 * LOP_WQ_OBSERVE_QUEUE_LATENCY and the time from the first Add to the Get that handed the item
 * out, and with LOP_WQ_OBSERVE_WORK_DURATION and the time from Get to Done, in ns on the queue's
 * clock. Runs on the thread calling Get/Done, after the queue's lock is released, so it may take
 * other locks (the metrics registry) but must not block for long. Install before workers start;
 * NULL removes it.
 */
typedef enum lop_wq_observe_kind {
    LOP_WQ_OBSERVE_QUEUE_LATENCY = 0,
    LOP_WQ_OBSERVE_WORK_DURATION = 1,
} lop_wq_observe_kind_t;
typedef void (*lop_workqueue_observer_fn)(void *ud, lop_wq_observe_kind_t kind, int64_t ns);
void lop_workqueue_set_observer(lop_workqueue_t *q, lop_workqueue_observer_fn fn, void *ud);

/*
 * Shut down like lop_workqueue_shutdown_with_drain but wait only until deadline_ns (monotonic
 * time of the queue's clock). Returns true when every processing item was Done in time, false
 * when items were still processing at the deadline (they stay marked processing; the caller
 * decides what to do about them, see lop_workqueue_processing_items).
 */
bool lop_workqueue_shutdown_with_drain_until(lop_workqueue_t *q, int64_t deadline_ns);

/*
 * Snapshot of the items being processed now: appends each item and the ns it has been running
 * (now - Get) to out/out_ns, up to max entries (items are copied, caller frees each). Returns the
 * number of processing items (may exceed max).
 */
size_t lop_workqueue_processing_items(lop_workqueue_t *q, char **out, int64_t *out_ns, size_t max);

/*
 * Batching for a thread that adds items in bursts (an informer's thread while it decodes one
 * read of a watch stream, or delivers a relist). Between lop_workqueue_batch_begin and
 * lop_workqueue_batch_end, the items this thread adds with lop_workqueue_add are held by the
 * thread (no lock is taken) and queued, in order and deduplicated as usual, at batch_end under
 * one lock; blocked workers are woken then, one per queued item, as many as are idle. A burst
 * thus costs one lock and a few wake-ups instead of a lock round trip contended with the workers
 * and a futex wake per item. The adding thread's own reads (len, stats, get, try_get) queue its
 * held items for that queue first (other threads then see them too; the wake-ups still wait for
 * batch_end); otherwise other threads see them at batch_end or at lop_workqueue_batch_flush.
 * An item's queue time (workqueue_queue_duration) starts when it is queued, not when it was held.
 * An add_after/rate-limited add goes in at once; its wake-up waits for batch_end. Pairs nest;
 * only the outermost end publishes; only the calling thread is affected; never block waiting for
 * a worker inside a batch. A queue shut down before its items are queued drops them as it drops
 * any later add; a queue freed inside a batch (by any thread) is released at the batch's end.
 * The runtime binds reflectors' and informers' handler bursts to these (lop_handler_batch_t in
 * host/kube/cache/reflector.h), so a watch read or a relist is one batch.
 */
void lop_workqueue_batch_begin(void);
void lop_workqueue_batch_end(void);
/* Inside a batch (at any depth): queue this thread's held items now and wake idle workers for
 * them; the batch stays open. A no-op outside a batch. For long bursts: a relist delivers in
 * steps of a few hundred changes so that the workers start on the first. */
void lop_workqueue_batch_flush(void);

/* Delaying: queue item after delay_ns (<= 0 = Add now). No-op when shutting down. */
void lop_workqueue_add_after(lop_workqueue_t *q, const char *item, int64_t delay_ns);

/* Rate limited: AddAfter(item, limiter.When(item)). */
void lop_workqueue_add_rate_limited(lop_workqueue_t *q, const char *item);
/* limiter.Forget(item): the item succeeded. */
void lop_workqueue_forget(lop_workqueue_t *q, const char *item);
/* limiter.NumRequeues(item). 0 without a limiter. */
int lop_workqueue_num_requeues(lop_workqueue_t *q, const char *item);

#endif
