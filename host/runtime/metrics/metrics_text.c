/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_text.c — the Prometheus text exposition format 0.0.4 of a registry (see metrics.h). */
#include "host/runtime/metrics/metrics.h"
#include "host/runtime/metrics/metrics_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *lop_metric_format_value(double v, char *buf, size_t len)
{
    if (isnan(v)) {
        snprintf(buf, len, "NaN");
        return buf;
    }
    if (isinf(v)) {
        snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
        return buf;
    }
    if (v == 0) {
        snprintf(buf, len, signbit(v) ? "-0" : "0");
        return buf;
    }
    /* The shortest digit count that reads back exactly, laid out as Prometheus' Go clients do
     * (exponent form when the decimal exponent is below -4 or at least 6), so le="..." strings
     * match theirs. */
    char tmp[64];
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
        if (strtod(tmp, NULL) == v) break;
    }
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
    const char *e = strchr(tmp, 'e');
    int exp10 = e ? atoi(e + 1) : 0;
    if (exp10 < -4 || exp10 >= 6) {
        snprintf(buf, len, "%s", tmp);
    } else {
        int decimals = prec - 1 - exp10;
        snprintf(buf, len, "%.*f", decimals > 0 ? decimals : 0, v);
    }
    return buf;
}

static void put_escaped(lop_buf_t *out, const char *s, bool quote)
{
    for (const char *p = s; *p; p++) {
        if (*p == '\\')
            lop_buf_puts(out, "\\\\");
        else if (*p == '\n')
            lop_buf_puts(out, "\\n");
        else if (quote && *p == '"')
            lop_buf_puts(out, "\\\"");
        else
            lop_buf_putc(out, *p);
    }
}

/* name{l1="v1",...[,le="x"]} value\n */
static void put_sample(lop_buf_t *out, const lop_metric_family_t *f, const char *suffix, const lop_metric_t *m,
                       const char *le, double v)
{
    char num[64];
    lop_buf_puts(out, f->name);
    lop_buf_puts(out, suffix);
    if (f->nlabels || le) {
        lop_buf_putc(out, '{');
        for (size_t i = 0; i < f->nlabels; i++) {
            if (i) lop_buf_putc(out, ',');
            lop_buf_puts(out, f->labels[i]);
            lop_buf_puts(out, "=\"");
            put_escaped(out, m->values[i], true);
            lop_buf_putc(out, '"');
        }
        if (le) {
            if (f->nlabels) lop_buf_putc(out, ',');
            lop_buf_printf(out, "le=\"%s\"", le);
        }
        lop_buf_putc(out, '}');
    }
    lop_buf_putc(out, ' ');
    lop_buf_puts(out, lop_metric_format_value(v, num, sizeof num));
    lop_buf_putc(out, '\n');
}

/* qsort_r comparator: ctx points at the family's label count. */
static int cmp_children(const void *a, const void *b, void *ctx)
{
    const lop_metric_t *x = *(const lop_metric_t *const *)a, *y = *(const lop_metric_t *const *)b;
    size_t nlabels = *(const size_t *)ctx;
    for (size_t i = 0; i < nlabels; i++) {
        int c = strcmp(x->values[i], y->values[i]);
        if (c) return c;
    }
    return 0;
}

static int cmp_families(const void *a, const void *b)
{
    const lop_metric_family_t *x = *(const lop_metric_family_t *const *)a;
    const lop_metric_family_t *y = *(const lop_metric_family_t *const *)b;
    return strcmp(x->name, y->name);
}

static void render_family(lop_metric_family_t *f, lop_buf_t *out)
{
    lop_buf_printf(out, "# HELP %s ", f->name);
    put_escaped(out, f->help, false);
    lop_buf_printf(out, "\n# TYPE %s %s\n", f->name, lop_metric_type_name(f->type));

    pthread_mutex_lock(&f->mu);
    size_t n = 0;
    lop_metric_t **kids = lop_xcalloc(f->nchildren ? f->nchildren : 1, sizeof *kids);
    for (lop_metric_t *m = atomic_load(&f->children); m && n < f->nchildren; m = m->next)
        if (!atomic_load_explicit(&m->hidden, memory_order_relaxed)) kids[n++] = m;
    qsort_r(kids, n, sizeof *kids, cmp_children, &f->nlabels);
    for (size_t k = 0; k < n; k++) {
        lop_metric_t *m = kids[k];
        if (f->type != LOP_METRIC_HISTOGRAM) {
            put_sample(out, f, "", m, NULL, m->fn ? m->fn(m->fn_ud) : lop_metric_stored(m));
            continue;
        }
        uint64_t cum = 0;
        char le[64];
        for (size_t b = 0; b < f->nbuckets; b++) {
            cum += atomic_load_explicit(&m->counts[b], memory_order_relaxed);
            put_sample(out, f, "_bucket", m, lop_metric_format_value(f->buckets[b], le, sizeof le), (double)cum);
        }
        cum += atomic_load_explicit(&m->counts[f->nbuckets], memory_order_relaxed);
        put_sample(out, f, "_bucket", m, "+Inf", (double)cum);
        put_sample(out, f, "_sum", m, NULL, lop_metric_stored(m));
        put_sample(out, f, "_count", m, NULL, (double)cum);
    }
    pthread_mutex_unlock(&f->mu);
    free(kids);
}

void lop_metrics_render(lop_metrics_t *r, lop_buf_t *out)
{
    if (!r || !out) return;
    pthread_mutex_lock(&r->mu);
    lop_metric_family_t **fams = lop_xcalloc(r->n ? r->n : 1, sizeof *fams);
    size_t n = r->n;
    if (n) memcpy(fams, r->fams, n * sizeof *fams);
    pthread_mutex_unlock(&r->mu);
    /* Families are never removed before lop_metrics_free, so the copied pointers stay valid. */
    qsort(fams, n, sizeof *fams, cmp_families);
    for (size_t i = 0; i < n; i++) render_family(fams[i], out);
    free(fams);
}
