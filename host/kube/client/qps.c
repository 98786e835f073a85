/* SPDX-License-Identifier: Apache-2.0 */
/* qps.c — the REST client's token-bucket request limiter (QPS/burst), reservations served in
 * arrival order on an injected clock (see qps.h). Taken by every thread that sends a request,
 * under one mutex. Upstream: client-go util/flowcontrol/throttle.go (NewTokenBucketRateLimiter). */
#include "host/kube/client/qps.h"

#include "host/util/buf.h"

#include <pthread.h>
#include <stdlib.h>

struct lop_qps {
    pthread_mutex_t mu;
    const lop_clock_t *clock;
    double qps;    /* tokens per second; <= 0 = unlimited */
    double burst;  /* capacity */
    double tokens; /* may go negative: reservations not yet due */
    int64_t last;  /* mono ns of the last refill */
};

lop_qps_t *lop_qps_new(double qps, int burst, const lop_clock_t *clock)
{
    lop_qps_t *q = lop_xcalloc(1, sizeof *q);
    pthread_mutex_init(&q->mu, NULL);
    q->clock = clock ? clock : &lop_clock_system;
    q->qps = qps;
    q->burst = burst < 1 ? 1 : burst;
    q->tokens = q->burst;
    q->last = lop_clock_mono(q->clock);
    return q;
}

void lop_qps_free(lop_qps_t *q)
{
    if (!q) return;
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* Caller holds mu. */
static void refill(lop_qps_t *q)
{
    int64_t now = lop_clock_mono(q->clock);
    if (now > q->last) {
        q->tokens += (double)(now - q->last) * q->qps / (double)LOP_NS_PER_S;
        if (q->tokens > q->burst) q->tokens = q->burst;
        q->last = now;
    }
}

bool lop_qps_try_take(lop_qps_t *q)
{
    if (q->qps <= 0) return true;
    pthread_mutex_lock(&q->mu);
    refill(q);
    bool ok = q->tokens >= 1.0;
    if (ok) q->tokens -= 1.0;
    pthread_mutex_unlock(&q->mu);
    return ok;
}

int64_t lop_qps_reserve(lop_qps_t *q)
{
    if (q->qps <= 0) return 0;
    pthread_mutex_lock(&q->mu);
    refill(q);
    q->tokens -= 1.0;
    int64_t wait = 0;
    if (q->tokens < 0) wait = (int64_t)((-q->tokens) * (double)LOP_NS_PER_S / q->qps + 0.5);
    pthread_mutex_unlock(&q->mu);
    return wait;
}

double lop_qps_tokens(lop_qps_t *q)
{
    if (q->qps <= 0) return q->burst;
    pthread_mutex_lock(&q->mu);
    refill(q);
    double t = q->tokens;
    pthread_mutex_unlock(&q->mu);
    return t;
}

void lop_qps_sleep_until(const lop_clock_t *clock, int64_t deadline_ns)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond;
    lop_cond_init(&cond);
    pthread_mutex_lock(&mu);
    while (!lop_clock_wait_until(clock, &cond, &mu, deadline_ns)) {}
    pthread_mutex_unlock(&mu);
    pthread_cond_destroy(&cond);
}

int64_t lop_qps_take(lop_qps_t *q)
{
    int64_t wait = lop_qps_reserve(q);
    if (wait > 0) lop_qps_sleep_until(q->clock, lop_clock_mono(q->clock) + wait);
    return wait;
}
