/* workqueue_delaying.c — AddAfter: a min-heap of (ready time, item) with per-item dedup. */
#include "host/kube/workqueue/workqueue_impl.h"

#include "host/util/buf.h"

#include <stdlib.h>

static bool before(const lop_wq_waiting_t *a, const lop_wq_waiting_t *b)
{
    return a->ready_ns < b->ready_ns || (a->ready_ns == b->ready_ns && a->seq < b->seq);
}

static void set_at(lop_workqueue_t *q, size_t i, lop_wq_waiting_t w)
{
    q->heap[i] = w;
    lop_strmap_put(&q->waiting, w.item, (void *)(uintptr_t)(i + 1));
}

static void sift_up(lop_workqueue_t *q, size_t i)
{
    lop_wq_waiting_t w = q->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&w, &q->heap[p])) break;
        set_at(q, i, q->heap[p]);
        i = p;
    }
    set_at(q, i, w);
}

static void sift_down(lop_workqueue_t *q, size_t i)
{
    lop_wq_waiting_t w = q->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const lop_wq_waiting_t *best = &w;
        if (l < q->heap_len && before(&q->heap[l], best)) {
            m = l;
            best = &q->heap[l];
        }
        if (l + 1 < q->heap_len && before(&q->heap[l + 1], best)) m = l + 1;
        if (m == i) break;
        set_at(q, i, q->heap[m]);
        i = m;
    }
    set_at(q, i, w);
}

int64_t lop_wq_pump_locked(lop_workqueue_t *q)
{
    if (q->heap_len == 0) return INT64_MAX;
    int64_t now = lop_clock_mono(q->clock);
    while (q->heap_len > 0 && q->heap[0].ready_ns <= now) {
        lop_wq_waiting_t w = q->heap[0];
        lop_strmap_del(&q->waiting, w.item, NULL);
        q->heap_len--;
        if (q->heap_len > 0) {
            q->heap[0] = q->heap[q->heap_len];
            sift_down(q, 0);
        }
        lop_wq_add_locked(q, w.item);
        free(w.item);
    }
    return q->heap_len ? q->heap[0].ready_ns : INT64_MAX;
}

void lop_wq_heap_free(lop_workqueue_t *q)
{
    for (size_t i = 0; i < q->heap_len; i++) free(q->heap[i].item);
    free(q->heap);
    q->heap = NULL;
    q->heap_len = q->heap_cap = 0;
    lop_strmap_clear(&q->waiting);
}

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
    int64_t ready = lop_clock_mono(q->clock) + delay_ns;
    uintptr_t idx = (uintptr_t)lop_strmap_get(&q->waiting, item);
    if (idx) {
        /* already waiting: keep the earlier time */
        if (ready < q->heap[idx - 1].ready_ns) {
            q->heap[idx - 1].ready_ns = ready;
            sift_up(q, idx - 1);
        }
    } else {
        if (q->heap_len == q->heap_cap) {
            q->heap_cap = q->heap_cap ? q->heap_cap * 2 : 16;
            q->heap = lop_xrealloc(q->heap, q->heap_cap * sizeof *q->heap);
        }
        q->heap[q->heap_len] = (lop_wq_waiting_t){ready, q->heap_seq++, lop_xstrdup(item)};
        q->heap_len++;
        sift_up(q, q->heap_len - 1);
    }
    lop_wq_pump_locked(q);
    pthread_cond_broadcast(&q->cond); /* a blocked Get re-computes its deadline */
    pthread_mutex_unlock(&q->mu);
}
