/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c — the Prometheus registry: families, children, updates (see metrics.h). The text
 * exposition lives in metrics_text.c. */
#include "host/runtime/metrics/metrics.h"
#include "host/runtime/metrics/metrics_impl.h"
#include "host/util/utf8.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- buckets */

const double lop_metric_default_buckets[] = {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10};
const size_t lop_metric_default_buckets_len = sizeof lop_metric_default_buckets / sizeof lop_metric_default_buckets[0];

const double lop_metric_reconcile_buckets[] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5,
    1.75,  2.0,  2.5,   3.0,  3.5, 4.0,  4.5, 5,    6,   7,    8,   9,    10,  15,  20,  25,  30,  40,  50,   60};
const size_t lop_metric_reconcile_buckets_len =
    sizeof lop_metric_reconcile_buckets / sizeof lop_metric_reconcile_buckets[0];

const double lop_metric_rest_buckets[] = {0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0};
const size_t lop_metric_rest_buckets_len = sizeof lop_metric_rest_buckets / sizeof lop_metric_rest_buckets[0];

size_t lop_metric_exp_buckets(double *out, size_t cap, double start, double factor, size_t count)
{
    if (!out || count == 0 || count > cap || !(start > 0) || !(factor > 1) || !isfinite(start) || !isfinite(factor))
        return 0;
    double v = start;
    for (size_t i = 0; i < count; i++) {
        out[i] = v;
        v *= factor;
    }
    return count;
}

size_t lop_metric_linear_buckets(double *out, size_t cap, double start, double width, size_t count)
{
    if (!out || count == 0 || count > cap || !(width > 0) || !isfinite(start) || !isfinite(width)) return 0;
    for (size_t i = 0; i < count; i++) out[i] = start + (double)i * width;
    return count;
}

/* ---------------------------------------------------------------- atomics on doubles */

static void atomic_add_double(_Atomic uint64_t *p, double v)
{
    uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(p, &old, lop_metric_dbits(lop_metric_bitsd(old) + v),
                                                  memory_order_relaxed, memory_order_relaxed)) {}
}

/* ---------------------------------------------------------------- validation */

static bool valid_metric_name(const char *s)
{
    if (!s || !*s || strlen(s) > LOP_METRIC_MAX_NAME) return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        if (!alpha && !(p != s && c >= '0' && c <= '9')) return false;
    }
    return true;
}

static bool valid_label_name(const char *s)
{
    if (!s || !*s || strlen(s) > LOP_METRIC_MAX_NAME || strncmp(s, "__", 2) == 0) return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(p != s && c >= '0' && c <= '9')) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- registry */

lop_metrics_t *lop_metrics_new(void)
{
    lop_metrics_t *r = lop_xcalloc(1, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

static void child_free(lop_metric_t *m, size_t nlabels)
{
    for (size_t i = 0; i < nlabels; i++) free(m->values[i]);
    free(m->values);
    free((void *)m->counts);
    free(m);
}

static void family_free(lop_metric_family_t *f)
{
    lop_metric_t *m = atomic_load(&f->children);
    while (m) {
        lop_metric_t *next = m->next;
        child_free(m, f->nlabels);
        m = next;
    }
    for (size_t i = 0; i < f->nlabels; i++) free(f->labels[i]);
    free(f->labels);
    free(f->buckets);
    free(f->name);
    free(f->help);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

void lop_metrics_free(lop_metrics_t *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) family_free(r->fams[i]);
    free(r->fams);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static lop_metric_family_t *find_locked(lop_metrics_t *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->fams[i]->name, name) == 0) return r->fams[i];
    return NULL;
}

lop_metric_family_t *lop_metrics_find(lop_metrics_t *r, const char *name)
{
    if (!r || !name) return NULL;
    pthread_mutex_lock(&r->mu);
    lop_metric_family_t *f = find_locked(r, name);
    pthread_mutex_unlock(&r->mu);
    return f;
}

/* True when the existing family f has exactly this shape. */
static bool same_shape(const lop_metric_family_t *f, lop_metric_type_t type, const char *const *labels, size_t nlabels,
                       const double *buckets, size_t nbuckets)
{
    if (f->type != type || f->nlabels != nlabels) return false;
    for (size_t i = 0; i < nlabels; i++)
        if (strcmp(f->labels[i], labels[i]) != 0) return false;
    if (type == LOP_METRIC_HISTOGRAM) {
        if (f->nbuckets != nbuckets) return false;
        for (size_t i = 0; i < nbuckets; i++)
            if (f->buckets[i] != buckets[i]) return false;
    }
    return true;
}

static lop_metric_family_t *declare(lop_metrics_t *r, lop_metric_type_t type, const char *name, const char *help,
                                    const char *const *labels, const double *buckets, size_t nbuckets, lop_err_t *err)
{
    if (!r) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: no registry");
        return NULL;
    }
    if (!valid_metric_name(name)) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: invalid metric name \"%s\"", name ? name : "(null)");
        return NULL;
    }
    size_t nlabels = 0;
    while (labels && labels[nlabels]) {
        const char *l = labels[nlabels];
        if (nlabels == LOP_METRIC_MAX_LABELS) {
            lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s: more than %d label names", name, LOP_METRIC_MAX_LABELS);
            return NULL;
        }
        if (!valid_label_name(l) || (type == LOP_METRIC_HISTOGRAM && strcmp(l, "le") == 0)) {
            lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s: invalid label name \"%s\"", name, l);
            return NULL;
        }
        for (size_t k = 0; k < nlabels; k++)
            if (strcmp(labels[k], l) == 0) {
                lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s: duplicate label name \"%s\"", name, l);
                return NULL;
            }
        nlabels++;
    }
    if (type == LOP_METRIC_HISTOGRAM) {
        if (!buckets || nbuckets == 0) {
            buckets = lop_metric_default_buckets;
            nbuckets = lop_metric_default_buckets_len;
        }
        if (nbuckets > LOP_METRIC_MAX_BUCKETS) {
            lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s: more than %d buckets", name, LOP_METRIC_MAX_BUCKETS);
            return NULL;
        }
        /* A trailing +Inf is allowed and dropped: it is always implied. */
        if (isinf(buckets[nbuckets - 1]) && buckets[nbuckets - 1] > 0) nbuckets--;
        for (size_t i = 0; i < nbuckets; i++) {
            if (!isfinite(buckets[i]) || (i > 0 && !(buckets[i] > buckets[i - 1]))) {
                lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s: buckets must be finite and strictly increasing",
                            name);
                return NULL;
            }
        }
    } else {
        nbuckets = 0;
    }

    pthread_mutex_lock(&r->mu);
    lop_metric_family_t *f = find_locked(r, name);
    if (f) {
        bool same = same_shape(f, type, labels, nlabels, buckets, nbuckets);
        pthread_mutex_unlock(&r->mu);
        if (!same) {
            lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s already declared as a %s with other labels or buckets",
                        name, lop_metric_type_name(f->type));
            return NULL;
        }
        return f;
    }
    f = lop_xcalloc(1, sizeof *f);
    f->name = lop_xstrdup(name);
    f->help = lop_xstrdup(help ? help : "");
    f->type = type;
    f->nlabels = nlabels;
    f->labels = lop_xcalloc(nlabels ? nlabels : 1, sizeof *f->labels);
    for (size_t i = 0; i < nlabels; i++) f->labels[i] = lop_xstrdup(labels[i]);
    f->nbuckets = nbuckets;
    if (nbuckets) {
        f->buckets = lop_xmalloc(nbuckets * sizeof *f->buckets);
        memcpy(f->buckets, buckets, nbuckets * sizeof *f->buckets);
    }
    pthread_mutex_init(&f->mu, NULL);
    atomic_init(&f->children, NULL);
    f->max_children = LOP_METRIC_DEFAULT_MAX_CHILDREN;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 32;
        r->fams = lop_xrealloc(r->fams, r->cap * sizeof *r->fams);
    }
    r->fams[r->n++] = f;
    pthread_mutex_unlock(&r->mu);
    return f;
}

lop_metric_family_t *lop_metrics_counter(lop_metrics_t *r, const char *name, const char *help,
                                         const char *const *labels, lop_err_t *err)
{
    return declare(r, LOP_METRIC_COUNTER, name, help, labels, NULL, 0, err);
}

lop_metric_family_t *lop_metrics_gauge(lop_metrics_t *r, const char *name, const char *help, const char *const *labels,
                                       lop_err_t *err)
{
    return declare(r, LOP_METRIC_GAUGE, name, help, labels, NULL, 0, err);
}

lop_metric_family_t *lop_metrics_histogram(lop_metrics_t *r, const char *name, const char *help,
                                           const char *const *labels, const double *buckets, size_t nbuckets,
                                           lop_err_t *err)
{
    return declare(r, LOP_METRIC_HISTOGRAM, name, help, labels, buckets, nbuckets, err);
}

void lop_metric_family_set_max_children(lop_metric_family_t *f, size_t max)
{
    if (!f || max == 0) return;
    pthread_mutex_lock(&f->mu);
    f->max_children = max;
    pthread_mutex_unlock(&f->mu);
}

lop_metric_type_t lop_metric_family_type(const lop_metric_family_t *f) { return f->type; }
const char *lop_metric_family_name(const lop_metric_family_t *f) { return f->name; }
size_t lop_metric_family_nlabels(const lop_metric_family_t *f) { return f->nlabels; }

/* ---------------------------------------------------------------- children */

/* FNV-1a over the values, each terminated by a 0xff byte (which UTF-8 never contains). */
static uint64_t values_hash(const char *const *values, size_t n)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (size_t i = 0; i < n; i++) {
        for (const unsigned char *p = (const unsigned char *)values[i]; *p; p++) h = (h ^ *p) * UINT64_C(1099511628211);
        h = (h ^ 0xff) * UINT64_C(1099511628211);
    }
    return h;
}

static lop_metric_t *lookup(lop_metric_family_t *f, const char *const *values, uint64_t h)
{
    for (lop_metric_t *m = atomic_load_explicit(&f->children, memory_order_acquire); m; m = m->next) {
        if (m->hash != h) continue;
        size_t i = 0;
        while (i < f->nlabels && strcmp(m->values[i], values[i]) == 0) i++;
        if (i == f->nlabels) return m;
    }
    return NULL;
}

static void unhide(lop_metric_t *m)
{
    if (atomic_load_explicit(&m->hidden, memory_order_relaxed))
        atomic_store_explicit(&m->hidden, 0, memory_order_relaxed);
}

lop_metric_t *lop_metric_child(lop_metric_family_t *f, const char *const *values, lop_err_t *err)
{
    if (!f) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: no metric family");
        return NULL;
    }
    if (f->nlabels > 0 && !values) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s: %zu label values required", f->name, f->nlabels);
        return NULL;
    }
    for (size_t i = 0; i < f->nlabels; i++) {
        if (!values[i]) {
            lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s: value of label \"%s\" is missing", f->name,
                        f->labels[i]);
            return NULL;
        }
    }
    uint64_t h = values_hash(values, f->nlabels);
    lop_metric_t *m = lookup(f, values, h);
    if (m) {
        unhide(m);
        return m;
    }

    for (size_t i = 0; i < f->nlabels; i++) {
        size_t n = strlen(values[i]);
        if (n > LOP_METRIC_MAX_LABEL_VALUE || !lop_utf8_valid(values[i], n)) {
            lop_err_set(err, LOP_EINVAL, 0, NULL,
                        "metrics: %s: value of label \"%s\" is not valid UTF-8 of at most %d bytes", f->name,
                        f->labels[i], LOP_METRIC_MAX_LABEL_VALUE);
            return NULL;
        }
    }
    pthread_mutex_lock(&f->mu);
    m = lookup(f, values, h); /* another thread may have created it meanwhile */
    if (!m && f->nchildren >= f->max_children) {
        pthread_mutex_unlock(&f->mu);
        lop_err_set(err, LOP_EINVAL, 0, NULL,
                    "metrics: %s: too many label sets (limit %zu); is a label fed with unbounded "
                    "values?",
                    f->name, f->max_children);
        return NULL;
    }
    if (!m) {
        m = lop_xcalloc(1, sizeof *m);
        m->fam = f;
        m->hash = h;
        m->values = lop_xcalloc(f->nlabels ? f->nlabels : 1, sizeof *m->values);
        for (size_t i = 0; i < f->nlabels; i++) m->values[i] = lop_xstrdup(values[i]);
        atomic_init(&m->bits, lop_metric_dbits(0.0));
        atomic_init(&m->hidden, 0);
        if (f->type == LOP_METRIC_HISTOGRAM) {
            m->counts = lop_xcalloc(f->nbuckets + 1, sizeof *m->counts);
            for (size_t i = 0; i <= f->nbuckets; i++) atomic_init(&m->counts[i], 0);
        }
        m->next = atomic_load_explicit(&f->children, memory_order_relaxed);
        atomic_store_explicit(&f->children, m, memory_order_release);
        f->nchildren++;
    }
    pthread_mutex_unlock(&f->mu);
    return m;
}

lop_rc_t lop_metric_remove(lop_metric_family_t *f, const char *const *values)
{
    if (!f || (f->nlabels > 0 && !values)) return LOP_EINVAL;
    for (size_t i = 0; i < f->nlabels; i++)
        if (!values[i]) return LOP_EINVAL;
    lop_metric_t *m = lookup(f, values, values_hash(values, f->nlabels));
    if (!m) return LOP_ENOTFOUND;
    pthread_mutex_lock(&f->mu);
    atomic_store(&m->hidden, 1);
    atomic_store(&m->bits, lop_metric_dbits(0.0));
    if (m->counts)
        for (size_t i = 0; i <= f->nbuckets; i++) atomic_store(&m->counts[i], 0);
    m->fn = NULL;
    m->fn_ud = NULL;
    pthread_mutex_unlock(&f->mu);
    return LOP_OK;
}

lop_rc_t lop_metric_add(lop_metric_t *m, double v)
{
    if (!m || m->fam->type == LOP_METRIC_HISTOGRAM || isnan(v)) return LOP_EINVAL;
    if (m->fam->type == LOP_METRIC_COUNTER && v < 0) return LOP_EINVAL;
    unhide(m);
    atomic_add_double(&m->bits, v);
    return LOP_OK;
}

lop_rc_t lop_metric_inc(lop_metric_t *m) { return lop_metric_add(m, 1.0); }

lop_rc_t lop_metric_set(lop_metric_t *m, double v)
{
    if (!m || m->fam->type != LOP_METRIC_GAUGE) return LOP_EINVAL;
    unhide(m);
    atomic_store_explicit(&m->bits, lop_metric_dbits(v), memory_order_relaxed);
    return LOP_OK;
}

lop_rc_t lop_metric_observe(lop_metric_t *m, double v)
{
    if (!m || m->fam->type != LOP_METRIC_HISTOGRAM || isnan(v)) return LOP_EINVAL;
    const lop_metric_family_t *f = m->fam;
    /* Binary search for the first bucket whose upper bound is >= v; nbuckets means +Inf. */
    size_t lo = 0, hi = f->nbuckets;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v <= f->buckets[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    unhide(m);
    atomic_add_double(&m->bits, v);
    atomic_fetch_add_explicit(&m->counts[lo], 1, memory_order_relaxed);
    return LOP_OK;
}

double lop_metric_value(lop_metric_t *m)
{
    if (!m) return NAN;
    if (m->fam->type != LOP_METRIC_HISTOGRAM) {
        pthread_mutex_lock(&m->fam->mu);
        double v = m->fn ? m->fn(m->fn_ud) : lop_metric_stored(m);
        pthread_mutex_unlock(&m->fam->mu);
        return v;
    }
    return lop_metric_stored(m);
}

uint64_t lop_metric_count(const lop_metric_t *m)
{
    if (!m || !m->counts) return 0;
    uint64_t n = 0;
    for (size_t i = 0; i <= m->fam->nbuckets; i++) n += atomic_load_explicit(&m->counts[i], memory_order_relaxed);
    return n;
}

lop_rc_t lop_metric_set_fn(lop_metric_t *m, lop_metric_fn fn, void *ud)
{
    if (!m || m->fam->type == LOP_METRIC_HISTOGRAM) return LOP_EINVAL;
    pthread_mutex_lock(&m->fam->mu);
    m->fn = fn;
    m->fn_ud = fn ? ud : NULL;
    pthread_mutex_unlock(&m->fam->mu);
    if (fn) unhide(m);
    return LOP_OK;
}

bool lop_metric_clear_fn_if(lop_metric_t *m, const void *ud)
{
    if (!m) return false;
    pthread_mutex_lock(&m->fam->mu);
    bool match = m->fn && m->fn_ud == ud;
    if (match) {
        m->fn = NULL;
        m->fn_ud = NULL;
    }
    pthread_mutex_unlock(&m->fam->mu);
    return match;
}

lop_rc_t lop_metric_counter_add(lop_metric_family_t *f, const char *const *values, double v, lop_err_t *err)
{
    lop_metric_t *m = lop_metric_child(f, values, err);
    if (!m) return LOP_EINVAL;
    if (f->type != LOP_METRIC_COUNTER)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s is a %s, not a counter", f->name,
                           lop_metric_type_name(f->type));
    if (lop_metric_add(m, v) != LOP_OK)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s: a counter only goes up (add %g refused)", f->name,
                           v);
    return LOP_OK;
}

lop_rc_t lop_metric_gauge_set(lop_metric_family_t *f, const char *const *values, double v, lop_err_t *err)
{
    lop_metric_t *m = lop_metric_child(f, values, err);
    if (!m) return LOP_EINVAL;
    if (lop_metric_set(m, v) != LOP_OK)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s is a %s, not a gauge", f->name,
                           lop_metric_type_name(f->type));
    return LOP_OK;
}

lop_rc_t lop_metric_gauge_add(lop_metric_family_t *f, const char *const *values, double v, lop_err_t *err)
{
    lop_metric_t *m = lop_metric_child(f, values, err);
    if (!m) return LOP_EINVAL;
    if (f->type != LOP_METRIC_GAUGE)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s is a %s, not a gauge", f->name,
                           lop_metric_type_name(f->type));
    if (lop_metric_add(m, v) != LOP_OK)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s: cannot add NaN", f->name);
    return LOP_OK;
}

lop_rc_t lop_metric_histogram_observe(lop_metric_family_t *f, const char *const *values, double v, lop_err_t *err)
{
    lop_metric_t *m = lop_metric_child(f, values, err);
    if (!m) return LOP_EINVAL;
    if (f->type != LOP_METRIC_HISTOGRAM)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s is a %s, not a histogram", f->name,
                           lop_metric_type_name(f->type));
    if (lop_metric_observe(m, v) != LOP_OK)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: %s: cannot observe NaN", f->name);
    return LOP_OK;
}
