/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ratelimiter.h — workqueue rate limiters, with client-go's semantics (util/workqueue
 * default_rate_limiters.go): how long to wait before an item may be retried.
 *
 *   per-item exponential: base * 2^failures, capped at max (overflow → max)
 *   per-item fast/slow:   fast delay for the first max_fast attempts, slow after
 *   token bucket:         qps refill, burst capacity, shared by all items (reserves a token;
 *                         the delay is how long until that token exists)
 *   max-of:               the largest delay of several limiters; forget forgets in all;
 *                         num_requeues is the largest count
 *   default controller:   max-of(exponential 5 ms → 1000 s, bucket 10 qps burst 100); the same
 *                         shape with other numbers: lop_ratelimiter_controller_new
 *
 * Units: nanoseconds. Items are strings (e.g. "namespace/name").
 * Ownership: *_new returns a limiter the caller frees with lop_ratelimiter_free (a max-of limiter
 * owns its children). Thread-safety: every limiter has its own mutex; calls from any thread.
 */
#ifndef LOP_KUBE_WORKQUEUE_RATELIMITER_H
#define LOP_KUBE_WORKQUEUE_RATELIMITER_H

#include "host/util/clock.h"

#include <stddef.h>
#include <stdint.h>

typedef struct lop_ratelimiter lop_ratelimiter_t;
struct lop_ratelimiter {
    /* Record a failure for item and return the delay before it may be retried (ns, >= 0). */
    int64_t (*when)(lop_ratelimiter_t *rl, const char *item);
    /* Stop tracking item (it succeeded); its next failure starts from the beginning. */
    void (*forget)(lop_ratelimiter_t *rl, const char *item);
    /* Failures recorded for item since the last forget. */
    int (*num_requeues)(lop_ratelimiter_t *rl, const char *item);
    void (*free)(lop_ratelimiter_t *rl);
};

static inline int64_t lop_ratelimiter_when(lop_ratelimiter_t *rl, const char *item) { return rl->when(rl, item); }
static inline void lop_ratelimiter_forget(lop_ratelimiter_t *rl, const char *item) { rl->forget(rl, item); }
static inline int lop_ratelimiter_num_requeues(lop_ratelimiter_t *rl, const char *item)
{
    return rl->num_requeues(rl, item);
}
/* NULL is accepted. */
void lop_ratelimiter_free(lop_ratelimiter_t *rl);

/* base_ns > 0, max_ns >= base_ns; otherwise NULL. */
lop_ratelimiter_t *lop_ratelimiter_exponential_new(int64_t base_ns, int64_t max_ns);
/* fast_ns, slow_ns >= 0, max_fast >= 0; otherwise NULL. */
lop_ratelimiter_t *lop_ratelimiter_fast_slow_new(int64_t fast_ns, int64_t slow_ns, int max_fast);
/* qps > 0, burst >= 1; clock borrowed (must outlive the limiter). The bucket starts full. */
lop_ratelimiter_t *lop_ratelimiter_bucket_new(const lop_clock_t *clock, double qps, int burst);
/* Takes ownership of the n children (n >= 1), also when it returns NULL (n == 0 or children NULL). */
lop_ratelimiter_t *lop_ratelimiter_max_of_new(lop_ratelimiter_t **children, size_t n);
/* client-go's DefaultControllerRateLimiter. */
lop_ratelimiter_t *lop_ratelimiter_default_controller_new(const lop_clock_t *clock);

/* The same shape with other numbers (a controller's rate_limiter declaration): max-of(per-item
 * exponential base_ns -> max_ns, bucket qps burst). A value <= 0 takes the default's (5 ms,
 * 1000 s, 10 qps, burst 100). NULL when the result is invalid (max_ns < base_ns). */
lop_ratelimiter_t *lop_ratelimiter_controller_new(const lop_clock_t *clock, int64_t base_ns, int64_t max_ns, double qps,
                                                  int burst);

#endif
