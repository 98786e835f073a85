/* SPDX-License-Identifier: Apache-2.0 */
/* ratelimiter.c — the workqueue rate limiters (see ratelimiter.h). */
#include "host/kube/workqueue/ratelimiter.h"

#include "host/codec/strmap.h"
#include "host/util/buf.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

void lop_ratelimiter_free(lop_ratelimiter_t *rl)
{
    if (rl) rl->free(rl);
}

/* ---- per-item failure counts, shared by exponential and fast/slow ---- */

typedef struct per_item {
    lop_ratelimiter_t base;
    pthread_mutex_t mu;
    lop_strmap_t failures; /* item -> (void *)(uintptr_t)count */
    int64_t a_ns, b_ns;    /* exponential: base, max; fast/slow: fast, slow */
    int max_fast;
} per_item_t;

static int per_item_bump(per_item_t *p, const char *item)
{
    int n = (int)(uintptr_t)lop_strmap_get(&p->failures, item);
    lop_strmap_put(&p->failures, item, (void *)(uintptr_t)(n + 1));
    return n; /* failures before this one */
}

static void per_item_forget(lop_ratelimiter_t *rl, const char *item)
{
    per_item_t *p = (per_item_t *)rl;
    pthread_mutex_lock(&p->mu);
    lop_strmap_del(&p->failures, item, NULL);
    pthread_mutex_unlock(&p->mu);
}

static int per_item_requeues(lop_ratelimiter_t *rl, const char *item)
{
    per_item_t *p = (per_item_t *)rl;
    pthread_mutex_lock(&p->mu);
    int n = (int)(uintptr_t)lop_strmap_get(&p->failures, item);
    pthread_mutex_unlock(&p->mu);
    return n;
}

static void per_item_free(lop_ratelimiter_t *rl)
{
    per_item_t *p = (per_item_t *)rl;
    lop_strmap_clear(&p->failures);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static int64_t exp_when(lop_ratelimiter_t *rl, const char *item)
{
    per_item_t *p = (per_item_t *)rl;
    pthread_mutex_lock(&p->mu);
    int exp = per_item_bump(p, item);
    pthread_mutex_unlock(&p->mu);
    double backoff = (double)p->a_ns * pow(2.0, (double)exp);
    if (backoff >= (double)INT64_MAX || backoff > (double)p->b_ns) return p->b_ns;
    return (int64_t)backoff;
}

static int64_t fast_slow_when(lop_ratelimiter_t *rl, const char *item)
{
    per_item_t *p = (per_item_t *)rl;
    pthread_mutex_lock(&p->mu);
    int n = per_item_bump(p, item) + 1;
    pthread_mutex_unlock(&p->mu);
    return n <= p->max_fast ? p->a_ns : p->b_ns;
}

static per_item_t *per_item_new(int64_t (*when)(lop_ratelimiter_t *, const char *))
{
    per_item_t *p = lop_xcalloc(1, sizeof *p);
    p->base.when = when;
    p->base.forget = per_item_forget;
    p->base.num_requeues = per_item_requeues;
    p->base.free = per_item_free;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

lop_ratelimiter_t *lop_ratelimiter_exponential_new(int64_t base_ns, int64_t max_ns)
{
    if (base_ns <= 0 || max_ns < base_ns) return NULL;
    per_item_t *p = per_item_new(exp_when);
    p->a_ns = base_ns;
    p->b_ns = max_ns;
    return &p->base;
}

lop_ratelimiter_t *lop_ratelimiter_fast_slow_new(int64_t fast_ns, int64_t slow_ns, int max_fast)
{
    if (fast_ns < 0 || slow_ns < 0 || max_fast < 0) return NULL;
    per_item_t *p = per_item_new(fast_slow_when);
    p->a_ns = fast_ns;
    p->b_ns = slow_ns;
    p->max_fast = max_fast;
    return &p->base;
}

/* ---- token bucket (golang.org/x/time/rate Reserve semantics: tokens may go negative) ---- */

typedef struct bucket {
    lop_ratelimiter_t base;
    pthread_mutex_t mu;
    const lop_clock_t *clock;
    double qps, burst, tokens;
    int64_t last_ns;
} bucket_t;

static int64_t bucket_when(lop_ratelimiter_t *rl, const char *item)
{
    bucket_t *b = (bucket_t *)rl;
    pthread_mutex_lock(&b->mu);
    int64_t now = lop_clock_mono(b->clock);
    if (now > b->last_ns) {
        b->tokens += (double)(now - b->last_ns) / (double)LOP_NS_PER_S * b->qps;
        if (b->tokens > b->burst) b->tokens = b->burst;
        b->last_ns = now;
    }
    b->tokens -= 1.0;
    int64_t wait = 0;
    if (b->tokens < 0) wait = (int64_t)ceil(-b->tokens / b->qps * (double)LOP_NS_PER_S);
    pthread_mutex_unlock(&b->mu);
    return wait;
}

static void bucket_forget(lop_ratelimiter_t *rl, const char *item) {}
static int bucket_requeues(lop_ratelimiter_t *rl, const char *item) { return 0; }

static void bucket_free(lop_ratelimiter_t *rl)
{
    bucket_t *b = (bucket_t *)rl;
    pthread_mutex_destroy(&b->mu);
    free(b);
}

lop_ratelimiter_t *lop_ratelimiter_bucket_new(const lop_clock_t *clock, double qps, int burst)
{
    if (!clock || !(qps > 0) || burst < 1) return NULL;
    bucket_t *b = lop_xcalloc(1, sizeof *b);
    b->base = (lop_ratelimiter_t){bucket_when, bucket_forget, bucket_requeues, bucket_free};
    pthread_mutex_init(&b->mu, NULL);
    b->clock = clock;
    b->qps = qps;
    b->burst = b->tokens = burst;
    b->last_ns = lop_clock_mono(clock);
    return &b->base;
}

/* ---- max-of ---- */

typedef struct max_of {
    lop_ratelimiter_t base;
    size_t n;
    lop_ratelimiter_t **kids;
} max_of_t;

static int64_t max_of_when(lop_ratelimiter_t *rl, const char *item)
{
    max_of_t *m = (max_of_t *)rl;
    int64_t best = 0;
    for (size_t i = 0; i < m->n; i++) {
        int64_t d = m->kids[i]->when(m->kids[i], item);
        if (d > best) best = d;
    }
    return best;
}

static void max_of_forget(lop_ratelimiter_t *rl, const char *item)
{
    max_of_t *m = (max_of_t *)rl;
    for (size_t i = 0; i < m->n; i++) m->kids[i]->forget(m->kids[i], item);
}

static int max_of_requeues(lop_ratelimiter_t *rl, const char *item)
{
    max_of_t *m = (max_of_t *)rl;
    int best = 0;
    for (size_t i = 0; i < m->n; i++) {
        int r = m->kids[i]->num_requeues(m->kids[i], item);
        if (r > best) best = r;
    }
    return best;
}

static void max_of_free(lop_ratelimiter_t *rl)
{
    max_of_t *m = (max_of_t *)rl;
    for (size_t i = 0; i < m->n; i++) lop_ratelimiter_free(m->kids[i]);
    free(m->kids);
    free(m);
}

lop_ratelimiter_t *lop_ratelimiter_max_of_new(lop_ratelimiter_t **children, size_t n)
{
    bool bad = n == 0 || !children;
    for (size_t i = 0; !bad && i < n; i++) bad = children[i] == NULL;
    if (bad) {
        for (size_t i = 0; children && i < n; i++) lop_ratelimiter_free(children[i]);
        return NULL;
    }
    max_of_t *m = lop_xcalloc(1, sizeof *m);
    m->base = (lop_ratelimiter_t){max_of_when, max_of_forget, max_of_requeues, max_of_free};
    m->n = n;
    m->kids = lop_xcalloc(n, sizeof *m->kids);
    for (size_t i = 0; i < n; i++) m->kids[i] = children[i];
    return &m->base;
}

lop_ratelimiter_t *lop_ratelimiter_default_controller_new(const lop_clock_t *clock)
{
    return lop_ratelimiter_controller_new(clock, 0, 0, 0, 0);
}

lop_ratelimiter_t *lop_ratelimiter_controller_new(const lop_clock_t *clock, int64_t base_ns, int64_t max_ns, double qps,
                                                  int burst)
{
    lop_ratelimiter_t *kids[2] = {
        lop_ratelimiter_exponential_new(base_ns > 0 ? base_ns : 5 * LOP_NS_PER_MS,
                                        max_ns > 0 ? max_ns : 1000 * LOP_NS_PER_S),
        lop_ratelimiter_bucket_new(clock, qps > 0 ? qps : 10.0, burst > 0 ? burst : 100),
    };
    if (!kids[0] || !kids[1]) {
        lop_ratelimiter_free(kids[0]);
        lop_ratelimiter_free(kids[1]);
        return NULL;
    }
    return lop_ratelimiter_max_of_new(kids, 2);
}
