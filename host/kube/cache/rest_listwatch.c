/* SPDX-License-Identifier: Apache-2.0 */
/* rest_listwatch.c — listwatch.h implemented over the REST client for one resource; for a
 * metadata-only informer, with client-go's metadata-client Accept headers and their fallback. */
#include "host/kube/cache/rest_listwatch.h"
#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"
#include "host/util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rest_lw {
    lop_rest_client_t *c;
    lop_rest_mapping_t m;
    char *ns; /* NULL = all namespaces */
    char *label_selector;
    char *field_selector;
    atomic_bool cancel;
    bool metadata_only;          /* ask for PartialObjectMetadata(List) */
    atomic_bool partial_refused; /* the server answered 406 to that: plain JSON from now on */
} rest_lw_t;

/* The Accept header of a LIST (list true) or WATCH of lw: NULL (plain JSON) unless lw asks for
 * metadata only and the server has not refused it. */
static const char *accept_of(rest_lw_t *lw, bool list)
{
    if (!lw->metadata_only || atomic_load(&lw->partial_refused)) return NULL;
    return list ? LOP_ACCEPT_PARTIAL_LIST : LOP_ACCEPT_PARTIAL;
}

/* After a request sent with accept failed with rc: true when it was the server refusing the
 * metadata-only media type (406 NotAcceptable, apiserver handlers/negotiation) — an API server or
 * aggregated API without PartialObjectMetadata conversion. Remembered for this listwatch (its
 * informer): every later LIST and WATCH asks for full objects, which the informer strips to
 * metadata itself (LOP_OBJ_METADATA_ONLY). The caller then repeats the request with plain JSON at
 * once. */
static bool partial_refused(rest_lw_t *lw, const char *accept, lop_rc_t rc, const lop_err_t *err, const char *path)
{
    if (!accept || rc == LOP_OK || rc == LOP_ECLOSED || err->code != 406) return false;
    if (!atomic_exchange(&lw->partial_refused, true))
        lop_log(LOP_LOG_WARN,
                "the API server refused metadata-only responses (406 NotAcceptable); listing and "
                "watching full objects and keeping their metadata only",
                "path", path, "error", err->message, NULL);
    return true;
}

static void add_param(lop_buf_t *q, const char *k, const char *v)
{
    if (q->len) lop_buf_putc(q, '&');
    lop_buf_puts(q, k);
    lop_buf_putc(q, '=');
    lop_url_escape(q, v);
}

static void add_selectors(rest_lw_t *lw, lop_buf_t *q)
{
    if (lw->label_selector) add_param(q, "labelSelector", lw->label_selector);
    if (lw->field_selector) add_param(q, "fieldSelector", lw->field_selector);
}

/* The path and query of one LIST page. */
static lop_rc_t list_path(rest_lw_t *lw, const lop_list_opts_t *o, lop_buf_t *path, lop_err_t *err)
{
    lop_buf_t q = LOP_BUF_INIT;
    add_selectors(lw, &q);
    if (o && o->limit > 0) {
        char n[32];
        snprintf(n, sizeof n, "%ld", o->limit);
        add_param(&q, "limit", n);
    }
    if (o && o->continue_token && *o->continue_token) {
        /* A continued page repeats the query but never carries resourceVersion
         * (api-concepts#retrieving-large-results-sets-in-chunks). */
        add_param(&q, "continue", o->continue_token);
    } else if (o) {
        if (o->resource_version) add_param(&q, "resourceVersion", o->resource_version);
        if (o->resource_version_match && *o->resource_version_match)
            add_param(&q, "resourceVersionMatch", o->resource_version_match);
    }
    lop_rc_t rc = lop_rest_path(path, &lw->m, lw->ns, NULL, NULL, q.data, err);
    lop_buf_free(&q);
    return rc;
}

/* One LIST page: collected in body (sink NULL) or streamed to sink. */
static lop_rc_t list_page(rest_lw_t *lw, const lop_list_opts_t *o, lop_buf_t *body, lop_stream_fn sink, void *sink_ud,
                          lop_err_t *err)
{
    lop_err_t local;
    if (!err) err = &local; /* its code tells a refused Accept */
    lop_buf_t path = LOP_BUF_INIT;
    lop_rc_t rc = list_path(lw, o, &path, err);
    if (rc == LOP_OK) {
        lop_rest_req_t req = {.method = "GET",
                              .path = path.data,
                              .cancel = &lw->cancel,
                              .sink = sink,
                              .sink_ud = sink_ud,
                              .accept = accept_of(lw, true)};
        lop_rest_resp_t resp = LOP_REST_RESP_INIT;
        rc = lop_rest_request(lw->c, &req, &resp, err);
        /* a 406 body is never passed to the sink: the plain request starts the body afresh */
        if (partial_refused(lw, req.accept, rc, err, path.data)) {
            req.accept = NULL;
            rc = lop_rest_request(lw->c, &req, &resp, err);
        }
        if (rc == LOP_OK && body) {
            lop_buf_free(body);
            *body = resp.body;
            lop_buf_init(&resp.body);
        }
        lop_rest_resp_cleanup(&resp);
    }
    lop_buf_free(&path);
    return rc;
}

static lop_rc_t lw_list(void *ud, const lop_list_opts_t *o, lop_buf_t *body, lop_err_t *err)
{
    return list_page(ud, o, body, NULL, NULL, err);
}

static lop_rc_t lw_list_stream(void *ud, const lop_list_opts_t *o, lop_stream_fn fn, void *fn_ud, lop_err_t *err)
{
    return list_page(ud, o, NULL, fn, fn_ud, err);
}

/* The path and query of a WATCH. */
static lop_rc_t watch_path(rest_lw_t *lw, const lop_watch_opts_t *o, lop_buf_t *path, lop_err_t *err)
{
    lop_buf_t q = LOP_BUF_INIT;
    add_param(&q, "watch", "true");
    add_selectors(lw, &q);
    if (o && o->resource_version && *o->resource_version) add_param(&q, "resourceVersion", o->resource_version);
    if (o && o->allow_bookmarks) add_param(&q, "allowWatchBookmarks", "true");
    if (o && o->timeout_seconds > 0) {
        char n[32];
        snprintf(n, sizeof n, "%ld", o->timeout_seconds);
        add_param(&q, "timeoutSeconds", n);
    }
    if (o && o->send_initial_events) {
        add_param(&q, "sendInitialEvents", "true");
        add_param(&q, "resourceVersionMatch", "NotOlderThan");
    }
    lop_rc_t rc = lop_rest_path(path, &lw->m, lw->ns, NULL, NULL, q.data, err);
    lop_buf_free(&q);
    return rc;
}

static lop_rc_t lw_watch(void *ud, const lop_watch_opts_t *o, lop_stream_fn fn, void *fn_ud, lop_err_t *err)
{
    rest_lw_t *lw = ud;
    lop_err_t local;
    if (!err) err = &local; /* its code tells a refused Accept */
    if (atomic_load(&lw->cancel)) return lop_err_set(err, LOP_ECLOSED, 0, NULL, "watch cancelled");
    lop_buf_t path = LOP_BUF_INIT;
    lop_rc_t rc = watch_path(lw, o, &path, err);
    if (rc == LOP_OK) {
        lop_rest_stream_opts_t so = {
            .cancel = &lw->cancel, .idle_timeout_ms = o ? o->idle_timeout_ms : 0, .accept = accept_of(lw, false)};
        rc = lop_rest_stream(lw->c, path.data, fn, fn_ud, &so, NULL, err);
        if (partial_refused(lw, so.accept, rc, err, path.data)) { /* an error body never reaches fn */
            so.accept = NULL;
            rc = lop_rest_stream(lw->c, path.data, fn, fn_ud, &so, NULL, err);
        }
    }
    lop_buf_free(&path);
    return rc;
}

/* An asynchronous watch or LIST page (listwatch.h watch_start, list_stream_start): a REST
 * stream or sink call pumped by the reflector. */
typedef struct lw_call {
    bool list;
    char *path;
    const char *accept;
    long idle_ms;
    void (*notify)(void *);
    void *notify_ud;
    lop_rest_stream_call_t *s;
} lw_call_t;

static lop_rc_t call_send(rest_lw_t *lw, lw_call_t *c, lop_err_t *err)
{
    /* the listwatch's cancel (lw_cancel: set, then wake the client) also cuts a pump's name
     * resolution short, as it does for the blocking calls */
    if (c->list) {
        lop_rc_t rc = lop_rest_sink_start(lw->c, c->path, c->accept, c->notify, c->notify_ud, &c->s, err);
        if (rc == LOP_OK) lop_rest_stream_set_cancel(c->s, &lw->cancel);
        return rc;
    }
    lop_rest_stream_opts_t so = {.idle_timeout_ms = c->idle_ms, .accept = c->accept, .cancel = &lw->cancel};
    return lop_rest_stream_start(lw->c, c->path, &so, c->notify, c->notify_ud, &c->s, err);
}

static lop_rc_t call_new(rest_lw_t *lw, bool list, lop_buf_t *path, long idle_ms, void (*notify)(void *),
                         void *notify_ud, void **call, lop_err_t *err)
{
    lw_call_t *c = lop_xcalloc(1, sizeof *c);
    c->list = list;
    c->path = lop_buf_steal(path);
    c->accept = accept_of(lw, list);
    c->idle_ms = idle_ms;
    c->notify = notify;
    c->notify_ud = notify_ud;
    lop_rc_t rc = call_send(lw, c, err);
    if (rc != LOP_OK) {
        free(c->path);
        free(c);
        return rc;
    }
    *call = c;
    return LOP_OK;
}

static lop_rc_t lw_watch_start(void *ud, const lop_watch_opts_t *o, void (*notify)(void *), void *notify_ud,
                               void **call, lop_err_t *err)
{
    rest_lw_t *lw = ud;
    *call = NULL;
    if (atomic_load(&lw->cancel)) return lop_err_set(err, LOP_ECLOSED, 0, NULL, "watch cancelled");
    lop_buf_t path = LOP_BUF_INIT;
    lop_rc_t rc = watch_path(lw, o, &path, err);
    if (rc == LOP_OK) rc = call_new(lw, false, &path, o ? o->idle_timeout_ms : 0, notify, notify_ud, call, err);
    lop_buf_free(&path);
    return rc;
}

static lop_rc_t lw_list_stream_start(void *ud, const lop_list_opts_t *o, void (*notify)(void *), void *notify_ud,
                                     void **call, lop_err_t *err)
{
    rest_lw_t *lw = ud;
    *call = NULL;
    if (atomic_load(&lw->cancel)) return lop_err_set(err, LOP_ECLOSED, 0, NULL, "list cancelled");
    lop_buf_t path = LOP_BUF_INIT;
    lop_rc_t rc = list_path(lw, o, &path, err);
    if (rc == LOP_OK) rc = call_new(lw, true, &path, 0, notify, notify_ud, call, err);
    lop_buf_free(&path);
    return rc;
}

static bool lw_call_pump(void *ud, void *call, lop_stream_fn fn, void *fn_ud, lop_rc_t *rc, int64_t *next_ns,
                         lop_err_t *err)
{
    rest_lw_t *lw = ud;
    lw_call_t *c = call;
    lop_err_t local;
    if (!err) err = &local; /* its code tells a refused Accept */
    if (!lop_rest_stream_pump(c->s, fn, fn_ud, rc, next_ns, err)) return false;
    if (!partial_refused(lw, c->accept, *rc, err, c->path)) return true;
    /* the server refused metadata-only: the same call again at once with plain JSON (an error
     * body never reaches fn) */
    lop_rest_stream_free(c->s);
    c->s = NULL;
    c->accept = NULL;
    *rc = call_send(lw, c, err);
    if (*rc != LOP_OK) return true;
    *next_ns = 0;
    return false;
}

static void lw_call_end(void *ud, void *call)
{
    (void)ud;
    lw_call_t *c = call;
    if (!c) return;
    lop_rest_stream_free(c->s);
    free(c->path);
    free(c);
}

static void lw_cancel(void *ud)
{
    rest_lw_t *lw = ud;
    atomic_store(&lw->cancel, true);
    lop_rest_client_wake(lw->c); /* a watch waiting for events sees it now */
}

static void lw_free(void *ud)
{
    rest_lw_t *lw = ud;
    if (!lw) return;
    free(lw->ns);
    free(lw->label_selector);
    free(lw->field_selector);
    free(lw);
}

static char *dup_nonempty(const char *s) { return s && *s ? lop_xstrdup(s) : NULL; }

static lop_listwatch_t *new_lw(lop_rest_client_t *c, const struct lop_rest_mapping *mapping, const char *namespace,
                               const char *label_selector, const char *field_selector, bool metadata_only)
{
    rest_lw_t *lw = lop_xcalloc(1, sizeof *lw);
    lw->c = c;
    lw->m = *mapping;
    lw->ns = mapping->namespaced ? dup_nonempty(namespace) : NULL;
    lw->label_selector = dup_nonempty(label_selector);
    lw->field_selector = dup_nonempty(field_selector);
    lw->metadata_only = metadata_only;
    atomic_init(&lw->cancel, false);
    atomic_init(&lw->partial_refused, false);
    lop_listwatch_t *out = lop_xcalloc(1, sizeof *out);
    out->ud = lw;
    out->list = lw_list;
    out->list_stream = lw_list_stream;
    out->watch = lw_watch;
    out->watch_start = lw_watch_start;
    out->call_pump = lw_call_pump;
    out->call_end = lw_call_end;
    out->list_stream_start = lw_list_stream_start;
    out->cancel = lw_cancel;
    out->free = lw_free;
    return out;
}

lop_listwatch_t *lop_rest_listwatch_new(lop_rest_client_t *c, const struct lop_rest_mapping *mapping,
                                        const char *namespace, const char *label_selector, const char *field_selector)
{
    return new_lw(c, mapping, namespace, label_selector, field_selector, false);
}

lop_listwatch_t *lop_rest_listwatch_new_metadata(lop_rest_client_t *c, const struct lop_rest_mapping *mapping,
                                                 const char *namespace, const char *label_selector,
                                                 const char *field_selector)
{
    return new_lw(c, mapping, namespace, label_selector, field_selector, true);
}

bool lop_rest_listwatch_partial_refused(const lop_listwatch_t *lw)
{
    rest_lw_t *r = lw && lw->free == lw_free ? lw->ud : NULL; /* one of ours */
    return r && r->metadata_only && atomic_load(&r->partial_refused);
}

void lop_rest_listwatch_free(lop_listwatch_t *lw)
{
    if (!lw) return;
    if (lw->free) lw->free(lw->ud);
    free(lw);
}
