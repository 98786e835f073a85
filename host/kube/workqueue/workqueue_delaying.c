/* SPDX-License-Identifier: Apache-2.0 */
/* workqueue_delaying.c — AddAfter: the item waits on the delay heap (workqueue_heap.h; one entry per
 * item, the earlier time kept) until its ready time, then enters the FIFO. */
#include "host/kube/workqueue/workqueue_core.h"

void lop_workqueue_add_after(lop_workqueue_t *q, const char *item, int64_t delay_ns)
{
    pthread_mutex_lock(&q->mu);
    if (q->shutting_down) {
        pthread_mutex_unlock(&q->mu);
        return;
    }
    q->st.retries++; /* client-go counts every AddAfter as a retry */
    if (delay_ns <= 0) {
        lop_wq_pump_locked(q);
        lop_wq_add_locked(q, item);
        pthread_mutex_unlock(&q->mu);
        return;
    }
    lop_wq_delay_schedule(&q->delay, item, lop_clock_mono(q->clock) + delay_ns);
    lop_wq_pump_locked(q);
    pthread_cond_broadcast(&q->cond); /* a blocked Get re-computes its deadline */
    pthread_mutex_unlock(&q->mu);
}
