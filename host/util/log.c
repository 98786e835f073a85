#include "host/util/log.h"

#include "host/util/buf.h"
#include "host/util/clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static lop_log_level_t g_level = LOP_LOG_INFO;
static lop_log_format_t g_format = LOP_LOG_TEXT;
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

static void emit(lop_log_level_t level, const char *msg, const char *const *kv, int npairs, va_list *ap)
{
    lop_buf_t b = LOP_BUF_INIT;
    char ts[40];
    lop_microtime_format(lop_clock_wall(&lop_clock_system), ts, sizeof ts);
    if (g_format == LOP_LOG_JSON) {
        lop_buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":", ts, level_names[level]);
        lop_buf_json_str(&b, msg, strlen(msg));
    } else {
        lop_buf_printf(&b, "ts=%s level=%s msg=", ts, level_names[level]);
        text_value(&b, msg);
    }
    for (int i = 0;; i++) {
        const char *k, *v;
        if (ap) {
            k = va_arg(*ap, const char *);
            if (!k) break;
            v = va_arg(*ap, const char *);
        } else {
            if (i >= npairs) break;
            k = kv[2 * i];
            v = kv[2 * i + 1];
        }
        if (!v) v = "";
        if (g_format == LOP_LOG_JSON) {
            lop_buf_putc(&b, ',');
            lop_buf_json_str(&b, k, strlen(k));
            lop_buf_putc(&b, ':');
            lop_buf_json_str(&b, v, strlen(v));
        } else {
            lop_buf_printf(&b, " %s=", k);
            text_value(&b, v);
        }
    }
    lop_buf_puts(&b, g_format == LOP_LOG_JSON ? "}\n" : "\n");
    ssize_t off = 0;
    while ((size_t)off < b.len) {
        ssize_t w = write(STDERR_FILENO, b.data + off, b.len - (size_t)off);
        if (w <= 0) break;
        off += w;
    }
    lop_buf_free(&b);
}

void lop_log(lop_log_level_t level, const char *msg, ...)
{
    if (!lop_log_enabled(level)) return;
    va_list ap;
    va_start(ap, msg);
    emit(level, msg, NULL, 0, &ap);
    va_end(ap);
}

void lop_logv(lop_log_level_t level, const char *msg, const char *const *kv, int npairs)
{
    if (!lop_log_enabled(level)) return;
    emit(level, msg, kv, npairs, NULL);
}

void lop_logf(lop_log_level_t level, const char *fmt, ...)
{
    if (!lop_log_enabled(level)) return;
    lop_buf_t b = LOP_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    lop_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    emit(level, b.data ? b.data : "", NULL, 0, NULL);
    lop_buf_free(&b);
}
