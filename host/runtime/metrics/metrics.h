/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h — the Prometheus metrics registry: counters, gauges and histograms, each a family
 * with fixed label names whose children (one per distinct label-value tuple) are created on first
 * use, rendered in the Prometheus text exposition format 0.0.4 for GET /metrics.
 *
 * Model (as Prometheus client libraries have it):
 *   registry (lop_metrics_t) ──► family (lop_metric_family_t: name, help, type, label names,
 *                                        buckets) ──► child (lop_metric_t: one label-value tuple)
 * A family without label names has exactly one child, addressed with values = NULL.
 *
 * Thread-safety: every function is safe from any thread. Hot operations (inc/add/set/observe on a
 * child, and looking up an existing child) are lock-free atomics; a per-family mutex is taken only
 * to create a child, to install a gauge callback and while rendering. Families and children live
 * until lop_metrics_free: a lop_metric_t pointer stays valid that long, so callers may cache it.
 *
 * Values are doubles (as in Prometheus). Counters only go up: a negative add is refused.
 * Units are the caller's: by convention seconds for durations and bytes for sizes.
 *
 * Lua-defined metrics (luaop.metrics) use the same calls: lop_metrics_counter/gauge/histogram to
 * declare (idempotent for an identical declaration, so a script reload re-declares safely), then
 * lop_metric_counter_add / lop_metric_gauge_set / lop_metric_histogram_observe with label values.
 */
#ifndef LOP_RUNTIME_METRICS_METRICS_H
#define LOP_RUNTIME_METRICS_METRICS_H

#include "host/util/buf.h"
#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum lop_metric_type {
    LOP_METRIC_COUNTER = 0,
    LOP_METRIC_GAUGE = 1,
    LOP_METRIC_HISTOGRAM = 2,
} lop_metric_type_t;

typedef struct lop_metrics lop_metrics_t;
typedef struct lop_metric_family lop_metric_family_t;
typedef struct lop_metric lop_metric_t;

/* Limits: label names per family, buckets per histogram, bytes per name / label value. */
#define LOP_METRIC_MAX_LABELS      8
#define LOP_METRIC_MAX_BUCKETS     64
#define LOP_METRIC_MAX_NAME        128
#define LOP_METRIC_MAX_LABEL_VALUE 1024
/* Default cap on children per family, so a label fed with unbounded values (an object name, a
 * request path) cannot grow memory without limit; see lop_metric_family_set_max_children. */
#define LOP_METRIC_DEFAULT_MAX_CHILDREN 10000

/* ---------------------------------------------------------------- registry */

/* A new empty registry. Never NULL (allocation failure aborts). Free with lop_metrics_free. */
lop_metrics_t *lop_metrics_new(void);
/* Free the registry, its families and children. No other thread may use it any more; NULL ok. */
void lop_metrics_free(lop_metrics_t *r);

/*
 * Declare a family. name: [a-zA-Z_:][a-zA-Z0-9_:]*; help: any text (escaped on output);
 * labels: NULL-terminated array of label names ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__",
 * no duplicates, "le" not allowed on histograms), or NULL for none. Strings are copied.
 * Histograms take buckets: upper bounds, strictly increasing, finite; +Inf is added implicitly;
 * buckets may be NULL with nbuckets 0 to get lop_metric_default_buckets.
 * Returns the family (owned by the registry), or NULL with err set: LOP_EINVAL for a bad name,
 * label or bucket list, or when the name is already declared with a different type, label names
 * or buckets (re-declaring the identical family returns the existing one).
 */
lop_metric_family_t *lop_metrics_counter(lop_metrics_t *r, const char *name, const char *help,
                                         const char *const *labels, lop_err_t *err);
lop_metric_family_t *lop_metrics_gauge(lop_metrics_t *r, const char *name, const char *help, const char *const *labels,
                                       lop_err_t *err);
lop_metric_family_t *lop_metrics_histogram(lop_metrics_t *r, const char *name, const char *help,
                                           const char *const *labels, const double *buckets, size_t nbuckets,
                                           lop_err_t *err);

/* The family declared under name, or NULL. Borrowed until lop_metrics_free. */
lop_metric_family_t *lop_metrics_find(lop_metrics_t *r, const char *name);

/* Change the family's cap on children (>= 1). Creating a child past it fails with LOP_EINVAL
 * ("too many label sets"); existing children keep working. */
void lop_metric_family_set_max_children(lop_metric_family_t *f, size_t max);

/* Accessors (never fail on a valid family). Strings are borrowed until lop_metrics_free. */
lop_metric_type_t lop_metric_family_type(const lop_metric_family_t *f);
const char *lop_metric_family_name(const lop_metric_family_t *f);
size_t lop_metric_family_nlabels(const lop_metric_family_t *f);

/*
 * Render every family in the text exposition format 0.0.4 (Content-Type
 * "text/plain; version=0.0.4; charset=utf-8"), appending to out: families sorted by name, each
 * with # HELP and # TYPE lines, children sorted by label values; histograms as cumulative
 * _bucket{le=...} lines ending with le="+Inf", then _sum and _count. Families without any child
 * print only HELP and TYPE. Gauge callbacks are evaluated here, on the calling thread.
 * A histogram's _count always equals its +Inf bucket; its _sum may miss observations made while
 * the scrape ran (they show up in the next scrape). Several threads may render at once.
 */
void lop_metrics_render(lop_metrics_t *r, lop_buf_t *out);

/* ---------------------------------------------------------------- children */

/*
 * The child for the given label values (an array of exactly nlabels strings in declaration
 * order; NULL when the family has no labels), created on first use. Values are copied; they must
 * be valid UTF-8 of at most LOP_METRIC_MAX_LABEL_VALUE bytes. Returns NULL with err set
 * (LOP_EINVAL) on a NULL value, invalid UTF-8, or when the family already has its maximum
 * number of children. The child is borrowed until lop_metrics_free.
 */
lop_metric_t *lop_metric_child(lop_metric_family_t *f, const char *const *values, lop_err_t *err);

/*
 * Hide the child with these label values from the output and reset its value (e.g. the old
 * luaop_script_active_version{version} after a reload). Its pointer stays valid; using it, or
 * asking for the same values again, makes it visible again. LOP_ENOTFOUND if it does not exist.
 */
LOP_MUST_CHECK lop_rc_t lop_metric_remove(lop_metric_family_t *f, const char *const *values);

/* The updates below (add, inc, set, observe and their by-label-values forms) are not LOP_MUST_CHECK:
 * a failed update (wrong metric type, NaN, a negative counter increment, the child cap reached) loses
 * one sample and must never change the outcome of the work being measured, so hooks on hot paths
 * may drop the rc. client_golang's Counter.Add, Gauge.Set and Observer.Observe return nothing for
 * the same reason (prometheus/client_golang prometheus/counter.go). Registration, callbacks and
 * removal below are checked. */

/* Counter or gauge: add v. Counters refuse v < 0 or NaN with LOP_EINVAL; histograms: LOP_EINVAL. */
lop_rc_t lop_metric_add(lop_metric_t *m, double v);
/* Counter or gauge: add 1. */
lop_rc_t lop_metric_inc(lop_metric_t *m);
/* Gauge only: set to v (LOP_EINVAL on another type). */
lop_rc_t lop_metric_set(lop_metric_t *m, double v);
/* Histogram only: record one observation v (LOP_EINVAL on another type or NaN). */
lop_rc_t lop_metric_observe(lop_metric_t *m, double v);
/* Current value of a counter or gauge (callbacks are evaluated); histogram: the observation sum. */
double lop_metric_value(lop_metric_t *m);
/* Histogram: the number of observations; 0 for other types. */
uint64_t lop_metric_count(const lop_metric_t *m);

/*
 * Make a gauge or counter child report fn(ud) at scrape time instead of its stored value (for
 * values another component already tracks: queue depth, informer objects, longest running
 * processor). fn runs on the scraping thread with the family lock held: it must be quick, must not
 * block and must not call back into this family. Pass fn = NULL to go back to the stored value;
 * once that call returns, fn is not running and will not be called again, so ud may be freed.
 * LOP_EINVAL on a histogram.
 */
typedef double (*lop_metric_fn)(void *ud);
LOP_MUST_CHECK lop_rc_t lop_metric_set_fn(lop_metric_t *m, lop_metric_fn fn, void *ud);
/* Clear the callback only if it is still the one installed with this ud (so a component being
 * torn down cannot unhook its replacement). Returns true when it cleared. Same guarantee as
 * lop_metric_set_fn(m, NULL, NULL) once it returns. */
bool lop_metric_clear_fn_if(lop_metric_t *m, const void *ud);

/* ---------------------------------------------------------------- by label values (for bindings)
 */

/* lop_metric_child + the operation, in one call. Errors as for the two parts. */
lop_rc_t lop_metric_counter_add(lop_metric_family_t *f, const char *const *values, double v, lop_err_t *err);
lop_rc_t lop_metric_gauge_set(lop_metric_family_t *f, const char *const *values, double v, lop_err_t *err);
lop_rc_t lop_metric_gauge_add(lop_metric_family_t *f, const char *const *values, double v, lop_err_t *err);
lop_rc_t lop_metric_histogram_observe(lop_metric_family_t *f, const char *const *values, double v, lop_err_t *err);

/* ---------------------------------------------------------------- buckets */

/* Prometheus' default buckets (.005 … 10 s): 11 values. */
extern const double lop_metric_default_buckets[];
extern const size_t lop_metric_default_buckets_len;
/* controller-runtime's controller_runtime_reconcile_time_seconds buckets (0.005 … 60 s). */
extern const double lop_metric_reconcile_buckets[];
extern const size_t lop_metric_reconcile_buckets_len;
/* client-go's rest_client_request_duration_seconds buckets (0.005 … 60 s). */
extern const double lop_metric_rest_buckets[];
extern const size_t lop_metric_rest_buckets_len;

/*
 * Fill out[0..count) with start, start*factor, start*factor^2, ... (computed by repeated
 * multiplication, as Prometheus clients do, so the le values match theirs). count <= cap.
 * Returns count, or 0 when start <= 0, factor <= 1 or count is 0 or > cap.
 * controller-runtime's workqueue duration buckets are lop_metric_exp_buckets(out, 12, 10e-9, 10, 12).
 */
size_t lop_metric_exp_buckets(double *out, size_t cap, double start, double factor, size_t count);

/* Fill out[0..count) with start, start+width, ... Returns count, or 0 when width <= 0, count is 0
 * or > cap, or an argument is not finite. */
size_t lop_metric_linear_buckets(double *out, size_t cap, double start, double width, size_t count);

/* Format v as Prometheus does (shortest round-trip form, "+Inf", "-Inf", "NaN"). buf >= 32. */
char *lop_metric_format_value(double v, char *buf, size_t len);

#endif
