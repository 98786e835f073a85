/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Leader election against the local API server (started in-process on 127.0.0.1, a free port):
 *  - the REST lease client: 404 → create → AlreadyExists; conditional update, stale rv → 409;
 *    metadata kept across updates; MicroTimes accepted by the server's strict parser;
 *  - three electors (each with its own REST client, as three replicas) sharing one Lease, fed by a
 *    real Lease watch: exactly one leader; the leader shuts down and releases → another replica
 *    leads in well under a second, although its retry period (2 s) is longer than that: the
 *    handover comes from the watch, not from polling;
 *  - Lease watches run on the dispatcher: five more cost no thread.
 * Real clock; waits are on condition variables with generous safety timeouts.
 */
#include "apiserver/apiserver.h"
#include "host/kube/client/kubeconfig.h"
#include "host/kube/leaderelection/leaderelection.h"
#include "host/kube/leaderelection/lease.h"
#include "host/kube/leaderelection/lease_watch.h"
#include "host/kube/client/rest.h"
#include "host/util/buf.h"
#include "host/util/log.h"
#include "proc_threads.h"
#include "t.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static int threads(void) { return proc_threads(); }

#define NS    "leader-test"
#define LEASE "luaop-lock"
#define N     3

static lop_apiserver_t *srv;

static lop_rest_client_t *new_rest(void)
{
    lop_rest_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = lop_xstrdup(lop_apiserver_url(srv));
    cfg.qps = -1; /* no client-side limiting in tests */
    lop_rest_client_t *c = NULL;
    lop_err_t err;
    if (lop_rest_client_new(&cfg, &c, &err) != LOP_OK) fprintf(stderr, "rest client: %s\n", err.message);
    lop_rest_config_cleanup(&cfg);
    return c;
}

static void ensure_namespace(lop_rest_client_t *rest)
{
    const char *body = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"" NS "\"}}";
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    lop_rc_t rc = lop_rest_do(rest, "POST", "/api/v1/namespaces", NULL, body, strlen(body), &resp, &err);
    T_CHECK(rc == LOP_OK || rc == LOP_EEXIST);
    lop_rest_resp_cleanup(&resp);
}

static void test_rest_lease_client(void)
{
    lop_rest_client_t *rest = new_rest();
    T_CHECK(rest != NULL);
    if (!rest) return;
    ensure_namespace(rest);
    lop_err_t err;
    T_CHECK(lop_lease_client_rest_new(rest, NS, "Bad_Name", 0, &err) == NULL);
    T_CHECK(strstr(err.message, "Bad_Name") != NULL);
    T_CHECK(lop_lease_client_rest_new(rest, "", LEASE, 0, &err) == NULL);

    lop_lease_client_t *c = lop_lease_client_rest_new(rest, NS, "codec-check", 5000, &err);
    T_CHECK(c != NULL);
    lop_lease_record_t r = LOP_LEASE_RECORD_INIT, got = LOP_LEASE_RECORD_INIT;
    char rv[LOP_LEASE_RV_MAX], rv2[LOP_LEASE_RV_MAX], rv3[LOP_LEASE_RV_MAX];
    T_EQ_INT(lop_lease_get(c, &got, rv, &err), LOP_ENOTFOUND);
    lop_lease_record_set_holder(&r, "a");
    r.lease_duration_seconds = 15;
    r.acquire_time_ns = r.renew_time_ns = INT64_C(1740823512) * LOP_NS_PER_S + 104233000;
    T_EQ_INT(lop_lease_create(c, &r, rv, &err), LOP_OK);
    T_CHECK(rv[0] != '\0');
    T_EQ_INT(lop_lease_create(c, &r, rv2, &err), LOP_EEXIST);
    T_EQ_INT(lop_lease_get(c, &got, rv2, &err), LOP_OK);
    T_EQ_STR(rv2, rv);
    T_CHECK(lop_lease_record_equal(&r, &got)); /* microseconds survive the round trip */

    /* Add a label behind the client's back; the next update must keep it. */
    const char *patch = "{\"metadata\":{\"labels\":{\"team\":\"x\"}}}";
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    T_EQ_INT(lop_rest_do(rest, "PATCH", "/apis/coordination.k8s.io/v1/namespaces/" NS "/leases/codec-check",
                         "application/merge-patch+json", patch, strlen(patch), &resp, &err),
             LOP_OK);
    lop_rest_resp_cleanup(&resp);
    T_EQ_INT(lop_lease_update(c, &r, rv, rv3, &err), LOP_ECONFLICT); /* the patch moved the rv */
    T_EQ_INT(err.code, 409);
    T_EQ_INT(lop_lease_get(c, &got, rv2, &err), LOP_OK);
    r.lease_transitions = 4;
    T_EQ_INT(lop_lease_update(c, &r, rv2, rv3, &err), LOP_OK);
    T_CHECK(strcmp(rv2, rv3) != 0);
    lop_rest_resp_init(&resp);
    T_EQ_INT(lop_rest_do(rest, "GET", "/apis/coordination.k8s.io/v1/namespaces/" NS "/leases/codec-check", NULL, NULL,
                         0, &resp, &err),
             LOP_OK);
    json_t *obj = json_loadb(resp.body.data, resp.body.len, 0, NULL);
    T_EQ_STR(json_string_value(json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), "team")),
             "x");
    T_EQ_STR(json_string_value(json_object_get(json_object_get(obj, "spec"), "renewTime")),
             "2025-03-01T10:05:12.104233Z");
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(obj, "spec"), "leaseTransitions")), 4);
    json_decref(obj);
    lop_rest_resp_cleanup(&resp);

    lop_lease_record_cleanup(&r);
    lop_lease_record_cleanup(&got);
    lop_lease_client_free(c);
    lop_rest_client_free(rest);
}

/* The Lease watch helper: invalid names refused; events delivered; a server-side end of the
 * stream (as on an API server restart) is followed by a reconnect that keeps delivering. */
static void test_lease_watch_reconnects(void)
{
    lop_rest_client_t *rest = new_rest();
    lop_err_t err;
    lop_lease_client_t *c = lop_lease_client_rest_new(rest, NS, "watch-check", 5000, &err);
    lop_elector_config_t cfg;
    lop_elector_config_defaults(&cfg);
    cfg.identity = "observer";
    cfg.client = c;
    lop_elector_t *e = lop_elector_new(&cfg, &err); /* never started: only receives events */
    T_CHECK(lop_lease_watch_start(rest, NS, "Bad/Name", e, NULL, &err) == NULL);
    T_CHECK(strstr(err.message, "Bad/Name") != NULL);
    lop_lease_watch_t *w = lop_lease_watch_start(rest, NS, "watch-check", e, NULL, &err);
    T_CHECK(w != NULL);
    if (!w) goto out;

    lop_lease_record_t r = LOP_LEASE_RECORD_INIT;
    lop_lease_record_set_holder(&r, "someone");
    r.lease_duration_seconds = 15;
    char rv[LOP_LEASE_RV_MAX], rv2[LOP_LEASE_RV_MAX];
    T_EQ_INT(lop_lease_create(c, &r, rv, &err), LOP_OK);
    T_CHECK(lop_lease_watch_wait_events(w, 1, 15 * LOP_NS_PER_S));
    /* more Lease watches cost no thread: they are tasks of the same dispatcher */
    int base = threads();
    lop_lease_watch_t *more[5];
    for (int i = 0; i < 5; i++) {
        more[i] = lop_lease_watch_start(rest, NS, "watch-check", e, NULL, &err);
        T_CHECK(more[i] != NULL);
    }
    for (int i = 0; i < 5; i++)
        if (more[i]) T_CHECK(lop_lease_watch_wait_events(more[i], 1, 15 * LOP_NS_PER_S));
    T_EQ_INT(threads(), base);
    for (int i = 0; i < 5; i++) lop_lease_watch_stop(more[i]);
    char *leader = lop_elector_leader(e);
    T_EQ_STR(leader, ""); /* not started: observations are applied by its own steps only */
    free(leader);

    lop_apiserver_close_watches(srv);
    long before = lop_lease_watch_events(w);
    r.lease_transitions = 1;
    /* The reconnect delivers the Lease again (ADDED), then this update (MODIFIED). */
    T_EQ_INT(lop_lease_update(c, &r, rv, rv2, &err), LOP_OK);
    T_CHECK(lop_lease_watch_wait_events(w, before + 1, 15 * LOP_NS_PER_S));
    lop_lease_watch_stop(w);
    lop_lease_record_cleanup(&r);
out:
    lop_elector_free(e);
    lop_lease_client_free(c);
    lop_rest_client_free(rest);
}

/* ---- three replicas ---- */

typedef struct replica {
    lop_rest_client_t *rest;
    lop_lease_client_t *lease;
    lop_elector_t *e;
    int started, stopped;
    struct timespec started_at;
} replica_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static replica_t reps[N];

static void on_started(void *ud)
{
    replica_t *r = ud;
    pthread_mutex_lock(&mu);
    r->started++;
    clock_gettime(CLOCK_MONOTONIC, &r->started_at);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void on_stopped(void *ud)
{
    replica_t *r = ud;
    pthread_mutex_lock(&mu);
    r->stopped++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static int total_started(void)
{
    int n = 0;
    for (int i = 0; i < N; i++) n += reps[i].started;
    return n;
}

/* Wait (mu held) until total_started() >= n; false after 15 s. */
static bool wait_started_locked(int n)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 15;
    int rc = 0;
    while (total_started() < n && rc == 0) rc = pthread_cond_timedwait(&cv, &mu, &ts);
    return total_started() >= n;
}

static void test_three_replicas_one_leader_fast_release_handover(void)
{
    /* Client-go's defaults: a standby polls every 2-4.4 s, so a sub-second handover must come
     * from the watch. */
    lop_rest_client_t *watch_rest = new_rest();
    lop_lease_watch_t *watches[N] = {NULL};
    for (int i = 0; i < N; i++) {
        replica_t *r = &reps[i];
        r->rest = new_rest();
        lop_err_t err;
        r->lease = lop_lease_client_rest_new(r->rest, NS, LEASE, 5000, &err);
        T_CHECK(r->lease != NULL);
        char id[32];
        snprintf(id, sizeof id, "replica-%d", i);
        lop_elector_config_t cfg;
        lop_elector_config_defaults(&cfg);
        cfg.identity = id;
        cfg.client = r->lease;
        cfg.callbacks = (lop_elector_callbacks_t){on_started, on_stopped, NULL, r};
        r->e = lop_elector_new(&cfg, &err);
        T_CHECK(r->e != NULL);
    }
    /* One Lease watch per replica, as each replica process has its own. */
    for (int i = 0; i < N; i++) {
        lop_err_t err;
        watches[i] = lop_lease_watch_start(watch_rest, NS, LEASE, reps[i].e, NULL, &err);
        T_CHECK(watches[i] != NULL);
    }
    for (int i = 0; i < N; i++) T_EQ_INT(lop_elector_start(reps[i].e), LOP_OK);

    pthread_mutex_lock(&mu);
    T_CHECK(wait_started_locked(1));
    pthread_mutex_unlock(&mu);
    /* Make sure every watch is connected (it has delivered the Lease) before the handover. */
    for (int i = 0; i < N; i++) T_CHECK(watches[i] && lop_lease_watch_wait_events(watches[i], 1, 15 * LOP_NS_PER_S));
    int leader = -1, n = 0;
    for (int i = 0; i < N; i++)
        if (lop_elector_is_leader(reps[i].e)) {
            n++;
            leader = i;
        }
    T_EQ_INT(n, 1);
    if (leader < 0) goto out;

    /* The leader shuts down: on_stopped_leading, then release. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    lop_elector_stop(reps[leader].e);
    T_EQ_INT(reps[leader].stopped, 1);
    pthread_mutex_lock(&mu);
    T_CHECK(wait_started_locked(2));
    int next = -1;
    for (int i = 0; i < N; i++)
        if (i != leader && reps[i].started) next = i;
    if (next >= 0) t1 = reps[next].started_at;
    pthread_mutex_unlock(&mu);
    T_CHECK(next >= 0);
    if (next >= 0) {
        int64_t ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        fprintf(stderr, "handover after release: %lld ms\n", (long long)ms);
        T_CHECK(ms < 1000);
        n = 0;
        for (int i = 0; i < N; i++) n += lop_elector_is_leader(reps[i].e);
        T_EQ_INT(n, 1);
        T_CHECK(lop_elector_is_leader(reps[next].e));
    }

out:
    for (int i = 0; i < N; i++) lop_elector_stop(reps[i].e);
    for (int i = 0; i < N; i++) lop_lease_watch_stop(watches[i]);
    for (int i = 0; i < N; i++) {
        lop_elector_t *e = reps[i].e;
        reps[i].e = NULL;
        lop_elector_free(e);
        lop_lease_client_free(reps[i].lease);
        lop_rest_client_free(reps[i].rest);
    }
    lop_rest_client_free(watch_rest);
}

/* ---------------------------------------------------------------------------------------- */
/*
 * Replica mode, for tests/integration/leader_*.py: `test_leaderelection_rest replica --kubeconfig F
 * --identity ID [--namespace NS] [--name LEASE] [--lease-duration-ms N] [--renew-deadline-ms N]
 * [--retry-period-ms N] [--wall-skew-s N] [--on-loss exit|restart] [--no-watch] [--no-release]`
 * runs one elector as one operator replica would: its own REST client, a Lease watch, SIGTERM →
 * stop (release) and exit 0, lost in exit mode → exit 1. It prints one line per event on stdout:
 * CANDIDATE id, WATCHING id (watch connected), LEADING id, STOPPED id, NEWLEADER id holder,
 * RELEASED id, LOST id, EXIT id.
 */

typedef struct skew_clock {
    lop_clock_t base;
    int64_t skew_ns;
} skew_clock_t;

static int64_t skew_mono(const lop_clock_t *c)
{
    (void)c;
    return lop_clock_mono(&lop_clock_system);
}
static int64_t skew_wall(const lop_clock_t *c)
{
    return lop_clock_wall(&lop_clock_system) + ((const skew_clock_t *)c)->skew_ns;
}

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static char replica_id[128];

static void say(const char *what, const char *extra)
{
    pthread_mutex_lock(&out_mu);
    printf("%s %s%s%s\n", what, replica_id, extra ? " " : "", extra ? extra : "");
    fflush(stdout);
    pthread_mutex_unlock(&out_mu);
}

static void r_started(void *ud)
{
    (void)ud;
    say("LEADING", NULL);
}
static void r_stopped(void *ud)
{
    (void)ud;
    say("STOPPED", NULL);
    kill(getpid(), SIGUSR1); /* wake the main thread: it checks whether leadership is lost */
}
static void r_new_leader(void *ud, const char *id)
{
    (void)ud;
    say("NEWLEADER", id[0] ? id : "-");
}

static int replica_main(int argc, char **argv)
{
    const char *kubeconfig = NULL, *ns = "default", *name = "luaop-lock", *id = NULL;
    long lease_ms = 15000, renew_ms = 10000, retry_ms = 2000, skew_s = 0;
    bool watch = true, release = true;
    lop_elector_on_loss_t on_loss = LOP_ELECTOR_ON_LOSS_EXIT;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-watch")) {
            watch = false;
            continue;
        }
        if (!strcmp(a, "--no-release")) {
            release = false;
            continue;
        }
        if (!v) {
            fprintf(stderr, "replica: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--kubeconfig"))
            kubeconfig = v;
        else if (!strcmp(a, "--identity"))
            id = v;
        else if (!strcmp(a, "--namespace"))
            ns = v;
        else if (!strcmp(a, "--name"))
            name = v;
        else if (!strcmp(a, "--lease-duration-ms"))
            lease_ms = atol(v);
        else if (!strcmp(a, "--renew-deadline-ms"))
            renew_ms = atol(v);
        else if (!strcmp(a, "--retry-period-ms"))
            retry_ms = atol(v);
        else if (!strcmp(a, "--wall-skew-s"))
            skew_s = atol(v);
        else if (!strcmp(a, "--on-loss") && !strcmp(v, "restart"))
            on_loss = LOP_ELECTOR_ON_LOSS_RESTART;
        else if (!strcmp(a, "--on-loss") && !strcmp(v, "exit"))
            on_loss = LOP_ELECTOR_ON_LOSS_EXIT;
        else {
            fprintf(stderr, "replica: unknown option %s\n", a);
            return 2;
        }
    }
    if (!kubeconfig || !id) {
        fprintf(stderr, "replica: --kubeconfig and --identity are required\n");
        return 2;
    }
    snprintf(replica_id, sizeof replica_id, "%s", id);

    /* Signals are taken by sigwait in this thread only. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    lop_err_t err;
    lop_rest_config_t rc_cfg;
    memset(&rc_cfg, 0, sizeof rc_cfg);
    const char *paths[1] = {kubeconfig};
    if (lop_kubeconfig_load_files(paths, 1, NULL, NULL, &rc_cfg, &err) != LOP_OK) {
        fprintf(stderr, "replica: %s\n", err.message);
        return 2;
    }
    rc_cfg.qps = -1;
    lop_rest_config_t rc_cfg2;
    memset(&rc_cfg2, 0, sizeof rc_cfg2);
    if (lop_kubeconfig_load_files(paths, 1, NULL, NULL, &rc_cfg2, &err) != LOP_OK) {
        fprintf(stderr, "replica: %s\n", err.message);
        return 2;
    }
    rc_cfg2.qps = -1;
    lop_rest_client_t *rest = NULL, *watch_rest = NULL;
    if (lop_rest_client_new(&rc_cfg, &rest, &err) != LOP_OK ||
        lop_rest_client_new(&rc_cfg2, &watch_rest, &err) != LOP_OK) {
        fprintf(stderr, "replica: %s\n", err.message);
        return 2;
    }
    lop_rest_config_cleanup(&rc_cfg);
    lop_rest_config_cleanup(&rc_cfg2);
    lop_lease_client_t *lease = lop_lease_client_rest_new(rest, ns, name, renew_ms, &err);
    if (!lease) {
        fprintf(stderr, "replica: %s\n", err.message);
        return 2;
    }

    skew_clock_t clock = {{skew_mono, skew_wall, false}, (int64_t)skew_s * LOP_NS_PER_S};
    lop_elector_config_t cfg;
    lop_elector_config_defaults(&cfg);
    cfg.identity = id;
    cfg.client = lease;
    cfg.clock = &clock.base;
    cfg.lease_duration_ns = lease_ms * LOP_NS_PER_MS;
    cfg.renew_deadline_ns = renew_ms * LOP_NS_PER_MS;
    cfg.retry_period_ns = retry_ms * LOP_NS_PER_MS;
    cfg.release_on_cancel = release;
    cfg.on_loss = on_loss;
    cfg.callbacks = (lop_elector_callbacks_t){r_started, r_stopped, r_new_leader, NULL};
    lop_elector_t *e = lop_elector_new(&cfg, &err);
    if (!e) {
        fprintf(stderr, "replica: %s\n", err.message);
        return 2;
    }

    lop_lease_watch_t *lw = NULL;
    if (watch) {
        lw = lop_lease_watch_start(watch_rest, ns, name, e, NULL, &err);
        if (!lw) {
            fprintf(stderr, "replica: %s\n", err.message);
            return 2;
        }
    }
    say("CANDIDATE", NULL);
    if (lop_elector_start(e) != LOP_OK) {
        fprintf(stderr, "replica: elector did not start\n");
        return 2;
    }
    if (lw && lop_lease_watch_wait_events(lw, 1, 10 * LOP_NS_PER_S)) say("WATCHING", NULL);
    int code = 0;
    for (;;) {
        int sig = 0;
        sigwait(&set, &sig);
        if (sig == SIGUSR1) {
            if (lop_elector_lost(e)) {
                say("LOST", NULL);
                code = 1;
                break;
            }
            continue;
        }
        break; /* SIGTERM / SIGINT: shut down cleanly */
    }
    lop_elector_stop(e);
    if (lop_elector_stats(e).releases > 0) say("RELEASED", NULL);
    lop_lease_watch_stop(lw);
    lop_elector_free(e);
    lop_lease_client_free(lease);
    lop_rest_client_free(watch_rest);
    lop_rest_client_free(rest);
    say("EXIT", NULL);
    return code;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "replica") == 0) return replica_main(argc, argv);
    lop_log_setup(LOP_LOG_WARN, LOP_LOG_TEXT);
    lop_apiserver_opts_t opts;
    memset(&opts, 0, sizeof opts);
    lop_err_t err;
    if (lop_apiserver_start(&opts, &srv, &err) != LOP_OK) {
        fprintf(stderr, "cannot start the local API server: %s\n", err.message);
        return 1;
    }
    T_RUN(test_rest_lease_client);
    T_RUN(test_lease_watch_reconnects);
    T_RUN(test_three_replicas_one_leader_fast_release_handover);
    lop_apiserver_stop(srv);
    return T_DONE();
}
