/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Informers over HTTP/2 without a real cluster (issue 19 part 9): twelve ConfigMap informers
 * (lop_rest_listwatch_new + lop_informer_new) on one REST client that reaches the local API server
 * through nghttpx (nghttpx_env.h: TLS and h2 to the client, HTTP/1.1 to the server). In order:
 *
 *  1. the twelve lists and watches and the writes beside them share one TCP connection;
 *  2. nghttpx stopped (SIGSTOP to its group): the dead-connection probe (read-idle 1 s, answer
 *     within 1 s: HTTP2_READ_IDLE_TIMEOUT_SECONDS / HTTP2_PING_TIMEOUT_SECONDS, which the REST
 *     config cannot pass) closes the connection, every reflector's watch fails and backs off once
 *     (800 ms to 1.6 s, its first backoff); nghttpx continued, each re-watches from its
 *     resourceVersion (no relist) over one fresh connection — the dead one is never used again —
 *     and the next object reaches all twelve;
 *  3. nghttpx reloaded (SIGHUP): its old worker sends GOAWAY; the watches on that connection go on
 *     (the next object reaches all twelve through them, no relist, no re-watch) while new requests
 *     take a fresh connection; when the API server then ends every watch cleanly, each re-watches
 *     at once (no backoff) from its resourceVersion on the fresh connection, the old connection
 *     closes with its last stream, and the next object reaches all twelve.
 *
 * Each step checks every informer's store and handler counts exactly (which objects, how many
 * adds; no update or delete) and every reflector's list/watch/backoff counters. Waits: on a
 * condition variable signalled by the handlers and by the REST client's observer (each ended
 * attempt, a failed watch included); reflector stats and connection counters signal nothing, so
 * the wait re-checks them every 20 ms; each wait is capped at 60 s so a bug fails the test
 * instead of hanging it. Nothing sleeps; the only real time spent is the probe's 2 s and one
 * backoff.
 */
#include "apiserver/apiserver.h"
#include "host/kube/cache/informer.h"
#include "host/kube/cache/rest_listwatch.h"
#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"
#include "host/kube/client/transport.h"
#include "host/util/clock.h"
#include "nghttpx_env.h"
#include "t.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NINF     12
#define MAX_OBJS 8
#define WAIT_CAP (60 * LOP_NS_PER_S)
#define RECHECK  (20 * LOP_NS_PER_MS)

static lop_apiserver_t *srv;
static t_nghttpx_t px;
static lop_rest_client_t *cli;
static lop_transport_t *tr; /* cli's, for its connection counters */
static const lop_rest_mapping_t cm_mapping = {"", "v1", "configmaps", "ConfigMap", true};

/* Handler counts of one informer; under mu. */
typedef struct inf {
    lop_informer_t *inf;
    int adds, updates, deletes;
} inf_t;

static inf_t infs[NINF];
static bool started; /* step 1 started the informers */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond; /* lop_cond_init: CLOCK_MONOTONIC for lop_clock_wait_until */
static int attempts_ended;  /* REST attempts the observer saw end; under mu */

/* The objects every store must hold, in creation order. */
static const char *objs[MAX_OBJS];
static int nobjs;

static void bump(int *what)
{
    pthread_mutex_lock(&mu);
    (*what)++;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
}
static void h_add(void *ud, lop_obj_t *o)
{
    (void)o;
    bump(&((inf_t *)ud)->adds);
}
static void h_upd(void *ud, lop_obj_t *old, lop_obj_t *o)
{
    (void)old, (void)o;
    bump(&((inf_t *)ud)->updates);
}
static void h_del(void *ud, lop_obj_t *o, bool tomb)
{
    (void)o, (void)tomb;
    bump(&((inf_t *)ud)->deletes);
}

/* Every REST attempt's end (a watch's too, when its stream fails): wakes the waits. */
static void observe(void *ud, const char *method, int code, const char *host, int64_t duration_ns)
{
    (void)ud, (void)method, (void)code, (void)host, (void)duration_ns;
    bump(&attempts_ended);
}

/* Until pred() holds (called with mu held), re-checked on every signal and every 20 ms; false
 * after 60 s. */
static bool wait_for(bool (*pred)(void))
{
    const lop_clock_t *c = &lop_clock_system;
    int64_t cap = lop_clock_mono(c) + WAIT_CAP;
    pthread_mutex_lock(&mu);
    bool ok;
    while (!(ok = pred())) {
        int64_t now = lop_clock_mono(c);
        if (now >= cap) break;
        lop_clock_wait_until(c, &cond, &mu, now + RECHECK < cap ? now + RECHECK : cap);
    }
    pthread_mutex_unlock(&mu);
    return ok;
}

static lop_reflector_stats_t stats(int i)
{
    lop_reflector_stats_t rs;
    lop_reflector_stats(lop_informer_reflector(infs[i].inf), &rs);
    return rs;
}

static void create_cm(const char *name)
{
    char body[256];
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"}}", name);
    lop_err_t err;
    lop_rc_t rc =
        lop_rest_do(cli, "POST", "/api/v1/namespaces/default/configmaps", NULL, body, strlen(body), NULL, &err);
    if (rc != LOP_OK) fprintf(stderr, "create %s: %s\n", name, err.message);
    T_EQ_INT(rc, LOP_OK);
    if (nobjs < MAX_OBJS) objs[nobjs++] = name;
}

/* Every informer has an add for each object created so far. */
static bool all_added(void)
{
    for (int i = 0; i < NINF; i++)
        if (infs[i].adds < nobjs) return false;
    return true;
}

static bool all_synced_and_added(void)
{
    for (int i = 0; i < NINF; i++)
        if (!lop_informer_has_synced(infs[i].inf)) return false;
    return all_added();
}

/* Every store holds exactly objs[], each delivered as one add (no update, no delete). */
static void check_stores(void)
{
    for (int i = 0; i < NINF; i++) {
        pthread_mutex_lock(&mu); /* not held while reading the store (a handler may be waiting for it) */
        inf_t h = infs[i];
        pthread_mutex_unlock(&mu);
        T_EQ_INT(h.adds, nobjs);
        T_EQ_INT(h.updates, 0);
        T_EQ_INT(h.deletes, 0);
        lop_store_t *st = lop_informer_store(h.inf);
        lop_store_stats_t ss;
        lop_store_stats(st, &ss);
        T_EQ_INT(ss.count, nobjs);
        for (int k = 0; k < nobjs; k++) {
            char key[128];
            snprintf(key, sizeof key, "default/%s", objs[k]);
            lop_obj_t *o = lop_store_get(st, key);
            if (!o) fprintf(stderr, "informer %d: %s missing\n", i, key);
            T_CHECK(o != NULL);
            lop_obj_unref(o);
        }
    }
}

/* Counters each step compares against: the reflectors' stats when the step began. */
static lop_reflector_stats_t before[NINF];
static void stats_mark(void)
{
    for (int i = 0; i < NINF; i++) before[i] = stats(i);
}

/* Every reflector: lists, watches and backoffs exactly so many more than at stats_mark; no 410. */
static void check_reflectors(int more_watches, int more_backoffs)
{
    for (int i = 0; i < NINF; i++) {
        lop_reflector_stats_t rs = stats(i);
        T_EQ_INT(rs.lists, 1); /* the first sync only: never a relist */
        T_EQ_INT(rs.relists_410, 0);
        T_EQ_INT(rs.watches, before[i].watches + (uint64_t)more_watches);
        T_EQ_INT(rs.watch_errors, before[i].watch_errors + (uint64_t)more_backoffs);
        T_EQ_INT(rs.malformed, 0);
    }
}

/* 1. Twelve informers synced over one connection; a new object reaches all twelve. */
static void test_twelve_informers_share_one_connection(void)
{
    create_cm("cm-0");
    create_cm("cm-1");
    for (int i = 0; i < NINF; i++) {
        lop_listwatch_t *lw = lop_rest_listwatch_new(cli, &cm_mapping, "default", NULL, NULL);
        lop_informer_config_t cfg = {.name = "v1/configmaps", .lw = lw};
        lop_err_t err;
        infs[i].inf = lop_informer_new(&cfg, &err);
        free(lw); /* the informer copied it and owns its ud now */
        T_CHECK(infs[i].inf != NULL);
        if (!infs[i].inf) return;
        lop_reflector_handlers_t h = {h_add, h_upd, h_del, &infs[i], NULL};
        lop_informer_add_handler(infs[i].inf, &h);
        T_EQ_INT(lop_informer_start(infs[i].inf, &err), LOP_OK);
    }
    started = true;
    T_CHECK(wait_for(all_synced_and_added));
    create_cm("cm-2"); /* through the watches */
    T_CHECK(wait_for(all_added));
    check_stores();
    for (int i = 0; i < NINF; i++) {
        lop_reflector_stats_t rs = stats(i);
        T_EQ_INT(rs.lists, 1);
        T_EQ_INT(rs.watches, 1);
        T_EQ_INT(rs.watch_errors, 0);
        T_EQ_INT(rs.events, 1);
    }
    T_EQ_INT(lop_transport_connects(tr), 1);
    T_EQ_INT(lop_transport_open_connections(tr), 1);
    T_EQ_INT(lop_transport_dead_connections(tr), 0);
}

/* The probe declared the connection dead and every reflector's watch failed (one backoff each). */
static bool all_watches_failed(void)
{
    if (lop_transport_dead_connections(tr) < 1) return false;
    for (int i = 0; i < NINF; i++)
        if (stats(i).watch_errors < before[i].watch_errors + 1) return false;
    return true;
}

/* 2. nghttpx stops answering: found dead by the probe, every watch resumes from its
 * resourceVersion on one fresh connection once nghttpx continues. */
static void test_dead_connection_every_watch_resumes(void)
{
    if (!started) return;
    stats_mark();
    t_nghttpx_pause(&px);
    bool failed = wait_for(all_watches_failed);
    t_nghttpx_resume(&px);
    T_CHECK(failed);
    /* While nghttpx was stopped, a re-watch whose backoff ended waited for the new connection's
     * TLS handshake, which nghttpx answers now. The object is created after it: the re-watches
     * from each resourceVersion see it however late they start. */
    create_cm("cm-3");
    T_CHECK(wait_for(all_added));
    check_stores();
    check_reflectors(1, 1);
    for (int i = 0; i < NINF; i++) T_EQ_INT(stats(i).events, before[i].events + 1);
    T_EQ_INT(lop_transport_dead_connections(tr), 1);
    T_EQ_INT(lop_transport_connects(tr), 2); /* one fresh connection for all: the dead one was not reused */
    T_EQ_INT(lop_transport_open_connections(tr), 1);
}

static bool all_rewatched(void)
{
    for (int i = 0; i < NINF; i++)
        if (stats(i).watches < before[i].watches + 1) return false;
    return true;
}

static bool one_connection_open(void) { return lop_transport_open_connections(tr) == 1; }

/* 3. nghttpx reloads: GOAWAY. The watches on the old connection go on, new requests use a fresh
 * one; the watches, ended cleanly by the server, resume from their resourceVersion on the fresh
 * connection, and the old one closes. */
static void test_goaway_on_reload_watches_resume(void)
{
    if (!started) return;
    stats_mark();
    long connects = lop_transport_connects(tr);
    t_nghttpx_reload(&px);
    /* The GOAWAY reaches the client some time after the signal: a request before that still goes
     * on the old connection (or is refused there and sent again on a new one). */
    int gets = 0;
    while (lop_transport_connects(tr) == connects && gets < 10000) {
        lop_err_t err;
        lop_rc_t rc = lop_rest_do(cli, "GET", "/version", NULL, NULL, 0, NULL, &err);
        if (rc != LOP_OK) fprintf(stderr, "GET /version: %s\n", err.message);
        T_EQ_INT(rc, LOP_OK);
        gets++;
    }
    T_EQ_INT(lop_transport_connects(tr), connects + 1);
    create_cm("cm-4"); /* on the new connection; its event comes on the old one */
    T_CHECK(wait_for(all_added));
    check_stores();
    check_reflectors(0, 0); /* the watches on the old connection went on */
    T_EQ_INT(lop_transport_open_connections(tr), 2);

    /* Every watch ends cleanly (the server ends the streams, as on an API server restart) */
    stats_mark();
    lop_apiserver_close_watches(srv);
    T_CHECK(wait_for(all_rewatched));
    T_CHECK(wait_for(one_connection_open)); /* the old connection went with its last stream */
    create_cm("cm-5");
    T_CHECK(wait_for(all_added));
    check_stores();
    check_reflectors(1, 0); /* one re-watch each, at once: a clean end after events is no failure */
    T_EQ_INT(lop_transport_connects(tr), connects + 1); /* the re-watches took the fresh connection */
    T_EQ_INT(lop_transport_open_connections(tr), 1);
    T_EQ_INT(lop_transport_dead_connections(tr), 1);
}

int main(void)
{
    lop_cond_init(&cond);
    /* the dead-connection probe on a short fuse, read when the client's transport is made */
    setenv("HTTP2_READ_IDLE_TIMEOUT_SECONDS", "1", 1);
    setenv("HTTP2_PING_TIMEOUT_SECONDS", "1", 1);
    lop_err_t err;
    if (!T_SETUP("start the API server", lop_apiserver_start(NULL, &srv, &err) == LOP_OK)) return T_DONE();
    if (T_SETUP("start nghttpx in front of it", t_nghttpx_start(&px, lop_apiserver_port(srv), NULL))) {
        lop_rest_config_t cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.server = strdup(px.url);
        cfg.ca_pem = strdup(px.ca_pem);
        cfg.qps = -1; /* no client-side rate limit */
        lop_rc_t rc = lop_rest_client_new(&cfg, &cli, &err);
        lop_rest_config_cleanup(&cfg);
        if (rc != LOP_OK) fprintf(stderr, "REST client: %s\n", err.message);
        if (T_SETUP("a REST client for nghttpx", rc == LOP_OK)) {
            tr = lop_rest_client_transport(cli);
            lop_rest_client_set_observer(cli, observe, NULL);
            T_RUN(test_twelve_informers_share_one_connection);
            T_RUN(test_dead_connection_every_watch_resumes);
            T_RUN(test_goaway_on_reload_watches_resume);
            for (int i = 0; i < NINF; i++) lop_informer_free(infs[i].inf);
            lop_rest_client_free(cli);
        }
    }
    t_nghttpx_stop(&px);
    lop_apiserver_stop(srv);
    return T_DONE();
}
