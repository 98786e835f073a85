/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qps.h — the client-side request rate limiter: a token bucket holding up to `burst` tokens that
 * refills at `qps` tokens per second (client-go's flowcontrol.NewTokenBucketRateLimiter, defaults
 * QPS 5 / burst 10, client-go rest/config.go). Every REST request takes one token; a watch takes
 * one when it is established. Not the workqueue's rate limiters
 * (host/kube/workqueue/ratelimiter.h).
 *
 * A request that finds the bucket empty reserves the next token (the count goes negative) and
 * waits until it is due, so waiters are served in arrival order and never starve.
 * Time comes from an injected lop_clock_t, so tests step a fake clock instead of sleeping.
 *
 * Thread-safety: every function is safe from any thread.
 */
#ifndef LOP_KUBE_CLIENT_QPS_H
#define LOP_KUBE_CLIENT_QPS_H

#include "host/util/clock.h"

#include <stdbool.h>
#include <stdint.h>

#define LOP_QPS_DEFAULT   5.0
#define LOP_BURST_DEFAULT 10

typedef struct lop_qps lop_qps_t;

/* New bucket, initially full. qps <= 0 disables limiting (every take is immediate); burst < 1 is
 * treated as 1. clock is borrowed (NULL = system clock) and must outlive the bucket. */
lop_qps_t *lop_qps_new(double qps, int burst, const lop_clock_t *clock);
void lop_qps_free(lop_qps_t *q);

/* Take a token without blocking. Returns true when one was available. */
bool lop_qps_try_take(lop_qps_t *q);

/* Reserve the next token and return how long the caller must wait before using it (ns, >= 0). */
int64_t lop_qps_reserve(lop_qps_t *q);

/* Take a token, blocking (on the injected clock) until it is due. Returns the ns waited. */
int64_t lop_qps_take(lop_qps_t *q);

/* Tokens currently in the bucket (may be negative while waiters hold reservations). */
double lop_qps_tokens(lop_qps_t *q);

/* Block the calling thread until the clock reaches mono time deadline_ns (helper shared with the
 * REST client's Retry-After waits). With a fake clock this returns once a test steps past it. */
void lop_qps_sleep_until(const lop_clock_t *clock, int64_t deadline_ns);

#endif
