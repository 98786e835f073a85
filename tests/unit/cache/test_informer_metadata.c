/* SPDX-License-Identifier: Apache-2.0 */
/* A metadata-only informer (LOP_OBJ_METADATA_ONLY over lop_rest_listwatch_new_metadata, as the
 * manager builds one for a watch with metadata_only):
 *  - against the local API server started in-process on 127.0.0.1 port 0, by LIST+WATCH and by
 *    watch-list: the bytes it receives are PartialObjectMetadata (no data; a fraction of the
 *    full objects' bytes, counted by a listwatch wrapper), and its cache holds exactly the
 *    entries a client-side strip of the full objects holds (the watched kind's apiVersion/kind);
 *  - against a scripted server (test_rest_fakesrv.h) that refuses the metadata-only media type
 *    with 406 (on LIST and WATCH, or on WATCH only), or ignores it and sends full objects: the
 *    informer falls back to plain JSON at once, remembers it, and caches the same entries.
 * Waits are on a condition variable signalled by the handlers (capped at 60 s so that a bug
 * fails instead of hanging); the scripted server is stepped synchronously. Never sleeps. */
#include "apiserver/apiserver.h"
#include "host/kube/cache/informer.h"
#include "host/kube/cache/rest_listwatch.h"
#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"
#include "t.h"
#include "apiserver_client.h"
#include "test_rest_fakesrv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static lop_apiserver_t *srv;
static lop_rest_client_t *cli;
static const lop_rest_mapping_t cm_mapping = {"", "v1", "configmaps", "ConfigMap", true};

/* ---- a listwatch that counts what it receives ---- */

#define BIG_MARK \
    "vvvvvvvvvvvvvvvv" /* a run of the ConfigMaps' data: seen only with full objects  \
                                     */

typedef struct counter {
    lop_listwatch_t inner;
    atomic_size_t list_bytes, watch_bytes;
    atomic_bool list_saw_data, watch_saw_data, list_saw_partial, watch_saw_partial;
    lop_stream_fn fn;
    void *fn_ud;
    bool in_list;
} counter_t;

static void count(counter_t *c, const char *data, size_t len)
{
    bool data_seen = memmem(data, len, BIG_MARK, sizeof BIG_MARK - 1) != NULL;
    bool partial = memmem(data, len, "\"PartialObjectMetadata", 22) != NULL;
    atomic_fetch_add(c->in_list ? &c->list_bytes : &c->watch_bytes, len);
    if (data_seen) atomic_store(c->in_list ? &c->list_saw_data : &c->watch_saw_data, true);
    if (partial) atomic_store(c->in_list ? &c->list_saw_partial : &c->watch_saw_partial, true);
}

static int c_bytes(void *ud, const char *data, size_t len)
{
    counter_t *c = ud;
    count(c, data, len);
    return c->fn(c->fn_ud, data, len);
}

static lop_rc_t c_list(void *ud, const lop_list_opts_t *o, lop_buf_t *body, lop_err_t *err)
{
    counter_t *c = ud;
    lop_rc_t rc = c->inner.list(c->inner.ud, o, body, err);
    if (rc == LOP_OK) {
        c->in_list = true;
        count(c, body->data ? body->data : "", body->len);
    }
    return rc;
}

/* The stream's bytes go through c_bytes (counted as a list's or a watch's) on to fn. */
static counter_t *intercept(void *ud, lop_stream_fn fn, void *fn_ud, bool in_list)
{
    counter_t *c = ud;
    c->fn = fn;
    c->fn_ud = fn_ud;
    c->in_list = in_list;
    return c;
}

static lop_rc_t c_list_stream(void *ud, const lop_list_opts_t *o, lop_stream_fn fn, void *fn_ud, lop_err_t *err)
{
    counter_t *c = intercept(ud, fn, fn_ud, true);
    return c->inner.list_stream(c->inner.ud, o, c_bytes, c, err);
}

static lop_rc_t c_watch(void *ud, const lop_watch_opts_t *o, lop_stream_fn fn, void *fn_ud, lop_err_t *err)
{
    counter_t *c = intercept(ud, fn, fn_ud, false);
    return c->inner.watch(c->inner.ud, o, c_bytes, c, err);
}

static void c_cancel(void *ud)
{
    counter_t *c = ud;
    c->inner.cancel(c->inner.ud);
}

static void c_free(void *ud)
{
    counter_t *c = ud;
    c->inner.free(c->inner.ud);
    free(c);
}

/* Wrap lw (a lop_rest_listwatch_new* result, whose struct is freed here): *out is the counter. */
static lop_listwatch_t wrap(lop_listwatch_t *lw, counter_t **out)
{
    counter_t *c = calloc(1, sizeof *c);
    c->inner = *lw;
    free(lw);
    *out = c;
    return (lop_listwatch_t){
        .ud = c, .list = c_list, .watch = c_watch, .cancel = c_cancel, .free = c_free, .list_stream = c_list_stream};
}

/* ---- informers over the local API server ---- */

typedef struct rec {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int events;
} rec_t;

static void bump(rec_t *r)
{
    pthread_mutex_lock(&r->mu);
    r->events++;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
}
static void h_add(void *ud, lop_obj_t *o) { bump(ud); }
static void h_upd(void *ud, lop_obj_t *old, lop_obj_t *o) { bump(ud); }
static void h_del(void *ud, lop_obj_t *o, bool tomb) { bump(ud); }

typedef struct env {
    rec_t rec;
    counter_t *count;
    lop_informer_t *inf;
} env_t;

/* server_side: ask the server for metadata only (else full objects, stripped here as before). */
static void env_start(env_t *e, bool server_side, bool watch_list)
{
    memset(e, 0, sizeof *e);
    pthread_mutex_init(&e->rec.mu, NULL);
    pthread_cond_init(&e->rec.cond, NULL);
    lop_listwatch_t *lw = server_side ? lop_rest_listwatch_new_metadata(cli, &cm_mapping, "meta", NULL, NULL)
                                      : lop_rest_listwatch_new(cli, &cm_mapping, "meta", NULL, NULL);
    lop_listwatch_t w = wrap(lw, &e->count);
    lop_informer_config_t cfg = {.name = server_side ? "v1/configmaps+metadata" : "v1/configmaps+strip",
                                 .lw = &w,
                                 .obj_flags = LOP_OBJ_METADATA_ONLY,
                                 .api_version = "v1",
                                 .kind = "ConfigMap",
                                 .watch_list = watch_list};
    e->inf = lop_informer_new(&cfg, NULL);
    lop_reflector_handlers_t h = {h_add, h_upd, h_del, &e->rec, NULL};
    lop_informer_add_handler(e->inf, &h);
    T_EQ_INT(lop_informer_start(e->inf, NULL), LOP_OK);
}

static void env_stop(env_t *e)
{
    lop_informer_free(e->inf);
    pthread_mutex_destroy(&e->rec.mu);
    pthread_cond_destroy(&e->rec.cond);
}

/* Wait until e has synced and handled at least n events; false after 60 s. */
static bool wait_events(env_t *e, int n)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 60;
    pthread_mutex_lock(&e->rec.mu);
    bool ok;
    while (!(ok = lop_informer_has_synced(e->inf) && e->rec.events >= n)) {
        struct timespec tick;
        clock_gettime(CLOCK_REALTIME, &tick);
        if (tick.tv_sec > dl.tv_sec) break;
        tick.tv_nsec += 50 * 1000 * 1000; /* has_synced is not signalled: re-check */
        if (tick.tv_nsec >= 1000000000L) tick.tv_sec++, tick.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&e->rec.cond, &e->rec.mu, &tick);
    }
    pthread_mutex_unlock(&e->rec.mu);
    return ok;
}

static void req(const char *method, const char *path, const char *ctype, const char *body)
{
    lop_err_t err;
    lop_rc_t rc = lop_rest_do(cli, method, path, ctype, body, body ? strlen(body) : 0, NULL, &err);
    if (rc != LOP_OK) fprintf(stderr, "%s %s: %s\n", method, path, err.message);
    T_EQ_INT(rc, LOP_OK);
}

static char big[8001];

static void create_cm(const char *name)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_printf(&b,
                   "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
                   "\"n\":\"%s\"},"
                   "\"annotations\":{\"note\":\"caf\\u00e9\"},\"finalizers\":[\"example.com/keep\"]},"
                   "\"data\":{\"big\":\"%s\"}}",
                   name, name, big);
    req("POST", "/api/v1/namespaces/meta/configmaps", NULL, b.data);
    lop_buf_free(&b);
}

/* Both caches hold the same entries, byte for byte, with the watched kind. */
static void check_same_cache(env_t *server_side, env_t *stripped, size_t want)
{
    lop_obj_list_t a, b;
    lop_store_list(lop_informer_store(server_side->inf), &a);
    lop_store_list(lop_informer_store(stripped->inf), &b);
    T_EQ_INT((long)a.n, (long)want);
    T_EQ_INT((long)b.n, (long)want);
    for (size_t i = 0; i < a.n; i++) {
        char key[256];
        lop_obj_key(a.items[i], key, sizeof key);
        lop_obj_t *o = lop_store_get(lop_informer_store(stripped->inf), key);
        T_CHECK(o != NULL);
        if (!o) continue;
        if (strcmp(a.items[i]->json, o->json)) {
            fprintf(stderr, "%s differs:\n  server-side: %s\n  stripped:    %s\n", key, a.items[i]->json, o->json);
            T_CHECK(false);
        }
        T_EQ_STR(a.items[i]->api_version, "v1");
        T_EQ_STR(a.items[i]->kind, "ConfigMap");
        T_CHECK(strstr(a.items[i]->json, BIG_MARK) == NULL);
        lop_obj_unref(o);
    }
    lop_obj_list_free(&a);
    lop_obj_list_free(&b);
}

static void run_against_apiserver(bool watch_list)
{
    lop_apiserver_reset(srv);
    req("POST", "/api/v1/namespaces", NULL, "{\"metadata\":{\"name\":\"meta\"}}");
    for (int i = 0; i < 10; i++) {
        char name[16];
        snprintf(name, sizeof name, "cm-%d", i);
        create_cm(name);
    }
    env_t ss, st;
    env_start(&ss, true, watch_list);
    env_start(&st, false, watch_list);
    T_CHECK(wait_events(&ss, 10));
    T_CHECK(wait_events(&st, 10));
    check_same_cache(&ss, &st, 10);
    /* changes after the sync arrive by WATCH: a label, the data, a new object, a deletion */
    req("PATCH", "/api/v1/namespaces/meta/configmaps/cm-1", "application/merge-patch+json",
        "{\"metadata\":{\"labels\":{\"n\":\"changed\"}}}");
    req("PATCH", "/api/v1/namespaces/meta/configmaps/cm-2", "application/merge-patch+json",
        "{\"data\":{\"more\":\"" BIG_MARK "\"}}");
    create_cm("cm-new");
    req("DELETE", "/api/v1/namespaces/meta/configmaps/cm-3", NULL, NULL); /* finalizer: stays, deleting */
    req("PATCH", "/api/v1/namespaces/meta/configmaps/cm-4", "application/merge-patch+json",
        "{\"metadata\":{\"finalizers\":null}}");
    req("DELETE", "/api/v1/namespaces/meta/configmaps/cm-4", NULL, NULL); /* gone */
    T_CHECK(wait_events(&ss, 16));
    T_CHECK(wait_events(&st, 16));
    check_same_cache(&ss, &st, 10);
    lop_obj_t *o = lop_store_get(lop_informer_store(ss.inf), "meta/cm-3");
    T_CHECK(o && o->deleting);
    lop_obj_unref(o);

    /* what came over the wire: metadata only, for the server-side informer */
    counter_t *a = ss.count, *b = st.count;
    size_t full_bytes = atomic_load(&b->list_bytes) + atomic_load(&b->watch_bytes);
    size_t meta_bytes = atomic_load(&a->list_bytes) + atomic_load(&a->watch_bytes);
    T_CHECK(!atomic_load(&a->list_saw_data) && !atomic_load(&a->watch_saw_data));
    T_CHECK(atomic_load(&b->watch_saw_data));
    T_CHECK(atomic_load(&a->watch_saw_partial) && !atomic_load(&b->watch_saw_partial));
    if (!watch_list) {
        T_CHECK(atomic_load(&a->list_saw_partial) && !atomic_load(&b->list_saw_partial));
        T_CHECK(atomic_load(&b->list_saw_data));
        T_CHECK(atomic_load(&a->list_bytes) > 0);
    } else {
        T_EQ_INT((long)atomic_load(&a->list_bytes), 0); /* synced by the watch alone */
    }
    T_CHECK(meta_bytes > 0 && meta_bytes * 5 < full_bytes);
    fprintf(stderr, "  %s: received %zu bytes (metadata only) vs %zu (full objects)\n",
            watch_list ? "watch-list" : "list+watch", meta_bytes, full_bytes);
    env_stop(&ss);
    env_stop(&st);
}

static void test_list_watch_receives_metadata_only(void) { run_against_apiserver(false); }
static void test_watch_list_receives_metadata_only(void) { run_against_apiserver(true); }

/* ---- a server that refuses or ignores the metadata-only media type ---- */

enum mode { REFUSE_ALL, REFUSE_WATCH, IGNORE };

static const char list_full[] =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"10\"},"
    "\"items\":["
    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"8\",\"labels\":{"
    "\"x\":\"1\"},"
    "\"managedFields\":[{\"manager\":\"m\"}]},\"data\":{\"k\":\"" BIG_MARK "\"}},"
    "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"resourceVersion\":\"9\"},\"data\":{\"k\":"
    "\"" BIG_MARK "\"}}]}";
static const char list_partial[] = "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta."
                                   "k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"10\"},"
                                   "\"items\":[{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":"
                                   "\"meta.k8s.io/v1\",\"metadata\":{\"name\":\"a\","
                                   "\"namespace\":\"ns\",\"resourceVersion\":\"8\",\"labels\":{"
                                   "\"x\":\"1\"},\"managedFields\":[{\"manager\":\"m\"}]}},"
                                   "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s."
                                   "io/v1\",\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\","
                                   "\"resourceVersion\":\"9\"}}]}";
/* full objects of the watch: a changed, c added */
static const char a2[] = "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\",\"namespace\":"
                         "\"ns\","
                         "\"resourceVersion\":\"11\",\"labels\":{\"x\":\"2\"}},\"data\":{\"k\":\"" BIG_MARK "\"}}";
static const char c1[] = "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                         "\"c\",\"namespace\":\"ns\","
                         "\"resourceVersion\":\"12\"},\"data\":{}}";
static const char status_406[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":"
    "\"only the following "
    "media types are accepted: application/json\",\"reason\":\"NotAcceptable\",\"code\":406}";

static char *watch_reply(void)
{
    lop_buf_t ev = LOP_BUF_INIT, b = LOP_BUF_INIT;
    lop_buf_printf(&ev, "{\"type\":\"MODIFIED\",\"object\":%s}\n{\"type\":\"ADDED\",\"object\":%s}\n", a2, c1);
    lop_buf_printf(&b,
                   "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "%zx\r\n%s\r\n0\r\n\r\n",
                   ev.len, ev.data);
    lop_buf_free(&ev);
    return lop_buf_steal(&b);
}

static void h_server(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b, fs_reply_t *out)
{
    enum mode mode = *(enum mode *)s->ud;
    bool watch = strstr(p, "watch=true") != NULL;
    bool partial = strstr(h, "as=PartialObjectMetadata") != NULL;
    if (partial && (mode == REFUSE_ALL || (mode == REFUSE_WATCH && watch)))
        out->owned = fs_resp(406, "Not Acceptable", "", "application/json", status_406);
    else if (watch)
        out->owned = watch_reply();
    else
        out->owned =
            fs_resp(200, "OK", "", "application/json", partial && mode == REFUSE_WATCH ? list_partial : list_full);
}

/* The entries a client-side strip of the full objects gives: what every mode must cache. */
static void check_entries(lop_store_t *st)
{
    static const char *const full[][2] = {
        {"ns/a", a2},
        {"ns/b", "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"resourceVersion\":\"9\"},"
                 "\"data\":{}}"},
        {"ns/c", c1}};
    lop_store_stats_t ss;
    lop_store_stats(st, &ss);
    T_EQ_INT((long)ss.count, 3);
    for (size_t i = 0; i < 3; i++) {
        lop_obj_t *want = NULL, *got = lop_store_get(st, full[i][0]);
        lop_err_t err;
        T_EQ_INT(
            lop_obj_new_item(full[i][1], strlen(full[i][1]), LOP_OBJ_METADATA_ONLY, "v1", "ConfigMap", &want, &err),
            LOP_OK);
        T_CHECK(got != NULL);
        if (got && want) T_EQ_STR(got->json, want->json);
        if (got) T_EQ_STR(got->kind, "ConfigMap");
        lop_obj_unref(want);
        lop_obj_unref(got);
    }
}

static bool accept_is(const char *reqline, const char *accept)
{
    char h[300];
    snprintf(h, sizeof h, "\r\nAccept: %s\r\n", accept);
    return strstr(reqline, h) != NULL;
}

static void run_against_fake(enum mode mode)
{
    fs_server_t *s = fs_start(h_server, &mode);
    lop_rest_client_t *c = t_rest_client_port(s->port);
    T_CHECK(c != NULL);
    lop_listwatch_t *lw = lop_rest_listwatch_new_metadata(c, &cm_mapping, "ns", NULL, NULL);
    lop_listwatch_t held = *lw; /* the informer's copy shares its ud */
    lop_informer_config_t ic = {.name = "v1/configmaps+metadata",
                                .lw = lw,
                                .obj_flags = LOP_OBJ_METADATA_ONLY,
                                .api_version = "v1",
                                .kind = "ConfigMap"};
    lop_informer_t *inf = lop_informer_new(&ic, NULL);
    free(lw);
    int64_t wait = 0;
    T_EQ_INT(lop_informer_step(inf, &wait), LOP_OK); /* LIST */
    T_CHECK(lop_informer_has_synced(inf));
    T_EQ_INT(lop_informer_step(inf, &wait), LOP_OK); /* WATCH, ended by the server */
    check_entries(lop_informer_store(inf));
    lop_reflector_stats_t rs;
    lop_reflector_stats(lop_informer_reflector(inf), &rs);
    T_EQ_INT((long)rs.lists, 1); /* a refusal costs one request, not a backoff or a relist */
    T_EQ_INT((long)rs.watch_errors, 0);

    int n = fs_nreqs(s);
    char *r[4];
    for (int i = 0; i < 4; i++) r[i] = fs_req(s, i);
    switch (mode) {
    case REFUSE_ALL: /* LIST refused, LIST plain, then only plain: remembered */
        T_EQ_INT(n, 3);
        T_CHECK(r[0] && accept_is(r[0], LOP_ACCEPT_PARTIAL_LIST));
        T_CHECK(r[1] && accept_is(r[1], "application/json") && !strstr(r[1], "watch=true"));
        T_CHECK(r[2] && accept_is(r[2], "application/json") && strstr(r[2], "watch=true"));
        T_CHECK(lop_rest_listwatch_partial_refused(&held));
        break;
    case REFUSE_WATCH: /* LIST served metadata only; WATCH refused, then plain */
        T_EQ_INT(n, 3);
        T_CHECK(r[0] && accept_is(r[0], LOP_ACCEPT_PARTIAL_LIST));
        T_CHECK(r[1] && accept_is(r[1], LOP_ACCEPT_PARTIAL) && strstr(r[1], "watch=true"));
        T_CHECK(r[2] && accept_is(r[2], "application/json") && strstr(r[2], "watch=true"));
        T_CHECK(lop_rest_listwatch_partial_refused(&held));
        break;
    case IGNORE: /* full objects sent back to the metadata-only Accept: nothing to fall back from */
        T_EQ_INT(n, 2);
        T_CHECK(r[0] && accept_is(r[0], LOP_ACCEPT_PARTIAL_LIST));
        T_CHECK(r[1] && accept_is(r[1], LOP_ACCEPT_PARTIAL));
        T_CHECK(!lop_rest_listwatch_partial_refused(&held));
        break;
    }
    for (int i = 0; i < 4; i++) free(r[i]);
    T_CHECK(!lop_rest_listwatch_partial_refused(NULL));
    lop_informer_free(inf);
    lop_rest_client_free(c);
    fs_stop(s);
}

static void test_406_on_list_and_watch_falls_back_to_full_objects(void) { run_against_fake(REFUSE_ALL); }
static void test_406_on_watch_only_falls_back_for_the_watch(void) { run_against_fake(REFUSE_WATCH); }
static void test_ignored_accept_full_objects_are_stripped(void) { run_against_fake(IGNORE); }

int main(void)
{
    memset(big, 'v', sizeof big - 1);
    T_RUN(test_406_on_list_and_watch_falls_back_to_full_objects);
    T_RUN(test_406_on_watch_only_falls_back_for_the_watch);
    T_RUN(test_ignored_accept_full_objects_are_stripped);
    if (!T_SETUP("start the API server and a client", t_apiserver_client_start(&srv, &cli) == 0)) return T_DONE();
    T_RUN(test_list_watch_receives_metadata_only);
    T_RUN(test_watch_list_receives_metadata_only);
    lop_rest_client_free(cli);
    lop_apiserver_stop(srv);
    return T_DONE();
}
