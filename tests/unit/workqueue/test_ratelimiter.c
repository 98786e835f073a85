/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/ratelimiter: client-go's default_rate_limiters_test.go expectations. */
#include "host/kube/workqueue/ratelimiter.h"
#include "t.h"

#define MS LOP_NS_PER_MS
#define S  LOP_NS_PER_S

static void test_exponential_doubles_per_item_and_forget_resets(void)
{
    lop_ratelimiter_t *rl = lop_ratelimiter_exponential_new(1 * MS, 1 * S);
    int64_t want[] = {1 * MS, 2 * MS, 4 * MS, 8 * MS, 16 * MS};
    for (int i = 0; i < 5; i++) T_EQ_INT(lop_ratelimiter_when(rl, "one"), want[i]);
    T_EQ_INT(lop_ratelimiter_num_requeues(rl, "one"), 5);
    T_EQ_INT(lop_ratelimiter_when(rl, "two"), 1 * MS);
    T_EQ_INT(lop_ratelimiter_when(rl, "two"), 2 * MS);
    T_EQ_INT(lop_ratelimiter_num_requeues(rl, "two"), 2);
    lop_ratelimiter_forget(rl, "one");
    T_EQ_INT(lop_ratelimiter_num_requeues(rl, "one"), 0);
    T_EQ_INT(lop_ratelimiter_when(rl, "one"), 1 * MS);
    lop_ratelimiter_free(rl);
}

static void test_exponential_overflow_caps_at_max(void)
{
    lop_ratelimiter_t *rl = lop_ratelimiter_exponential_new(1 * MS, 1000 * S);
    for (int i = 0; i < 5; i++) lop_ratelimiter_when(rl, "one");
    T_EQ_INT(lop_ratelimiter_when(rl, "one"), 32 * MS);
    for (int i = 0; i < 1000; i++) lop_ratelimiter_when(rl, "overflow1");
    T_EQ_INT(lop_ratelimiter_when(rl, "overflow1"), 1000 * S);
    lop_ratelimiter_free(rl);

    rl = lop_ratelimiter_exponential_new(60 * S, 1000 * 3600 * S);
    for (int i = 0; i < 2; i++) lop_ratelimiter_when(rl, "two");
    T_EQ_INT(lop_ratelimiter_when(rl, "two"), 4 * 60 * S);
    for (int i = 0; i < 1000; i++) lop_ratelimiter_when(rl, "overflow2");
    T_EQ_INT(lop_ratelimiter_when(rl, "overflow2"), 1000 * 3600 * S);
    lop_ratelimiter_free(rl);
}

static void test_fast_slow(void)
{
    lop_ratelimiter_t *rl = lop_ratelimiter_fast_slow_new(5 * MS, 10 * S, 3);
    int64_t want[] = {5 * MS, 5 * MS, 5 * MS, 10 * S, 10 * S};
    for (int i = 0; i < 5; i++) T_EQ_INT(lop_ratelimiter_when(rl, "one"), want[i]);
    T_EQ_INT(lop_ratelimiter_num_requeues(rl, "one"), 5);
    T_EQ_INT(lop_ratelimiter_when(rl, "two"), 5 * MS);
    T_EQ_INT(lop_ratelimiter_when(rl, "two"), 5 * MS);
    T_EQ_INT(lop_ratelimiter_num_requeues(rl, "two"), 2);
    lop_ratelimiter_forget(rl, "one");
    T_EQ_INT(lop_ratelimiter_num_requeues(rl, "one"), 0);
    T_EQ_INT(lop_ratelimiter_when(rl, "one"), 5 * MS);
    lop_ratelimiter_free(rl);
}

static void test_max_of(void)
{
    lop_ratelimiter_t *kids[2] = {lop_ratelimiter_fast_slow_new(5 * MS, 3 * S, 3),
                                  lop_ratelimiter_exponential_new(1 * MS, 1 * S)};
    lop_ratelimiter_t *rl = lop_ratelimiter_max_of_new(kids, 2);
    int64_t want[] = {5 * MS, 5 * MS, 5 * MS, 3 * S, 3 * S};
    for (int i = 0; i < 5; i++) T_EQ_INT(lop_ratelimiter_when(rl, "one"), want[i]);
    T_EQ_INT(lop_ratelimiter_num_requeues(rl, "one"), 5);
    T_EQ_INT(lop_ratelimiter_when(rl, "two"), 5 * MS);
    T_EQ_INT(lop_ratelimiter_when(rl, "two"), 5 * MS);
    T_EQ_INT(lop_ratelimiter_num_requeues(rl, "two"), 2);
    lop_ratelimiter_forget(rl, "one");
    T_EQ_INT(lop_ratelimiter_num_requeues(rl, "one"), 0);
    T_EQ_INT(lop_ratelimiter_when(rl, "one"), 5 * MS);
    lop_ratelimiter_free(rl);
}

static void test_bucket_burst_then_qps(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_ratelimiter_t *rl = lop_ratelimiter_bucket_new(&fc.base, 10.0, 100);
    for (int i = 0; i < 100; i++) T_EQ_INT(lop_ratelimiter_when(rl, "x"), 0);
    T_EQ_INT(lop_ratelimiter_when(rl, "x"), 100 * MS); /* token 101 exists in 0.1 s */
    T_EQ_INT(lop_ratelimiter_when(rl, "y"), 200 * MS); /* shared by all items */
    T_EQ_INT(lop_ratelimiter_num_requeues(rl, "x"), 0);
    lop_fake_clock_step(&fc, 1 * S); /* 10 tokens refilled, 2 already spoken for */
    for (int i = 0; i < 8; i++) T_EQ_INT(lop_ratelimiter_when(rl, "x"), 0);
    T_EQ_INT(lop_ratelimiter_when(rl, "x"), 100 * MS);
    lop_ratelimiter_free(rl);
}

static void test_default_controller_limiter(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_ratelimiter_t *rl = lop_ratelimiter_default_controller_new(&fc.base);
    T_EQ_INT(lop_ratelimiter_when(rl, "a"), 5 * MS);
    T_EQ_INT(lop_ratelimiter_when(rl, "a"), 10 * MS);
    T_EQ_INT(lop_ratelimiter_num_requeues(rl, "a"), 2);
    /* 98 tokens left in the bucket; then the bucket dominates a fresh item */
    for (int i = 0; i < 98; i++) lop_ratelimiter_when(rl, "b");
    T_EQ_INT(lop_ratelimiter_when(rl, "c"), 100 * MS);
    for (int i = 0; i < 40; i++) lop_ratelimiter_when(rl, "a");
    T_EQ_INT(lop_ratelimiter_when(rl, "a"), 1000 * S); /* per-item cap */
    lop_ratelimiter_forget(rl, "a");
    T_EQ_INT(lop_ratelimiter_num_requeues(rl, "a"), 0);
    lop_ratelimiter_free(rl);
}

/* A controller's rate_limiter declaration: the same max-of shape with its numbers; zeros take
 * the default's. */
static void test_controller_limiter_with_options(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_ratelimiter_t *rl = lop_ratelimiter_controller_new(&fc.base, 50 * MS, 200 * MS, 2.0, 3);
    T_EQ_INT(lop_ratelimiter_when(rl, "a"), 50 * MS);
    T_EQ_INT(lop_ratelimiter_when(rl, "a"), 100 * MS);
    /* the burst of 3 is spent: the bucket's next token is 0.5 s away (2 qps) */
    T_EQ_INT(lop_ratelimiter_when(rl, "b"), 50 * MS);
    T_EQ_INT(lop_ratelimiter_when(rl, "c"), 500 * MS);
    lop_fake_clock_step(&fc, 100 * S); /* the bucket refills; item "a" keeps its failures */
    T_EQ_INT(lop_ratelimiter_when(rl, "a"), 200 * MS);
    T_EQ_INT(lop_ratelimiter_when(rl, "a"), 200 * MS); /* max_delay caps it */
    lop_ratelimiter_free(rl);

    rl = lop_ratelimiter_controller_new(&fc.base, 0, 0, 0, 0); /* = the default */
    T_EQ_INT(lop_ratelimiter_when(rl, "a"), 5 * MS);
    lop_ratelimiter_free(rl);
    rl = lop_ratelimiter_controller_new(&fc.base, 2 * S, 0, 0, 0); /* base only: max stays 1000 s */
    T_EQ_INT(lop_ratelimiter_when(rl, "a"), 2 * S);
    lop_ratelimiter_free(rl);
    T_CHECK(lop_ratelimiter_controller_new(&fc.base, 2 * S, 1 * S, 0, 0) == NULL); /* max < base */
}

static void test_constructors_validate(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    T_CHECK(lop_ratelimiter_exponential_new(0, 1) == NULL);
    T_CHECK(lop_ratelimiter_exponential_new(10, 5) == NULL);
    T_CHECK(lop_ratelimiter_fast_slow_new(-1, 1, 1) == NULL);
    T_CHECK(lop_ratelimiter_bucket_new(&fc.base, 0, 1) == NULL);
    T_CHECK(lop_ratelimiter_bucket_new(&fc.base, 1, 0) == NULL);
    T_CHECK(lop_ratelimiter_max_of_new(NULL, 0) == NULL);
}

int main(void)
{
    T_RUN(test_exponential_doubles_per_item_and_forget_resets);
    T_RUN(test_exponential_overflow_caps_at_max);
    T_RUN(test_fast_slow);
    T_RUN(test_max_of);
    T_RUN(test_bucket_burst_then_qps);
    T_RUN(test_default_controller_limiter);
    T_RUN(test_controller_limiter_with_options);
    T_RUN(test_constructors_validate);
    return T_DONE();
}
