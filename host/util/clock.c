/* SPDX-License-Identifier: Apache-2.0 */
/* clock.c — the system and fake clocks, condition waits against a clock's deadline, and the
 * RFC 3339 (metav1.Time) and MicroTime formats (see clock.h). Any thread; a fake clock is stepped
 * by one. Upstream: k8s.io/utils/clock (FakeClock) and apimachinery pkg/apis/meta/v1/time.go. */
#include "host/util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t ts_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * LOP_NS_PER_S + ts.tv_nsec;
}

static int64_t system_mono(const lop_clock_t *c)
{
    (void)c;
    return ts_ns(CLOCK_MONOTONIC);
}

static int64_t system_wall(const lop_clock_t *c)
{
    (void)c;
    return ts_ns(CLOCK_REALTIME);
}

const lop_clock_t lop_clock_system = {system_mono, system_wall, false};

static int64_t fake_mono(const lop_clock_t *c)
{
    const lop_fake_clock_t *fc = (const lop_fake_clock_t *)c;
    return __atomic_load_n(&fc->mono, __ATOMIC_ACQUIRE);
}

static int64_t fake_wall(const lop_clock_t *c)
{
    const lop_fake_clock_t *fc = (const lop_fake_clock_t *)c;
    return __atomic_load_n(&fc->wall, __ATOMIC_ACQUIRE);
}

void lop_fake_clock_init(lop_fake_clock_t *fc, int64_t wall_ns)
{
    fc->base.mono_ns = fake_mono;
    fc->base.wall_ns = fake_wall;
    fc->base.fake = true;
    fc->mono = LOP_NS_PER_S;
    fc->wall = wall_ns ? wall_ns : INT64_C(1740823200) * LOP_NS_PER_S; /* 2025-03-01T10:00:00Z */
}

void lop_fake_clock_step(lop_fake_clock_t *fc, int64_t delta_ns)
{
    if (delta_ns < 0) delta_ns = 0;
    __atomic_add_fetch(&fc->mono, delta_ns, __ATOMIC_ACQ_REL);
    __atomic_add_fetch(&fc->wall, delta_ns, __ATOMIC_ACQ_REL);
}

void lop_fake_clock_skew_wall(lop_fake_clock_t *fc, int64_t delta_ns)
{
    __atomic_add_fetch(&fc->wall, delta_ns, __ATOMIC_ACQ_REL);
}

int lop_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

bool lop_clock_wait_until(const lop_clock_t *c, pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline_ns)
{
    if (lop_clock_mono(c) >= deadline_ns) return true;
    int64_t abs_ns;
    if (c->fake) {
        abs_ns = ts_ns(CLOCK_MONOTONIC) + LOP_NS_PER_MS;
    } else if (deadline_ns == INT64_MAX) {
        pthread_cond_wait(cond, mu);
        return false;
    } else {
        abs_ns = deadline_ns; /* the system clock's mono reading is CLOCK_MONOTONIC itself */
    }
    struct timespec ts = {.tv_sec = abs_ns / LOP_NS_PER_S, .tv_nsec = abs_ns % LOP_NS_PER_S};
    pthread_cond_timedwait(cond, mu, &ts);
    return lop_clock_mono(c) >= deadline_ns;
}

char *lop_time_format(int64_t wall_ns, char *buf, size_t len)
{
    time_t secs = (time_t)(wall_ns / LOP_NS_PER_S);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

char *lop_microtime_format(int64_t wall_ns, char *buf, size_t len)
{
    time_t secs = (time_t)(wall_ns / LOP_NS_PER_S);
    long micros = (long)((wall_ns % LOP_NS_PER_S) / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%06ldZ", base, micros);
    return buf;
}

/* Parses "YYYY-MM-DDTHH:MM:SS", then optional ".digits", then "Z" or "+hh:mm"/"-hh:mm".
 * *frac_digits receives the number of fraction digits, *zulu whether the zone was "Z". */
static int parse_rfc3339(const char *s, int64_t *wall_ns, int *frac_digits, int *zulu)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
               &tm.tm_sec, &n) != 6 ||
        n != 19)
        return -1;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
        tm.tm_sec > 60)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    const char *p = s + 19;
    int64_t frac = 0;
    int digits = 0;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (digits < 9) frac = frac * 10 + (*p - '0');
            digits++;
            p++;
        }
        if (digits == 0) return -1;
        for (int i = digits; i < 9; i++) frac *= 10;
    }
    int64_t offset = 0;
    *zulu = 0;
    if (*p == 'Z' || *p == 'z') {
        *zulu = 1;
        p++;
    } else if (*p == '+' || *p == '-') {
        int hh, mm;
        if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2 || strlen(p) != 6) return -1;
        offset = (int64_t)(hh * 3600 + mm * 60) * (*p == '+' ? 1 : -1);
        p += 6;
    } else {
        return -1;
    }
    if (*p != '\0') return -1;
    /* int64 nanoseconds since 1970 reach from 1677-09-21 to 2262-04-11 (Go's UnixNano range):
     * a time outside it has no wall_ns, rather than an overflowed one */
    int64_t secs = (int64_t)timegm(&tm) - offset;
    if (secs <= INT64_MIN / LOP_NS_PER_S || secs >= INT64_MAX / LOP_NS_PER_S) return -1;
    *wall_ns = secs * LOP_NS_PER_S + frac;
    *frac_digits = digits;
    return 0;
}

int lop_time_parse(const char *s, int64_t *wall_ns)
{
    int digits, zulu;
    return s ? parse_rfc3339(s, wall_ns, &digits, &zulu) : -1;
}

int lop_microtime_parse_strict(const char *s, int64_t *wall_ns)
{
    int digits, zulu;
    if (!s || parse_rfc3339(s, wall_ns, &digits, &zulu) != 0) return -1;
    return digits == 6 ? 0 : -1; /* Go: "2006-01-02T15:04:05.000000Z07:00" */
}
