/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_impl.h — private to host/runtime/metrics*.c: the registry's data structures, shared by
 * the registry (metrics.c) and the text exposition (metrics_text.c). Nobody else includes it.
 */
#ifndef LOP_RUNTIME_METRICS_METRICS_IMPL_H
#define LOP_RUNTIME_METRICS_METRICS_IMPL_H

#include "host/runtime/metrics/metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

struct lop_metric {
    lop_metric_family_t *fam;
    lop_metric_t *next;       /* immutable once published */
    uint64_t hash;            /* of the label values, to skip most string compares */
    char **values;            /* nlabels copies */
    _Atomic uint64_t bits;    /* counter/gauge value, or histogram sum, as double bits */
    _Atomic int hidden;       /* set by lop_metric_remove, cleared by any use */
    _Atomic uint64_t *counts; /* histogram: nbuckets + 1 non-cumulative counts (+Inf last) */
    lop_metric_fn fn;         /* guarded by fam->mu */
    void *fn_ud;
};

struct lop_metric_family {
    char *name;
    char *help;
    lop_metric_type_t type;
    char **labels;
    size_t nlabels;
    double *buckets; /* finite upper bounds; +Inf implicit */
    size_t nbuckets;
    pthread_mutex_t mu;               /* child creation, callbacks, rendering */
    _Atomic(lop_metric_t *) children; /* newest first; readers walk it without the lock */
    size_t nchildren;                 /* guarded by mu */
    size_t max_children;              /* guarded by mu */
};

struct lop_metrics {
    pthread_mutex_t mu; /* fams, n, cap */
    lop_metric_family_t **fams;
    size_t n, cap;
};

static inline uint64_t lop_metric_dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline double lop_metric_bitsd(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static inline const char *lop_metric_type_name(lop_metric_type_t t)
{
    switch (t) {
    case LOP_METRIC_COUNTER: return "counter";
    case LOP_METRIC_GAUGE: return "gauge";
    case LOP_METRIC_HISTOGRAM: return "histogram";
    }
    return "untyped";
}

static inline double lop_metric_stored(lop_metric_t *m)
{
    return lop_metric_bitsd(atomic_load_explicit(&m->bits, memory_order_relaxed));
}

#endif
