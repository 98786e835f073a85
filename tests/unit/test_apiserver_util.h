/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_apiserver_util.h — helpers for the local API server's unit tests: start a server in
 * process, make HTTP requests with libcurl, and read a watch stream on a helper thread.
 * Header-only (static functions) so each test program stays a single file.
 */
#ifndef LOP_TEST_APISERVER_UTIL_H
#define LOP_TEST_APISERVER_UTIL_H

#include "apiserver/apiserver.h"
#include "host/util/buf.h"
#include "host/util/clock.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct resp {
    long code;
    lop_buf_t body;
    lop_buf_t headers;
    json_t *json; /* parsed body or NULL */
} resp_t;

static inline size_t t_write_cb(char *p, size_t sz, size_t n, void *ud)
{
    lop_buf_append(ud, p, sz * n);
    return sz * n;
}

static inline void resp_free(resp_t *r)
{
    lop_buf_free(&r->body);
    lop_buf_free(&r->headers);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

/* One request with an Accept header (NULL: curl's default, Accept: *\/\*). path is appended to
 * the server URL. ctype NULL = application/json. */
static inline resp_t t_http_accept(lop_apiserver_t *srv, const char *method, const char *path, const char *body,
                                   const char *ctype, const char *accept)
{
    resp_t r;
    memset(&r, 0, sizeof r);
    char url[2048];
    snprintf(url, sizeof url, "%s%s", lop_apiserver_url(srv), path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, t_write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, t_write_cb);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r.headers);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    struct curl_slist *h = NULL;
    char ct[200];
    snprintf(ct, sizeof ct, "Content-Type: %s", ctype ? ctype : "application/json");
    h = curl_slist_append(h, ct);
    h = curl_slist_append(h, "Expect:");
    h = curl_slist_append(h, "User-Agent: luaop-test/1.0");
    char ah[600];
    if (accept) {
        snprintf(ah, sizeof ah, "Accept: %s", accept);
        h = curl_slist_append(h, ah);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (r.body.len) r.json = json_loadb(r.body.data, r.body.len, 0, NULL);
    return r;
}

/* One request. path is appended to the server URL. ctype NULL = application/json. */
static inline resp_t t_http(lop_apiserver_t *srv, const char *method, const char *path, const char *body,
                            const char *ctype)
{
    return t_http_accept(srv, method, path, body, ctype, NULL);
}

static inline const char *jstr(const json_t *o, const char *dotted)
{
    const json_t *cur = o;
    char seg[128];
    while (cur && *dotted) {
        const char *dot = strchr(dotted, '.');
        size_t len = dot ? (size_t)(dot - dotted) : strlen(dotted);
        snprintf(seg, sizeof seg, "%.*s", (int)len, dotted);
        cur = json_object_get(cur, seg);
        dotted = dot ? dot + 1 : dotted + len;
    }
    return json_is_string(cur) ? json_string_value(cur) : NULL;
}

/* The in-process API server on a free loopback port, or NULL after printing why it did not
 * start (main() checks it with T_SETUP). */
static inline lop_apiserver_t *t_start(long history)
{
    lop_apiserver_opts_t o = {0};
    o.history = history;
    o.fault_control = true;
    lop_apiserver_t *srv = NULL;
    lop_err_t err;
    if (lop_apiserver_start(&o, &srv, &err) != LOP_OK) {
        fprintf(stderr, "the API server did not start: %s\n", err.message);
        return NULL;
    }
    return srv;
}

/* ---- a watch stream read on a helper thread ---- */

typedef struct watch {
    lop_apiserver_t *srv;
    char path[1024];
    char accept[512]; /* Accept header; "" = curl's default */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    lop_buf_t data;
    lop_buf_t headers;
    int lines;
    bool done;
    long code;
} watch_t;

static inline size_t t_watch_cb(char *p, size_t sz, size_t n, void *ud)
{
    watch_t *w = ud;
    pthread_mutex_lock(&w->mu);
    lop_buf_append(&w->data, p, sz * n);
    for (size_t i = 0; i < sz * n; i++)
        if (p[i] == '\n') w->lines++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return sz * n;
}

static inline void *t_watch_main(void *arg)
{
    watch_t *w = arg;
    char url[2048];
    snprintf(url, sizeof url, "%s%s", lop_apiserver_url(w->srv), w->path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, t_watch_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, t_write_cb);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &w->headers);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 15L);
    struct curl_slist *h = NULL;
    char ah[600];
    if (w->accept[0]) {
        snprintf(ah, sizeof ah, "Accept: %s", w->accept);
        h = curl_slist_append(h, ah);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    }
    curl_easy_perform(c);
    curl_slist_free_all(h);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    pthread_mutex_lock(&w->mu);
    w->code = code;
    w->done = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Start a watch of path with an Accept header (NULL: curl's default). */
static inline void watch_start_accept(watch_t *w, lop_apiserver_t *srv, const char *path, const char *accept)
{
    memset(w, 0, sizeof *w);
    w->srv = srv;
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->accept, sizeof w->accept, "%s", accept ? accept : "");
    pthread_mutex_init(&w->mu, NULL);
    lop_cond_init(&w->cv);
    pthread_create(&w->th, NULL, t_watch_main, w);
}

static inline void watch_start(watch_t *w, lop_apiserver_t *srv, const char *path)
{
    watch_start_accept(w, srv, path, NULL);
}

/* Wait (bounded by ms) until at least n lines arrived or the stream ended. Returns lines seen. */
static inline int watch_wait_lines_ms(watch_t *w, int n, int ms)
{
    int64_t deadline = lop_clock_mono(&lop_clock_system) + ms * LOP_NS_PER_MS;
    pthread_mutex_lock(&w->mu);
    while (w->lines < n && !w->done) {
        if (lop_clock_wait_until(&lop_clock_system, &w->cv, &w->mu, deadline)) break;
    }
    int got = w->lines;
    pthread_mutex_unlock(&w->mu);
    return got;
}

/* For a watch with allowWatchBookmarks and no initial events: ask for bookmarks until one arrives,
 * which proves the server registered the watch. Returns true when it did (bounded: ~5 s). */
static inline bool watch_wait_live(watch_t *w)
{
    for (int i = 0; i < 50; i++) {
        lop_apiserver_bookmark_now(w->srv);
        if (watch_wait_lines_ms(w, 1, 100) >= 1) return true;
    }
    return false;
}

/* Wait (bounded: 5 s) until at least n lines arrived or the stream ended. Returns lines seen. */
static inline int watch_wait_lines(watch_t *w, int n)
{
    int64_t deadline = lop_clock_mono(&lop_clock_system) + 5 * LOP_NS_PER_S;
    pthread_mutex_lock(&w->mu);
    while (w->lines < n && !w->done) {
        if (lop_clock_wait_until(&lop_clock_system, &w->cv, &w->mu, deadline)) break;
    }
    int got = w->lines;
    pthread_mutex_unlock(&w->mu);
    return got;
}

/* Wait for the stream to end (bounded), then parse every line into a JSON array. */
static inline json_t *watch_finish(watch_t *w)
{
    pthread_join(w->th, NULL);
    json_t *events = json_array();
    const char *p = w->data.data ? w->data.data : "";
    while (*p) {
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        json_t *e = json_loadb(p, (size_t)(nl - p), 0, NULL);
        json_array_append_new(events, e ? e : json_string("<bad line>"));
        p = nl + 1;
    }
    lop_buf_free(&w->data);
    lop_buf_free(&w->headers);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    return events;
}

/* Copy of the response headers (read once some body lines arrived: headers precede them). */
static inline char *watch_headers(watch_t *w)
{
    pthread_mutex_lock(&w->mu);
    char *h = lop_xstrdup(w->headers.data ? w->headers.data : "");
    pthread_mutex_unlock(&w->mu);
    return h;
}

static inline const char *ev_type(json_t *events, size_t i) { return jstr(json_array_get(events, i), "type"); }

#endif
