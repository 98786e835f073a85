/* SPDX-License-Identifier: Apache-2.0 */
/* rest_status.c — metav1.Status decoding and synthesis for error responses (apimachinery
 * pkg/api/errors). */
#include "host/kube/client/rest.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

const char *lop_rest_reason_for_code(int code)
{
    switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 406: return "NotAcceptable";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return "";
    }
}

static const char *generic_message(int code)
{
    switch (code) {
    case 400: return "the server rejected our request for an unknown reason";
    case 401: return "the server has asked for the client to provide credentials";
    case 403: return "the server does not allow access to the requested resource";
    case 404: return "the server could not find the requested resource";
    case 405: return "the server does not allow this method on the requested resource";
    case 409: return "the server reported a conflict";
    case 410: return "the requested resource version is no longer available";
    case 422: return "the server rejected our request due to an error in our request";
    case 429: return "the server has received too many requests and has asked us to try again later";
    case 500: return "an error on the server has prevented the request from succeeding";
    case 503: return "the server is currently unable to handle the request";
    case 504: return "the server was unable to return a response in the time allotted";
    default: return "an error on the server has prevented the request from succeeding";
    }
}

long lop_rest_parse_retry_after(const char *v)
{
    if (!v) return -1;
    while (*v == ' ' || *v == '\t') v++;
    if (!isdigit((unsigned char)*v)) return -1;
    long n = 0;
    const char *end = v;
    for (; isdigit((unsigned char)*end); end++) /* saturating: no overflow for any digit string */
        if (n < LOP_REST_RETRY_AFTER_MAX) n = n * 10 + (*end - '0');
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') end++;
    if (*end) return -1;
    return n < LOP_REST_RETRY_AFTER_MAX ? n : LOP_REST_RETRY_AFTER_MAX;
}

lop_rc_t lop_rest_status_parse(int code, const char *body, size_t len, lop_err_t *err, json_t **status_out)
{
    if (status_out) *status_out = NULL;
    json_t *st = NULL;
    if (body && len) {
        json_t *j = json_loadb(body, len, 0, NULL);
        const char *kind = json_string_value(json_object_get(j, "kind"));
        if (json_is_object(j) && kind && strcmp(kind, "Status") == 0)
            st = j;
        else
            json_decref(j);
    }
    if (!st) {
        /* Synthesize: trimmed body text as message (capped), reason from the code. */
        size_t b = 0, e = len;
        while (b < e && isspace((unsigned char)body[b])) b++;
        while (e > b && isspace((unsigned char)body[e - 1])) e--;
        if (e - b > 1024) {
            e = b + 1024;
            while (e > b && ((unsigned char)body[e] & 0xC0) == 0x80) e--; /* not inside a character */
        }
        json_t *msg = (e > b) ? json_stringn(body + b, e - b) : NULL; /* NULL when not UTF-8 */
        if (!msg) msg = json_string(generic_message(code));
        st = json_pack("{s:s, s:s, s:{}, s:s, s:o, s:s, s:i}", "kind", "Status", "apiVersion", "v1", "metadata",
                       "status", "Failure", "message", msg, "reason", lop_rest_reason_for_code(code), "code", code);
    }
    const char *reason = json_string_value(json_object_get(st, "reason"));
    const char *message = json_string_value(json_object_get(st, "message"));
    json_int_t scode = json_integer_value(json_object_get(st, "code"));
    int effective = code ? code : (int)scode;
    if (!reason) reason = "";
    lop_rc_t rc = lop_rc_from_http(effective, reason);
    if (effective == 410) rc = LOP_EGONE; /* Expired, Gone or none: all the same (errors.IsResourceExpired/IsGone) */
    if (rc == LOP_OK) rc = LOP_ERR;       /* a Status failure with a 2xx code is still a failure */
    lop_err_set(err, rc, effective, reason, "%s", message && *message ? message : generic_message(effective));
    if (status_out)
        *status_out = st;
    else
        json_decref(st);
    return rc;
}
