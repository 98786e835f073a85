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

typedef enum lop_log_level {
    LOP_LOG_DEBUG = 0,
    LOP_LOG_INFO = 1,
    LOP_LOG_WARN = 2,
    LOP_LOG_ERROR = 3,
} lop_log_level_t;

typedef enum lop_log_format { LOP_LOG_TEXT = 0, LOP_LOG_JSON = 1 } lop_log_format_t;

/* Process-wide settings; call before starting threads. Defaults: info, text. */
void lop_log_setup(lop_log_level_t level, lop_log_format_t format);
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

/* printf-style convenience: the formatted text becomes msg, no extra fields. */
void lop_logf(lop_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
