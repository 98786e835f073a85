/* SPDX-License-Identifier: Apache-2.0 */
/* workqueue_ratelimited.c — AddRateLimited/Forget/NumRequeues over a lop_ratelimiter_t. */
#include "host/kube/workqueue/workqueue_core.h"

void lop_workqueue_add_rate_limited(lop_workqueue_t *q, const char *item)
{
    /* The limiter has its own lock; never call it under q->mu. AddAfter counts the retry. */
    int64_t delay = q->limiter ? lop_ratelimiter_when(q->limiter, item) : 0;
    lop_workqueue_add_after(q, item, delay);
}

void lop_workqueue_forget(lop_workqueue_t *q, const char *item)
{
    if (q->limiter) lop_ratelimiter_forget(q->limiter, item);
}

int lop_workqueue_num_requeues(lop_workqueue_t *q, const char *item)
{
    return q->limiter ? lop_ratelimiter_num_requeues(q->limiter, item) : 0;
}
