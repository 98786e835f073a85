/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h — the structured logger. One line per event on stderr, in text
 * (`ts=... level=info msg="..." key=value`) or JSON (`{"ts":...,"level":"info","msg":...}`).
 * Lua's luaop.log writes through the same functions.
 *
 * Thread-safety: every function is safe from any thread; each line is written with one write(2),
 * so lines from different threads never interleave.
 * Secrets: callers must never pass tokens, keys or Secret data; rest/kubeconfig code redacts.
 */
#ifndef LOP_UTIL_LOG_H
#define LOP_UTIL_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum lop_log_level {
    LOP_LOG_DEBUG = 0,
    LOP_LOG_INFO = 1,
    LOP_LOG_WARN = 2,
    LOP_LOG_ERROR = 3,
} lop_log_level_t;

typedef enum lop_log_format { LOP_LOG_TEXT = 0, LOP_LOG_JSON = 1 } lop_log_format_t;

/* Process-wide settings; call before starting threads. Defaults: info, text. */
void lop_log_setup(lop_log_level_t level, lop_log_format_t format);

/*
 * How the "ts" field is written (zap's time encoders, as kubebuilder's --zap-time-encoding names
 * them). In JSON the three numeric ones are numbers, the others strings. All are UTC.
 *   LOP_LOG_TIME_RFC3339MICRO  2026-12-06T04:10:00.123456Z   (the default)
 *   LOP_LOG_TIME_RFC3339       2026-12-06T04:10:00Z
 *   LOP_LOG_TIME_RFC3339NANO   2026-12-06T04:10:00.123456789Z (trailing zeros dropped, as Go's)
 *   LOP_LOG_TIME_ISO8601       2026-12-06T04:10:00.123Z      (milliseconds)
 *   LOP_LOG_TIME_EPOCH         1796530200.123456             (seconds since the epoch)
 *   LOP_LOG_TIME_MILLIS        1796530200123.456             (milliseconds)
 *   LOP_LOG_TIME_NANOS         1796530200123456789           (nanoseconds, an integer)
 */
typedef enum lop_log_time {
    LOP_LOG_TIME_RFC3339MICRO = 0,
    LOP_LOG_TIME_RFC3339,
    LOP_LOG_TIME_RFC3339NANO,
    LOP_LOG_TIME_ISO8601,
    LOP_LOG_TIME_EPOCH,
    LOP_LOG_TIME_MILLIS,
    LOP_LOG_TIME_NANOS,
} lop_log_time_t;
void lop_log_setup_time(lop_log_time_t enc);
/* "rfc3339micro" (ours), "rfc3339", "rfc3339nano", "iso8601", "epoch", "millis", "nano": 0, or -1
 * on an unknown name. */
int lop_log_time_parse(const char *s, lop_log_time_t *out);
/* Parse "debug|info|warn|error" / "text|json". Return 0 on success, -1 on an unknown name. */
int lop_log_level_parse(const char *s, lop_log_level_t *out);
int lop_log_format_parse(const char *s, lop_log_format_t *out);
bool lop_log_enabled(lop_log_level_t level);

/*
 * Log msg with key/value string pairs, terminated by NULL:
 *   lop_log(LOP_LOG_INFO, "watch started", "gvr", "apps/v1/deployments", "rv", rv, NULL);
 * A NULL value prints as an empty string. Keys should be lower_snake or camelCase words.
 */
void lop_log(lop_log_level_t level, const char *msg, ...) __attribute__((sentinel));

/* Same with the pairs given as an array of 2*npairs strings (for bindings). */
void lop_logv(lop_log_level_t level, const char *msg, const char *const *kv, int npairs);

/*
 * Typed fields, for values that are not strings: in JSON a number or boolean is written as one
 * (zap and logr do the same), LOP_LOG_JSON_RAW writes str as given — the caller guarantees it is
 * one valid JSON value (an object such as controller-runtime's {"name":..,"namespace":..}). In
 * text, every type prints as its JSON spelling (strings quoted only when needed).
 * The key "logger" is special in both formats: it is written right after "level" (zap's order).
 */
typedef enum lop_log_type {
    LOP_LOG_STR = 0, /* str (NULL prints as "") */
    LOP_LOG_NUM,     /* num; NaN and infinities print as strings ("NaN", "+Inf", "-Inf") */
    LOP_LOG_INT,     /* i */
    LOP_LOG_BOOL,    /* b */
    LOP_LOG_JSON_RAW /* str: one JSON value */
} lop_log_type_t;

typedef struct lop_log_field {
    const char *key;
    lop_log_type_t type;
    const char *str;
    double num;
    long long i;
    bool b;
} lop_log_field_t;

#define LOP_LOG_F_STR(k, v)  ((lop_log_field_t){.key = (k), .type = LOP_LOG_STR, .str = (v)})
#define LOP_LOG_F_NUM(k, v)  ((lop_log_field_t){.key = (k), .type = LOP_LOG_NUM, .num = (v)})
#define LOP_LOG_F_INT(k, v)  ((lop_log_field_t){.key = (k), .type = LOP_LOG_INT, .i = (v)})
#define LOP_LOG_F_BOOL(k, v) ((lop_log_field_t){.key = (k), .type = LOP_LOG_BOOL, .b = (v)})
#define LOP_LOG_F_JSON(k, v) ((lop_log_field_t){.key = (k), .type = LOP_LOG_JSON_RAW, .str = (v)})

void lop_log_fields(lop_log_level_t level, const char *msg, const lop_log_field_t *fields, int nfields);

/* Format the current time as the configured encoding would, into buf (>= 40 bytes); returns whether
 * the result is a JSON number (true) or needs quoting (false). For tests and the Lua binding. */
bool lop_log_format_time(int64_t wall_ns, char *buf, size_t len);

/* printf-style convenience: the formatted text becomes msg, no extra fields. */
void lop_logf(lop_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
