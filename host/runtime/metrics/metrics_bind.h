/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_bind.h — wiring the standard families (metrics_std.h) to the components that already
 * keep the numbers, so nothing has to push: at scrape time the bound children read the
 * component's stats (workqueue, controller, store, reflector, elector) through gauge/counter
 * callbacks. Per-event values that only exist at the moment they happen (reconcile results and
 * durations, REST requests, each item's queue and work durations) are recorded by the small observe
 * functions below, which a component calls from its hook.
 *
 *   lop_metrics_queue_t qm;
 *   lop_metrics_bind_queue(&std, "memcached", queue, &qm, &err);   // after creating the queue
 *   ...
 *   lop_metrics_unbind_queue(&qm, queue);                            // before freeing it
 *
 * Lifetime: a bound component must stay alive until it is unbound; once an unbind call returns,
 * no callback runs for it any more. Binding the same name again rebinds to the new component
 * (e.g. a controller rebuilt after a script reload); unbinding the old component afterwards
 * leaves the new binding alone, so the order of the two does not matter.
 * Thread-safety: every function is safe from any thread; callbacks run on the scraping thread and
 * only call the components' own thread-safe stats functions.
 */
#ifndef LOP_RUNTIME_METRICS_METRICS_BIND_H
#define LOP_RUNTIME_METRICS_METRICS_BIND_H

#include "host/kube/leaderelection/leaderelection.h"
#include "host/kube/cache/reflector.h"
#include "host/kube/cache/store.h"
#include "host/kube/workqueue/workqueue.h"
#include "host/runtime/controller.h"
#include "host/runtime/engine.h"
#include "host/runtime/metrics/metrics_std.h"

/*
 * Workqueue: depth (ready items, as client-go's depth), adds_total, retries_total,
 * unfinished_work_seconds and longest_running_processor_seconds read lop_workqueue_stats at
 * scrape time. The queue_duration_seconds and work_duration_seconds histograms are per item: they
 * are fed by lop_metrics_observe_queue_latency / _work_duration from the queue's observer
 * (lop_workqueue_set_observer; the manager installs one per controller queue, manager.c), not by
 * this binding, so a queue without that observer leaves them empty.
 */
LOP_MUST_CHECK lop_rc_t lop_metrics_bind_queue(const lop_metrics_std_t *std, const char *name, lop_workqueue_t *q,
                                               lop_metrics_queue_t *out, lop_err_t *err);
/* Per-item observations, for the workqueue's hook (durations in ns). */
void lop_metrics_observe_queue_latency(const lop_metrics_queue_t *m, int64_t ns);
void lop_metrics_observe_work_duration(const lop_metrics_queue_t *m, int64_t ns);

/*
 * Controller: max_concurrent_reconciles is set to workers; active_workers and
 * luaop_reconcile_timeouts_total read lop_controller_stats. Results and durations come from
 * lop_metrics_reconcile_observer.
 */
LOP_MUST_CHECK lop_rc_t lop_metrics_bind_controller(const lop_metrics_std_t *std, const char *name, lop_controller_t *c,
                                                    int workers, lop_metrics_controller_t *out, lop_err_t *err);

/*
 * A lop_reconcile_observer_fn (controller.h); ud is the lop_metrics_std_t. Counts the result as
 * controller-runtime does: DONE "success", REQUEUE "requeue", REQUEUE_AFTER "requeue_after",
 * ERROR "error" + reconcile_errors_total, TERMINAL "error" + reconcile_errors_total +
 * terminal_reconcile_errors_total; and observes the duration in reconcile_time_seconds.
 */
void lop_metrics_reconcile_observer(void *ud, const char *controller, lop_result_kind_t kind, int64_t duration_ns);

/* Informer cache of gvr (e.g. "apps/v1/deployments"): luaop_informer_objects / _bytes. */
LOP_MUST_CHECK lop_rc_t lop_metrics_bind_store(const lop_metrics_std_t *std, const char *gvr, lop_store_t *s,
                                               lop_metric_t *out[2], lop_err_t *err);

/* Reflector of gvr: luaop_watch_restarts_total = watches after the first, luaop_relists_total =
 * syncs after the first (LIST or watch-list, lop_reflector_stats_syncs). */
LOP_MUST_CHECK lop_rc_t lop_metrics_bind_reflector(const lop_metrics_std_t *std, const char *gvr, lop_reflector_t *r,
                                                   lop_metric_t *out[2], lop_err_t *err);

/*
 * The informer series of one GVR name (the {gvr} label) as the sum over several informers of it
 * (e.g. one per namespace or label selector): luaop_informer_objects, luaop_informer_bytes,
 * luaop_watch_restarts_total and luaop_relists_total are bound once, to this record, and read at
 * scrape time the sum over the (store, reflector) pairs added to it (each counted as
 * lop_metrics_bind_store / _reflector count one).
 *
 *   lop_metrics_gvr_t *g = lop_metrics_gvr_new(&std, "v1/configmaps", &err);
 *   lop_metrics_gvr_add(g, store_a, reflector_a);
 *   lop_metrics_gvr_add(g, store_b, reflector_b);
 *   ...
 *   if (lop_metrics_gvr_remove(g, store_a) == 0) lop_metrics_gvr_free(g); // before freeing a
 *
 * Lifetime: a store/reflector must stay alive until removed; once lop_metrics_gvr_remove returns,
 * no scrape reads them. lop_metrics_gvr_free unbinds the four series (if still bound to g),
 * removes them from the output and frees g; once it returns, no scrape calls into g. Keep at most
 * one record per GVR name at a time (a second would take the series over from the first).
 * Thread-safety: add/remove/free from one owning thread at a time; scrapes from any thread. The
 * record's lock is a leaf: held by the scrape (under the family lock) while it reads the members'
 * stats, and by add/remove only while they edit the member list.
 */
typedef struct lop_metrics_gvr lop_metrics_gvr_t;
lop_metrics_gvr_t *lop_metrics_gvr_new(const lop_metrics_std_t *std, const char *gvr, lop_err_t *err);
const char *lop_metrics_gvr_name(const lop_metrics_gvr_t *g);
/* Count store s (required) and reflector r (NULL: counts no watch restart nor relist). */
void lop_metrics_gvr_add(lop_metrics_gvr_t *g, lop_store_t *s, lop_reflector_t *r);
/* Remove the member whose store is s; returns how many members are left. */
size_t lop_metrics_gvr_remove(lop_metrics_gvr_t *g, const lop_store_t *s);
void lop_metrics_gvr_free(lop_metrics_gvr_t *g);

/* Elector for lease name: leader_election_master_status 1 while lop_elector_is_leader. */
LOP_MUST_CHECK lop_rc_t lop_metrics_bind_elector(const lop_metrics_std_t *std, const char *name, lop_elector_t *e,
                                                 lop_metric_t **out, lop_err_t *err);

/*
 * One API request as client-go counts it: rest_client_requests_total{code, method, host}
 * (code "<error>" when no response arrived, i.e. code <= 0) and
 * rest_client_request_duration_seconds{verb, host}. For the REST client's per-attempt hook.
 */
void lop_metrics_observe_rest(const lop_metrics_std_t *std, const char *method, int code, const char *host,
                              int64_t duration_ns);

/* Stop bound children reading component (the pointer given when binding). Children bound to
 * another component since are left alone. Their value reads 0 afterwards. NULLs are skipped. */
void lop_metrics_unbind_queue(const lop_metrics_queue_t *m, const lop_workqueue_t *q);
void lop_metrics_unbind_controller(const lop_metrics_controller_t *m, const lop_controller_t *c);
void lop_metrics_unbind(lop_metric_t *const *children, size_t n, const void *component);

#endif
