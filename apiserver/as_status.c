/* SPDX-License-Identifier: Apache-2.0 */
/* as_status.c — responses: JSON bodies, metav1.Status errors (apimachinery
 * pkg/api/errors/errors.go), rejection logging. */
#include "apiserver/as_status.h"

#include "apiserver/as_gzip.h"
#include "apiserver/as_table.h"
#include "apiserver/as_view.h"

#include "host/util/log.h"

#include <event2/buffer.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *as_details(const char *name, const char *group, const char *kind)
{
    json_t *d = json_object();
    if (name && *name) json_object_set_new(d, "name", json_string(name));
    if (group && *group) json_object_set_new(d, "group", json_string(group));
    if (kind && *kind) json_object_set_new(d, "kind", json_string(kind));
    return d;
}

json_t *as_status_new(int code, const char *reason, const char *message, json_t *details)
{
    json_t *s = json_object();
    json_object_set_new(s, "kind", json_string("Status"));
    json_object_set_new(s, "apiVersion", json_string("v1"));
    json_object_set_new(s, "metadata", json_object());
    json_object_set_new(s, "status", json_string(code < 400 ? "Success" : "Failure"));
    if (message && *message) json_object_set_new(s, "message", json_string(message));
    if (reason && *reason) json_object_set_new(s, "reason", json_string(reason));
    if (details && json_object_size(details) > 0)
        json_object_set_new(s, "details", details);
    else
        json_decref(details);
    if (code >= 400) json_object_set_new(s, "code", json_integer(code));
    return s;
}

static const char *reason_phrase(int code)
{
    switch (code) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
    }
}

void as_reply_raw(as_req_t *q, int code, const char *ctype, const char *body, size_t len)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(q->r);
    evhttp_add_header(h, "Content-Type", ctype);
    evhttp_add_header(h, "Cache-Control", "no-cache, private");
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, body, len);
    as_gzip_reply_body(q, b);
    evhttp_send_reply(q->r, code, reason_phrase(code), b);
    evbuffer_free(b);
}

static void free_cb(const void *data, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    free((void *)data);
}

static void blob_release(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    as_blob_unref(arg);
}

/* Send b (its bytes, then a newline) as the JSON body of the reply; frees b. */
static void reply_buf(as_req_t *q, int code, lop_buf_t *b)
{
    lop_buf_putc(b, '\n');
    struct evkeyvalq *h = evhttp_request_get_output_headers(q->r);
    evhttp_add_header(h, "Content-Type", "application/json");
    evhttp_add_header(h, "Cache-Control", "no-cache, private");
    struct evbuffer *eb = evbuffer_new();
    size_t n = b->len;
    evbuffer_add_reference(eb, lop_buf_steal(b), n, free_cb, NULL);
    as_gzip_reply_body(q, eb);
    evhttp_send_reply(q->r, code, reason_phrase(code), eb);
    evbuffer_free(eb);
}

/* Append o's metadata as PartialObjectMetadata (serialized with flags, as in the object). */
static void partial_of(lop_buf_t *b, const as_conv_t *conv, const json_t *o, size_t flags)
{
    as_partial_head(b, conv);
    const json_t *m = json_object_get(o, "metadata");
    char *s = json_is_object(m) ? json_dumps(m, flags) : NULL;
    lop_buf_puts(b, s ? s : "{}");
    free(s);
    lop_buf_putc(b, '}');
}

/* The reply of a request whose Accept asked for a metadata-only view (q->conv): body (stolen;
 * an object or a list, not a Status) converted as the API server's transformResponseObject
 * does, or 406 when the conversion does not fit it. Content-Type stays application/json. */
static void reply_converted(as_req_t *q, int code, json_t *body, size_t flags)
{
    const json_t *items = json_object_get(body, "items");
    bool is_list = json_is_array(items);
    if (is_list != (q->conv.kind == AS_CONV_PARTIAL_LIST)) {
        json_decref(body);
        as_reply_not_acceptable_conv(q, is_list);
        return;
    }
    lop_buf_t b = LOP_BUF_INIT;
    if (!is_list) {
        partial_of(&b, &q->conv, body, flags);
    } else {
        lop_buf_puts(&b, "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":");
        lop_buf_json_str(&b, q->conv.api_version, strlen(q->conv.api_version));
        const json_t *m = json_object_get(body, "metadata");
        char *ms = json_is_object(m) ? json_dumps(m, flags) : NULL;
        lop_buf_puts(&b, ",\"metadata\":");
        lop_buf_puts(&b, ms ? ms : "{}");
        free(ms);
        lop_buf_puts(&b, ",\"items\":[");
        size_t i;
        const json_t *it;
        json_array_foreach(items, i, it)
        {
            if (i) lop_buf_putc(&b, ',');
            partial_of(&b, &q->conv, it, flags);
        }
        lop_buf_puts(&b, "]}");
    }
    json_decref(body);
    reply_buf(q, code, &b);
}

static bool is_status(const json_t *body)
{
    const char *k = json_string_value(json_object_get(body, "kind"));
    return k && !strcmp(k, "Status");
}

/* body (stolen: an object or a list) as the Table the request asked for. */
static json_t *table_of(as_req_t *q, json_t *body)
{
    json_t *items = json_object_get(body, "items");
    json_t *t;
    if (json_is_array(items)) {
        size_t n = json_array_size(items);
        json_t **objs = lop_xcalloc(n + 1, sizeof *objs);
        for (size_t i = 0; i < n; i++) objs[i] = json_array_get(items, i);
        t = as_table_new(q->srv, q->res, &q->conv, objs, n, json_object_get(body, "metadata"), time(NULL));
        free(objs);
    } else {
        t = as_table_new(q->srv, q->res, &q->conv, &body, 1, NULL, time(NULL));
    }
    json_decref(body);
    return t;
}

void as_reply_json(as_req_t *q, int code, json_t *body, bool sort_keys)
{
    size_t flags = JSON_COMPACT | (sort_keys ? JSON_SORT_KEYS : 0);
    if (q->conv.kind == AS_CONV_TABLE && q->res && !is_status(body)) {
        body = table_of(q, body);
        flags = JSON_COMPACT;
    } else if (q->conv.kind != AS_CONV_NONE && !is_status(body)) {
        reply_converted(q, code, body, flags);
        return;
    }
    char *s = json_dumps(body, flags);
    json_decref(body);
    if (!s) {
        as_reply_raw(q, 500, "text/plain", "encode failed\n", 14);
        return;
    }
    size_t n = strlen(s);
    struct evkeyvalq *h = evhttp_request_get_output_headers(q->r);
    evhttp_add_header(h, "Content-Type", "application/json");
    evhttp_add_header(h, "Cache-Control", "no-cache, private");
    struct evbuffer *b = evbuffer_new();
    s[n] = '\n'; /* replaces the NUL: the buffer owns the string from here */
    evbuffer_add_reference(b, s, n + 1, free_cb, NULL);
    as_gzip_reply_body(q, b);
    evhttp_send_reply(q->r, code, reason_phrase(code), b);
    evbuffer_free(b);
}

void as_log_reject(as_req_t *q, int code, const char *reason)
{
    char c[8];
    snprintf(c, sizeof c, "%d", code);
    const char *m = "?";
    switch (q->method) {
    case EVHTTP_REQ_GET: m = "GET"; break;
    case EVHTTP_REQ_POST: m = "POST"; break;
    case EVHTTP_REQ_PUT: m = "PUT"; break;
    case EVHTTP_REQ_PATCH: m = "PATCH"; break;
    case EVHTTP_REQ_DELETE: m = "DELETE"; break;
    default: break;
    }
    lop_log(LOP_LOG_INFO, "request rejected", "method", m, "path", q->path ? q->path : "", "code", c, "reason",
            reason ? reason : "", NULL);
}

void as_reply_status(as_req_t *q, int code, const char *reason, json_t *details, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (code >= 400) as_log_reject(q, code, reason);
    json_t *ra = details ? json_object_get(details, "retryAfterSeconds") : NULL;
    if (json_is_integer(ra)) {
        char v[32];
        snprintf(v, sizeof v, "%lld", (long long)json_integer_value(ra));
        evhttp_add_header(evhttp_request_get_output_headers(q->r), "Retry-After", v);
    }
    as_reply_json(q, code, as_status_new(code, reason, msg, details), false);
}

void as_reply_err(as_req_t *q, const lop_err_t *err)
{
    int code = err->code ? err->code : 500;
    as_reply_status(q, code, err->reason, NULL, "%s", err->message);
}

void as_qualified_resource(const as_res_t *res, char *buf, size_t n)
{
    if (res->group[0])
        snprintf(buf, n, "%s.%s", res->plural, res->group);
    else
        snprintf(buf, n, "%s", res->plural);
}

void as_qualified_kind(const as_res_t *res, char *buf, size_t n)
{
    if (res->group[0])
        snprintf(buf, n, "%s.%s", res->kind, res->group);
    else
        snprintf(buf, n, "%s", res->kind);
}

void as_reply_notfound(as_req_t *q, as_res_t *res, const char *name)
{
    char qual[512];
    as_qualified_resource(res, qual, sizeof qual);
    as_reply_status(q, 404, "NotFound", as_details(name, res->group, res->plural), "%s \"%s\" not found", qual, name);
}

void as_reply_invalid(as_req_t *q, const char *kind_qual, const char *dkind, const char *group, const char *name,
                      const char *cause_reason, const char *field, const char *detail)
{
    json_t *d = as_details(name, group, dkind);
    json_t *cause = json_object();
    json_object_set_new(cause, "reason", json_string(cause_reason));
    json_object_set_new(cause, "message", json_string(detail));
    json_object_set_new(cause, "field", json_string(field));
    json_t *causes = json_array();
    json_array_append_new(causes, cause);
    json_object_set_new(d, "causes", causes);
    as_reply_status(q, 422, "Invalid", d, "%s \"%s\" is invalid: %s: %s", kind_qual, name ? name : "", field, detail);
}

const char *as_query(as_req_t *q, const char *key) { return evhttp_find_header(&q->q, key); }

bool as_query_bool(const char *s)
{
    /* Go's strconv.ParseBool spellings of true (python clients send "True") */
    return s && (!strcmp(s, "true") || !strcmp(s, "1") || !strcmp(s, "t") || !strcmp(s, "T") || !strcmp(s, "True") ||
                 !strcmp(s, "TRUE"));
}

void as_reply_stored(as_req_t *q, int code, as_res_t *res, const json_t *obj, as_blob_t *wire)
{
    const json_t *av = json_object_get(obj, "apiVersion");
    if (!wire || !json_is_string(av) || strcmp(json_string_value(av), res->api_version) ||
        q->conv.kind == AS_CONV_TABLE) {
        as_reply_json(q, code, as_served_obj(res, obj), res->is_cr);
        return;
    }
    if (q->conv.kind == AS_CONV_PARTIAL_LIST) {
        as_reply_not_acceptable_conv(q, false);
        return;
    }
    if (q->conv.kind == AS_CONV_PARTIAL) { /* the metadata bytes serialized at commit */
        lop_buf_t b = LOP_BUF_INIT;
        as_partial_from_json(&b, &q->conv, wire->data, wire->len);
        reply_buf(q, code, &b);
        return;
    }
    struct evkeyvalq *h = evhttp_request_get_output_headers(q->r);
    evhttp_add_header(h, "Content-Type", "application/json");
    evhttp_add_header(h, "Cache-Control", "no-cache, private");
    struct evbuffer *b = evbuffer_new();
    wire->refs++;
    evbuffer_add_reference(b, wire->data, wire->len, blob_release, wire);
    evbuffer_add(b, "\n", 1);
    as_gzip_reply_body(q, b);
    evhttp_send_reply(q->r, code, reason_phrase(code), b);
    evbuffer_free(b);
}
void as_reply_not_acceptable_conv(as_req_t *q, bool is_list)
{
    if (is_list)
        as_reply_status(q, 406, "NotAcceptable", NULL,
                        "PartialObjectMetadata was asked for, but the requested object is a list (%s); "
                        "ask for PartialObjectMetadataList",
                        q->res->list_kind);
    else
        as_reply_status(q, 406, "NotAcceptable", NULL,
                        "PartialObjectMetadataList was asked for, but the requested object is not a list "
                        "(%s); ask for PartialObjectMetadata",
                        q->res->kind);
}

void as_add_warning(as_req_t *q, const char *text)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, "299 - \"");
    for (const char *s = text; *s; s++) {
        if (*s == '"' || *s == '\\') lop_buf_putc(&b, '\\');
        if ((unsigned char)*s >= 0x20) lop_buf_putc(&b, *s);
    }
    lop_buf_putc(&b, '"');
    evhttp_add_header(evhttp_request_get_output_headers(q->r), "Warning", b.data);
    lop_buf_free(&b);
}
