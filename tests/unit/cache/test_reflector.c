/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/reflector against a scripted fake listwatch that lies: paginated
 * lists, 410s in both forms, expired continue tokens, garbage, short watches, stalls, stop. */
#include "host/kube/cache/reflector.h"
#include "host/kube/cache/reflector_list.h" /* lop_reflector_do_list: the error of one list */
#include "handler_log.h"
#include "t.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define MS LOP_NS_PER_MS
#define S  LOP_NS_PER_S

/* ---- the fake listwatch ---- */

typedef struct lresp {
    lop_rc_t rc;
    int code;
    const char *body;
} lresp_t;

typedef struct wresp {
    lop_rc_t rc;
    const char *chunks[8];
    int64_t advance_ns; /* clock step while "streaming" */
    bool block;         /* stall until cancel */
} wresp_t;

typedef struct fake {
    lop_fake_clock_t *fc;
    const lresp_t *lists;
    int nlists, li;
    const wresp_t *watches;
    int nwatches, wi;
    char list_rv[8][32], list_cont[8][32];
    long list_limit[8];
    char watch_rv[16][32];
    long watch_timeout[16], watch_idle[16];
    bool watch_bookmarks[16], watch_sie[16];
    int watch_code[16]; /* HTTP status of watch i's scripted failure (0: 410 for LOP_EGONE, else none) */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int cancels;
} fake_t;

static void rec(char *dst, const char *s) { snprintf(dst, 32, "%s", s ? s : "(unset)"); }

static lop_rc_t fake_list(void *ud, const lop_list_opts_t *o, lop_buf_t *body, lop_err_t *err)
{
    fake_t *f = ud;
    int i = f->li++;
    if (i < 8) {
        rec(f->list_rv[i], o->resource_version);
        rec(f->list_cont[i], o->continue_token);
        f->list_limit[i] = o->limit;
    }
    if (i >= f->nlists) return lop_err_set(err, LOP_EAGAIN, 0, NULL, "script exhausted");
    const lresp_t *r = &f->lists[i];
    if (r->rc != LOP_OK)
        return lop_err_set(err, r->rc, r->code,
                           r->code == 410   ? "Expired"
                           : r->code == 504 ? "Timeout"
                                            : "",
                           "scripted failure");
    lop_buf_puts(body, r->body);
    return LOP_OK;
}

static lop_rc_t fake_watch(void *ud, const lop_watch_opts_t *o, lop_stream_fn fn, void *fn_ud, lop_err_t *err)
{
    fake_t *f = ud;
    int i = f->wi++;
    if (i < 16) {
        rec(f->watch_rv[i], o->resource_version);
        f->watch_timeout[i] = o->timeout_seconds;
        f->watch_idle[i] = o->idle_timeout_ms;
        f->watch_bookmarks[i] = o->allow_bookmarks;
        f->watch_sie[i] = o->send_initial_events;
    }
    if (i >= f->nwatches) return lop_err_set(err, LOP_EAGAIN, 0, NULL, "script exhausted");
    const wresp_t *w = &f->watches[i];
    for (int c = 0; c < 8 && w->chunks[c]; c++)
        if (fn(fn_ud, w->chunks[c], strlen(w->chunks[c])) != 0) return LOP_ECLOSED;
    if (w->advance_ns) lop_fake_clock_step(f->fc, w->advance_ns);
    if (w->block) {
        pthread_mutex_lock(&f->mu);
        while (f->cancels == 0) pthread_cond_wait(&f->cond, &f->mu); /* cancel is sticky (listwatch.h) */
        pthread_mutex_unlock(&f->mu);
        return LOP_ECLOSED;
    }
    if (w->rc != LOP_OK)
        return lop_err_set(err, w->rc,
                           f->watch_code[i]     ? f->watch_code[i]
                           : w->rc == LOP_EGONE ? 410
                                                : 0,
                           NULL, "scripted watch failure");
    return LOP_OK;
}

/* list_stream: the same scripted bodies, fed 3 bytes at a time; a body scripted with rc
 * LOP_EAGAIN and a body is cut after half of it (a connection reset mid-page). */
static lop_rc_t fake_list_stream(void *ud, const lop_list_opts_t *o, lop_stream_fn fn, void *fn_ud, lop_err_t *err)
{
    fake_t *f = ud;
    lop_buf_t b = LOP_BUF_INIT;
    int i = f->li;
    lop_rc_t rc =
        i < f->nlists && f->lists[i].rc == LOP_EAGAIN && f->lists[i].body ? LOP_OK : fake_list(ud, o, &b, err);
    if (rc == LOP_OK && b.len == 0) {
        f->li++;
        lop_buf_puts(&b, f->lists[i].body);
        b.len /= 2;
        rc = LOP_EAGAIN;
    }
    for (size_t at = 0; at < b.len; at += 3)
        if (fn(fn_ud, b.data + at, b.len - at < 3 ? b.len - at : 3) != 0) {
            lop_buf_free(&b);
            return lop_err_set(err, LOP_ECLOSED, 0, NULL, "stopped by the consumer");
        }
    lop_buf_free(&b);
    if (rc == LOP_EAGAIN) return lop_err_set(err, LOP_EAGAIN, 0, NULL, "connection reset mid-body");
    return rc;
}

/* When set, setup() gives the reflector list_stream too (every list test runs both ways). */
static bool g_stream;
/* When set, setup() turns watch-list on. */
static bool g_watch_list;

static void fake_cancel(void *ud)
{
    fake_t *f = ud;
    pthread_mutex_lock(&f->mu);
    f->cancels++;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->mu);
}

/* ---- handler recorder ---- */

typedef struct env {
    lop_fake_clock_t fc;
    fake_t f;
    lop_store_t *store;
    lop_reflector_t *r;
    log_t log;
} env_t;

static void setup(env_t *e, const lresp_t *lists, int nl, const wresp_t *watches, int nw)
{
    memset(e, 0, sizeof *e);
    lop_fake_clock_init(&e->fc, 0);
    e->f.fc = &e->fc;
    e->f.lists = lists;
    e->f.nlists = nl;
    e->f.watches = watches;
    e->f.nwatches = nw;
    pthread_mutex_init(&e->f.mu, NULL);
    pthread_cond_init(&e->f.cond, NULL);
    e->store = lop_store_new();
    lop_listwatch_t lw = {.ud = &e->f,
                          .list = fake_list,
                          .watch = fake_watch,
                          .cancel = fake_cancel,
                          .list_stream = g_stream ? fake_list_stream : NULL};
    lop_reflector_config_t cfg = {
        .name = "v1/configmaps",
        .lw = &lw,
        .store = e->store,
        .clock = &e->fc.base,
        .handlers = {h_add, h_update, h_delete, &e->log},
        .seed = 42,
        .watch_list = g_watch_list,
    };
    e->r = lop_reflector_new(&cfg, NULL);
    T_CHECK(e->r != NULL);
}

static void teardown(env_t *e)
{
    lop_reflector_free(e->r);
    lop_store_free(e->store);
    pthread_mutex_destroy(&e->f.mu);
    pthread_cond_destroy(&e->f.cond);
}

static int64_t step(env_t *e)
{
    int64_t w = -1;
    T_EQ_INT(lop_reflector_step(e->r, &w), LOP_OK);
    return w;
}

static const char *rv_of(env_t *e)
{
    static char b[64];
    lop_reflector_last_rv(e->r, b, sizeof b);
    return b;
}

#define CM(name, rv) \
    "{\"metadata\":{\"namespace\":\"d\",\"name\":\"" name "\",\"uid\":\"u-" name "\",\"resourceVersion\":\"" rv "\"}}"
#define LIST(rv, cont, items)                                                                             \
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" rv "\"" cont \
    "},\"items\":[" items "]}"
#define EV(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"
#define WCM(name, rv)                                                                                  \
    "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"namespace\":\"d\",\"name\":\"" name \
    "\",\"resourceVersion\":\"" rv "\"}}"
#define BOOKMARK(rv) \
    EV("BOOKMARK", "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" rv "\"}}")
#define ERR(code)                                                                                   \
    EV("ERROR", "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":" #code \
                ",\"reason\":\"Expired\",\"message\":\"too old resource version\"}")

static const lresp_t two_pages[] = {
    {LOP_OK, 200, LIST("10", ",\"continue\":\"t1\"", CM("a", "5") "," CM("b", "6"))},
    {LOP_OK, 200, LIST("10", "", CM("c", "7"))},
};

static void test_paginated_list_then_synced(void)
{
    env_t e;
    setup(&e, two_pages, 2, NULL, 0);
    T_CHECK(!lop_reflector_has_synced(e.r));
    T_EQ_INT(step(&e), 0);
    T_CHECK(lop_reflector_has_synced(e.r));
    T_EQ_STR(e.log.s, "add:a@5;add:b@6;add:c@7;");
    T_EQ_STR(rv_of(&e), "10");
    T_EQ_STR(e.f.list_rv[0], "0");
    T_EQ_INT(e.f.list_limit[0], 500);
    T_EQ_STR(e.f.list_cont[0], "(unset)");
    T_EQ_STR(e.f.list_rv[1], "(unset)"); /* continue requests drop the RV */
    T_EQ_STR(e.f.list_cont[1], "t1");
    T_EQ_INT(e.f.list_limit[1], 500);
    lop_obj_t *c = lop_store_get(e.store, "d/c");
    T_CHECK(c != NULL);
    T_EQ_STR(c->kind, "ConfigMap"); /* filled from the list kind */
    lop_obj_unref(c);
    teardown(&e);
}

static void test_watch_events_split_anywhere_update_store_and_rv(void)
{
    static const wresp_t w[] = {
        {LOP_OK,
         {EV("ADDED", WCM("x", "11")) EV("MODIFIED", WCM("a", "12")) "{\"type\":\"DEL",
          "ETED\",\"object\":", WCM("b", "13") "}\n" BOOKMARK("20"), NULL},
         5 * S,
         false},
        {LOP_OK, {NULL}, 300 * S, false},
    };
    env_t e;
    setup(&e, two_pages, 2, w, 2);
    step(&e);
    e.log.s[0] = '\0';
    T_EQ_INT(step(&e), 0);
    T_EQ_STR(e.log.s, "add:x@11;upd:a@12;del:b@13;");
    T_EQ_STR(rv_of(&e), "20");
    T_EQ_STR(e.f.watch_rv[0], "10");
    T_CHECK(e.f.watch_bookmarks[0]);
    T_CHECK(e.f.watch_timeout[0] >= 300 && e.f.watch_timeout[0] < 600);
    T_EQ_INT(e.f.watch_idle[0], (e.f.watch_timeout[0] + 30) * 1000);
    lop_store_stats_t st;
    lop_store_stats(e.store, &st);
    T_EQ_INT(st.count, 3); /* a, c, x */
    /* clean end of stream: re-watch at once from the bookmark's RV */
    T_EQ_INT(step(&e), 0);
    T_EQ_STR(e.f.watch_rv[1], "20");
    T_EQ_INT(e.f.li, 2); /* no relist */
    lop_reflector_stats_t rs;
    lop_reflector_stats(e.r, &rs);
    T_EQ_INT(rs.events, 3);
    T_EQ_INT(rs.bookmarks, 1);
    teardown(&e);
}

static void test_very_short_watch_backs_off_exponentially_and_resets(void)
{
    static const wresp_t w[] = {
        {LOP_OK, {NULL}, 0, false}, {LOP_OK, {NULL}, 0, false}, {LOP_OK, {NULL}, 0, false}, {LOP_OK, {NULL}, 0, false}};
    env_t e;
    setup(&e, two_pages, 2, w, 4);
    step(&e);
    int64_t d1 = step(&e);
    T_CHECK(d1 >= 800 * MS && d1 < 1600 * MS);
    int64_t d2 = step(&e);
    T_CHECK(d2 >= 1600 * MS && d2 < 3200 * MS);
    lop_fake_clock_step(&e.fc, 121 * S); /* two minutes of health */
    int64_t d3 = step(&e);
    T_CHECK(d3 >= 800 * MS && d3 < 1600 * MS);
    T_EQ_STR(e.f.watch_rv[2], "10"); /* still no relist */
    T_EQ_INT(e.f.li, 2);
    teardown(&e);
}

static void test_backoff_caps_at_30s(void)
{
    env_t e;
    setup(&e, two_pages, 2, NULL, 0); /* every watch fails (script exhausted → EAGAIN) */
    step(&e);
    int64_t d = 0;
    for (int i = 0; i < 12; i++) d = step(&e);
    T_CHECK(d >= 30 * S && d < 60 * S);
    teardown(&e);
}

static const lresp_t relist_pages[] = {
    {LOP_OK, 200, LIST("10", "", CM("a", "5") "," CM("b", "6") "," CM("c", "7"))},
    {LOP_OK, 200, LIST("30", "", CM("a", "5") "," CM("c", "25"))},
};

static void check_relist(env_t *e)
{
    T_EQ_STR(e->f.list_rv[1], "11"); /* relist at the last RV, unpaginated (client-go) */
    T_EQ_INT(e->f.list_limit[1], 0);
    T_EQ_STR(e->log.s, "upd:a@5;upd:c@25;tomb:b@6;");
    T_EQ_STR(rv_of(e), "30");
    lop_obj_t *b = lop_store_get(e->store, "d/b");
    T_CHECK(b == NULL);
    lop_reflector_stats_t rs;
    lop_reflector_stats(e->r, &rs);
    T_EQ_INT(rs.relists_410, 1);
}

static void test_error_event_410_relists_with_tombstones(void)
{
    static const wresp_t w[] = {{LOP_OK, {EV("MODIFIED", WCM("a", "11")) ERR(410), NULL}, 2 * S, false}};
    env_t e;
    setup(&e, relist_pages, 2, w, 1);
    step(&e);
    int64_t d = step(&e);
    T_CHECK(d >= 800 * MS && d < 1600 * MS);
    e.log.s[0] = '\0';
    T_EQ_INT(step(&e), 0); /* the relist */
    check_relist(&e);
    teardown(&e);
}

static void test_http_410_on_watch_relists(void)
{
    static const wresp_t w[] = {{LOP_EGONE, {EV("MODIFIED", WCM("a", "11")), NULL}, 0, false}};
    env_t e;
    setup(&e, relist_pages, 2, w, 1);
    step(&e);
    step(&e);
    e.log.s[0] = '\0';
    T_EQ_INT(step(&e), 0);
    check_relist(&e);
    teardown(&e);
}

static void test_list_410_retries_at_once_with_a_consistent_read(void)
{
    static const lresp_t lists[] = {
        {LOP_OK, 200, LIST("10", "", CM("a", "5"))},
        {LOP_EGONE, 410, NULL},
        {LOP_OK, 200, LIST("40", "", CM("a", "5"))},
    };
    static const wresp_t w[] = {{LOP_OK, {ERR(410), NULL}, 0, false}};
    env_t e;
    setup(&e, lists, 3, w, 1);
    step(&e);
    step(&e);
    T_EQ_INT(step(&e), 0);
    T_EQ_STR(e.f.list_rv[1], "10");
    T_EQ_STR(e.f.list_rv[2], "(unset)");
    T_EQ_INT(e.f.list_limit[2], 500);
    T_EQ_STR(rv_of(&e), "40");
    teardown(&e);
}

static void test_list_too_large_rv_retries_with_a_consistent_read(void)
{
    static const lresp_t lists[] = {
        {LOP_OK, 200, LIST("10", "", CM("a", "5"))},
        {LOP_ETIMEDOUT, 504, NULL}, /* Timeout: Too large resource version */
        {LOP_OK, 200, LIST("40", "", CM("a", "5"))},
    };
    static const wresp_t w[] = {{LOP_OK, {ERR(410), NULL}, 0, false}};
    env_t e;
    setup(&e, lists, 3, w, 1);
    step(&e);
    step(&e);
    T_EQ_INT(step(&e), 0);
    T_EQ_STR(e.f.list_rv[2], "(unset)");
    T_EQ_STR(rv_of(&e), "40");
    teardown(&e);
}

static void test_expired_continue_falls_back_to_full_list(void)
{
    static const lresp_t lists[] = {
        {LOP_OK, 200, LIST("10", ",\"continue\":\"t1\"", CM("a", "5"))},
        {LOP_EGONE, 410, NULL},
        {LOP_OK, 200, LIST("10", "", CM("a", "5") "," CM("b", "6"))},
    };
    env_t e;
    setup(&e, lists, 3, NULL, 0);
    T_EQ_INT(step(&e), 0);
    T_EQ_STR(e.f.list_rv[2], "0");  /* the original RV */
    T_EQ_INT(e.f.list_limit[2], 0); /* unpaginated */
    T_EQ_STR(e.f.list_cont[2], "(unset)");
    T_EQ_STR(e.log.s, "add:a@5;add:b@6;"); /* the page-1 items are not delivered twice */
    lop_reflector_stats_t rs;
    lop_reflector_stats(e.r, &rs);
    T_EQ_INT(rs.list_fallbacks, 1);
    teardown(&e);
}

/* A relist shares the cached entry of every object whose resourceVersion did not change: the
 * old and the new cache are not both resident for it, and on_update sees old == new. */
typedef struct same_rec {
    int updates, same;
} same_rec_t;
static void count_same(void *ud, lop_obj_t *old, lop_obj_t *o)
{
    same_rec_t *r = ud;
    r->updates++;
    r->same += old == o;
}

static void test_relist_keeps_unchanged_entries(void)
{
    static const lresp_t lists[] = {
        {LOP_OK, 200, LIST("10", "", CM("a", "5") "," CM("b", "6") "," CM("c", "7"))},
        {LOP_OK, 200, LIST("20", "", CM("a", "5") "," CM("b", "8") "," CM("c", "7") "," CM("d", "9"))},
    };
    static const wresp_t w[] = {{LOP_EGONE, {NULL}, 0, false}};
    env_t e;
    setup(&e, lists, 2, w, 1);
    step(&e);
    lop_obj_t *a0 = lop_store_get(e.store, "d/a"), *b0 = lop_store_get(e.store, "d/b");
    step(&e); /* 410 */
    e.log.s[0] = '\0';
    T_EQ_INT(step(&e), 0); /* the relist */
    T_EQ_STR(e.log.s, "upd:a@5;upd:b@8;upd:c@7;add:d@9;");
    lop_obj_t *a1 = lop_store_get(e.store, "d/a"), *b1 = lop_store_get(e.store, "d/b");
    T_CHECK(a1 == a0);
    T_CHECK(b1 != b0);
    T_EQ_STR(b1->rv, "8");
    T_EQ_STR(b0->rv, "6"); /* the old entry is still valid for whoever holds it */
    lop_reflector_stats_t rs;
    lop_reflector_stats(e.r, &rs);
    T_EQ_INT(rs.list_reused, 2);
    lop_obj_unref(a0);
    lop_obj_unref(a1);
    lop_obj_unref(b0);
    lop_obj_unref(b1);
    teardown(&e);

    /* the handlers see the same object as old and new for unchanged entries */
    same_rec_t rec = {0};
    setup(&e, lists, 2, w, 1);
    step(&e);
    step(&e);
    lop_reflector_free(e.r);
    lop_listwatch_t lw = {.ud = &e.f,
                          .list = fake_list,
                          .watch = fake_watch,
                          .cancel = fake_cancel,
                          .list_stream = g_stream ? fake_list_stream : NULL};
    e.f.li = 1;
    lop_reflector_config_t cfg = {.name = "x",
                                  .lw = &lw,
                                  .store = e.store,
                                  .clock = &e.fc.base,
                                  .handlers = {NULL, count_same, NULL, &rec},
                                  .seed = 1};
    e.r = lop_reflector_new(&cfg, NULL);
    T_EQ_INT(step(&e), 0);
    T_EQ_INT(rec.updates, 3);
    T_EQ_INT(rec.same, 2);
    teardown(&e);
}

/* A page whose body breaks off (connection reset, truncated) changes nothing: the store keeps
 * its content and the list is retried after a backoff. */
static void test_list_cut_mid_body_changes_nothing_and_retries(void)
{
    static const lresp_t lists[] = {
        {LOP_OK, 200, LIST("10", "", CM("a", "5"))},
        {LOP_EAGAIN, 0, LIST("20", "", CM("a", "6") "," CM("b", "7") "," CM("c", "8"))},
        {LOP_OK, 200,
         "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"20\"},\"items\":[" CM(
             "a", "6")},
        {LOP_OK, 200, LIST("20", "", CM("a", "6") "," CM("b", "7"))},
    };
    static const wresp_t w[] = {{LOP_EGONE, {NULL}, 0, false}};
    env_t e;
    setup(&e, lists, 4, w, 1);
    step(&e);
    step(&e); /* 410 */
    e.log.s[0] = '\0';
    if (g_stream)
        T_CHECK(step(&e) > 0); /* cut mid-body */
    else
        e.f.li++;          /* the buffered list never sees half a body: rest.c fails the whole request */
    T_CHECK(step(&e) > 0); /* truncated JSON */
    T_EQ_STR(e.log.s, "");
    lop_obj_t *a = lop_store_get(e.store, "d/a");
    T_EQ_STR(a->rv, "5");
    lop_obj_unref(a);
    T_EQ_INT(step(&e), 0);
    T_EQ_STR(e.log.s, "upd:a@6;add:b@7;");
    teardown(&e);
}

#define BOOKMARK_END(rv)                                                                                   \
    EV("BOOKMARK", "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"" rv \
                   "\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}")

/* watch-list: the initial ADDED events are held aside until the annotated bookmark, then
 * delivered as one replace; the same stream goes on as the watch. No LIST is made. */
static void test_watch_list_syncs_at_its_bookmark_without_a_list(void)
{
    static const wresp_t w[] = {
        {LOP_OK,
         {EV("ADDED", WCM("a", "5")) EV("ADDED", WCM("b", "6")), BOOKMARK_END("10"), EV("MODIFIED", WCM("a", "11")),
          NULL},
         2 * S,
         false},
    };
    g_watch_list = true;
    env_t e;
    setup(&e, NULL, 0, w, 1);
    g_watch_list = false;
    T_EQ_INT(step(&e), 0);
    T_CHECK(lop_reflector_has_synced(e.r));
    T_EQ_INT(e.f.li, 0);
    T_CHECK(e.f.watch_sie[0]);
    T_CHECK(e.f.watch_bookmarks[0]);
    T_EQ_STR(e.f.watch_rv[0], "(unset)");
    T_EQ_STR(e.log.s, "add:a@5;add:b@6;upd:a@11;");
    T_EQ_STR(rv_of(&e), "11");
    lop_reflector_stats_t rs;
    lop_reflector_stats(e.r, &rs);
    T_EQ_INT(rs.watch_lists, 1);
    /* the next watch resumes from the last event, as an ordinary watch */
    step(&e);
    T_EQ_STR(e.f.watch_rv[1], "11");
    T_CHECK(!e.f.watch_sie[1]);
    teardown(&e);
}

/* A watch-list cut before its bookmark changes nothing and falls back to one LIST at once. */
static void test_watch_list_cut_before_its_bookmark_falls_back_to_list(void)
{
    static const lresp_t lists[] = {{LOP_OK, 200, LIST("10", "", CM("a", "5"))}};
    static const wresp_t w[] = {{LOP_OK, {EV("ADDED", WCM("a", "5")) EV("ADDED", WCM("b", "6")), NULL}, 0, false}};
    g_watch_list = true;
    env_t e;
    setup(&e, lists, 1, w, 1);
    g_watch_list = false;
    T_EQ_INT(step(&e), 0); /* no backoff: client-go falls back at once */
    T_CHECK(!lop_reflector_has_synced(e.r));
    T_EQ_STR(e.log.s, "");
    lop_store_stats_t ss;
    lop_store_stats(e.store, &ss);
    T_EQ_INT(ss.count, 0);
    T_EQ_INT(step(&e), 0);
    T_CHECK(lop_reflector_has_synced(e.r));
    T_EQ_INT(e.f.li, 1);
    T_EQ_STR(e.log.s, "add:a@5;");
    lop_reflector_stats_t rs;
    lop_reflector_stats(e.r, &rs);
    T_EQ_INT(rs.watch_list_fallbacks, 1);
    teardown(&e);
}

/* A server that refuses watch-list (422) is not asked again: every later sync is a LIST. */
static void test_watch_list_refused_uses_list_from_then_on(void)
{
    static const lresp_t lists[] = {
        {LOP_OK, 200, LIST("10", "", CM("a", "5"))},
        {LOP_OK, 200, LIST("20", "", CM("a", "5"))},
    };
    static const wresp_t w[] = {
        {LOP_EINVAL, {NULL}, 0, false},
        {LOP_OK, {ERR(410), NULL}, 0, false},
    };
    g_watch_list = true;
    env_t e;
    setup(&e, lists, 2, w, 2);
    g_watch_list = false;
    e.f.watch_code[0] = 422;
    step(&e);              /* refused */
    step(&e);              /* LIST */
    step(&e);              /* watch: 410 */
    T_EQ_INT(step(&e), 0); /* relist: a LIST again, not a watch-list */
    T_EQ_INT(e.f.li, 2);
    T_EQ_INT(e.f.wi, 2);
    T_CHECK(e.f.watch_sie[0]);
    T_CHECK(!e.f.watch_sie[1]);
    T_EQ_STR(rv_of(&e), "20");
    teardown(&e);
}

/* A relist by watch-list shares unchanged entries and tombstones the vanished ones. */
static void test_watch_list_relist_keeps_unchanged_entries(void)
{
    static const wresp_t w[] = {
        {LOP_OK,
         {EV("ADDED", WCM("a", "5")) EV("ADDED", WCM("b", "6")) EV("ADDED", WCM("c", "7")), BOOKMARK_END("10"),
          ERR(410), NULL},
         2 * S,
         false},
        {LOP_OK, {EV("ADDED", WCM("a", "5")) EV("ADDED", WCM("b", "12")), BOOKMARK_END("20"), NULL}, 2 * S, false},
    };
    g_watch_list = true;
    env_t e;
    setup(&e, NULL, 0, w, 2);
    g_watch_list = false;
    step(&e);
    lop_obj_t *a0 = lop_store_get(e.store, "d/a");
    e.log.s[0] = '\0';
    step(&e);
    T_EQ_STR(e.f.watch_rv[1], "10"); /* NotOlderThan the last RV */
    T_CHECK(e.f.watch_sie[1]);
    T_EQ_STR(e.log.s, "upd:a@5;upd:b@12;tomb:c@7;");
    lop_obj_t *a1 = lop_store_get(e.store, "d/a");
    T_CHECK(a0 == a1);
    T_EQ_STR(rv_of(&e), "20");
    lop_obj_unref(a0);
    lop_obj_unref(a1);
    teardown(&e);
}

/* A listed item that is not valid JSON fails the list (backoff, retried) and changes nothing,
 * on the first sync (built unvalidated) and on a relist (validated before reuse). */
static void test_malformed_list_item_fails_the_list(void)
{
    static const lresp_t lists[] = {
        {LOP_OK, 200, LIST("10", "", CM("a", "5") ",{\"metadata\":{\"name\":\"b\"},\"x\":tru}")},
        {LOP_OK, 200, LIST("10", "", CM("a", "5"))},
        {LOP_OK, 200,
         LIST("20", "",
              CM("a", "5") ",{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\",\"resourceVersion\":\"5\"},\"x\":nul}")},
    };
    static const wresp_t w[] = {{LOP_EGONE, {NULL}, 0, false}};
    env_t e;
    setup(&e, lists, 3, w, 1);
    T_CHECK(step(&e) > 0);
    T_CHECK(!lop_reflector_has_synced(e.r));
    T_EQ_STR(e.log.s, "");
    T_EQ_INT(step(&e), 0);
    step(&e); /* 410 */
    e.log.s[0] = '\0';
    T_CHECK(step(&e) > 0); /* the relist's bad item matches a cached entry's key and RV: still refused */
    T_EQ_STR(e.log.s, "");
    T_EQ_STR(rv_of(&e), "10");
    teardown(&e);
}

/* A list that puts items first (as the API server's custom resource lists do): items carrying
 * their own kind are built as they come; items without one get the list's kind at its end. */
static void test_items_before_the_list_kind(void)
{
    static const lresp_t lists[] = {
        {LOP_OK, 200,
         "{\"apiVersion\":\"v1\",\"items\":[" WCM("a", "5") "," CM("b",
                                                                   "6") "],\"kind\":\"ConfigMapList\","
                                                                        "\"metadata\":{\"resourceVersion\":\"10\"}}"},
    };
    env_t e;
    setup(&e, lists, 1, NULL, 0);
    T_EQ_INT(step(&e), 0);
    T_EQ_STR(e.log.s, "add:a@5;add:b@6;");
    lop_obj_t *b = lop_store_get(e.store, "d/b");
    T_EQ_STR(b->kind, "ConfigMap");
    T_EQ_STR(b->api_version, "v1");
    T_CHECK(strstr(b->json, "\"kind\":\"ConfigMap\"") != NULL);
    lop_obj_unref(b);
    teardown(&e);
}

/* A list refused by the server (422, e.g. a bad selector) reports the server's error. */
static void test_refused_list_keeps_the_servers_error(void)
{
    static const lresp_t lists[] = {{LOP_EINVAL, 422, NULL}};
    env_t e;
    setup(&e, lists, 1, NULL, 0);
    lop_err_t err = {0};
    T_EQ_INT(lop_reflector_do_list(e.r, &err), LOP_EINVAL);
    T_EQ_INT(err.code, 422);
    T_EQ_STR(err.message, "scripted failure");
    teardown(&e);
}

/* Other watch-list failures (a 404 for a CRD not served yet, a 5xx) fall back for this sync
 * only: the next sync asks for watch-list again. */
static void test_watch_list_404_falls_back_once(void)
{
    static const lresp_t lists[] = {{LOP_OK, 200, LIST("10", "", CM("a", "5"))}};
    static const wresp_t w[] = {
        {LOP_ENOTFOUND, {NULL}, 0, false},
        {LOP_OK, {ERR(410), NULL}, 0, false},
        {LOP_OK, {EV("ADDED", WCM("a", "5")), BOOKMARK_END("20"), NULL}, 2 * S, false},
    };
    g_watch_list = true;
    env_t e;
    setup(&e, lists, 1, w, 3);
    g_watch_list = false;
    e.f.watch_code[0] = 404;
    step(&e);              /* 404 */
    step(&e);              /* LIST */
    step(&e);              /* watch: 410 */
    T_EQ_INT(step(&e), 0); /* the relist is a watch-list again */
    T_CHECK(e.f.watch_sie[0]);
    T_CHECK(e.f.watch_sie[2]);
    T_EQ_STR(rv_of(&e), "20");
    teardown(&e);
}

/* A server that ignores sendInitialEvents answers with a plain watch: spotted at its first
 * MODIFIED (or plain bookmark), it falls back to LIST at once and is not asked again. */
static void test_watch_list_ignored_by_the_server_falls_back_to_list(void)
{
    static const lresp_t lists[] = {{LOP_OK, 200, LIST("10", "", CM("a", "6"))}};
    static const wresp_t w[] = {
        {LOP_OK, {EV("ADDED", WCM("a", "5")) EV("MODIFIED", WCM("a", "6")), NULL}, 0, true},
        {LOP_OK, {BOOKMARK("12"), NULL}, 0, true},
    };
    for (int i = 0; i < 2; i++) {
        g_watch_list = true;
        env_t e;
        setup(&e, lists, 1, w + i, 1);
        g_watch_list = false;
        T_EQ_INT(step(&e), 0); /* does not wait for the stream to end (the fake would block) */
        T_EQ_STR(e.log.s, "");
        T_EQ_INT(step(&e), 0); /* LIST */
        T_CHECK(lop_reflector_has_synced(e.r));
        T_EQ_STR(e.log.s, "add:a@6;");
        teardown(&e);
    }
}

static void test_garbage_restarts_watch_from_last_good_rv(void)
{
    static const wresp_t w[] = {
        {LOP_OK, {EV("ADDED", WCM("x", "11")) "{\"type\":\"ADDED\",\"obj", "ect\":{]}\n", NULL}, 2 * S, false},
        {LOP_OK, {EV("ADDED", WCM("y", "12")) "not json at all\n", NULL}, 2 * S, false},
        {LOP_OK, {EV("WHATEVER", WCM("z", "13")), NULL}, 2 * S, false},
        {LOP_OK, {EV("ADDED", "{\"metadata\":{\"name\":7}}"), NULL}, 2 * S, false},
        /* balanced but invalid inside the object, and a type that is not valid JSON */
        {LOP_OK, {EV("ADDED", "{\"metadata\":{\"name\":\"w\"},\"data\":{\"k\":tru}}"), NULL}, 2 * S, false},
        {LOP_OK, {"{\"type\":\"ADD\\qED\",\"object\":" WCM("v", "14") "}\n", NULL}, 2 * S, false},
    };
    env_t e;
    setup(&e, two_pages, 2, w, 6);
    step(&e);
    e.log.s[0] = '\0';
    for (int i = 0; i < 6; i++) T_CHECK(step(&e) > 0);
    T_EQ_STR(e.log.s, "add:x@11;add:y@12;");
    T_EQ_STR(e.f.watch_rv[1], "11");
    T_EQ_STR(e.f.watch_rv[2], "12");
    T_EQ_STR(e.f.watch_rv[3], "12");
    lop_reflector_stats_t rs;
    lop_reflector_stats(e.r, &rs);
    T_EQ_INT(rs.malformed, 6);
    T_EQ_INT(e.f.li, 2); /* never relisted */
    teardown(&e);
}

static void test_other_error_event_and_transport_errors_rewatch(void)
{
    static const wresp_t w[] = {
        {LOP_OK, {ERR(500), NULL}, 0, false},
        {LOP_ETIMEDOUT, {NULL}, 0, false}, /* the idle watchdog fired */
        {LOP_EAGAIN, {NULL}, 0, false},
        {LOP_OK, {"{\"type\":\"ADDED\",\"object\":{\"metadata\"", NULL}, 2 * S, false}, /* truncated */
    };
    env_t e;
    setup(&e, two_pages, 2, w, 4);
    step(&e);
    for (int i = 0; i < 4; i++) T_CHECK(step(&e) > 0);
    for (int i = 0; i < 4; i++) T_EQ_STR(e.f.watch_rv[i], "10");
    T_EQ_INT(e.f.li, 2);
    teardown(&e);
}

static void test_list_failure_backs_off_and_retries(void)
{
    static const lresp_t lists[] = {
        {LOP_EAGAIN, 503, NULL},
        {LOP_OK, 200, "{\"metadata\":{}}"}, /* no RV: rejected */
        {LOP_OK, 200, LIST("10", "", CM("a", "5"))},
    };
    env_t e;
    setup(&e, lists, 3, NULL, 0);
    T_CHECK(step(&e) > 0);
    T_CHECK(!lop_reflector_has_synced(e.r));
    T_CHECK(step(&e) > 0);
    T_EQ_INT(step(&e), 0);
    T_CHECK(lop_reflector_has_synced(e.r));
    teardown(&e);
}

static void test_thread_start_and_prompt_stop(void)
{
    static const wresp_t w[] = {{LOP_OK, {EV("ADDED", WCM("x", "11")), NULL}, 0, true}};
    env_t e;
    setup(&e, two_pages, 2, w, 1);
    T_EQ_INT(lop_reflector_start(e.r, NULL), LOP_OK);
    T_EQ_INT(lop_reflector_start(e.r, NULL), LOP_EINVAL);
    for (;;) {
        lop_obj_t *x = lop_store_get(e.store, "d/x");
        if (x) {
            lop_obj_unref(x);
            break;
        }
        sched_yield();
    }
    T_CHECK(lop_reflector_has_synced(e.r));
    lop_reflector_stop(e.r);  /* the watch is stalled: only a cancel ends it */
    T_EQ_INT(e.f.cancels, 1); /* once: the cancel is sticky (listwatch.h) */
    int64_t w2;
    T_EQ_INT(lop_reflector_step(e.r, &w2), LOP_ECLOSED);
    teardown(&e);
}

static void test_initial_added_burst_is_not_a_resume_point(void)
{
    /* a list at RV "0" makes the watch start "at any": the server first replays ADDED
     * events out of RV order; none of their RVs may be resumed from */
    static const lresp_t lists[] = {{LOP_OK, 200, LIST("0", "", "")}};
    static const wresp_t w[] = {
        {LOP_OK, {EV("ADDED", WCM("a", "50")) EV("ADDED", WCM("b", "40")), NULL}, 2 * S, false},
        {LOP_OK,
         {EV("ADDED", WCM("a", "50")) EV("MODIFIED", WCM("b", "55")) EV("ADDED", WCM("c", "56")), NULL},
         2 * S,
         false},
        {LOP_OK, {NULL}, 2 * S, false},
    };
    static const wresp_t w2[] = {
        {LOP_OK,
         {EV("ADDED", WCM("a", "50")) EV("BOOKMARK", "{\"kind\":\"ConfigMap\",\"metadata\":{\"resourceVersion\":\"60\","
                                                     "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}"),
          NULL},
         2 * S,
         false},
    };
    env_t e;
    setup(&e, lists, 1, w, 3);
    step(&e);
    T_EQ_STR(rv_of(&e), "0");
    step(&e);
    T_EQ_STR(rv_of(&e), "0"); /* burst only: still no resume point */
    step(&e);
    T_EQ_STR(e.f.watch_rv[1], "0");
    T_EQ_STR(rv_of(&e), "56"); /* a MODIFIED ends the burst; later events count */
    step(&e);
    T_EQ_STR(e.f.watch_rv[2], "56");
    teardown(&e);
    setup(&e, lists, 1, w2, 1);
    step(&e);
    step(&e);
    T_EQ_STR(rv_of(&e), "60"); /* the initial-events-end bookmark ends it too */
    teardown(&e);
}

int main(void)
{
    for (int pass = 0; pass < 2; pass++) {
        g_stream = pass == 1;
        T_RUN(test_paginated_list_then_synced);
        T_RUN(test_error_event_410_relists_with_tombstones);
        T_RUN(test_http_410_on_watch_relists);
        T_RUN(test_list_410_retries_at_once_with_a_consistent_read);
        T_RUN(test_list_too_large_rv_retries_with_a_consistent_read);
        T_RUN(test_expired_continue_falls_back_to_full_list);
        T_RUN(test_list_failure_backs_off_and_retries);
        T_RUN(test_relist_keeps_unchanged_entries);
        T_RUN(test_list_cut_mid_body_changes_nothing_and_retries);
        T_RUN(test_malformed_list_item_fails_the_list);
        T_RUN(test_items_before_the_list_kind);
    }
    g_stream = false;
    T_RUN(test_watch_list_syncs_at_its_bookmark_without_a_list);
    T_RUN(test_watch_list_cut_before_its_bookmark_falls_back_to_list);
    T_RUN(test_watch_list_refused_uses_list_from_then_on);
    T_RUN(test_watch_list_relist_keeps_unchanged_entries);
    T_RUN(test_refused_list_keeps_the_servers_error);
    T_RUN(test_watch_list_404_falls_back_once);
    T_RUN(test_watch_list_ignored_by_the_server_falls_back_to_list);
    T_RUN(test_watch_events_split_anywhere_update_store_and_rv);
    T_RUN(test_very_short_watch_backs_off_exponentially_and_resets);
    T_RUN(test_backoff_caps_at_30s);
    T_RUN(test_garbage_restarts_watch_from_last_good_rv);
    T_RUN(test_other_error_event_and_transport_errors_rewatch);
    T_RUN(test_thread_start_and_prompt_stop);
    T_RUN(test_initial_added_burst_is_not_a_resume_point);
    return T_DONE();
}
