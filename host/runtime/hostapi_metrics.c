/* SPDX-License-Identifier: Apache-2.0 */
/* hostapi_metrics.c — the luaop.metrics part of lop_host_api_t: scripts declare counters, gauges
 * and histograms in the registry behind /metrics (never under the host's reserved prefixes) and
 * update them by label values. Any thread (the registry is thread-safe). */
#include "host/runtime/manager_internal.h"

#include "host/runtime/metrics/metrics.h"
#include "host/runtime/metrics/metrics_std.h"

#include <math.h>

static void *host_metric_declare(void *ud, int type, const char *name, const char *help, const char *const *labels,
                                 const double *buckets, size_t nbuckets, lop_err_t *err)
{
    lop_manager_t *m = ud;
    if (!name || !*name) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "metric name is empty");
        return NULL;
    }
    if (lop_metrics_reserved_name(name)) {
        lop_err_set(err, LOP_EINVAL, 0, NULL,
                    "metric name %s is reserved for the host (controller_runtime_, workqueue_, "
                    "rest_client_, leader_election_ and luaop_ are taken); pick another prefix",
                    name);
        return NULL;
    }
    lop_metrics_t *r = m->cfg.metrics->registry;
    const char *h = help && *help ? help : name;
    switch (type) {
    case LOP_HOST_METRIC_COUNTER: return lop_metrics_counter(r, name, h, labels, err);
    case LOP_HOST_METRIC_GAUGE: return lop_metrics_gauge(r, name, h, labels, err);
    case LOP_HOST_METRIC_HISTOGRAM: return lop_metrics_histogram(r, name, h, labels, buckets, nbuckets, err);
    }
    lop_err_set(err, LOP_EINVAL, 0, NULL, "metric %s: unknown type %d", name, type);
    return NULL;
}

static lop_rc_t host_metric_update(void *ud, void *metric, int op, const char *const *values, size_t nvalues, double v,
                                   lop_err_t *err)
{
    (void)ud;
    lop_metric_family_t *f = metric;
    if (!f) return lop_err_set(err, LOP_EINVAL, 0, NULL, "metric handle is NULL");
    const char *name = lop_metric_family_name(f);
    if (nvalues != lop_metric_family_nlabels(f))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metric %s: %zu label values given, %zu declared", name, nvalues,
                           lop_metric_family_nlabels(f));
    if (!isfinite(v)) return lop_err_set(err, LOP_EINVAL, 0, NULL, "metric %s: value must be a finite number", name);
    lop_metric_type_t t = lop_metric_family_type(f);
    bool ok = (op == LOP_HOST_METRIC_ADD && t != LOP_METRIC_HISTOGRAM) ||
              (op == LOP_HOST_METRIC_SET && t == LOP_METRIC_GAUGE) ||
              (op == LOP_HOST_METRIC_OBSERVE && t == LOP_METRIC_HISTOGRAM);
    if (!ok) return lop_err_set(err, LOP_EINVAL, 0, NULL, "metric %s: operation not valid for its type", name);
    if (t == LOP_METRIC_COUNTER && v < 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metric %s: a counter cannot go down (%g)", name, v);
    lop_metric_t *child = lop_metric_child(f, nvalues ? values : NULL, err);
    if (!child) return LOP_EINVAL;
    lop_rc_t rc = op == LOP_HOST_METRIC_ADD   ? lop_metric_add(child, v)
                  : op == LOP_HOST_METRIC_SET ? lop_metric_set(child, v)
                                              : lop_metric_observe(child, v);
    if (rc != LOP_OK) return lop_err_set(err, rc, 0, NULL, "metric %s: update refused", name);
    return LOP_OK;
}

void lop_manager_host_api_metrics_init(lop_manager_t *m, lop_host_api_t *api)
{
    if (!m->cfg.metrics || !m->cfg.metrics->registry) return;
    api->metric_declare = host_metric_declare;
    api->metric_update = host_metric_update;
}
