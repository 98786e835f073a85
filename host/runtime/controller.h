/* SPDX-License-Identifier: Apache-2.0 */
/*
 * controller.h — one controller: a workqueue of reconcile requests ("namespace/name" or "name")
 * and N worker threads, each with its own VM, calling the script's reconcile and mapping the
 * result to the queue exactly as controller-runtime does (internal/controller/controller.go):
 *
 *   DONE           -> Forget
 *   REQUEUE        -> AddRateLimited
 *   REQUEUE_AFTER  -> Forget + AddAfter(requeue_after)
 *   ERROR          -> AddRateLimited (error logged; a raised error with its traceback)
 *   TERMINAL       -> Forget, no retry (counted as a terminal error)
 *
 * Workers first wait for the controller's sources (the informers it watches) to sync, when the
 * controller was made with wait_for_sync: a reconcile never reads a cache that is still being
 * filled, so it cannot, say, create a child that is merely not listed yet (controller-runtime's
 * Controller.Start waits for every source's WaitForSync before starting its workers).
 * Workers of a controller that needs a leader also wait at the gate before each item.
 * Thread-safety: enqueue from any thread; start/stop from the owner thread.
 */
#ifndef LOP_RUNTIME_CONTROLLER_H
#define LOP_RUNTIME_CONTROLLER_H

#include "host/kube/workqueue/workqueue.h"
#include "host/runtime/gate.h"
#include "host/runtime/scriptrt.h"
#include "host/util/clock.h"
#include "host/util/buf.h"

#include <stdint.h>

typedef struct lop_controller lop_controller_t;

/* Counters a controller keeps (read with lop_controller_stats). */
typedef struct lop_controller_stats {
    uint64_t reconciles;      /* finished reconciles, any result */
    uint64_t successes;       /* DONE / REQUEUE_AFTER */
    uint64_t requeues;        /* REQUEUE */
    uint64_t errors;          /* ERROR */
    uint64_t terminal_errors; /* TERMINAL */
    uint64_t timeouts;        /* ERROR caused by the deadline */
    int active_workers;       /* reconciles running now */
    int waiting_for_sync;     /* workers started but held until the sources have synced */
} lop_controller_stats_t;

/* Called after each reconcile (metrics); may be NULL. Runs on the worker thread. */
typedef void (*lop_reconcile_observer_fn)(void *ud, const char *controller, lop_result_kind_t kind,
                                          int64_t duration_ns);

/* Called after each reconcile with the worker's VM size (engine->memory), worker in
 * 0..workers-1; may be NULL. Runs on the worker thread. */
typedef void (*lop_vm_memory_observer_fn)(void *ud, const char *controller, int worker, size_t bytes);

typedef struct lop_controller_opts {
    const char *name;                  /* copied */
    const char *group;                 /* the for_ kind's API group ("" core), copied; NULL = "" — for logs */
    const char *kind;                  /* the for_ kind, copied; NULL = "" — for logs */
    int workers;                       /* max_concurrent_reconciles, >= 1 */
    const lop_clock_t *clock;          /* borrowed; NULL = system */
    lop_ratelimit_decl_t rate_limiter; /* the queue's limiter; zero fields = client-go's defaults */
    lop_scriptrt_t *rt;                /* borrowed */
    lop_gate_t *gate;                  /* borrowed; NULL = never gated */
    bool wait_for_sync;                /* workers wait for lop_controller_sources_synced */
    lop_reconcile_observer_fn observer;
    void *observer_ud;
    lop_vm_memory_observer_fn memory_observer; /* ud = observer_ud */
} lop_controller_opts_t;

lop_controller_t *lop_controller_new(const lop_controller_opts_t *opts);
/* Queue a reconcile request; ns may be NULL or "" for cluster-scoped objects. */
void lop_controller_enqueue(lop_controller_t *c, const char *ns, const char *name);
/* Start the worker threads. With wait_for_sync they take no item before
 * lop_controller_sources_synced (items queued meanwhile wait in the queue). */
LOP_MUST_CHECK lop_rc_t lop_controller_start(lop_controller_t *c, lop_err_t *err);
/* Every source of the controller has synced: its workers may start taking items. Idempotent;
 * any thread (the manager calls it from the informer that syncs last). */
void lop_controller_sources_synced(lop_controller_t *c);
/* Whether the workers may take items (true without wait_for_sync). */
bool lop_controller_sources_ready(lop_controller_t *c);
/*
 * Stop taking work (the queue shuts down; queued items are still handed out, as client-go's
 * ShutDownWithDrain) and wait up to grace_ns (on the controller's clock; <= 0 = without bound)
 * for in-flight reconciles, then join the workers. Returns 0 then.
 * When reconciles are still running at the end of the grace period, each is logged (warn,
 * "abandoning an in-flight reconcile" with controller, key and running time) and their number is
 * returned: the workers are NOT joined and keep using the controller, its script runtime and the
 * REST client, so the caller must not free any of them (lop_controller_free becomes a no-op) and
 * should exit the process. Calling stop again returns the same number.
 */
size_t lop_controller_stop(lop_controller_t *c, int64_t grace_ns);
/* Same with an absolute deadline (monotonic ns of the controller's clock; INT64_MAX = none), so
 * several controllers can share one grace period. */
size_t lop_controller_stop_until(lop_controller_t *c, int64_t deadline_ns);
/* Stop intake only: shut the queue down so workers take no new key after the queued ones (used
 * to stop every controller at once before waiting for each). */
void lop_controller_shutdown_intake(lop_controller_t *c);
/* Free (stopping without bound first). A no-op for a controller whose stop abandoned reconciles. */
void lop_controller_free(lop_controller_t *c);
const char *lop_controller_name(const lop_controller_t *c);
lop_workqueue_t *lop_controller_queue(lop_controller_t *c);
void lop_controller_stats(lop_controller_t *c, lop_controller_stats_t *out);
/* The keys whose last reconcile returned an error or a terminal error (a later success, requeue
 * or requeue-after clears a key): their number; when out is not NULL, one line per key is
 * appended, "<controller> <namespace/name>: <error message>\n" (in no particular order). Any
 * thread. */
size_t lop_controller_failing(lop_controller_t *c, lop_buf_t *out);

/* Process exactly one item synchronously on the calling thread with the given slot (tests and
 * single-threaded tools). Returns LOP_EAGAIN when no item is ready. */
LOP_MUST_CHECK lop_rc_t lop_controller_process_one(lop_controller_t *c, lop_vm_slot_t *slot);

#endif
