/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_std.c — the standard families (see metrics_std.h). */
#include "host/runtime/metrics/metrics_std.h"

#include <string.h>

static const char *const L_CONTROLLER[] = {"controller", NULL};
static const char *const L_CONTROLLER_RESULT[] = {"controller", "result", NULL};
static const char *const L_NAME[] = {"name", NULL};
static const char *const L_QUEUE[] = {"controller", "name", NULL};
static const char *const L_REST_REQ[] = {"code", "method", "host", NULL};
static const char *const L_REST_DUR[] = {"verb", "host", NULL};
static const char *const L_RESULT[] = {"result", NULL};
static const char *const L_VERSION[] = {"version", NULL};
static const char *const L_VM[] = {"vm", NULL};
static const char *const L_GVR[] = {"gvr", NULL};
static const char *const L_EVENT_ERR[] = {"controller", "function", "reason", NULL};

typedef struct std_def {
    size_t offset; /* of the lop_metric_family_t * field in lop_metrics_std_t */
    lop_metric_type_t type;
    const char *name;
    const char *help;
    const char *const *labels;
    int buckets; /* 0 none, 1 reconcile, 2 workqueue, 3 rest */
} std_def_t;

#define F(field) offsetof(lop_metrics_std_t, field)

static const std_def_t defs[] = {
    {F(reconcile_total), LOP_METRIC_COUNTER, "controller_runtime_reconcile_total",
     "Reconciliations per controller and result.", L_CONTROLLER_RESULT, 0},
    {F(reconcile_errors_total), LOP_METRIC_COUNTER, "controller_runtime_reconcile_errors_total",
     "Reconciliations per controller that returned an error.", L_CONTROLLER, 0},
    {F(terminal_reconcile_errors_total), LOP_METRIC_COUNTER, "controller_runtime_terminal_reconcile_errors_total",
     "Reconciliations per controller that returned a terminal (not retried) error.", L_CONTROLLER, 0},
    {F(reconcile_panics_total), LOP_METRIC_COUNTER, "controller_runtime_reconcile_panics_total",
     "Reconciliations per controller that raised instead of returning (Lua errors).", L_CONTROLLER, 0},
    {F(reconcile_time), LOP_METRIC_HISTOGRAM, "controller_runtime_reconcile_time_seconds",
     "Time spent in each reconciliation, per controller, in seconds.", L_CONTROLLER, 1},
    {F(max_concurrent_reconciles), LOP_METRIC_GAUGE, "controller_runtime_max_concurrent_reconciles",
     "Configured number of workers per controller.", L_CONTROLLER, 0},
    {F(active_workers), LOP_METRIC_GAUGE, "controller_runtime_active_workers",
     "Workers of each controller busy in a reconciliation right now.", L_CONTROLLER, 0},

    {F(wq_depth), LOP_METRIC_GAUGE, "workqueue_depth", "Items waiting in the workqueue.", L_QUEUE, 0},
    {F(wq_adds_total), LOP_METRIC_COUNTER, "workqueue_adds_total", "Items added to the workqueue.", L_QUEUE, 0},
    {F(wq_queue_duration), LOP_METRIC_HISTOGRAM, "workqueue_queue_duration_seconds",
     "Seconds an item waited in the workqueue before a worker took it.", L_QUEUE, 2},
    {F(wq_work_duration), LOP_METRIC_HISTOGRAM, "workqueue_work_duration_seconds",
     "Seconds a worker spent processing an item taken from the workqueue.", L_QUEUE, 2},
    {F(wq_retries_total), LOP_METRIC_COUNTER, "workqueue_retries_total", "Rate-limited re-adds to the workqueue.",
     L_QUEUE, 0},
    {F(wq_unfinished_work), LOP_METRIC_GAUGE, "workqueue_unfinished_work_seconds",
     "Sum of the seconds every item now in processing has been running; a value growing "
     "without its items finishing points to stuck workers.",
     L_QUEUE, 0},
    {F(wq_longest_running), LOP_METRIC_GAUGE, "workqueue_longest_running_processor_seconds",
     "Seconds the longest running item of the workqueue has been in processing.", L_QUEUE, 0},

    {F(rest_requests_total), LOP_METRIC_COUNTER, "rest_client_requests_total",
     "HTTP requests to the API server, by status code, method and host.", L_REST_REQ, 0},
    {F(rest_request_duration), LOP_METRIC_HISTOGRAM, "rest_client_request_duration_seconds",
     "Latency of API server requests in seconds, by verb and host.", L_REST_DUR, 3},

    {F(leader_master_status), LOP_METRIC_GAUGE, "leader_election_master_status",
     "1 while this process holds the named leader election lease, 0 otherwise.", L_NAME, 0},

    {F(script_reload_total), LOP_METRIC_COUNTER, "luaop_script_reload_total", "Script set reload attempts by result.",
     L_RESULT, 0},
    {F(script_active_version), LOP_METRIC_GAUGE, "luaop_script_active_version",
     "1 for the version (content hash) of the script set now running.", L_VERSION, 0},
    {F(lua_memory_bytes), LOP_METRIC_GAUGE, "luaop_lua_memory_bytes", "Bytes allocated by each Lua VM.", L_VM, 0},
    {F(reconcile_timeouts_total), LOP_METRIC_COUNTER, "luaop_reconcile_timeouts_total",
     "Reconciliations interrupted at their deadline, per controller.", L_CONTROLLER, 0},
    {F(lua_event_errors_total), LOP_METRIC_COUNTER, "luaop_lua_event_errors_total",
     "Lua predicates and map functions that failed, per controller, function (predicate|map) and reason "
     "(timeout|memory|error); a failed predicate lets its event through, a failed map function drops it.",
     L_EVENT_ERR, 0},
    {F(informer_objects), LOP_METRIC_GAUGE, "luaop_informer_objects",
     "Objects held in the informer cache, per group/version/resource.", L_GVR, 0},
    {F(informer_bytes), LOP_METRIC_GAUGE, "luaop_informer_bytes",
     "Bytes of object JSON held in the informer cache, per group/version/resource.", L_GVR, 0},
    {F(watch_restarts_total), LOP_METRIC_COUNTER, "luaop_watch_restarts_total",
     "Watches re-established after they ended or failed, per group/version/resource.", L_GVR, 0},
    {F(relists_total), LOP_METRIC_COUNTER, "luaop_relists_total",
     "Full relists (initial list excluded), per group/version/resource.", L_GVR, 0},
};

lop_rc_t lop_metrics_std_init(lop_metrics_std_t *std, lop_metrics_t *r, lop_err_t *err)
{
    if (!std || !r) return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: std init needs a struct and a registry");
    memset(std, 0, sizeof *std);
    std->registry = r;
    double wq[LOP_METRIC_WORKQUEUE_BUCKETS];
    lop_metric_exp_buckets(wq, LOP_METRIC_WORKQUEUE_BUCKETS, 10e-9, 10, LOP_METRIC_WORKQUEUE_BUCKETS);
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        const std_def_t *d = &defs[i];
        lop_metric_family_t *f = NULL;
        switch (d->type) {
        case LOP_METRIC_COUNTER: f = lop_metrics_counter(r, d->name, d->help, d->labels, err); break;
        case LOP_METRIC_GAUGE: f = lop_metrics_gauge(r, d->name, d->help, d->labels, err); break;
        case LOP_METRIC_HISTOGRAM:
            if (d->buckets == 1)
                f = lop_metrics_histogram(r, d->name, d->help, d->labels, lop_metric_reconcile_buckets,
                                          lop_metric_reconcile_buckets_len, err);
            else if (d->buckets == 2)
                f = lop_metrics_histogram(r, d->name, d->help, d->labels, wq, LOP_METRIC_WORKQUEUE_BUCKETS, err);
            else
                f = lop_metrics_histogram(r, d->name, d->help, d->labels, lop_metric_rest_buckets,
                                          lop_metric_rest_buckets_len, err);
            break;
        }
        if (!f) return LOP_EINVAL;
        *(lop_metric_family_t **)((char *)std + d->offset) = f;
    }
    return LOP_OK;
}

lop_rc_t lop_metrics_std_set_active_version(lop_metrics_std_t *std, const char *old_version, const char *new_version,
                                            lop_err_t *err)
{
    if (!std || !std->script_active_version || !new_version)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: active version needs a version");
    const char *nv[] = {new_version};
    lop_rc_t rc = lop_metric_gauge_set(std->script_active_version, nv, 1, err);
    if (rc != LOP_OK) return rc;
    if (old_version && strcmp(old_version, new_version) != 0) {
        const char *ov[] = {old_version};
        lop_rc_ignore(lop_metric_remove(std->script_active_version, ov)); /* absent is fine */
    }
    return LOP_OK;
}

const char *lop_metrics_result_name(lop_metrics_result_t r)
{
    switch (r) {
    case LOP_METRICS_RESULT_SUCCESS: return "success";
    case LOP_METRICS_RESULT_ERROR: return "error";
    case LOP_METRICS_RESULT_REQUEUE: return "requeue";
    case LOP_METRICS_RESULT_REQUEUE_AFTER: return "requeue_after";
    case LOP_METRICS_RESULT_COUNT_: break;
    }
    return "unknown";
}

lop_rc_t lop_metrics_std_controller(const lop_metrics_std_t *std, const char *controller, lop_metrics_controller_t *out,
                                    lop_err_t *err)
{
    if (!std || !std->reconcile_total || !controller || !out)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: controller children need an initialised std and a name");
    memset(out, 0, sizeof *out);
    const char *v[] = {controller};
    for (int r = 0; r < LOP_METRICS_RESULT_COUNT_; r++) {
        const char *vr[] = {controller, lop_metrics_result_name((lop_metrics_result_t)r)};
        if (!(out->reconcile_total[r] = lop_metric_child(std->reconcile_total, vr, err))) return LOP_EINVAL;
    }
    if (!(out->reconcile_errors = lop_metric_child(std->reconcile_errors_total, v, err)) ||
        !(out->terminal_errors = lop_metric_child(std->terminal_reconcile_errors_total, v, err)) ||
        !(out->panics = lop_metric_child(std->reconcile_panics_total, v, err)) ||
        !(out->reconcile_time = lop_metric_child(std->reconcile_time, v, err)) ||
        !(out->max_concurrent = lop_metric_child(std->max_concurrent_reconciles, v, err)) ||
        !(out->active_workers = lop_metric_child(std->active_workers, v, err)) ||
        !(out->timeouts = lop_metric_child(std->reconcile_timeouts_total, v, err)))
        return LOP_EINVAL;
    return LOP_OK;
}

lop_rc_t lop_metrics_std_queue(const lop_metrics_std_t *std, const char *name, lop_metrics_queue_t *out, lop_err_t *err)
{
    if (!std || !std->wq_depth || !name || !out)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: queue children need an initialised std and a name");
    memset(out, 0, sizeof *out);
    const char *v[] = {name, name};
    if (!(out->depth = lop_metric_child(std->wq_depth, v, err)) ||
        !(out->adds = lop_metric_child(std->wq_adds_total, v, err)) ||
        !(out->queue_duration = lop_metric_child(std->wq_queue_duration, v, err)) ||
        !(out->work_duration = lop_metric_child(std->wq_work_duration, v, err)) ||
        !(out->retries = lop_metric_child(std->wq_retries_total, v, err)) ||
        !(out->unfinished_work = lop_metric_child(std->wq_unfinished_work, v, err)) ||
        !(out->longest_running = lop_metric_child(std->wq_longest_running, v, err)))
        return LOP_EINVAL;
    return LOP_OK;
}

bool lop_metrics_reserved_name(const char *name)
{
    static const char *const prefixes[] = {"controller_runtime_", "workqueue_", "rest_client_", "leader_election_",
                                           "luaop_"};
    if (!name) return false;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return true;
    return false;
}
