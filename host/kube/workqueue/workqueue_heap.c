/* SPDX-License-Identifier: Apache-2.0 */
/* workqueue_heap.c — the delaying queue's min-heap of waiting items, indexed by item (see
 * workqueue_heap.h). */
#include "host/kube/workqueue/workqueue_heap.h"

#include "host/util/buf.h"

#include <stdbool.h>
#include <stdlib.h>

static bool before(const lop_wq_waiting_t *a, const lop_wq_waiting_t *b)
{
    return a->ready_ns < b->ready_ns || (a->ready_ns == b->ready_ns && a->seq < b->seq);
}

static void set_at(lop_wq_delay_t *h, size_t i, lop_wq_waiting_t w)
{
    h->v[i] = w;
    lop_strmap_put(&h->index, w.item, (void *)(uintptr_t)(i + 1));
}

static void sift_up(lop_wq_delay_t *h, size_t i)
{
    lop_wq_waiting_t w = h->v[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&w, &h->v[p])) break;
        set_at(h, i, h->v[p]);
        i = p;
    }
    set_at(h, i, w);
}

static void sift_down(lop_wq_delay_t *h, size_t i)
{
    lop_wq_waiting_t w = h->v[i];
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const lop_wq_waiting_t *best = &w;
        if (l < h->len && before(&h->v[l], best)) {
            m = l;
            best = &h->v[l];
        }
        if (l + 1 < h->len && before(&h->v[l + 1], best)) m = l + 1;
        if (m == i) break;
        set_at(h, i, h->v[m]);
        i = m;
    }
    set_at(h, i, w);
}

void lop_wq_delay_schedule(lop_wq_delay_t *h, const char *item, int64_t ready_ns)
{
    uintptr_t idx = (uintptr_t)lop_strmap_get(&h->index, item);
    if (idx) {
        /* already waiting: keep the earlier time */
        if (ready_ns < h->v[idx - 1].ready_ns) {
            h->v[idx - 1].ready_ns = ready_ns;
            sift_up(h, idx - 1);
        }
        return;
    }
    if (h->len == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->v = lop_xrealloc(h->v, h->cap * sizeof *h->v);
    }
    h->v[h->len] = (lop_wq_waiting_t){ready_ns, h->seq++, lop_xstrdup(item)};
    h->len++;
    sift_up(h, h->len - 1);
}

char *lop_wq_delay_pop_due(lop_wq_delay_t *h, int64_t now)
{
    if (h->len == 0 || h->v[0].ready_ns > now) return NULL;
    lop_wq_waiting_t w = h->v[0];
    lop_strmap_del(&h->index, w.item, NULL);
    h->len--;
    if (h->len > 0) {
        h->v[0] = h->v[h->len];
        sift_down(h, 0);
    }
    return w.item;
}

void lop_wq_delay_clear(lop_wq_delay_t *h)
{
    for (size_t i = 0; i < h->len; i++) free(h->v[i].item);
    free(h->v);
    h->v = NULL;
    h->len = h->cap = 0;
    lop_strmap_clear(&h->index);
}
