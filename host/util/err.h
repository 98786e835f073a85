/* SPDX-License-Identifier: Apache-2.0 */
/*
 * err.h — status codes and the error struct every luaop C function uses.
 *
 * Functions return a small lop_rc_t (LOP_OK == 0, failures negative) and, when the caller passes a
 * non-NULL lop_err_t, fill it with the HTTP code, the Kubernetes API `reason` and a message.
 * Callers branch on the rc and on err->reason, never on err->message (the API conventions,
 * "Response Status Kind").
 *
 * Thread-safety: plain data; no shared state.
 */
#ifndef LOP_UTIL_ERR_H
#define LOP_UTIL_ERR_H

#include <stdarg.h>

/* Put before a prototype returning lop_rc_t: ignoring the rc is then a compiler warning (an error
 * with LUAOP_WERROR). Where dropping it is deliberate, pass it to lop_rc_ignore with a comment
 * saying why (GCC does not accept a (void) cast for this attribute). */
#define LOP_MUST_CHECK __attribute__((warn_unused_result))

typedef enum lop_rc {
    LOP_OK = 0,
    LOP_ERR = -1,       /* generic failure; see err->message */
    LOP_EAGAIN = -2,    /* try again later (429, 5xx with Retry-After, transient transport error) */
    LOP_ENOTFOUND = -3, /* 404 NotFound */
    LOP_ECONFLICT = -4, /* 409 Conflict (optimistic lock, apply conflict) */
    LOP_EGONE = -5,     /* 410 Expired/Gone: resourceVersion too old, relist */
    LOP_ENOMEM = -6,    /* allocation failed */
    LOP_ETIMEDOUT = -7, /* deadline passed (504 Timeout, local deadline) */
    LOP_EINVAL = -8,    /* invalid argument or input (400/422, malformed config) */
    LOP_EEXIST = -9,    /* 409 AlreadyExists */
    LOP_ECLOSED = -10,  /* the object (queue, stream, server) was shut down */
} lop_rc_t;

static inline void lop_rc_ignore(lop_rc_t rc) { (void)rc; }

typedef struct lop_err {
    int code;          /* HTTP status code, 0 when the failure was local */
    char reason[64];   /* metav1.Status reason ("NotFound", "Conflict", ...), "" when none */
    char message[512]; /* human-readable, for logs only */
} lop_err_t;

/* Short stable name of an rc ("ok", "not found", ...). Never NULL; static storage. */
const char *lop_rc_str(lop_rc_t rc);

/* Fill err (if non-NULL) and return rc. code may be 0, reason may be NULL. Truncates silently. */
lop_rc_t lop_err_set(lop_err_t *err, lop_rc_t rc, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Map an HTTP status code and Status reason to the rc a caller should branch on. */
LOP_MUST_CHECK lop_rc_t lop_rc_from_http(int code, const char *reason);

/* Reset err to the "no error" state. */
void lop_err_clear(lop_err_t *err);

#endif
