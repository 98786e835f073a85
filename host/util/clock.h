/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock.h — the injectable clock. Everything in luaop that depends on time (backoff, rate
 * limiters, delaying queues, leases, deadlines, watch timeouts) reads time through a
 * lop_clock_t so tests step a fake clock instead of sleeping (as client-go's clock.FakeClock).
 *
 * Units: nanoseconds, int64. mono_ns is a monotonic clock with an arbitrary origin (use it for
 * intervals and deadlines); wall_ns is Unix time (use it only for timestamps written to objects).
 *
 * Thread-safety: all functions are safe from any thread. The system clock is a static constant;
 * a fake clock may be read concurrently while one thread steps it.
 */
#ifndef LOP_UTIL_CLOCK_H
#define LOP_UTIL_CLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define LOP_NS_PER_MS INT64_C(1000000)
#define LOP_NS_PER_S  INT64_C(1000000000)

typedef struct lop_clock lop_clock_t;
struct lop_clock {
    int64_t (*mono_ns)(const lop_clock_t *c);
    int64_t (*wall_ns)(const lop_clock_t *c);
    bool fake; /* true for lop_fake_clock_t: waits poll instead of blocking until the deadline */
};

/* The real clock (CLOCK_MONOTONIC and CLOCK_REALTIME). Static storage, never freed. */
extern const lop_clock_t lop_clock_system;

static inline int64_t lop_clock_mono(const lop_clock_t *c) { return c->mono_ns(c); }
static inline int64_t lop_clock_wall(const lop_clock_t *c) { return c->wall_ns(c); }

/* A clock tests move by hand. Embed or allocate; initialise with lop_fake_clock_init. */
typedef struct lop_fake_clock {
    lop_clock_t base; /* pass &fc->base wherever a clock is wanted */
    int64_t mono;     /* read/written atomically */
    int64_t wall;
} lop_fake_clock_t;

/* Start a fake clock at mono = 1 s and the given wall time (Unix ns; 0 picks 2025-03-01T10:00:00Z). */
void lop_fake_clock_init(lop_fake_clock_t *fc, int64_t wall_ns);
/* Move both readings forward by delta_ns (>= 0). Waiters see it within a millisecond. */
void lop_fake_clock_step(lop_fake_clock_t *fc, int64_t delta_ns);
/* Move only the wall clock (e.g. to simulate skew); delta may be negative. */
void lop_fake_clock_skew_wall(lop_fake_clock_t *fc, int64_t delta_ns);

/*
 * Wait on cond (mutex held by the caller, as for pthread_cond_wait) until signalled or until the
 * clock's mono time reaches deadline_ns (INT64_MAX = no deadline). Returns true when the deadline
 * has passed. May wake spuriously: callers loop and re-check their predicate. With a fake clock
 * it waits at most 1 ms of real time per call, so a stepped clock is noticed promptly.
 * The cond must have been initialised with lop_cond_init (CLOCK_MONOTONIC).
 */
bool lop_clock_wait_until(const lop_clock_t *c, pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline_ns);

/* pthread_cond_init with CLOCK_MONOTONIC, as lop_clock_wait_until needs. */
int lop_cond_init(pthread_cond_t *cond);

/* Format wall time as metav1.Time "2006-01-02T15:04:05Z" (buf >= 21 bytes). Returns buf. */
char *lop_time_format(int64_t wall_ns, char *buf, size_t len);
/* Format wall time as metav1.MicroTime with exactly six fraction digits (buf >= 28 bytes). */
char *lop_microtime_format(int64_t wall_ns, char *buf, size_t len);
/* Parse RFC 3339 (any fraction width, Z or ±hh:mm). Returns 0 and sets *wall_ns, or -1 (also for a
 * time outside the int64 nanosecond range, years ~1678..2261). */
int lop_time_parse(const char *s, int64_t *wall_ns);
/* Parse strictly as MicroTime: exactly six fraction digits. 0 on success, -1 otherwise. */
int lop_microtime_parse_strict(const char *s, int64_t *wall_ns);

#endif
