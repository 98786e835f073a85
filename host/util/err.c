/* SPDX-License-Identifier: Apache-2.0 */
/* err.c — status codes to names, filling a lop_err_t, and the HTTP code/Status reason to rc
 * mapping (see err.h). Pure functions, any thread. Upstream: apimachinery pkg/api/errors
 * (errors.go: reasons and their HTTP codes). */
#include "host/util/err.h"

#include <stdio.h>
#include <string.h>

const char *lop_rc_str(lop_rc_t rc)
{
    switch (rc) {
    case LOP_OK: return "ok";
    case LOP_ERR: return "error";
    case LOP_EAGAIN: return "again";
    case LOP_ENOTFOUND: return "not found";
    case LOP_ECONFLICT: return "conflict";
    case LOP_EGONE: return "gone";
    case LOP_ENOMEM: return "no memory";
    case LOP_ETIMEDOUT: return "timeout";
    case LOP_EINVAL: return "invalid";
    case LOP_EEXIST: return "already exists";
    case LOP_ECLOSED: return "closed";
    }
    return "unknown";
}

void lop_err_clear(lop_err_t *err)
{
    if (!err) return;
    err->code = 0;
    err->reason[0] = '\0';
    err->message[0] = '\0';
}

lop_rc_t lop_err_set(lop_err_t *err, lop_rc_t rc, int code, const char *reason, const char *fmt, ...)
{
    if (!err) return rc;
    err->code = code;
    snprintf(err->reason, sizeof err->reason, "%s", reason ? reason : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return rc;
}

lop_rc_t lop_rc_from_http(int code, const char *reason)
{
    if (code >= 200 && code < 300) return LOP_OK;
    if (reason && strcmp(reason, "AlreadyExists") == 0) return LOP_EEXIST;
    switch (code) {
    case 400:
    case 422: return LOP_EINVAL;
    case 404: return LOP_ENOTFOUND;
    case 409: return LOP_ECONFLICT;
    case 410: return LOP_EGONE;
    case 429:
    case 500:
    case 502:
    case 503: return LOP_EAGAIN;
    case 504: return LOP_ETIMEDOUT;
    default: return LOP_ERR;
    }
}
