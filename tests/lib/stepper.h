/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stepper.h — a thread that keeps stepping a fake clock (by `step_ns` per turn) so code that
 * waits on the injected clock inside a library makes progress while the test thread blocks in a
 * call. Tests stay free of real sleeps: time moves only through the fake clock.
 */
#ifndef LOP_TEST_STEPPER_H
#define LOP_TEST_STEPPER_H

#include "host/util/clock.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct stepper {
    lop_fake_clock_t *fc;
    int64_t step_ns;
    atomic_bool done;
    pthread_t thr;
} stepper_t;

static void *stepper_main_(void *arg)
{
    stepper_t *s = arg;
    while (!atomic_load(&s->done)) {
        lop_fake_clock_step(s->fc, s->step_ns);
        sched_yield();
    }
    return NULL;
}

static inline void stepper_start_by(stepper_t *s, lop_fake_clock_t *fc, int64_t step_ns)
{
    s->fc = fc;
    s->step_ns = step_ns;
    atomic_init(&s->done, false);
    pthread_create(&s->thr, NULL, stepper_main_, s);
}

static inline void stepper_stop(stepper_t *s)
{
    atomic_store(&s->done, true);
    pthread_join(s->thr, NULL);
}

#endif
