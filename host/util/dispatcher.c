/* SPDX-License-Identifier: Apache-2.0 */
/* dispatcher.c — a few threads, a run queue and a timer heap on the injected clock (see
 * dispatcher.h). */
#include "host/util/dispatcher.h"

#include "host/util/buf.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 8

struct lop_dispatcher {
    const lop_clock_t *clock;
    pthread_mutex_t mu;
    pthread_cond_t work;              /* a task was queued, a timer armed earlier, or stop */
    pthread_cond_t idle;              /* a task stopped running (lop_dispatch_detach waits on it) */
    lop_dispatch_task_t *head, *tail; /* the run queue */
    lop_dispatch_task_t **heap;       /* timers, a binary min-heap on deadline */
    size_t nheap, capheap;
    bool stop;
    int nthreads;
    pthread_t th[MAX_THREADS];
    /* the shared registry's (lop_dispatcher_acquire), guarded by reg_mu */
    int refs;
    lop_dispatcher_t *reg_next;
};

/* ---- timer heap (d->mu held) ---- */

static void heap_set(lop_dispatcher_t *d, size_t i, lop_dispatch_task_t *t)
{
    d->heap[i] = t;
    t->heap_idx = i + 1;
}

static void heap_up(lop_dispatcher_t *d, size_t i)
{
    lop_dispatch_task_t *t = d->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (d->heap[p]->deadline <= t->deadline) break;
        heap_set(d, i, d->heap[p]);
        i = p;
    }
    heap_set(d, i, t);
}

static void heap_down(lop_dispatcher_t *d, size_t i)
{
    lop_dispatch_task_t *t = d->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        int64_t best = t->deadline;
        if (l < d->nheap && d->heap[l]->deadline < best) m = l, best = d->heap[l]->deadline;
        if (l + 1 < d->nheap && d->heap[l + 1]->deadline < best) m = l + 1;
        if (m == i) break;
        heap_set(d, i, d->heap[m]);
        i = m;
    }
    heap_set(d, i, t);
}

static void heap_remove(lop_dispatcher_t *d, lop_dispatch_task_t *t)
{
    if (!t->heap_idx) return;
    size_t i = t->heap_idx - 1;
    t->heap_idx = 0;
    d->nheap--;
    if (i == d->nheap) return;
    lop_dispatch_task_t *moved = d->heap[d->nheap];
    heap_set(d, i, moved);
    heap_down(d, i);
    heap_up(d, moved->heap_idx - 1);
}

static void heap_push(lop_dispatcher_t *d, lop_dispatch_task_t *t)
{
    if (d->nheap == d->capheap) {
        d->capheap = d->capheap ? d->capheap * 2 : 16;
        d->heap = lop_xrealloc(d->heap, d->capheap * sizeof *d->heap);
    }
    heap_set(d, d->nheap++, t);
    heap_up(d, d->nheap - 1);
}

/* ---- run queue (d->mu held) ---- */

static void enqueue(lop_dispatcher_t *d, lop_dispatch_task_t *t)
{
    if (t->detached) return;
    if (t->running) {
        t->again = true;
        return;
    }
    if (t->queued) return;
    t->queued = true;
    t->next = NULL;
    if (d->tail)
        d->tail->next = t;
    else
        d->head = t;
    d->tail = t;
    pthread_cond_signal(&d->work);
}

static lop_dispatch_task_t *dequeue(lop_dispatcher_t *d)
{
    lop_dispatch_task_t *t = d->head;
    if (!t) return NULL;
    d->head = t->next;
    if (!d->head) d->tail = NULL;
    t->next = NULL;
    t->queued = false;
    return t;
}

static void unqueue(lop_dispatcher_t *d, lop_dispatch_task_t *t)
{
    if (!t->queued) return;
    lop_dispatch_task_t *prev = NULL;
    for (lop_dispatch_task_t *p = d->head; p; prev = p, p = p->next)
        if (p == t) {
            if (prev)
                prev->next = t->next;
            else
                d->head = t->next;
            if (d->tail == t) d->tail = prev;
            break;
        }
    t->queued = false;
    t->next = NULL;
}

/* ---- threads ---- */

static void *loop(void *arg)
{
    lop_dispatcher_t *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        int64_t now = lop_clock_mono(d->clock);
        while (d->nheap && d->heap[0]->deadline <= now) { /* due timers join the run queue */
            lop_dispatch_task_t *t = d->heap[0];
            heap_remove(d, t);
            enqueue(d, t);
        }
        lop_dispatch_task_t *t = dequeue(d);
        if (!t) {
            int64_t deadline = d->nheap ? d->heap[0]->deadline : INT64_MAX;
            lop_clock_wait_until(d->clock, &d->work, &d->mu, deadline);
            continue;
        }
        t->running = true;
        pthread_mutex_unlock(&d->mu);
        t->run(t);
        pthread_mutex_lock(&d->mu);
        t->running = false;
        if (t->again) {
            t->again = false;
            enqueue(d, t);
        }
        pthread_cond_broadcast(&d->idle);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

lop_dispatcher_t *lop_dispatcher_new(int nthreads, const lop_clock_t *clock, lop_err_t *err)
{
    if (nthreads < 1 || nthreads > MAX_THREADS) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "dispatcher: %d threads (1..%d)", nthreads, MAX_THREADS);
        return NULL;
    }
    lop_dispatcher_t *d = lop_xcalloc(1, sizeof *d);
    d->clock = clock ? clock : &lop_clock_system;
    pthread_mutex_init(&d->mu, NULL);
    lop_cond_init(&d->work);
    lop_cond_init(&d->idle);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&d->th[i], NULL, loop, d) != 0) {
            lop_err_set(err, LOP_ERR, 0, NULL, "dispatcher: cannot create thread %d", i + 1);
            lop_dispatcher_free(d);
            return NULL;
        }
        d->nthreads++;
    }
    return d;
}

void lop_dispatcher_free(lop_dispatcher_t *d)
{
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_broadcast(&d->work);
    pthread_mutex_unlock(&d->mu);
    for (int i = 0; i < d->nthreads; i++) pthread_join(d->th[i], NULL);
    pthread_cond_destroy(&d->work);
    pthread_cond_destroy(&d->idle);
    pthread_mutex_destroy(&d->mu);
    free(d->heap);
    free(d);
}

const lop_clock_t *lop_dispatcher_clock(const lop_dispatcher_t *d) { return d->clock; }
int lop_dispatcher_threads(const lop_dispatcher_t *d) { return d->nthreads; }

/* ---- the shared dispatchers, one per clock ---- */

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static lop_dispatcher_t *reg_head;

lop_dispatcher_t *lop_dispatcher_acquire(const lop_clock_t *clock, lop_err_t *err)
{
    if (!clock) clock = &lop_clock_system;
    pthread_mutex_lock(&reg_mu);
    lop_dispatcher_t *d = reg_head;
    while (d && d->clock != clock) d = d->reg_next;
    if (!d) {
        d = lop_dispatcher_new(LOP_DISPATCHER_THREADS, clock, err);
        if (d) {
            d->reg_next = reg_head;
            reg_head = d;
        }
    }
    if (d) d->refs++;
    pthread_mutex_unlock(&reg_mu);
    return d;
}

void lop_dispatcher_release(lop_dispatcher_t *d)
{
    if (!d) return;
    pthread_mutex_lock(&reg_mu);
    bool last = --d->refs == 0;
    if (last)
        for (lop_dispatcher_t **p = &reg_head; *p; p = &(*p)->reg_next)
            if (*p == d) {
                *p = d->reg_next;
                break;
            }
    pthread_mutex_unlock(&reg_mu);
    if (last) lop_dispatcher_free(d);
}

/* ---- tasks ---- */

void lop_dispatch_init(lop_dispatcher_t *d, lop_dispatch_task_t *task, void (*run)(lop_dispatch_task_t *task))
{
    memset(task, 0, sizeof *task);
    task->d = d;
    task->run = run;
}

void lop_dispatch_kick(lop_dispatch_task_t *task)
{
    lop_dispatcher_t *d = task->d;
    pthread_mutex_lock(&d->mu);
    enqueue(d, task);
    pthread_mutex_unlock(&d->mu);
}

void lop_dispatch_after(lop_dispatch_task_t *task, int64_t delay_ns)
{
    lop_dispatcher_t *d = task->d;
    pthread_mutex_lock(&d->mu);
    heap_remove(d, task);
    if (task->detached || delay_ns == INT64_MAX) {
        pthread_mutex_unlock(&d->mu);
        return;
    }
    if (delay_ns <= 0) {
        enqueue(d, task);
    } else {
        int64_t now = lop_clock_mono(d->clock);
        task->deadline = delay_ns > INT64_MAX - now ? INT64_MAX : now + delay_ns;
        heap_push(d, task);
        if (d->heap[0] == task) pthread_cond_broadcast(&d->work); /* a sleeper's deadline moved earlier */
    }
    pthread_mutex_unlock(&d->mu);
}

void lop_dispatch_detach(lop_dispatch_task_t *task)
{
    lop_dispatcher_t *d = task->d;
    pthread_mutex_lock(&d->mu);
    task->detached = true;
    unqueue(d, task);
    heap_remove(d, task);
    while (task->running) pthread_cond_wait(&d->idle, &d->mu);
    task->again = false;
    pthread_mutex_unlock(&d->mu);
}
