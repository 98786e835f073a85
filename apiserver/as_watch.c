/* SPDX-License-Identifier: Apache-2.0 */
/* as_watch.c — WATCH streams (apiserver pkg/endpoints/handlers/watch.go): chunked JSON events
 * serialized once per event and shared by reference between watchers, selector transitions,
 * bookmarks, history replay, 410. */
#include "apiserver/as_watch.h"

#include "apiserver/as_convert.h"
#include "apiserver/as_decode.h"

#include "apiserver/as_select.h"
#include "apiserver/as_status.h"
#include "apiserver/as_table.h"
#include "apiserver/as_util.h"
#include "apiserver/as_view.h"

#include "host/util/buf.h"
#include "host/util/log.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AS_WATCH_MAX_BACKLOG (256u * 1024u * 1024u)

static as_blob_t *event_blob(const as_res_t *res, const char *type, const json_t *obj)
{
    size_t n;
    char *s = as_dump_obj(res, obj, &n);
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_printf(&b, "{\"type\":\"%s\",\"object\":", type);
    lop_buf_append(&b, s, n);
    lop_buf_puts(&b, "}\n");
    free(s);
    as_blob_t *blob = as_blob_new(b.data, b.len);
    lop_buf_free(&b);
    return blob;
}

/* ---- watcher lifecycle ---- */

static void watcher_free(as_watcher_t *w)
{
    if (w->timer) event_free(w->timer);
    if (w->bm_timer) event_free(w->bm_timer);
    if (w->held) evbuffer_free(w->held);
    lop_label_selector_free(w->ls);
    lop_field_selector_free(w->fs);
    free(w->ns);
    free(w);
}

static void unlink_watcher(as_watcher_t *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else if (w->coll->watchers == w)
        w->coll->watchers = w->next;
    if (w->next) w->next->prev = w->prev;
    w->next = w->prev = NULL;
}

static void watch_end(as_watcher_t *w)
{
    unlink_watcher(w);
    if (w->conn) evhttp_connection_set_closecb(w->conn, NULL, NULL);
    evhttp_send_reply_end(w->r);
    watcher_free(w);
}

static void on_conn_close(struct evhttp_connection *conn, void *arg)
{
    as_watcher_t *w = arg;
    (void)conn;
    w->conn = NULL;
    unlink_watcher(w);
    /* the request was detached from the dying connection: ending it frees it */
    evhttp_send_reply_end(w->r);
    watcher_free(w);
}

static void blob_cleanup(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    as_blob_unref(arg);
}

/* The buffer to queue output for w into: its held buffer while stalled, else a fresh one. */
static struct evbuffer *out_buf(as_watcher_t *w)
{
    if (w->batch) return w->batch;
    if (w->srv->stall) {
        if (!w->held) w->held = evbuffer_new();
        return w->held;
    }
    return evbuffer_new();
}

#define TLS_RECORD_BYTES 16384 /* the largest TLS record's payload */

static void block_free(const void *data, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    free((void *)data);
}

/* Over TLS, buf's bytes copied into 16 KiB blocks (the result replaces buf's content). libevent's
 * OpenSSL bufferevent writes one TLS record per buffer chain, so events referenced one chain each
 * would go out as one ~1.5 KB record per event plus tiny ones for their framing, and a client
 * would pay a read, a decrypt and a wake-up per event; packed, a backlog (a replay from an old
 * resourceVersion) goes out in full-size records, as kube-apiserver's buffered writer sends it. */
static void pack_for_tls(struct evbuffer *buf)
{
    size_t n = evbuffer_get_length(buf);
    if (n <= TLS_RECORD_BYTES / 4) return; /* one live event: nothing to gain */
    struct evbuffer *packed = evbuffer_new();
    while (n > 0) {
        size_t take = n < TLS_RECORD_BYTES ? n : TLS_RECORD_BYTES;
        char *block = lop_xmalloc(take);
        evbuffer_remove(buf, block, take);
        evbuffer_add_reference(packed, block, take, block_free, NULL);
        n -= take;
    }
    evbuffer_add_buffer(buf, packed);
    evbuffer_free(packed);
}

/* Send what out_buf gave; returns -1 when the watcher was closed (slow consumer). */
static int flush_buf(as_watcher_t *w, struct evbuffer *buf)
{
    if (buf == w->held || buf == w->batch) return 0;
    if (w->srv->tls) pack_for_tls(buf);
    evhttp_send_reply_chunk(w->r, buf);
    evbuffer_free(buf);
    if (w->conn) {
        struct bufferevent *bev = evhttp_connection_get_bufferevent(w->conn);
        if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > AS_WATCH_MAX_BACKLOG) {
            lop_log(LOP_LOG_WARN, "closing watch of slow consumer", "resource", w->res->plural, NULL);
            watch_end(w);
            return -1;
        }
    }
    return 0;
}

/* Append b's bytes [off, off+len) to buf, by reference (no copy: the serialized object is shared
 * by every watcher and the store). */
static void add_bytes(struct evbuffer *buf, as_blob_t *b, size_t off, size_t len)
{
    b->refs++;
    evbuffer_add_reference(buf, b->data + off, len, blob_cleanup, b);
}

/* Queue a complete line (blob) to w. */
static int send_blob(as_watcher_t *w, as_blob_t *b)
{
    struct evbuffer *buf = out_buf(w);
    add_bytes(buf, b, 0, b->len);
    return flush_buf(w, buf);
}

/* Queue {"type":T,"object":<b>}\n sharing the serialized object b; for a metadata-only watcher
 * the object is b's PartialObjectMetadata, sharing b's metadata bytes. */
static int send_wire(as_watcher_t *w, const char *type, as_blob_t *b)
{
    lop_buf_t head = LOP_BUF_INIT;
    lop_buf_printf(&head, "{\"type\":\"%s\",\"object\":", type);
    size_t off = 0, len = b->len;
    const char *tail = "}\n";
    if (w->conv.kind == AS_CONV_PARTIAL) {
        size_t ms, me;
        as_partial_head(&head, &w->conv);
        if (as_partial_meta_span(b->data, b->len, &ms, &me)) {
            off = ms;
            len = me - ms;
        } else {
            len = 0;
            lop_buf_puts(&head, "{}");
        }
        tail = "}}\n";
    }
    struct evbuffer *buf = out_buf(w);
    evbuffer_add(buf, head.data, head.len);
    lop_buf_free(&head);
    if (len) add_bytes(buf, b, off, len);
    evbuffer_add(buf, tail, strlen(tail));
    return flush_buf(w, buf);
}

static int send_obj_event_as_is(as_watcher_t *w, const char *type, const json_t *obj);

/* An event of an object stored in another version, converted by the CRD's webhook; a failed
 * conversion is sent as an ERROR event with a 500 Status (the watch goes on). */
static int send_obj_event(as_watcher_t *w, const char *type, const json_t *obj)
{
    if (strcmp(type, "BOOKMARK") && as_convert_needed(w->res, obj, w->res->api_version)) {
        char msg[2600];
        json_t *c = as_convert(w->srv, w->res, obj, w->res->api_version, msg, sizeof msg);
        if (!c) {
            json_t *st = as_status_new(500, "InternalError", msg, NULL);
            char *s = json_dumps(st, JSON_COMPACT);
            json_decref(st);
            lop_buf_t b = LOP_BUF_INIT;
            lop_buf_printf(&b, "{\"type\":\"ERROR\",\"object\":%s}\n", s);
            free(s);
            as_blob_t *blob = as_blob_new(b.data, b.len);
            lop_buf_free(&b);
            int rc = send_blob(w, blob);
            as_blob_unref(blob);
            return rc;
        }
        int rc = send_obj_event_as_is(w, type, c);
        json_decref(c);
        return rc;
    }
    return send_obj_event_as_is(w, type, obj);
}

/* {"type":T,"object":<a one-row Table of obj>}; the column definitions on the first event only,
 * as the API server's watch encoder sets NoHeaders after it (handlers/watch.go). */
static int send_table_event(as_watcher_t *w, const char *type, const json_t *obj)
{
    json_t *served = as_served_obj(w->res, obj);
    json_t *t = as_table_new(w->srv, w->res, &w->conv, &served, 1, NULL, time(NULL));
    json_decref(served);
    w->conv.no_headers = true;
    char *s = json_dumps(t, JSON_COMPACT);
    json_decref(t);
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_printf(&b, "{\"type\":\"%s\",\"object\":%s}\n", type, s ? s : "{}");
    free(s);
    as_blob_t *blob = as_blob_new(b.data, b.len);
    lop_buf_free(&b);
    int rc = send_blob(w, blob);
    as_blob_unref(blob);
    return rc;
}

static int send_obj_event_as_is(as_watcher_t *w, const char *type, const json_t *obj)
{
    if (w->conv.kind == AS_CONV_TABLE) return send_table_event(w, type, obj);
    if (w->conv.kind == AS_CONV_PARTIAL) {
        size_t n;
        char *s = as_dump_obj(w->res, obj, &n);
        as_blob_t *o = as_blob_new(s, n);
        free(s);
        int rc = send_wire(w, type, o);
        as_blob_unref(o);
        return rc;
    }
    as_blob_t *b = event_blob(w->res, type, obj);
    int rc = send_blob(w, b);
    as_blob_unref(b);
    return rc;
}

static json_t *bookmark_obj(as_res_t *res, int64_t rv, bool initial_end)
{
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(res->kind));
    json_object_set_new(o, "apiVersion", json_string(res->api_version));
    json_t *m = json_object();
    char b[32];
    snprintf(b, sizeof b, "%" PRId64, rv);
    json_object_set_new(m, "resourceVersion", json_string(b));
    if (!res->is_cr) json_object_set_new(m, "creationTimestamp", json_null());
    if (initial_end) {
        json_t *a = json_object();
        json_object_set_new(a, "k8s.io/initial-events-end", json_string("true"));
        json_object_set_new(m, "annotations", a);
    }
    json_object_set_new(o, "metadata", m);
    return o;
}

static int send_bookmark(as_watcher_t *w, bool initial_end)
{
    /* never report a revision below where the watch started (a future start RV) */
    json_t *o = bookmark_obj(w->res, w->srv->rev > w->min_rv ? w->srv->rev : w->min_rv, initial_end);
    int rc = send_obj_event(w, "BOOKMARK", o);
    json_decref(o);
    return rc;
}

static const char *const type_names[] = {"ADDED", "MODIFIED", "DELETED"};

/* The tree of stored bytes b as a new reference: through the decode cache when cache (an event
 * being dispatched to every watcher decodes once), else decoded for this use only (replay). */
static json_t *tree_of(as_watcher_t *w, as_blob_t *b, bool cache)
{
    return cache ? json_incref(as_blob_obj(w->srv, b)) : as_blob_decode(w->srv, b);
}

/* send_obj_event with the tree of b. */
static int send_stored_event(as_watcher_t *w, const char *type, as_blob_t *b, bool cache)
{
    json_t *o = tree_of(w, b, cache);
    int rc = send_obj_event(w, type, o);
    json_decref(o);
    return rc;
}

/* Deliver one stored event to one watcher; objects are decoded only when the watcher's selectors,
 * a conversion or a Table needs them (cache: see tree_of). Returns -1 if the watcher ended. */
static int deliver(as_watcher_t *w, as_event_t *e, bool cache)
{
    if (e->rv <= w->min_rv) return 0;
    lop_apiserver_t *srv = w->srv;
    bool now = e->type != AS_DELETED && as_blob_matches(srv, w->res, w->ns, w->ls, w->fs, e->key, e->wire, cache);
    bool before = e->pwire && as_blob_matches(srv, w->res, w->ns, w->ls, w->fs, e->key, e->pwire, cache);
    bool same_version = !strcmp(as_blob_api_version(e->wire), w->res->api_version);
    if (e->type == AS_DELETED) {
        if (!as_blob_matches(srv, w->res, w->ns, w->ls, w->fs, e->key, e->wire, cache)) return 0;
    } else if (e->type == AS_MODIFIED && now && !before) {
        return send_stored_event(w, "ADDED", e->wire, cache);
    } else if (e->type == AS_MODIFIED && !now && before) {
        json_t *prev = tree_of(w, e->pwire, cache);
        json_t *old = json_deep_copy(prev);
        json_decref(prev);
        char b[32];
        snprintf(b, sizeof b, "%" PRId64, e->rv);
        json_object_set_new(as_meta(old), "resourceVersion", json_string(b));
        int rc = send_obj_event(w, "DELETED", old);
        json_decref(old);
        return rc;
    } else if (!now) {
        return 0;
    }
    if (!same_version || w->conv.kind == AS_CONV_TABLE)
        return send_stored_event(w, type_names[e->type], e->wire, cache);
    return send_wire(w, type_names[e->type], e->wire);
}

void as_watch_dispatch(lop_apiserver_t *srv, as_event_t *ev)
{
    (void)srv;
    as_watcher_t *w = ev->coll->watchers;
    while (w) {
        as_watcher_t *next = w->next;
        deliver(w, ev, true);
        w = next;
    }
}

static int send_bookmark(as_watcher_t *w, bool initial_end);

static void on_bookmark_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    as_watcher_t *w = arg;
    if (!w->srv->stall) send_bookmark(w, false);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    as_watcher_t *w = arg;
    if (w->bookmarks && !w->srv->stall && send_bookmark(w, false) < 0) return;
    watch_end(w);
}

void as_watch_close_all(lop_apiserver_t *srv)
{
    for (size_t i = 0; i < srv->ncolls; i++)
        while (srv->colls[i]->watchers) watch_end(srv->colls[i]->watchers);
}

void as_watch_close_res(lop_apiserver_t *srv, as_res_t *res)
{
    (void)srv;
    as_watcher_t *w = res->coll->watchers;
    while (w) {
        as_watcher_t *next = w->next;
        if (w->res == res) watch_end(w);
        w = next;
    }
}

void as_watch_set_stall(lop_apiserver_t *srv, bool stall)
{
    srv->stall = stall;
    if (stall) return;
    for (size_t i = 0; i < srv->ncolls; i++) {
        for (as_watcher_t *w = srv->colls[i]->watchers; w; w = w->next) {
            if (w->held && evbuffer_get_length(w->held)) {
                evhttp_send_reply_chunk(w->r, w->held);
            }
        }
    }
}

void as_watch_bookmark_all(lop_apiserver_t *srv)
{
    for (size_t i = 0; i < srv->ncolls; i++) {
        as_watcher_t *w = srv->colls[i]->watchers;
        while (w) {
            as_watcher_t *next = w->next;
            if (w->bookmarks) send_bookmark(w, false);
            w = next;
        }
    }
}

static bool parse_rv(const char *s, int64_t *out)
{
    if (!s || !*s) return false;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || v < 0) return false;
    *out = v;
    return true;
}

void as_handle_watch(as_req_t *q)
{
    lop_apiserver_t *srv = q->srv;
    const char *rvs = as_query(q, "resourceVersion");
    const char *rvm = as_query(q, "resourceVersionMatch");
    const char *sie = as_query(q, "sendInitialEvents");
    const char *tos = as_query(q, "timeoutSeconds");
    bool bookmarks = as_query_bool(as_query(q, "allowWatchBookmarks"));
    if (sie && *sie) {
        if (!rvm || strcmp(rvm, "NotOlderThan")) {
            json_t *d = as_details(NULL, "meta.k8s.io", "ListOptions");
            as_reply_status(q, 422, "Invalid", d,
                            "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: "
                            "sendInitialEvents requires setting resourceVersionMatch to "
                            "NotOlderThan");
            return;
        }
    } else if (rvm && *rvm) {
        json_t *d = as_details(NULL, "meta.k8s.io", "ListOptions");
        as_reply_status(q, 422, "Invalid", d,
                        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                        "provided");
        return;
    }
    int64_t rv = 0;
    bool has_rv = rvs && *rvs;
    if (has_rv && !parse_rv(rvs, &rv)) {
        as_reply_status(q, 500, NULL, NULL,
                        "resourceVersion: Invalid value: \"%s\": strconv.ParseUint: parsing \"%s\": "
                        "invalid syntax",
                        rvs, rvs);
        return;
    }
    bool initial;
    if (sie && *sie)
        initial = as_query_bool(sie);
    else
        initial = !has_rv || rv == 0;
    if (!initial && (!has_rv || rv == 0)) {
        rv = srv->rev; /* sendInitialEvents=false with RV unset/"0": start now */
        has_rv = true;
    }
    lop_label_selector_t *ls;
    lop_field_selector_t *fs;
    if (as_parse_selectors(q, &ls, &fs) < 0) return;
    as_watcher_t *w = lop_xcalloc(1, sizeof *w);
    w->srv = srv;
    w->res = q->res;
    w->coll = q->res->coll;
    w->r = q->r;
    w->conn = evhttp_request_get_connection(q->r);
    w->ns = q->ns[0] ? lop_xstrdup(q->ns) : NULL;
    w->ls = ls;
    w->fs = fs;
    w->bookmarks = bookmarks;
    /* each object (bookmarks too; never an ERROR's Status) as PartialObjectMetadata. A watch
     * that asked for PartialObjectMetadataList gets full objects: the API server's watch encoder
     * cannot convert one object into a list and sends it unconverted */
    if (q->conv.kind == AS_CONV_PARTIAL || q->conv.kind == AS_CONV_TABLE) w->conv = q->conv;
    struct evkeyvalq *h = evhttp_request_get_output_headers(q->r);
    evhttp_add_header(h, "Content-Type", "application/json");
    evhttp_add_header(h, "Cache-Control", "no-cache, private");
    evhttp_send_reply_start(q->r, 200, "OK");
    struct bufferevent *wbev = w->conn ? evhttp_connection_get_bufferevent(w->conn) : NULL;
    if (wbev) /* libevent writes 16 KiB per loop iteration by default: too little for a stream */
        bufferevent_set_max_single_write(wbev, 1024 * 1024);
    evhttp_connection_set_closecb(w->conn, on_conn_close, w);
    /* link before replay so a slow-consumer close during replay unlinks cleanly */
    w->next = w->coll->watchers;
    if (w->next) w->next->prev = w;
    w->coll->watchers = w;

    if (!initial && has_rv && rv < srv->hist_floor) {
        json_t *st = as_status_new(410, "Expired", NULL, NULL);
        char msg[128];
        snprintf(msg, sizeof msg, "too old resource version: %" PRId64 " (%" PRId64 ")", rv, srv->hist_floor + 1);
        json_object_set_new(st, "message", json_string(msg));
        char *s = json_dumps(st, JSON_COMPACT);
        json_decref(st);
        lop_buf_t b = LOP_BUF_INIT;
        lop_buf_printf(&b, "{\"type\":\"ERROR\",\"object\":%s}\n", s);
        free(s);
        as_blob_t *blob = as_blob_new(b.data, b.len);
        lop_buf_free(&b);
        bool stall = srv->stall;
        srv->stall = false;
        int rc = send_blob(w, blob);
        srv->stall = stall;
        as_blob_unref(blob);
        as_log_reject(q, 410, "Expired");
        if (rc == 0) watch_end(w);
        return;
    }
    w->batch = evbuffer_new();
    if (initial) {
        as_coll_t *c = w->coll;
        for (size_t i = 0; i < c->n; i++) {
            as_blob_t *b = c->items[i].wire;
            if (!as_blob_matches(srv, w->res, w->ns, w->ls, w->fs, c->items[i].key, b, false)) continue;
            bool same = !strcmp(as_blob_api_version(b), w->res->api_version);
            bool wire = same && w->conv.kind != AS_CONV_TABLE;
            int rc = wire ? send_wire(w, "ADDED", b) : send_stored_event(w, "ADDED", b, false);
            if (rc < 0) return;
        }
        if (bookmarks && send_bookmark(w, true) < 0) return;
    } else if (rv > srv->rev) {
        w->min_rv = rv; /* silent until the store passes the requested revision */
    } else if (rv < srv->rev) {
        /* the ring is in RV order: find the first event after rv, then replay */
        size_t lo = 0, hi = srv->ring_len;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (srv->ring[(srv->ring_head + mid) % srv->ring_cap]->rv <= rv)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i < srv->ring_len; i++) {
            as_event_t *e = srv->ring[(srv->ring_head + i) % srv->ring_cap];
            if (e->coll != w->coll) continue;
            if (deliver(w, e, false) < 0) return;
        }
    }
    struct evbuffer *batch = w->batch;
    w->batch = NULL;
    if (evbuffer_get_length(batch) == 0) {
        evbuffer_free(batch);
    } else if (srv->stall) {
        if (!w->held) w->held = evbuffer_new();
        evbuffer_add_buffer(w->held, batch);
        evbuffer_free(batch);
    } else if (flush_buf(w, batch) < 0) {
        return; /* flush_buf freed batch */
    }
    long timeout = tos ? strtol(tos, NULL, 10) : 0;
    if (timeout <= 0) timeout = 1800;
    w->timer = evtimer_new(srv->base, on_timeout, w);
    struct timeval tv = {timeout, 0};
    evtimer_add(w->timer, &tv);
    if (bookmarks) {
        w->bm_timer = event_new(srv->base, -1, EV_PERSIST, on_bookmark_tick, w);
        struct timeval minute = {60, 0};
        event_add(w->bm_timer, &minute);
    }
}
