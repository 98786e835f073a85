/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_bind.c — scrape-time bindings of the standard families to components (see
 * metrics_bind.h). */
#include "host/runtime/metrics/metrics_bind.h"

#include "host/util/buf.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- workqueue */

static lop_workqueue_stats_t queue_stats(void *ud)
{
    lop_workqueue_stats_t st;
    memset(&st, 0, sizeof st);
    lop_workqueue_stats(ud, &st);
    return st;
}

static double q_depth(void *ud) { return (double)queue_stats(ud).depth; }
static double q_adds(void *ud) { return (double)queue_stats(ud).adds; }
static double q_retries(void *ud) { return (double)queue_stats(ud).retries; }
static double q_unfinished(void *ud) { return (double)queue_stats(ud).unfinished_work_ns / 1e9; }
static double q_longest(void *ud) { return (double)queue_stats(ud).longest_running_ns / 1e9; }

lop_rc_t lop_metrics_bind_queue(const lop_metrics_std_t *std, const char *name, lop_workqueue_t *q,
                                lop_metrics_queue_t *out, lop_err_t *err)
{
    if (!q) return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: bind queue: no queue");
    lop_rc_t rc = lop_metrics_std_queue(std, name, out, err);
    if (rc != LOP_OK) return rc;
    lop_metric_t *kids[] = {out->depth, out->adds, out->retries, out->unfinished_work, out->longest_running};
    lop_metric_fn fns[] = {q_depth, q_adds, q_retries, q_unfinished, q_longest};
    for (size_t i = 0; i < sizeof kids / sizeof kids[0]; i++)
        if (lop_metric_set_fn(kids[i], fns[i], q) != LOP_OK)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: bind queue %s: series %zu takes no callback", name,
                               i);
    return LOP_OK;
}

void lop_metrics_unbind_queue(const lop_metrics_queue_t *m, const lop_workqueue_t *q)
{
    if (!m) return;
    lop_metric_t *kids[] = {m->depth, m->adds, m->retries, m->unfinished_work, m->longest_running};
    lop_metrics_unbind(kids, sizeof kids / sizeof kids[0], q);
}

void lop_metrics_observe_queue_latency(const lop_metrics_queue_t *m, int64_t ns)
{
    if (m) lop_metric_observe(m->queue_duration, (double)ns / 1e9);
}

void lop_metrics_observe_work_duration(const lop_metrics_queue_t *m, int64_t ns)
{
    if (m) lop_metric_observe(m->work_duration, (double)ns / 1e9);
}

/* ---------------------------------------------------------------- controller */

static double c_active(void *ud)
{
    lop_controller_stats_t st;
    memset(&st, 0, sizeof st);
    lop_controller_stats(ud, &st);
    return (double)st.active_workers;
}

static double c_timeouts(void *ud)
{
    lop_controller_stats_t st;
    memset(&st, 0, sizeof st);
    lop_controller_stats(ud, &st);
    return (double)st.timeouts;
}

lop_rc_t lop_metrics_bind_controller(const lop_metrics_std_t *std, const char *name, lop_controller_t *c, int workers,
                                     lop_metrics_controller_t *out, lop_err_t *err)
{
    if (!c) return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: bind controller: no controller");
    lop_rc_t rc = lop_metrics_std_controller(std, name, out, err);
    if (rc != LOP_OK) return rc;
    lop_metric_set(out->max_concurrent, workers);
    if (lop_metric_set_fn(out->active_workers, c_active, c) != LOP_OK ||
        lop_metric_set_fn(out->timeouts, c_timeouts, c) != LOP_OK)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: bind controller %s: a series takes no callback", name);
    return LOP_OK;
}

void lop_metrics_unbind_controller(const lop_metrics_controller_t *m, const lop_controller_t *c)
{
    if (!m) return;
    lop_metric_t *kids[] = {m->active_workers, m->timeouts};
    lop_metrics_unbind(kids, sizeof kids / sizeof kids[0], c);
}

void lop_metrics_reconcile_observer(void *ud, const char *controller, lop_result_kind_t kind, int64_t duration_ns)
{
    const lop_metrics_std_t *std = ud;
    if (!std || !std->reconcile_total || !controller) return;
    const char *v[] = {controller};
    const char *result;
    switch (kind) {
    case LOP_RESULT_DONE: result = "success"; break;
    case LOP_RESULT_REQUEUE: result = "requeue"; break;
    case LOP_RESULT_REQUEUE_AFTER: result = "requeue_after"; break;
    case LOP_RESULT_TERMINAL:
        /* A terminal error is also an error, as controller-runtime counts it. */
        lop_metric_counter_add(std->terminal_reconcile_errors_total, v, 1, NULL);
        lop_metric_counter_add(std->reconcile_errors_total, v, 1, NULL);
        result = "error";
        break;
    case LOP_RESULT_ERROR:
    default:
        lop_metric_counter_add(std->reconcile_errors_total, v, 1, NULL);
        result = "error";
        break;
    }
    const char *vr[] = {controller, result};
    lop_metric_counter_add(std->reconcile_total, vr, 1, NULL);
    lop_metric_histogram_observe(std->reconcile_time, v, (double)duration_ns / 1e9, NULL);
}

/* ---------------------------------------------------------------- informer, reflector, elector */

static double s_objects(void *ud)
{
    lop_store_stats_t st;
    memset(&st, 0, sizeof st);
    lop_store_stats(ud, &st);
    return (double)st.count;
}

static double s_bytes(void *ud)
{
    lop_store_stats_t st;
    memset(&st, 0, sizeof st);
    lop_store_stats(ud, &st);
    return (double)st.bytes;
}

/* Bind the child of family f for label value v to fn(component). */
static lop_rc_t bind_one(lop_metric_family_t *f, const char *v, lop_metric_fn fn, void *component, lop_metric_t **out,
                         lop_err_t *err)
{
    if (!f || !v || !component)
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "metrics: bind needs initialised std, a label value and a component");
    const char *vals[] = {v};
    lop_metric_t *m = lop_metric_child(f, vals, err);
    if (!m) return LOP_EINVAL;
    lop_rc_t rc = lop_metric_set_fn(m, fn, component);
    if (rc != LOP_OK) return lop_err_set(err, rc, 0, NULL, "metrics: bind %s: the series takes no callback", v);
    *out = m;
    return LOP_OK;
}

lop_rc_t lop_metrics_bind_store(const lop_metrics_std_t *std, const char *gvr, lop_store_t *s, lop_metric_t *out[2],
                                lop_err_t *err)
{
    if (!std) return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: bind store: no std");
    out[0] = out[1] = NULL;
    lop_rc_t rc = bind_one(std->informer_objects, gvr, s_objects, s, &out[0], err);
    if (rc == LOP_OK) rc = bind_one(std->informer_bytes, gvr, s_bytes, s, &out[1], err);
    return rc;
}

static lop_reflector_stats_t reflector_stats(void *ud)
{
    lop_reflector_stats_t st;
    memset(&st, 0, sizeof st);
    lop_reflector_stats(ud, &st);
    return st;
}

static double r_watch_restarts(void *ud)
{
    uint64_t w = reflector_stats(ud).watches;
    return w > 0 ? (double)(w - 1) : 0;
}

static double r_relists(void *ud)
{
    lop_reflector_stats_t st = reflector_stats(ud);
    uint64_t l = lop_reflector_stats_syncs(&st); /* watch-list syncs count too */
    return l > 0 ? (double)(l - 1) : 0;
}

lop_rc_t lop_metrics_bind_reflector(const lop_metrics_std_t *std, const char *gvr, lop_reflector_t *r,
                                    lop_metric_t *out[2], lop_err_t *err)
{
    if (!std) return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: bind reflector: no std");
    out[0] = out[1] = NULL;
    lop_rc_t rc = bind_one(std->watch_restarts_total, gvr, r_watch_restarts, r, &out[0], err);
    if (rc == LOP_OK) rc = bind_one(std->relists_total, gvr, r_relists, r, &out[1], err);
    return rc;
}

/* ---------------------------------------------------------------- informers of one GVR, summed */

enum { GVR_OBJECTS, GVR_BYTES, GVR_WATCH_RESTARTS, GVR_RELISTS, GVR_NSERIES };

typedef struct gvr_member {
    lop_store_t *s;
    lop_reflector_t *r;
} gvr_member_t;

struct lop_metrics_gvr {
    const lop_metrics_std_t *std;
    char *gvr;
    pthread_mutex_t mu; /* guards members/n/cap: a leaf lock (see metrics_bind.h) */
    gvr_member_t *members;
    size_t n, cap;
    lop_metric_t *kids[GVR_NSERIES];
};

/* The figure one member adds to series i: what the per-component bindings report. */
static double gvr_member_value(const gvr_member_t *mb, int i)
{
    switch (i) {
    case GVR_OBJECTS: return s_objects(mb->s);
    case GVR_BYTES: return s_bytes(mb->s);
    case GVR_WATCH_RESTARTS: return mb->r ? r_watch_restarts(mb->r) : 0;
    default: return mb->r ? r_relists(mb->r) : 0;
    }
}

static double gvr_sum(lop_metrics_gvr_t *g, int i)
{
    double sum = 0;
    pthread_mutex_lock(&g->mu);
    for (size_t k = 0; k < g->n; k++) sum += gvr_member_value(&g->members[k], i);
    pthread_mutex_unlock(&g->mu);
    return sum;
}

static double g_objects(void *ud) { return gvr_sum(ud, GVR_OBJECTS); }
static double g_bytes(void *ud) { return gvr_sum(ud, GVR_BYTES); }
static double g_watch_restarts(void *ud) { return gvr_sum(ud, GVR_WATCH_RESTARTS); }
static double g_relists(void *ud) { return gvr_sum(ud, GVR_RELISTS); }

static lop_metric_family_t *gvr_family(const lop_metrics_std_t *std, int i)
{
    lop_metric_family_t *fams[GVR_NSERIES] = {std->informer_objects, std->informer_bytes, std->watch_restarts_total,
                                              std->relists_total};
    return fams[i];
}

lop_metrics_gvr_t *lop_metrics_gvr_new(const lop_metrics_std_t *std, const char *gvr, lop_err_t *err)
{
    if (!std || !gvr) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: bind gvr: needs initialised std and a gvr");
        return NULL;
    }
    static const lop_metric_fn fns[GVR_NSERIES] = {g_objects, g_bytes, g_watch_restarts, g_relists};
    lop_metrics_gvr_t *g = lop_xcalloc(1, sizeof *g);
    g->std = std;
    g->gvr = lop_xstrdup(gvr);
    pthread_mutex_init(&g->mu, NULL);
    for (int i = 0; i < GVR_NSERIES; i++) {
        if (bind_one(gvr_family(std, i), gvr, fns[i], g, &g->kids[i], err) != LOP_OK) {
            lop_metrics_gvr_free(g);
            return NULL;
        }
    }
    return g;
}

const char *lop_metrics_gvr_name(const lop_metrics_gvr_t *g) { return g->gvr; }

void lop_metrics_gvr_add(lop_metrics_gvr_t *g, lop_store_t *s, lop_reflector_t *r)
{
    if (!g || !s) return;
    pthread_mutex_lock(&g->mu);
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 4;
        g->members = lop_xrealloc(g->members, g->cap * sizeof *g->members);
    }
    g->members[g->n++] = (gvr_member_t){s, r};
    pthread_mutex_unlock(&g->mu);
}

size_t lop_metrics_gvr_remove(lop_metrics_gvr_t *g, const lop_store_t *s)
{
    if (!g) return 0;
    pthread_mutex_lock(&g->mu);
    for (size_t k = 0; k < g->n; k++) {
        if (g->members[k].s == s) {
            g->members[k] = g->members[--g->n];
            break;
        }
    }
    size_t left = g->n;
    pthread_mutex_unlock(&g->mu);
    return left;
}

void lop_metrics_gvr_free(lop_metrics_gvr_t *g)
{
    if (!g) return;
    const char *v[] = {g->gvr};
    for (int i = 0; i < GVR_NSERIES; i++) {
        /* Once the clear returns no scrape runs g's function (it runs under the family lock the
         * clear takes); a series taken over by someone else since is left alone. */
        if (g->kids[i] && lop_metric_clear_fn_if(g->kids[i], g))
            lop_rc_ignore(lop_metric_remove(gvr_family(g->std, i), v)); /* only ENOTFOUND: already hidden */
    }
    pthread_mutex_destroy(&g->mu);
    free(g->members);
    free(g->gvr);
    free(g);
}

static double e_leading(void *ud) { return lop_elector_is_leader(ud) ? 1 : 0; }

lop_rc_t lop_metrics_bind_elector(const lop_metrics_std_t *std, const char *name, lop_elector_t *e, lop_metric_t **out,
                                  lop_err_t *err)
{
    if (!std) return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: bind elector: no std");
    *out = NULL;
    return bind_one(std->leader_master_status, name, e_leading, e, out, err);
}

/* ---------------------------------------------------------------- REST client */

void lop_metrics_observe_rest(const lop_metrics_std_t *std, const char *method, int code, const char *host,
                              int64_t duration_ns)
{
    if (!std || !std->rest_requests_total || !method || !host) return;
    char codestr[16];
    if (code > 0)
        snprintf(codestr, sizeof codestr, "%d", code);
    else
        snprintf(codestr, sizeof codestr, "<error>");
    const char *v[] = {codestr, method, host};
    lop_metric_counter_add(std->rest_requests_total, v, 1, NULL);
    const char *d[] = {method, host};
    lop_metric_histogram_observe(std->rest_request_duration, d, (double)duration_ns / 1e9, NULL);
}

void lop_metrics_unbind(lop_metric_t *const *children, size_t n, const void *component)
{
    for (size_t i = 0; children && i < n; i++)
        if (children[i]) lop_metric_clear_fn_if(children[i], component);
}
