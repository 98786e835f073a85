/* SPDX-License-Identifier: Apache-2.0 */
/* as_read.c — GET and LIST (apiserver pkg/endpoints/handlers/get.go, api-concepts): selectors,
 * limit/continue over consistent snapshots, resourceVersion / resourceVersionMatch semantics, and
 * the /scale view of custom resources. */
#include "apiserver/as_read.h"

#include "apiserver/as_decode.h"
#include "apiserver/as_convert.h"
#include "apiserver/as_gzip.h"

#include "apiserver/as_select.h"
#include "apiserver/as_status.h"
#include "apiserver/as_store.h"
#include "apiserver/as_view.h"
#include "host/util/base64.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char continue_expired_msg[] =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list.";

static void blob_release(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    as_blob_unref(arg);
}

static char *make_token(int64_t rv, const char *key)
{
    json_t *t = json_object();
    json_object_set_new(t, "v", json_string("meta.k8s.io/v1"));
    json_object_set_new(t, "rv", json_integer(rv));
    size_t kl = strlen(key);
    char *start = lop_xmalloc(kl + 2);
    memcpy(start, key, kl);
    start[kl] = '\0';
    start[kl + 1] = '\0';
    json_object_set_new(t, "start", json_stringn(start, kl + 1));
    free(start);
    char *s = json_dumps(t, JSON_COMPACT);
    json_decref(t);
    char *tok = lop_base64_encode(s, strlen(s), true);
    free(s);
    return tok;
}

/* Parse a continue token; 0 ok (start_key malloc'd = last key returned), -1 invalid. */
static int parse_token(const char *tok, int64_t *rv, char **start_key)
{
    size_t n;
    unsigned char *raw = (unsigned char *)lop_base64_decode(tok, &n);
    if (!raw) return -1;
    json_error_t je;
    json_t *t = json_loadb((const char *)raw, n, JSON_ALLOW_NUL, &je);
    free(raw);
    if (!t) return -1;
    json_t *jrv = json_object_get(t, "rv");
    json_t *js = json_object_get(t, "start");
    if (!json_is_integer(jrv) || !json_is_string(js)) {
        json_decref(t);
        return -1;
    }
    *rv = json_integer_value(jrv);
    *start_key = lop_xstrdup(json_string_value(js)); /* stops at the NUL suffix */
    json_decref(t);
    return 0;
}

static bool parse_uint(const char *s, int64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-') return false;
    long long v = strtoll(s, &end, 10);
    if (*end) return false;
    *out = v;
    return true;
}

static void reply_listopts_invalid(as_req_t *q, const char *reason, const char *field, const char *detail)
{
    as_reply_invalid(q, "ListOptions.meta.k8s.io", "ListOptions", "meta.k8s.io", "", reason, field, detail);
}

static void reply_bad_rv(as_req_t *q, const char *rvs)
{
    as_reply_status(q, 500, NULL, NULL,
                    "resourceVersion: Invalid value: \"%s\": strconv.ParseUint: parsing \"%s\": "
                    "invalid syntax",
                    rvs, rvs);
}

static void reply_too_large(as_req_t *q, int64_t want)
{
    json_t *d = json_object();
    json_t *causes = json_array();
    json_t *c = json_object();
    json_object_set_new(c, "reason", json_string("ResourceVersionTooLarge"));
    json_object_set_new(c, "message", json_string("Too large resource version"));
    json_array_append_new(causes, c);
    json_object_set_new(d, "causes", causes);
    json_object_set_new(d, "retryAfterSeconds", json_integer(1));
    as_reply_status(q, 504, "Timeout", d, "Timeout: Too large resource version: %" PRId64 ", current: %" PRId64, want,
                    q->srv->rev);
}

/* The list's query after the empty values are dropped (an empty parameter is an absent one). */
typedef struct list_query {
    const char *rv, *rv_match, *cont;
    long limit; /* 0: no limit */
} list_query_t;

static list_query_t read_list_query(as_req_t *q)
{
    list_query_t lq = {as_query(q, "resourceVersion"), as_query(q, "resourceVersionMatch"), as_query(q, "continue"), 0};
    if (lq.rv_match && !*lq.rv_match) lq.rv_match = NULL;
    if (lq.cont && !*lq.cont) lq.cont = NULL;
    if (lq.rv && !*lq.rv) lq.rv = NULL;
    const char *lims = as_query(q, "limit");
    if (lims && *lims) {
        char *end;
        lq.limit = strtol(lims, &end, 10);
        if (*end || lq.limit < 0) lq.limit = 0;
    }
    return lq;
}

/* ListOptions validation (apimachinery pkg/apis/meta/internalversion/validation): no
 * sendInitialEvents on a list; resourceVersionMatch only with a resourceVersion, never with
 * continue, one of Exact/NotOlderThan, and not Exact for "0". False once the 422 was sent. */
static bool check_list_options(as_req_t *q, const list_query_t *lq)
{
    if (as_query(q, "sendInitialEvents")) {
        reply_listopts_invalid(q, "FieldValueForbidden", "sendInitialEvents",
                               "Forbidden: sendInitialEvents is forbidden for list");
        return false;
    }
    const char *rvm = lq->rv_match;
    if (!rvm) return true;
    if (!lq->rv) {
        reply_listopts_invalid(q, "FieldValueForbidden", "resourceVersionMatch",
                               "Forbidden: resourceVersionMatch is forbidden unless "
                               "resourceVersion is provided");
        return false;
    }
    if (lq->cont) {
        reply_listopts_invalid(q, "FieldValueForbidden", "resourceVersionMatch",
                               "Forbidden: resourceVersionMatch is forbidden when continue is "
                               "provided");
        return false;
    }
    if (strcmp(rvm, "Exact") && strcmp(rvm, "NotOlderThan")) {
        char detail[300];
        snprintf(detail, sizeof detail, "Unsupported value: \"%s\": supported values: \"Exact\", \"NotOlderThan\"",
                 rvm);
        reply_listopts_invalid(q, "FieldValueNotSupported", "resourceVersionMatch", detail);
        return false;
    }
    if (!strcmp(rvm, "Exact") && !strcmp(lq->rv, "0")) {
        reply_listopts_invalid(q, "FieldValueForbidden", "resourceVersionMatch",
                               "Forbidden: resourceVersionMatch \"exact\" is forbidden for "
                               "resourceVersion \"0\"");
        return false;
    }
    return true;
}

/* Which revision the list is served at: a continue token's, an exact resourceVersion's, else the
 * latest (kubernetes.io API Concepts, "Resource versions" and "Retrieving large results sets in
 * chunks"). Sets *snap (the store snapshot), *reply_rv (the list's resourceVersion), *start (the
 * key after which a continued list resumes, malloc'd, or NULL) and may clear lq->limit (rv=0 is
 * served "from cache"). False once an error was sent (400, 410 with a fresh token, 500 for an
 * unparsable resourceVersion, 504 ResourceVersionTooLarge). */
static bool resolve_list_revision(as_req_t *q, list_query_t *lq, int64_t *snap, int64_t *reply_rv, char **start)
{
    lop_apiserver_t *srv = q->srv;
    *snap = *reply_rv = srv->rev;
    *start = NULL;
    if (lq->cont) {
        if (lq->rv && strcmp(lq->rv, "0")) {
            as_reply_status(q, 400, "BadRequest", NULL,
                            "specifying resource version is not allowed when using continue");
            return false;
        }
        int64_t trv;
        if (parse_token(lq->cont, &trv, start) < 0) {
            as_reply_status(q, 400, "BadRequest", NULL,
                            "invalid continue token: the continue token could not be decoded");
            return false;
        }
        if (trv == -1) {
            *snap = *reply_rv = srv->rev;
        } else if (trv < srv->hist_floor && trv != srv->rev) {
            char *fresh = make_token(-1, *start);
            free(*start);
            *start = NULL;
            json_t *st = as_status_new(410, "Expired", continue_expired_msg, NULL);
            json_object_set_new(json_object_get(st, "metadata"), "continue", json_string(fresh));
            free(fresh);
            as_log_reject(q, 410, "Expired");
            as_reply_json(q, 410, st, false);
            return false;
        } else if (trv > srv->rev) {
            free(*start);
            *start = NULL;
            as_reply_status(q, 400, "BadRequest", NULL, "invalid continue token: bad resource version");
            return false;
        } else {
            *snap = *reply_rv = trv;
        }
    } else if (lq->rv) {
        int64_t want;
        if (!parse_uint(lq->rv, &want)) {
            reply_bad_rv(q, lq->rv);
            return false;
        }
        if (want == 0) {
            lq->limit = 0; /* served "from cache": limit ignored */
        } else {
            if (want > srv->rev) {
                reply_too_large(q, want);
                return false;
            }
            const char *rvm = lq->rv_match;
            bool exact = (rvm && !strcmp(rvm, "Exact")) || (!rvm && lq->limit > 0);
            if (exact) {
                if (want < srv->hist_floor && want != srv->rev) {
                    as_reply_status(q, 410, "Expired", NULL, "The resourceVersion for the provided list is too old.");
                    return false;
                }
                *snap = *reply_rv = want;
            }
        }
    }
    return true;
}

/* The items array being written, and where it stands. */
typedef struct list_out {
    struct evbuffer *ib; /* the items, comma-separated, without the brackets */
    long count;
    const char *last_key; /* of the last item written (borrowed from the snapshot) */
    char prefix[400];     /* a built-in's stored bytes start with {"kind":...,"apiVersion":..., */
    size_t plen;
} list_out_t;

/* One item as PartialObjectMetadata: the metadata bytes as they are in the object. wb: the stored
 * bytes, or NULL when obj (else NULL) is the object to show (converted). */
static void add_partial_item(as_req_t *q, list_out_t *lo, as_blob_t *wb, const json_t *obj)
{
    as_res_t *res = q->res;
    char *dumped = NULL;
    size_t dl = 0;
    if (!wb || strcmp(as_blob_api_version(wb), res->api_version)) {
        json_t *o = obj ? json_incref((json_t *)obj) : as_blob_decode(q->srv, wb);
        dumped = as_dump_obj(res, o, &dl);
        json_decref(o);
    }
    size_t ms = 0, me = 0;
    bool has_meta =
        dumped ? as_partial_meta_span(dumped, dl, &ms, &me) : as_partial_meta_span(wb->data, wb->len, &ms, &me);
    lop_buf_t head = LOP_BUF_INIT;
    if (lo->count > 0) lop_buf_putc(&head, ',');
    as_partial_head(&head, &q->conv);
    evbuffer_add(lo->ib, head.data, head.len);
    lop_buf_free(&head);
    if (!has_meta) {
        evbuffer_add(lo->ib, "{}", 2);
    } else if (dumped) {
        evbuffer_add(lo->ib, dumped + ms, me - ms);
    } else {
        wb->refs++; /* as below: the bytes may outlive the stored object */
        evbuffer_add_reference(lo->ib, wb->data + ms, me - ms, blob_release, wb);
    }
    evbuffer_add(lo->ib, "}", 1);
    free(dumped);
}

/* One item: zero-copy from the bytes serialized at commit when they are the served form, else
 * the served object dumped (built-ins without kind/apiVersion, which the list carries). */
static void add_item(as_req_t *q, list_out_t *lo, as_blob_t *wb, const json_t *obj_in, size_t flags)
{
    as_res_t *res = q->res;
    if (wb && !strcmp(as_blob_api_version(wb), res->api_version) &&
        (res->is_cr || (wb->len > lo->plen && !memcmp(wb->data, lo->prefix, lo->plen)))) {
        /* zero-copy: the bytes serialized at commit (built-ins minus kind/apiVersion) */
        if (lo->count > 0) evbuffer_add(lo->ib, ",", 1);
        wb->refs++; /* the store may replace the object before the bytes are written */
        if (res->is_cr) {
            evbuffer_add_reference(lo->ib, wb->data, wb->len, blob_release, wb);
        } else {
            evbuffer_add(lo->ib, "{", 1);
            evbuffer_add_reference(lo->ib, wb->data + lo->plen, wb->len - lo->plen, blob_release, wb);
        }
        return;
    }
    json_t *obj = obj_in ? json_incref((json_t *)obj_in) : as_blob_decode(q->srv, wb);
    json_t *shown;
    if (res->is_cr) {
        shown = as_served_obj(res, obj);
    } else {
        json_t *served = as_served_obj(res, obj);
        shown = json_copy(served);
        json_decref(served);
        json_object_del(shown, "kind");
        json_object_del(shown, "apiVersion");
    }
    json_decref(obj);
    char *s = json_dumps(shown, flags);
    json_decref(shown);
    if (lo->count > 0) evbuffer_add(lo->ib, ",", 1);
    if (s) {
        evbuffer_add(lo->ib, s, strlen(s));
        free(s);
    }
}

/* The list envelope around the items (kind, apiVersion, metadata with resourceVersion, continue and
 * remainingItemCount), sent as the 200 reply. Consumes lo->ib. */
static void send_list(as_req_t *q, list_out_t *lo, bool partial, const char *meta_json)
{
    as_res_t *res = q->res;
    struct evbuffer *out = evbuffer_new();
    if (partial) { /* metav1.PartialObjectMetadataList: kind, apiVersion, metadata, items */
        evbuffer_add_printf(out,
                            "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"%s\",\"metadata\":%s,"
                            "\"items\":[",
                            q->conv.api_version, meta_json);
        evbuffer_add_buffer(out, lo->ib);
        evbuffer_add(out, "]}\n", 3);
    } else if (res->is_cr) {
        evbuffer_add_printf(out, "{\"apiVersion\":\"%s\",\"items\":[", res->api_version);
        evbuffer_add_buffer(out, lo->ib);
        evbuffer_add_printf(out, "],\"kind\":\"%s\",\"metadata\":%s}\n", res->list_kind, meta_json);
    } else {
        evbuffer_add_printf(out, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":%s,\"items\":[", res->list_kind,
                            res->api_version, meta_json);
        evbuffer_add_buffer(out, lo->ib);
        evbuffer_add(out, "]}\n", 3);
    }
    evbuffer_free(lo->ib);
    lo->ib = NULL;
    struct evkeyvalq *h = evhttp_request_get_output_headers(q->r);
    evhttp_add_header(h, "Content-Type", "application/json");
    evhttp_add_header(h, "Cache-Control", "no-cache, private");
    as_gzip_reply_body(q, out);
    evhttp_send_reply(q->r, 200, "OK", out);
    evbuffer_free(out);
}

void as_handle_list(as_req_t *q)
{
    lop_apiserver_t *srv = q->srv;
    as_res_t *res = q->res;
    list_query_t lq = read_list_query(q);
    if (!check_list_options(q, &lq)) return;
    int64_t snap, reply_rv;
    char *start;
    if (!resolve_list_revision(q, &lq, &snap, &reply_rv, &start)) return;
    lop_label_selector_t *ls;
    lop_field_selector_t *fs;
    if (as_parse_selectors(q, &ls, &fs) < 0) {
        free(start);
        return;
    }
    if (q->conv.kind == AS_CONV_PARTIAL) { /* (after the request's own checks, as the API server) */
        free(start);
        lop_label_selector_free(ls);
        lop_field_selector_free(fs);
        as_reply_not_acceptable_conv(q, true);
        return;
    }
    bool partial = q->conv.kind == AS_CONV_PARTIAL_LIST;
    json_t *table_objs = q->conv.kind == AS_CONV_TABLE ? json_array() : NULL; /* a Table's objects */
    bool filtered = !lop_label_selector_empty(ls) || !lop_field_selector_empty(fs);
    as_entry_t *items;
    size_t n;
    if (as_store_snapshot(srv, res->coll, snap, q->ns[0] ? q->ns : NULL, &items, &n) < 0) {
        free(start);
        lop_label_selector_free(ls);
        lop_field_selector_free(fs);
        as_reply_status(q, 410, "Expired", NULL, "The resourceVersion for the provided list is too old.");
        return;
    }
    size_t i = 0;
    if (start) {
        while (i < n && strcmp(items[i].key, start) <= 0) i++;
        free(start);
    }
    /* Serialize items straight into an evbuffer, then wrap them in the list envelope. */
    list_out_t lo = {.ib = evbuffer_new()};
    lo.plen = (size_t)snprintf(lo.prefix, sizeof lo.prefix, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",", res->kind,
                               res->api_version);
    size_t flags = JSON_COMPACT | (res->is_cr ? JSON_SORT_KEYS : 0);
    char conv_err[2600] = "";
    for (; i < n; i++) {
        if (lq.limit > 0 && lo.count >= lq.limit) break;
        if (!as_blob_matches(srv, res, NULL, ls, fs, items[i].key, items[i].wire, false)) continue;
        as_blob_t *wb = items[i].wire;
        json_t *obj = NULL;                                     /* a new reference when decoded */
        if (as_blob_needs_convert(res, wb, res->api_version)) { /* another version: conversion webhook */
            json_t *stored = as_blob_decode(srv, wb);
            obj = as_convert(q->srv, res, stored, res->api_version, conv_err, sizeof conv_err);
            json_decref(stored);
            if (!obj) break;
            wb = NULL;
        }
        if (table_objs) {
            if (!obj) obj = as_blob_decode(srv, wb);
            json_array_append_new(table_objs, as_served_obj(res, obj));
        } else if (partial) {
            add_partial_item(q, &lo, wb, obj);
        } else {
            add_item(q, &lo, wb, obj, flags);
        }
        json_decref(obj);
        lo.count++;
        lo.last_key = items[i].key;
    }
    if (conv_err[0]) {
        json_decref(table_objs);
        evbuffer_free(lo.ib);
        as_reply_status(q, 500, "InternalError", NULL, "%s", conv_err);
        free(items);
        lop_label_selector_free(ls);
        lop_field_selector_free(fs);
        return;
    }
    char *token = NULL;
    size_t remaining = n - i;
    if (lq.limit > 0 && i < n && lo.last_key) token = make_token(snap, lo.last_key);
    json_t *meta = json_object();
    char rvb[32];
    snprintf(rvb, sizeof rvb, "%" PRId64, reply_rv);
    if (token) {
        json_object_set_new(meta, "continue", json_string(token));
        if (!filtered) json_object_set_new(meta, "remainingItemCount", json_integer((json_int_t)remaining));
    }
    json_object_set_new(meta, "resourceVersion", json_string(rvb));
    free(token);
    if (table_objs) { /* as_reply_json turns the list into the Table */
        evbuffer_free(lo.ib);
        as_reply_json(q, 200, json_pack("{s:o,s:o}", "metadata", meta, "items", table_objs), false);
        free(items);
        lop_label_selector_free(ls);
        lop_field_selector_free(fs);
        return;
    }
    char *ms = json_dumps(meta, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(meta);
    send_list(q, &lo, partial, ms);
    free(ms);
    free(items);
    lop_label_selector_free(ls);
    lop_field_selector_free(fs);
}

void as_handle_get(as_req_t *q)
{
    as_res_t *res = q->res;
    const char *rvs = as_query(q, "resourceVersion");
    int64_t dummy;
    if (rvs && *rvs && !parse_uint(rvs, &dummy)) {
        reply_bad_rv(q, rvs);
        return;
    }
    char key[600];
    as_make_key(res, q->ns, q->name, key, sizeof key);
    as_entry_t *e = as_store_find(res->coll, key);
    if (!e) {
        as_reply_notfound(q, res, q->name);
        return;
    }
    if (!strcmp(q->sub, "scale")) {
        as_reply_json(q, 200, as_scale_view(res, as_entry_obj(q->srv, e)), false);
        return;
    }
    if (as_blob_needs_convert(res, e->wire, res->api_version)) {
        char msg[2600];
        json_t *c = as_convert(q->srv, res, as_entry_obj(q->srv, e), res->api_version, msg, sizeof msg);
        if (!c)
            as_reply_status(q, 500, "InternalError", NULL, "%s", msg);
        else
            as_reply_json(q, 200, c, true);
        return;
    }
    as_reply_stored(q, 200, res, as_entry_obj(q->srv, e), e->wire);
}
