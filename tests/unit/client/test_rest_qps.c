/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/qps: the client-side token bucket (client-go flowcontrol) on a fake clock. */
#include "host/kube/client/qps.h"
#include "t.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

static void test_burst_then_refill(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_qps_t *q = lop_qps_new(5, 10, &fc.base);
    for (int i = 0; i < 10; i++) T_CHECK(lop_qps_try_take(q));
    T_CHECK(!lop_qps_try_take(q));
    lop_fake_clock_step(&fc, 199 * LOP_NS_PER_MS);
    T_CHECK(!lop_qps_try_take(q));
    lop_fake_clock_step(&fc, 1 * LOP_NS_PER_MS); /* 200 ms at 5/s = one token */
    T_CHECK(lop_qps_try_take(q));
    T_CHECK(!lop_qps_try_take(q));
    lop_fake_clock_step(&fc, 3600 * LOP_NS_PER_S); /* never more than burst */
    for (int i = 0; i < 10; i++) T_CHECK(lop_qps_try_take(q));
    T_CHECK(!lop_qps_try_take(q));
    lop_qps_free(q);
}

static void test_reserve_orders_waiters(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_qps_t *q = lop_qps_new(2, 1, &fc.base);
    T_EQ_INT(lop_qps_reserve(q), 0);
    T_EQ_INT(lop_qps_reserve(q), 500 * LOP_NS_PER_MS);  /* next token due in 1/2 s */
    T_EQ_INT(lop_qps_reserve(q), 1000 * LOP_NS_PER_MS); /* and the one after that */
    lop_fake_clock_step(&fc, 1000 * LOP_NS_PER_MS);
    T_EQ_INT(lop_qps_reserve(q), 500 * LOP_NS_PER_MS);
    lop_qps_free(q);
}

static void test_disabled_when_qps_not_positive(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_qps_t *q = lop_qps_new(-1, 0, &fc.base);
    for (int i = 0; i < 1000; i++) T_EQ_INT(lop_qps_reserve(q), 0);
    T_CHECK(lop_qps_try_take(q));
    lop_qps_free(q);
}

#include "stepper.h"

static void test_take_blocks_on_the_injected_clock(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_qps_t *q = lop_qps_new(1, 1, &fc.base);
    stepper_t st;
    stepper_start_by(&st, &fc, 50 * LOP_NS_PER_MS);
    int64_t start = lop_clock_mono(&fc.base);
    T_EQ_INT(lop_qps_take(q), 0);
    lop_qps_take(q);
    lop_qps_take(q);
    /* three tokens at 1/s with burst 1: the third is due 2 s (fake) after the first */
    T_CHECK(lop_clock_mono(&fc.base) - start >= 2 * LOP_NS_PER_S);
    stepper_stop(&st);
    lop_qps_free(q);
}

int main(void)
{
    T_RUN(test_burst_then_refill);
    T_RUN(test_reserve_orders_waiters);
    T_RUN(test_disabled_when_qps_not_positive);
    T_RUN(test_take_blocks_on_the_injected_clock);
    return T_DONE();
}
