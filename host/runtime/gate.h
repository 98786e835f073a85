/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gate.h — an open/closed flag threads can wait on. The leader elector opens the gate when this
 * replica starts leading and closes it when it stops; workers of controllers that need a leader
 * wait at the gate before taking work (docs/execution-model.md "Leadership"; controller-runtime
 * starts leader-election runnables only once elected, pkg/manager/runnable_group.go).
 *
 * Thread-safety: all functions from any thread.
 */
#ifndef LOP_RUNTIME_GATE_H
#define LOP_RUNTIME_GATE_H

#include "host/util/clock.h"

#include <pthread.h>
#include <stdbool.h>

typedef struct lop_gate {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool open;
    bool closed_for_good; /* shutdown: waiters return false */
} lop_gate_t;

void lop_gate_init(lop_gate_t *g, bool open);
void lop_gate_cleanup(lop_gate_t *g);
void lop_gate_set(lop_gate_t *g, bool open);
bool lop_gate_is_open(lop_gate_t *g);
/* Wake every waiter and make waits return false from now on (is_open is unaffected, so a
 * draining leader's in-flight reconciles can still write). */
void lop_gate_shutdown(lop_gate_t *g);
/* Block until the gate is open (true) or shut down (false). */
bool lop_gate_wait(lop_gate_t *g);
/* Same, also returning false once *stop is true (checked under the gate's lock: set it and call
 * lop_gate_kick to wake this waiter, e.g. a controller stopping while its gate is closed). */
bool lop_gate_wait_or(lop_gate_t *g, const bool *stop);
/* Wake every waiter so it re-checks its stop flag. */
void lop_gate_kick(lop_gate_t *g);

#endif
