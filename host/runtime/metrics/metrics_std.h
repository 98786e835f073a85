/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_std.h — the standard metric families luaop exposes, declared once in a registry under
 * the names controller-runtime and client-go export (so existing dashboards and alerts work
 * unchanged), plus luaop's own. Components keep the lop_metrics_std_t and update children:
 *
 *   lop_metric_counter_add(std->reconcile_total, (const char *[]){"memcached", "success"}, 1,
 * NULL); lop_metric_histogram_observe(std->reconcile_time, (const char *[]){"memcached"}, secs,
 * NULL);
 *
 * Label names, in order (values are given in the same order):
 *   controller_runtime_reconcile_total                 {controller, result}  counter
 *     result is one of "success", "error", "requeue", "requeue_after" (as controller-runtime)
 *   controller_runtime_reconcile_errors_total          {controller}          counter
 *   controller_runtime_terminal_reconcile_errors_total {controller}          counter
 *   controller_runtime_reconcile_panics_total          {controller}          counter (a reconcile
 * that raised, as Go counts panics) controller_runtime_reconcile_time_seconds          {controller}
 * histogram (0.005…60 s) controller_runtime_max_concurrent_reconciles       {controller} gauge
 *   controller_runtime_active_workers                  {controller}          gauge
 *   workqueue_depth                                    {controller, name}    gauge
 *   workqueue_adds_total                               {controller, name}    counter
 *   workqueue_queue_duration_seconds                   {controller, name}    histogram (1e-8…1000 s)
 *   workqueue_work_duration_seconds                    {controller, name}    histogram (1e-8…1000 s)
 *   workqueue_retries_total                            {controller, name}    counter
 *   workqueue_unfinished_work_seconds                  {controller, name}    gauge
 *   workqueue_longest_running_processor_seconds        {controller, name}    gauge
 *   rest_client_requests_total                         {code, method, host}  counter
 *   rest_client_request_duration_seconds               {verb, host}          histogram (0.005…60 s)
 *   leader_election_master_status                      {name}                gauge (1 leading, 0
 * not) luaop_script_reload_total                          {result}              counter
 * ("success"|"failure") luaop_script_active_version                        {version} gauge (1 for the
 * active) luaop_lua_memory_bytes                             {vm}                  gauge
 *   luaop_reconcile_timeouts_total                     {controller}          counter
 *   luaop_lua_event_errors_total     {controller, function, reason}          counter (function
 *     "predicate"|"map", reason "timeout"|"memory"|"error")
 *   luaop_informer_objects                             {gvr}                 gauge
 *   luaop_informer_bytes                               {gvr}                 gauge
 *   luaop_watch_restarts_total                         {gvr}                 counter
 *   luaop_relists_total                                {gvr}                 counter
 *
 * The four {gvr} series are each the sum over every running informer of that GVR (one per
 * namespace, label selector: see lop_metrics_gvr_t in metrics_bind.h); they lose an informer's
 * share when it stops (the counters can go down: a reset) and disappear with the last one.
 *
 * Thread-safety: lop_metrics_std_init once before other threads use the struct; afterwards the
 * struct is read-only and every update goes through the thread-safe metrics.h calls.
 */
#ifndef LOP_RUNTIME_METRICS_METRICS_STD_H
#define LOP_RUNTIME_METRICS_METRICS_STD_H

#include "host/runtime/metrics/metrics.h"

/* controller-runtime's workqueue duration buckets (pkg/metrics/workqueue.go:
 * ExponentialBuckets(10e-9, 10, 12)): 12 bounds from 1e-8 s to 1000 s, factor 10. client-go's own
 * provider stops at 10 s; controller-runtime's is what operator dashboards are built on. */
#define LOP_METRIC_WORKQUEUE_BUCKETS 12

typedef struct lop_metrics_std {
    lop_metrics_t *registry; /* borrowed */

    /* controller-runtime */
    lop_metric_family_t *reconcile_total;
    lop_metric_family_t *reconcile_errors_total;
    lop_metric_family_t *terminal_reconcile_errors_total;
    lop_metric_family_t *reconcile_panics_total;
    lop_metric_family_t *reconcile_time;
    lop_metric_family_t *max_concurrent_reconciles;
    lop_metric_family_t *active_workers;

    /* client-go workqueue */
    lop_metric_family_t *wq_depth;
    lop_metric_family_t *wq_adds_total;
    lop_metric_family_t *wq_queue_duration;
    lop_metric_family_t *wq_work_duration;
    lop_metric_family_t *wq_retries_total;
    lop_metric_family_t *wq_unfinished_work;
    lop_metric_family_t *wq_longest_running;

    /* client-go REST client */
    lop_metric_family_t *rest_requests_total;
    lop_metric_family_t *rest_request_duration;

    /* leader election */
    lop_metric_family_t *leader_master_status;

    /* luaop */
    lop_metric_family_t *script_reload_total;
    lop_metric_family_t *script_active_version;
    lop_metric_family_t *lua_memory_bytes;
    lop_metric_family_t *reconcile_timeouts_total;
    lop_metric_family_t *lua_event_errors_total;
    lop_metric_family_t *informer_objects;
    lop_metric_family_t *informer_bytes;
    lop_metric_family_t *watch_restarts_total;
    lop_metric_family_t *relists_total;
} lop_metrics_std_t;

/*
 * Declare every standard family in r and fill std. Idempotent: calling it again on the same
 * registry fills another struct with the same families. Returns LOP_OK, or LOP_EINVAL with err set
 * when r already holds one of these names with another shape.
 */
LOP_MUST_CHECK lop_rc_t lop_metrics_std_init(lop_metrics_std_t *std, lop_metrics_t *r, lop_err_t *err);

/*
 * True when name belongs to the host's own namespaces (controller_runtime_, workqueue_,
 * rest_client_, leader_election_, luaop_): metrics declared by scripts (luaop.metrics) must be
 * refused such names, so a script can neither feed nor reshape the standard series.
 */
bool lop_metrics_reserved_name(const char *name);

/*
 * Record the script set now active: luaop_script_active_version{version} becomes 1 and the
 * previously active version (if any, and different) is removed. Serialise calls (the script
 * loader is the one caller). Errors as lop_metric_gauge_set.
 */
LOP_MUST_CHECK lop_rc_t lop_metrics_std_set_active_version(lop_metrics_std_t *std, const char *old_version,
                                                           const char *new_version, lop_err_t *err);

/*
 * The children one controller updates, looked up once (the pointers stay valid until the
 * registry is freed). reconcile_total is indexed by lop_metrics_result_t.
 */
typedef enum lop_metrics_result {
    LOP_METRICS_RESULT_SUCCESS = 0,
    LOP_METRICS_RESULT_ERROR,
    LOP_METRICS_RESULT_REQUEUE,
    LOP_METRICS_RESULT_REQUEUE_AFTER,
    LOP_METRICS_RESULT_COUNT_,
} lop_metrics_result_t;

/* The controller-runtime label value of a result: "success", "error", "requeue", "requeue_after".
 */
const char *lop_metrics_result_name(lop_metrics_result_t r);

typedef struct lop_metrics_controller {
    lop_metric_t *reconcile_total[LOP_METRICS_RESULT_COUNT_];
    lop_metric_t *reconcile_errors;
    lop_metric_t *terminal_errors;
    lop_metric_t *panics;
    lop_metric_t *reconcile_time;
    lop_metric_t *max_concurrent;
    lop_metric_t *active_workers;
    lop_metric_t *timeouts;
} lop_metrics_controller_t;

/* The children of one workqueue. As in controller-runtime (pkg/metrics/workqueue.go), a
 * controller's queue is named after the controller, and both the `controller` and the `name` label
 * carry that name, so dashboards selecting on either work. */
typedef struct lop_metrics_queue {
    lop_metric_t *depth;
    lop_metric_t *adds;
    lop_metric_t *queue_duration;
    lop_metric_t *work_duration;
    lop_metric_t *retries;
    lop_metric_t *unfinished_work;
    lop_metric_t *longest_running;
} lop_metrics_queue_t;

/*
 * Create (or find) the children for controller / queue name, all at 0 so dashboards see the
 * series before the first event (as controller-runtime does). LOP_EINVAL with err set for an
 * invalid name (not UTF-8, too long) or when std was not initialised.
 */
LOP_MUST_CHECK lop_rc_t lop_metrics_std_controller(const lop_metrics_std_t *std, const char *controller,
                                                   lop_metrics_controller_t *out, lop_err_t *err);
LOP_MUST_CHECK lop_rc_t lop_metrics_std_queue(const lop_metrics_std_t *std, const char *name, lop_metrics_queue_t *out,
                                              lop_err_t *err);

#endif
