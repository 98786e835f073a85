/* SPDX-License-Identifier: Apache-2.0 */
/* log.c — the structured logger: text or JSON lines on stderr, one write(2) each (see log.h). */
#include "host/util/log.h"

#include "host/util/buf.h"
#include "host/util/clock.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static lop_log_level_t g_level = LOP_LOG_INFO;
static lop_log_format_t g_format = LOP_LOG_TEXT;
static lop_log_time_t g_time = LOP_LOG_TIME_RFC3339MICRO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void lop_log_setup(lop_log_level_t level, lop_log_format_t format)
{
    g_level = level;
    g_format = format;
}

int lop_log_level_parse(const char *s, lop_log_level_t *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (lop_log_level_t)i;
            return 0;
        }
    }
    if (strcmp(s, "warning") == 0) {
        *out = LOP_LOG_WARN;
        return 0;
    }
    return -1;
}

void lop_log_setup_time(lop_log_time_t enc) { g_time = enc; }

static const char *const time_names[] = {"rfc3339micro", "rfc3339", "rfc3339nano", "iso8601",
                                         "epoch",        "millis",  "nano"};

int lop_log_time_parse(const char *s, lop_log_time_t *out)
{
    for (int i = 0; i < (int)(sizeof time_names / sizeof time_names[0]); i++)
        if (strcmp(s, time_names[i]) == 0) {
            *out = (lop_log_time_t)i;
            return 0;
        }
    return -1;
}

bool lop_log_format_time(int64_t wall_ns, char *buf, size_t len)
{
    int64_t secs = wall_ns / LOP_NS_PER_S, frac = wall_ns % LOP_NS_PER_S;
    switch (g_time) {
    case LOP_LOG_TIME_EPOCH: snprintf(buf, len, "%" PRId64 ".%06" PRId64, secs, frac / 1000); return true;
    case LOP_LOG_TIME_MILLIS:
        snprintf(buf, len, "%" PRId64 ".%06" PRId64, wall_ns / 1000000, wall_ns % 1000000);
        return true;
    case LOP_LOG_TIME_NANOS: snprintf(buf, len, "%" PRId64, wall_ns); return true;
    case LOP_LOG_TIME_RFC3339MICRO: lop_microtime_format(wall_ns, buf, len); return false;
    case LOP_LOG_TIME_RFC3339:
    case LOP_LOG_TIME_RFC3339NANO:
    case LOP_LOG_TIME_ISO8601: break;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    if (g_time == LOP_LOG_TIME_ISO8601)
        snprintf(buf, len, "%s.%03" PRId64 "Z", base, frac / 1000000);
    else if (g_time == LOP_LOG_TIME_RFC3339 || frac == 0)
        snprintf(buf, len, "%sZ", base);
    else {
        char f[16];
        snprintf(f, sizeof f, "%09" PRId64, frac);
        for (int i = 8; i > 0 && f[i] == '0'; i--) f[i] = '\0'; /* Go's RFC3339Nano trims zeros */
        snprintf(buf, len, "%s.%sZ", base, f);
    }
    return false;
}

int lop_log_format_parse(const char *s, lop_log_format_t *out)
{
    if (strcmp(s, "text") == 0)
        *out = LOP_LOG_TEXT;
    else if (strcmp(s, "json") == 0)
        *out = LOP_LOG_JSON;
    else
        return -1;
    return 0;
}

bool lop_log_enabled(lop_log_level_t level) { return level >= g_level; }

/* Text values are quoted when they contain spaces, quotes, '=' or control characters. */
static void text_value(lop_buf_t *b, const char *v)
{
    size_t n = strlen(v);
    bool quote = n == 0;
    for (size_t i = 0; i < n && !quote; i++) {
        unsigned char c = (unsigned char)v[i];
        quote = c <= ' ' || c == '"' || c == '=' || c == '\\';
    }
    if (quote)
        lop_buf_json_str(b, v, n);
    else
        lop_buf_append(b, v, n);
}

/* One field's value: JSON spelling in JSON; in text, strings as text_value, the rest as JSON. */
static void put_value(lop_buf_t *b, const lop_log_field_t *f)
{
    bool json = g_format == LOP_LOG_JSON;
    switch (f->type) {
    case LOP_LOG_NUM:
        if (isfinite(f->num)) {
            /* integers print without a fraction; others with the shortest round-trip form */
            if (f->num == (double)(long long)f->num && fabs(f->num) < 1e15)
                lop_buf_printf(b, "%lld", (long long)f->num);
            else {
                char t[32];
                for (int prec = 15; prec <= 17; prec++) { /* the shortest spelling that reads back */
                    snprintf(t, sizeof t, "%.*g", prec, f->num);
                    if (strtod(t, NULL) == f->num) break;
                }
                lop_buf_puts(b, t);
            }
        } else {
            const char *v = isnan(f->num) ? "NaN" : f->num > 0 ? "+Inf" : "-Inf";
            if (json)
                lop_buf_json_str(b, v, strlen(v));
            else
                lop_buf_puts(b, v);
        }
        return;
    case LOP_LOG_INT: lop_buf_printf(b, "%lld", f->i); return;
    case LOP_LOG_BOOL: lop_buf_puts(b, f->b ? "true" : "false"); return;
    case LOP_LOG_JSON_RAW:
        if (json) {
            lop_buf_puts(b, f->str ? f->str : "null");
            return;
        }
        text_value(b, f->str ? f->str : "null");
        return;
    case LOP_LOG_STR: break;
    }
    const char *v = f->str ? f->str : "";
    if (json)
        lop_buf_json_str(b, v, strlen(v));
    else
        text_value(b, v);
}

static void put_field(lop_buf_t *b, const lop_log_field_t *f)
{
    if (g_format == LOP_LOG_JSON) {
        lop_buf_putc(b, ',');
        lop_buf_json_str(b, f->key, strlen(f->key));
        lop_buf_putc(b, ':');
    } else {
        lop_buf_printf(b, " %s=", f->key);
    }
    put_value(b, f);
}

static void emit(lop_log_level_t level, const char *msg, const lop_log_field_t *fields, int n)
{
    lop_buf_t b = LOP_BUF_INIT;
    char ts[48];
    bool numeric = lop_log_format_time(lop_clock_wall(&lop_clock_system), ts, sizeof ts);
    const lop_log_field_t *logger = NULL;
    for (int i = 0; i < n && !logger; i++)
        if (strcmp(fields[i].key, "logger") == 0) logger = &fields[i];
    if (g_format == LOP_LOG_JSON) {
        lop_buf_printf(&b, numeric ? "{\"ts\":%s,\"level\":\"%s\"" : "{\"ts\":\"%s\",\"level\":\"%s\"", ts,
                       level_names[level]);
        if (logger) put_field(&b, logger);
        lop_buf_puts(&b, ",\"msg\":");
        lop_buf_json_str(&b, msg, strlen(msg));
    } else {
        lop_buf_printf(&b, "ts=%s level=%s", ts, level_names[level]);
        if (logger) put_field(&b, logger);
        lop_buf_puts(&b, " msg=");
        text_value(&b, msg);
    }
    for (int i = 0; i < n; i++)
        if (&fields[i] != logger) put_field(&b, &fields[i]);
    lop_buf_puts(&b, g_format == LOP_LOG_JSON ? "}\n" : "\n");
    ssize_t off = 0;
    while ((size_t)off < b.len) {
        ssize_t w = write(STDERR_FILENO, b.data + off, b.len - (size_t)off);
        if (w <= 0) break;
        off += w;
    }
    lop_buf_free(&b);
}

/* String pairs as fields: on the stack for the usual handful, on the heap past that. */
#define STACK_FIELDS 32

void lop_log(lop_log_level_t level, const char *msg, ...)
{
    if (!lop_log_enabled(level)) return;
    va_list ap, cp;
    va_start(ap, msg);
    va_copy(cp, ap);
    int n = 0;
    while (va_arg(cp, const char *)) {
        (void)va_arg(cp, const char *);
        n++;
    }
    va_end(cp);
    lop_log_field_t stack[STACK_FIELDS] = {{0}};
    lop_log_field_t *f = n <= STACK_FIELDS ? stack : malloc(sizeof *f * (size_t)n);
    if (!f) n = 0, f = stack;
    for (int i = 0; i < n; i++) {
        const char *k = va_arg(ap, const char *);
        f[i] = LOP_LOG_F_STR(k, va_arg(ap, const char *));
    }
    va_end(ap);
    emit(level, msg, f, n);
    if (f != stack) free(f);
}

void lop_logv(lop_log_level_t level, const char *msg, const char *const *kv, int npairs)
{
    if (!lop_log_enabled(level)) return;
    lop_log_field_t stack[STACK_FIELDS] = {{0}};
    lop_log_field_t *f = npairs <= STACK_FIELDS ? stack : malloc(sizeof *f * (size_t)npairs);
    if (!f) npairs = 0, f = stack;
    for (int i = 0; i < npairs; i++) f[i] = LOP_LOG_F_STR(kv[2 * i], kv[2 * i + 1]);
    emit(level, msg, f, npairs);
    if (f != stack) free(f);
}

void lop_log_fields(lop_log_level_t level, const char *msg, const lop_log_field_t *fields, int nfields)
{
    if (lop_log_enabled(level)) emit(level, msg, fields, nfields);
}

void lop_logf(lop_log_level_t level, const char *fmt, ...)
{
    if (!lop_log_enabled(level)) return;
    lop_buf_t b = LOP_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    lop_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    emit(level, b.data ? b.data : "", NULL, 0);
    lop_buf_free(&b);
}
