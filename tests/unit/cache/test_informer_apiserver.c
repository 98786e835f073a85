/* SPDX-License-Identifier: Apache-2.0 */
/* A real informer (reflector + store over lop_rest_listwatch_new) against the local API server
 * started in-process on 127.0.0.1 port 0: list+watch sync, a 410 relist after a gap during which
 * an object was deleted (the delete is delivered), 10,000 rapid updates of 100 objects ending
 * in the right final state, and 30 informers on the cache dispatcher costing no thread more than
 * one. Waits are on a condition variable signalled by the handlers (with a
 * generous real-time cap so a bug fails the test instead of hanging it), never sleeps. */
#include "apiserver/apiserver.h"
#include "host/util/dispatcher.h"
#include "host/kube/cache/informer.h"
#include "host/kube/cache/rest_listwatch.h"
#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"
#include "proc_threads.h"
#include "t.h"
#include "apiserver_client.h"

#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static lop_apiserver_t *srv;
static lop_rest_client_t *cli;
static const lop_rest_mapping_t cm_mapping = {"", "v1", "configmaps", "ConfigMap", true};

typedef struct rec {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int adds, updates, deletes, tombstones;
    char last_deleted[64];
    bool last_delete_tombstone;
} rec_t;

static void bump(rec_t *r, int *what)
{
    pthread_mutex_lock(&r->mu);
    (*what)++;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
}
static void h_add(void *ud, lop_obj_t *o)
{
    rec_t *r = ud;
    bump(r, &r->adds);
}
static void h_upd(void *ud, lop_obj_t *old, lop_obj_t *o)
{
    rec_t *r = ud;
    bump(r, &r->updates);
}
static void h_del(void *ud, lop_obj_t *o, bool tomb)
{
    rec_t *r = ud;
    pthread_mutex_lock(&r->mu);
    snprintf(r->last_deleted, sizeof r->last_deleted, "%s", o->name);
    r->last_delete_tombstone = tomb;
    r->tombstones += tomb;
    pthread_mutex_unlock(&r->mu);
    bump(r, &r->deletes);
}

/* Wait until pred(arg) holds, re-checking whenever a handler fires; false after 60 s. */
static bool wait_for(rec_t *r, bool (*pred)(void *), void *arg)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 60;
    pthread_mutex_lock(&r->mu);
    bool ok;
    while (!(ok = pred(arg))) {
        struct timespec tick; /* re-check at least every 50 ms: pred may read the store */
        clock_gettime(CLOCK_REALTIME, &tick);
        if (tick.tv_sec > dl.tv_sec) break;
        tick.tv_nsec += 50 * 1000 * 1000;
        if (tick.tv_nsec >= 1000000000L) {
            tick.tv_sec++;
            tick.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&r->cond, &r->mu, &tick);
    }
    pthread_mutex_unlock(&r->mu);
    return ok;
}

static lop_rc_t req(const char *method, const char *path, const char *ctype, const char *body)
{
    lop_err_t err;
    lop_rc_t rc = lop_rest_do(cli, method, path, ctype, body, body ? strlen(body) : 0, NULL, &err);
    if (rc != LOP_OK) fprintf(stderr, "%s %s: %s\n", method, path, err.message);
    return rc;
}

static void create_cm(const char *name, const char *v)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},\"data\":{\"v\":\"%s\"}}",
             name, v);
    T_EQ_INT(req("POST", "/api/v1/namespaces/default/configmaps", NULL, body), LOP_OK);
}

static void patch_cm(const char *name, const char *v)
{
    char path[128], body[128];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/configmaps/%s", name);
    snprintf(body, sizeof body, "{\"data\":{\"v\":\"%s\"}}", v);
    T_EQ_INT(req("PATCH", path, "application/merge-patch+json", body), LOP_OK);
}

static void delete_cm(const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/configmaps/%s", name);
    T_EQ_INT(req("DELETE", path, NULL, NULL), LOP_OK);
}

/* When set, informers sync by watch-list (sendInitialEvents) instead of LIST. */
static bool g_watch_list;

typedef struct env {
    rec_t rec;
    lop_informer_t *inf;
} env_t;

static void env_start(env_t *e)
{
    memset(e, 0, sizeof *e);
    pthread_mutex_init(&e->rec.mu, NULL);
    pthread_cond_init(&e->rec.cond, NULL);
    lop_listwatch_t *lw = lop_rest_listwatch_new(cli, &cm_mapping, "default", NULL, NULL);
    lop_informer_config_t cfg = {.name = "v1/configmaps", .lw = lw, .watch_list = g_watch_list};
    e->inf = lop_informer_new(&cfg, NULL);
    free(lw); /* the informer copied it and owns its ud now */
    lop_reflector_handlers_t h = {h_add, h_upd, h_del, &e->rec, NULL};
    lop_informer_add_handler(e->inf, &h);
    T_EQ_INT(lop_informer_start(e->inf, NULL), LOP_OK);
}

static void env_stop(env_t *e)
{
    lop_informer_free(e->inf); /* stops, frees the listwatch */
    pthread_mutex_destroy(&e->rec.mu);
    pthread_cond_destroy(&e->rec.cond);
}

static bool synced(void *arg) { return lop_informer_has_synced(((env_t *)arg)->inf); }

typedef struct cnt {
    env_t *e;
    int *field, want;
} cnt_t;
static bool reached(void *arg)
{
    cnt_t *c = arg;
    return *c->field >= c->want;
}

static size_t store_count(env_t *e)
{
    lop_store_stats_t st;
    lop_store_stats(lop_informer_store(e->inf), &st);
    return st.count;
}

static void test_list_watch_sync(void)
{
    lop_apiserver_reset(srv);
    create_cm("a", "1");
    create_cm("b", "1");
    create_cm("c", "1");
    env_t e;
    env_start(&e);
    T_CHECK(wait_for(&e.rec, synced, &e));
    T_EQ_INT(store_count(&e), 3);
    T_EQ_INT(e.rec.adds, 3);
    lop_reflector_stats_t rs;
    lop_reflector_stats(lop_informer_reflector(e.inf), &rs);
    /* the local API server serves watch-list: the sync needs no LIST at all */
    T_EQ_INT(rs.lists, g_watch_list ? 0 : 1);
    T_EQ_INT(rs.watch_lists, g_watch_list ? 1 : 0);
    T_EQ_INT(rs.watch_list_fallbacks, 0);
    create_cm("d", "1");
    cnt_t c = {&e, &e.rec.adds, 4};
    T_CHECK(wait_for(&e.rec, reached, &c));
    patch_cm("a", "2");
    c = (cnt_t){&e, &e.rec.updates, 1};
    T_CHECK(wait_for(&e.rec, reached, &c));
    delete_cm("b");
    c = (cnt_t){&e, &e.rec.deletes, 1};
    T_CHECK(wait_for(&e.rec, reached, &c));
    T_EQ_STR(e.rec.last_deleted, "b");
    T_CHECK(!e.rec.last_delete_tombstone);
    T_EQ_INT(store_count(&e), 3);
    lop_obj_t *a = lop_store_get(lop_informer_store(e.inf), "default/a");
    T_CHECK(a && strstr(a->json, "\"v\":\"2\"") != NULL);
    T_CHECK(a && a->uid[0] != '\0');
    lop_obj_unref(a);
    env_stop(&e);
}

static void test_410_relist_delivers_delete_from_the_gap(void)
{
    lop_apiserver_reset(srv);
    create_cm("x", "1");
    create_cm("y", "1");
    env_t e;
    env_start(&e);
    T_CHECK(wait_for(&e.rec, synced, &e));
    /* the gap: nothing reaches the informer while x is deleted; then history is compacted and
     * the stream ends, so the re-watch from our RV is answered with the 410 ERROR event */
    lop_apiserver_stall_watches(srv, true);
    delete_cm("x");
    lop_apiserver_compact(srv);
    lop_apiserver_close_watches(srv);
    lop_apiserver_stall_watches(srv, false);
    cnt_t c = {&e, &e.rec.deletes, 1};
    T_CHECK(wait_for(&e.rec, reached, &c));
    T_EQ_STR(e.rec.last_deleted, "x");
    T_CHECK(e.rec.last_delete_tombstone); /* learnt from the relist, not from a DELETED event */
    lop_reflector_stats_t rs;
    lop_reflector_stats(lop_informer_reflector(e.inf), &rs);
    T_CHECK(rs.relists_410 >= 1);
    /* the relist is a sync whichever way it was made (luaop_relists_total counts these) */
    T_CHECK(lop_reflector_stats_syncs(&rs) >= 2);
    T_EQ_INT(rs.lists, g_watch_list ? 0 : lop_reflector_stats_syncs(&rs));
    T_EQ_INT(store_count(&e), 1);
    env_stop(&e);
}

typedef struct final_ctx {
    env_t *e;
} final_ctx_t;

static bool all_final(void *arg)
{
    env_t *e = ((final_ctx_t *)arg)->e;
    lop_obj_list_t l;
    lop_store_list(lop_informer_store(e->inf), &l);
    bool ok = l.n == 100;
    for (size_t i = 0; ok && i < l.n; i++) ok = strstr(l.items[i]->json, "\"v\":\"99\"") != NULL;
    lop_obj_list_free(&l);
    return ok;
}

static void test_ten_thousand_rapid_updates_end_in_the_right_state(void)
{
    lop_apiserver_reset(srv);
    char name[16];
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "o%d", i);
        create_cm(name, "init");
    }
    env_t e;
    env_start(&e);
    T_CHECK(wait_for(&e.rec, synced, &e));
    char v[16];
    for (int round = 0; round < 100; round++) {
        snprintf(v, sizeof v, "%d", round);
        for (int i = 0; i < 100; i++) {
            snprintf(name, sizeof name, "o%d", i);
            patch_cm(name, v);
        }
    }
    final_ctx_t f = {&e};
    T_CHECK(wait_for(&e.rec, all_final, &f));
    /* and the cache agrees with the server's own list, object by object */
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_do(cli, "GET", "/api/v1/namespaces/default/configmaps", NULL, NULL, 0, &resp, &err), LOP_OK);
    json_t *list = json_loadb(resp.body.data, resp.body.len, 0, NULL);
    json_t *items = json_object_get(list, "items"), *it;
    size_t idx;
    T_EQ_INT(json_array_size(items), 100);
    json_array_foreach(items, idx, it)
    {
        json_t *m = json_object_get(it, "metadata");
        char key[128];
        snprintf(key, sizeof key, "default/%s", json_string_value(json_object_get(m, "name")));
        lop_obj_t *o = lop_store_get(lop_informer_store(e.inf), key);
        T_CHECK(o != NULL);
        if (o) T_EQ_STR(o->rv, json_string_value(json_object_get(m, "resourceVersion")));
        lop_obj_unref(o);
    }
    json_decref(list);
    lop_rest_resp_cleanup(&resp);
    T_EQ_INT(e.rec.deletes, 0);
    env_stop(&e);
}

static int threads(void) { return proc_threads(); }

#define NINF 30

static env_t many[NINF];
static int many_n;

static bool all_have(void *arg)
{
    int want = *(int *)arg; /* called with many[0].rec.mu held; the others' counters under theirs */
    for (int i = 0; i < many_n; i++) {
        if (i) pthread_mutex_lock(&many[i].rec.mu);
        bool ok = lop_informer_has_synced(many[i].inf) && many[i].rec.adds >= want;
        if (i) pthread_mutex_unlock(&many[i].rec.mu);
        if (!ok) return false;
    }
    return true;
}

/* Wait until every informer of many[] is synced with at least want adds (handlers of different
 * informers signal different conds: re-checked every 50 ms on the first one's). */
static bool wait_all(int want) { return wait_for(&many[0].rec, all_have, &want); }

/* Issue 19 part 1 over the real REST listwatch and transport: 30 informers (each a LIST and a
 * WATCH on the local API server) run on the shared cache dispatcher — the process has as many
 * threads with 30 as with 1, and an object created afterwards reaches all 30 through their
 * watches. */
static void test_thirty_informers_no_more_threads(void)
{
    lop_apiserver_reset(srv);
    create_cm("a", "1");
    many_n = 1;
    env_start(&many[0]);
    T_CHECK(wait_all(1));
    int base = threads();
    for (many_n = 1; many_n < NINF; many_n++) env_start(&many[many_n]);
    T_CHECK(wait_all(1));
    T_EQ_INT(threads(), base);
    create_cm("b", "1");
    T_CHECK(wait_all(2));
    T_EQ_INT(threads(), base);
    for (int i = 0; i < NINF; i++) {
        lop_reflector_stats_t rs;
        lop_reflector_stats(lop_informer_reflector(many[i].inf), &rs);
        T_EQ_INT(rs.lists, 1);
        T_EQ_INT(rs.events, 1);
        T_EQ_INT(store_count(&many[i]), 2);
    }
    for (int i = NINF - 1; i >= 0; i--) env_stop(&many[i]);
    /* the last informer released the dispatcher */
    T_CHECK(proc_threads_settle(base - LOP_DISPATCHER_THREADS) <= base - LOP_DISPATCHER_THREADS);
}

int main(void)
{
    if (!T_SETUP("start the API server and a client", t_apiserver_client_start(&srv, &cli) == 0)) return T_DONE();
    for (int pass = 0; pass < 2; pass++) {
        g_watch_list = pass == 1;
        T_RUN(test_list_watch_sync);
        T_RUN(test_410_relist_delivers_delete_from_the_gap);
    }
    g_watch_list = false;
    T_RUN(test_ten_thousand_rapid_updates_end_in_the_right_state);
    T_RUN(test_thirty_informers_no_more_threads);
    lop_rest_client_free(cli);
    lop_apiserver_stop(srv);
    return T_DONE();
}
