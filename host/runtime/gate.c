/* SPDX-License-Identifier: Apache-2.0 */
/* gate.c — an open/closed flag under a mutex and condition variable (see gate.h). The leader gate
 * is opened and closed by the elector's callbacks and waited on by the workers of leader-elected
 * controllers; a controller's "sources synced" gate is opened once its informers have synced and
 * waited on by its workers before their first item. Upstream:
 * controller-runtime starts leader-election runnables only once elected
 * (pkg/manager/runnable_group.go). */
#include "host/runtime/gate.h"

void lop_gate_init(lop_gate_t *g, bool open)
{
    pthread_mutex_init(&g->mu, NULL);
    lop_cond_init(&g->cond);
    g->open = open;
    g->closed_for_good = false;
}

void lop_gate_cleanup(lop_gate_t *g)
{
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cond);
}

void lop_gate_set(lop_gate_t *g, bool open)
{
    pthread_mutex_lock(&g->mu);
    g->open = open;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->mu);
}

bool lop_gate_is_open(lop_gate_t *g)
{
    /* Shutdown only releases the waiters: an in-flight reconcile of a leader that is draining
     * may still write (the Lease is released after the drain). */
    pthread_mutex_lock(&g->mu);
    bool open = g->open;
    pthread_mutex_unlock(&g->mu);
    return open;
}

void lop_gate_shutdown(lop_gate_t *g)
{
    pthread_mutex_lock(&g->mu);
    g->closed_for_good = true;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->mu);
}

bool lop_gate_wait(lop_gate_t *g)
{
    pthread_mutex_lock(&g->mu);
    while (!g->open && !g->closed_for_good) pthread_cond_wait(&g->cond, &g->mu);
    bool ok = !g->closed_for_good;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

bool lop_gate_wait_or(lop_gate_t *g, const bool *stop)
{
    pthread_mutex_lock(&g->mu);
    while (!g->open && !g->closed_for_good && !__atomic_load_n(stop, __ATOMIC_ACQUIRE))
        pthread_cond_wait(&g->cond, &g->mu);
    bool ok = !g->closed_for_good && !__atomic_load_n(stop, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&g->mu);
    return ok;
}

void lop_gate_kick(lop_gate_t *g)
{
    pthread_mutex_lock(&g->mu);
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->mu);
}
