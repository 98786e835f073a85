/* rest_listwatch.c — listwatch.h implemented over the REST client for one resource. */
#include "host/kube/rest.h"
#include "host/kube/restmapper.h"

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
} rest_lw_t;

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
        /* A continued page repeats the query but never carries resourceVersion (§E.15). */
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
static lop_rc_t list_page(rest_lw_t *lw, const lop_list_opts_t *o, lop_buf_t *body, lop_stream_fn sink,
                          void *sink_ud, lop_err_t *err)
{
    lop_buf_t path = LOP_BUF_INIT;
    lop_rc_t rc = list_path(lw, o, &path, err);
    if (rc == LOP_OK) {
        lop_rest_req_t req = {.method = "GET", .path = path.data, .cancel = &lw->cancel, .sink = sink,
                              .sink_ud = sink_ud};
        lop_rest_resp_t resp = LOP_REST_RESP_INIT;
        rc = lop_rest_request(lw->c, &req, &resp, err);
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

static lop_rc_t lw_watch(void *ud, const lop_watch_opts_t *o, lop_stream_fn fn, void *fn_ud, lop_err_t *err)
{
    rest_lw_t *lw = ud;
    if (atomic_load(&lw->cancel)) return lop_err_set(err, LOP_ECLOSED, 0, NULL, "watch cancelled");
    lop_buf_t q = LOP_BUF_INIT, path = LOP_BUF_INIT;
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
    lop_rc_t rc = lop_rest_path(&path, &lw->m, lw->ns, NULL, NULL, q.data, err);
    if (rc == LOP_OK) {
        lop_rest_stream_opts_t so = {.cancel = &lw->cancel, .idle_timeout_ms = o ? o->idle_timeout_ms : 0};
        rc = lop_rest_stream(lw->c, path.data, fn, fn_ud, &so, NULL, err);
    }
    lop_buf_free(&q);
    lop_buf_free(&path);
    return rc;
}

static void lw_cancel(void *ud)
{
    rest_lw_t *lw = ud;
    atomic_store(&lw->cancel, true);
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

lop_listwatch_t *lop_rest_listwatch_new(lop_rest_client_t *c, const struct lop_rest_mapping *mapping,
                                        const char *namespace, const char *label_selector,
                                        const char *field_selector)
{
    rest_lw_t *lw = lop_xcalloc(1, sizeof *lw);
    lw->c = c;
    lw->m = *mapping;
    lw->ns = mapping->namespaced ? dup_nonempty(namespace) : NULL;
    lw->label_selector = dup_nonempty(label_selector);
    lw->field_selector = dup_nonempty(field_selector);
    atomic_init(&lw->cancel, false);
    lop_listwatch_t *out = lop_xcalloc(1, sizeof *out);
    out->ud = lw;
    out->list = lw_list;
    out->list_stream = lw_list_stream;
    out->watch = lw_watch;
    out->cancel = lw_cancel;
    out->free = lw_free;
    return out;
}

void lop_rest_listwatch_free(lop_listwatch_t *lw)
{
    if (!lw) return;
    if (lw->free) lw->free(lw->ud);
    free(lw);
}
