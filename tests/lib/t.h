/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t.h — the tiny C test harness. A test file defines functions `static void test_x(void)` and a
 * main() that calls T_RUN(test_x) for each, then returns T_DONE(). Each failed check prints
 * file:line and the expression; the process exits non-zero when any check failed.
 * Prints the plain closing line "N passed, N failed" (counted per test function).
 */
#ifndef LOP_TEST_T_H
#define LOP_TEST_T_H

#include <stdio.h>
#include <string.h>

static int t_failed_checks, t_tests_passed, t_tests_failed, t_cur_failed;

#define T_CHECK(cond)                                                                \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            t_failed_checks++;                                                       \
            t_cur_failed = 1;                                                        \
        }                                                                            \
    } while (0)

#define T_EQ_INT(a, b)                                                                                       \
    do {                                                                                                     \
        long long t_a = (long long)(a), t_b = (long long)(b);                                                \
        if (t_a != t_b) {                                                                                    \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, #b, t_a, t_b); \
            t_failed_checks++;                                                                               \
            t_cur_failed = 1;                                                                                \
        }                                                                                                    \
    } while (0)

#define T_EQ_STR(a, b)                                                                                \
    do {                                                                                              \
        const char *t_a = (a), *t_b = (b);                                                            \
        if (!t_a || !t_b || strcmp(t_a, t_b) != 0) {                                                  \
            fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, #b, \
                    t_a ? t_a : "(null)", t_b ? t_b : "(null)");                                      \
            t_failed_checks++;                                                                        \
            t_cur_failed = 1;                                                                         \
        }                                                                                             \
    } while (0)

#define T_RUN(fn)                              \
    do {                                       \
        t_cur_failed = 0;                      \
        fn();                                  \
        if (t_cur_failed) {                    \
            t_tests_failed++;                  \
            fprintf(stderr, "FAIL %s\n", #fn); \
        } else {                               \
            t_tests_passed++;                  \
        }                                      \
    } while (0)

/* A set-up step main() needs before its tests (a server that must start): true when cond holds;
 * otherwise it prints the cause and counts as a failed test, and main() returns T_DONE(). */
#define T_SETUP(what, cond)                                                                             \
    ((cond) ? 1                                                                                         \
            : (fprintf(stderr, "%s:%d: set-up failed: %s\nFAIL %s\n", __FILE__, __LINE__, #cond, what), \
               t_failed_checks++, t_tests_failed++, 0))

#define T_DONE() (printf("%d passed, %d failed\n", t_tests_passed, t_tests_failed), t_tests_failed ? 1 : 0)

#endif
