/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dispatcher.h — the dispatcher ("cache dispatcher"): a fixed set of threads that run every
 * reflector of the process and the Lease watch (issue 19: threads independent of the number of
 * watches). It knows nothing of Kubernetes: a task is any state machine. client-go gives each
 * reflector a goroutine, which costs a few KiB; a thread costs a stack, a kernel task and a
 * context switch per event, so luaop multiplexes reflectors onto a few threads instead.
 *
 * A task (lop_dispatch_task_t, embedded in its owner) is a state machine whose run function is
 * called on one of the dispatcher's threads when the task has work:
 *  - lop_dispatch_kick: work is there now (bytes of its watch arrived, its watch ended, stop was
 *    asked): the task goes to the back of the run queue, once however often it is kicked;
 *  - lop_dispatch_after: work is due after a delay on the dispatcher's injected clock (a backoff
 *    wait, a rate-limiter token, an idle-timeout check): a timer heap ordered by deadline; a
 *    task has at most one timer, a new one replaces it, a kick runs the task earlier (the timer
 *    stays armed unless the task re-arms or clears it).
 * A task never runs on two threads at once; a kick while it runs makes it run once more after.
 * Run functions must not block for long (a reflector's list pages and watch bytes are pumped in
 * turns); what they may block on is said where they do it (reflector.h, rest.h).
 *
 * Threads: nthreads (1..8). The shared dispatchers (lop_dispatcher_acquire) have
 * LOP_DISPATCHER_THREADS = 2: one thread keeps delivering events while the other runs a slow
 * handler (a Lua predicate), resolves a name or runs an exec credential plugin (the blocking
 * steps left),
 * and the two cores of a small node are both used when many watches are busy; more threads
 * would only add contention on the store and workqueue locks the handlers take.
 *
 * With a fake clock (clock->fake) an idle thread that has a timer pending polls every 1 ms of
 * real time (lop_clock_wait_until), so a test that steps the clock sees its timers fire.
 *
 * Thread-safety: every function is safe from any thread, except lop_dispatch_detach and
 * lop_dispatcher_free/release, which must not be called from a run function of that dispatcher.
 */
#ifndef LOP_UTIL_DISPATCHER_H
#define LOP_UTIL_DISPATCHER_H

#include "host/util/clock.h"
#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOP_DISPATCHER_THREADS 2

typedef struct lop_dispatcher lop_dispatcher_t;
typedef struct lop_dispatch_task lop_dispatch_task_t;

struct lop_dispatch_task {
    void (*run)(lop_dispatch_task_t *task); /* set by lop_dispatch_init */
    /* the dispatcher's (guarded by its lock) */
    lop_dispatcher_t *d;
    bool queued, running, again, detached;
    lop_dispatch_task_t *next; /* run queue */
    size_t heap_idx;           /* position in the timer heap + 1; 0 = no timer */
    int64_t deadline;          /* the timer's, on the dispatcher's clock */
};

/* A dispatcher with nthreads threads (1..8) on clock (borrowed, must outlive it; NULL = the
 * system clock). NULL with err set when a thread cannot be created or nthreads is out of range. */
lop_dispatcher_t *lop_dispatcher_new(int nthreads, const lop_clock_t *clock, lop_err_t *err);
/* Stop and join the threads, then free. Every task must have been detached. NULL accepted. */
void lop_dispatcher_free(lop_dispatcher_t *d);

/* The process's shared dispatcher for clock (NULL = the system clock), created with
 * LOP_DISPATCHER_THREADS threads on first use, one per clock; each acquire is matched by a
 * release, and the last release frees it (its threads end). NULL with err set on failure. */
lop_dispatcher_t *lop_dispatcher_acquire(const lop_clock_t *clock, lop_err_t *err);
void lop_dispatcher_release(lop_dispatcher_t *d);

const lop_clock_t *lop_dispatcher_clock(const lop_dispatcher_t *d);
int lop_dispatcher_threads(const lop_dispatcher_t *d);

/* Attach task to d (task zeroed first); run is called on a dispatcher thread for every turn. */
void lop_dispatch_init(lop_dispatcher_t *d, lop_dispatch_task_t *task, void (*run)(lop_dispatch_task_t *task));
/* Run the task soon (any thread, also from its own run function and from a notify callback). */
void lop_dispatch_kick(lop_dispatch_task_t *task);
/* Run the task once delay_ns (on the dispatcher's clock; <= 0 = now, as a kick) has passed,
 * replacing its timer. INT64_MAX clears the timer. */
void lop_dispatch_after(lop_dispatch_task_t *task, int64_t delay_ns);
/* Take the task off the run queue and the timer heap and wait until it is not running; later
 * kicks and timers are ignored. Not from the task's own run function. */
void lop_dispatch_detach(lop_dispatch_task_t *task);

#endif
