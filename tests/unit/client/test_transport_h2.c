/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP/2 tests of the libcurl transport (host/kube/client/transport.h) without a real cluster:
 * Debian's nghttpx (nghttp2-proxy, started by nghttpx_env.h) terminates TLS and speaks h2 to the
 * client, HTTP/1.1 to the local API server behind it. Checked: twelve watches and a write share
 * one connection, and so do 110 (past libcurl's default cap of 100 streams) when the server
 * allows 200; DISABLE_HTTP2 gives one connection per watch; a connection that stops answering
 * (nghttpx SIGSTOPped) is found by the dead-connection probe, every watch on it ends with
 * LOP_HTTP_ERESET, and the next request opens a fresh connection; after a GOAWAY (nghttpx
 * reloaded) new requests open a fresh connection while the watches on the old one go on; a
 * stalled watch consumer does not hold up the other streams. The same through informers:
 * tests/unit/cache/test_informer_h2.c.
 *
 * Time: the probe's read-idle and answer timeouts are set to 300 ms, the only real time these
 * tests spend; nothing sleeps — threads wait for each other on condition variables.
 */
#include "apiserver/apiserver.h"
#include "host/kube/client/transport.h"
#include "host/util/buf.h"
#include "nghttpx_env.h"
#include "t.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NWATCH 12
/* nghttpx's SETTINGS_MAX_CONCURRENT_STREAMS (its default is 100): room for MANY_WATCHES */
#define H2_SERVER_STREAMS "200"
#define MANY_WATCHES      110 /* more than libcurl's own default cap of 100 streams per connection */

static t_nghttpx_t px;
static lop_apiserver_t *srv;

/* The API server on plain HTTP, nghttpx in front of it. */
static bool env_start(void)
{
    lop_err_t err;
    if (lop_apiserver_start(NULL, &srv, &err) != LOP_OK) {
        fprintf(stderr, "API server: %s\n", err.message);
        return false;
    }
    return t_nghttpx_start(&px, lop_apiserver_port(srv), H2_SERVER_STREAMS);
}

static void env_stop(void)
{
    t_nghttpx_stop(&px);
    lop_apiserver_stop(srv);
}

/* probe: the dead-connection probe on a short fuse (300 ms); off otherwise, so that a slow
 * machine's pause is not taken for a dead connection by tests about something else. */
static lop_transport_t *h2_transport(bool disable_http2, bool probe)
{
    lop_transport_config_t cfg = {.server = px.url,
                                  .ca_pem = px.ca_pem,
                                  .disable_http2 = disable_http2,
                                  .h2_read_idle_ms = probe ? 300 : -1,
                                  /* a live connection answers a PING well within 1 s even under
                                   * TSan on a loaded machine; 300 ms was not always enough */
                                  .h2_ping_timeout_ms = 1000};
    lop_transport_t *t = NULL;
    lop_err_t err;
    if (lop_transport_new(&cfg, &t, &err) != LOP_OK) fprintf(stderr, "transport: %s\n", err.message);
    return t;
}

/* ---- watchers ---- */

typedef struct watch {
    lop_transport_t *t;
    const char *target; /* NULL: a watch of the default namespace's ConfigMaps */
    pthread_t thr;
    pthread_mutex_t *mu;
    pthread_cond_t *cond;
    int code;
    int events; /* lines of the watch stream */
    bool stall; /* block in on_body until released */
    atomic_bool release, stop;
    lop_http_result_t res;
    bool ended;
} watch_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void w_status(void *ud, int code)
{
    watch_t *w = ud;
    pthread_mutex_lock(&mu);
    w->code = code;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
}

static int w_body(void *ud, const char *p, size_t n)
{
    watch_t *w = ud;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < n; i++) w->events += p[i] == '\n';
    pthread_cond_broadcast(&cond);
    while (w->stall && !atomic_load(&w->release)) pthread_cond_wait(&cond, &mu);
    pthread_mutex_unlock(&mu);
    return 0;
}

static int w_tick(void *ud) { return atomic_load(&((watch_t *)ud)->stop); }

static void *w_main(void *arg)
{
    watch_t *w = arg;
    lop_http_exchange_t x = {.method = "GET",
                             .target = w->target ? w->target : "/api/v1/namespaces/default/configmaps?watch=1",
                             .headers = "Accept: application/json\r\n",
                             .ud = w,
                             .on_status = w_status,
                             .on_body = w_body,
                             .on_tick = w_tick};
    lop_http_result_t r = lop_transport_exchange(w->t, &x);
    pthread_mutex_lock(&mu);
    w->res = r;
    w->ended = true;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void watches_start(watch_t *w, int n, lop_transport_t *t)
{
    for (int i = 0; i < n; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].t = t;
        pthread_create(&w[i].thr, NULL, w_main, &w[i]);
    }
    /* until every stream has its 200 */
    pthread_mutex_lock(&mu);
    for (;;) {
        int ok = 0;
        for (int i = 0; i < n; i++) ok += w[i].code == 200 || w[i].ended;
        if (ok == n) break;
        pthread_cond_wait(&cond, &mu);
    }
    pthread_mutex_unlock(&mu);
}

static void watches_stop(watch_t *w, int n)
{
    for (int i = 0; i < n; i++) atomic_store(&w[i].stop, true);
    for (int i = 0; i < n; i++) pthread_join(w[i].thr, NULL);
}

static int collect_body(void *ud, const char *p, size_t n)
{
    lop_buf_append(ud, p, n);
    return 0;
}

static lop_http_result_t request(lop_transport_t *t, const char *method, const char *target, const char *body,
                                 int *code)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_http_exchange_t x = {.method = method,
                             .target = target,
                             .headers = "Content-Type: application/json\r\nAccept: application/json\r\n",
                             .body = body,
                             .body_len = body ? strlen(body) : 0,
                             .timeout_ms = 10000,
                             .ud = &b,
                             .on_body = collect_body};
    lop_http_result_t r = lop_transport_exchange(t, &x);
    if (r != LOP_HTTP_OK) fprintf(stderr, "%s %s: %s\n", method, target, x.error);
    *code = x.code;
    lop_buf_free(&b);
    return r;
}

static void create_configmap(lop_transport_t *t, const char *name)
{
    char body[256];
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"}}", name);
    int code = 0;
    T_EQ_INT(request(t, "POST", "/api/v1/namespaces/default/configmaps", body, &code), LOP_HTTP_OK);
    T_EQ_INT(code, 201);
}

/* Until every watch but `except` saw at least `n` events. */
static void wait_events(watch_t *w, int nw, int n, int except)
{
    pthread_mutex_lock(&mu);
    for (;;) {
        int ok = 0;
        for (int i = 0; i < nw; i++) ok += i == except || w[i].events >= n || w[i].ended;
        if (ok == nw) break;
        pthread_cond_wait(&cond, &mu);
    }
    pthread_mutex_unlock(&mu);
}

/* ---- tests ---- */

/* Twelve watches and the writes beside them: one connection, every stream gets its events. */
static void test_watches_share_one_connection(void)
{
    lop_transport_t *t = h2_transport(false, false);
    T_CHECK(t != NULL);
    if (!t) return;
    watch_t w[NWATCH];
    watches_start(w, NWATCH, t);
    for (int i = 0; i < NWATCH; i++) T_EQ_INT(w[i].code, 200);
    create_configmap(t, "h2-one");
    wait_events(w, NWATCH, 1, -1);
    for (int i = 0; i < NWATCH; i++) T_CHECK(w[i].events >= 1 && !w[i].ended);
    T_EQ_INT(lop_transport_open_connections(t), 1);
    T_EQ_INT(lop_transport_connects(t), 1);
    watches_stop(w, NWATCH);
    for (int i = 0; i < NWATCH; i++) T_EQ_INT(w[i].res, LOP_HTTP_EABORTED);
    lop_transport_free(t);
}

/* More watches than libcurl's default cap of 100 streams, on a server that allows 200: still one
 * connection (the transport raises the cap as Go's http2 transport follows the server's limit).
 * A request first: the connection is up and the server's SETTINGS are in before the watches
 * start. (Without it, under load, 110 watches started at once once got 11 connections: until the
 * SETTINGS are in, the limit is presumably libcurl's initial 100 — Go's transport also assumes
 * 100 until then — and each stream past it started meanwhile opened a connection of its own.) */
static void test_more_than_100_watches_share_one_connection(void)
{
    lop_transport_t *t = h2_transport(false, false);
    T_CHECK(t != NULL);
    if (!t) return;
    int code = 0;
    T_EQ_INT(request(t, "GET", "/version", NULL, &code), LOP_HTTP_OK);
    T_EQ_INT(code, 200);
    static watch_t w[MANY_WATCHES];
    watches_start(w, MANY_WATCHES, t);
    int ok = 0;
    for (int i = 0; i < MANY_WATCHES; i++) ok += w[i].code == 200;
    T_EQ_INT(ok, MANY_WATCHES);
    create_configmap(t, "h2-many");
    wait_events(w, MANY_WATCHES, 1, -1);
    T_EQ_INT(lop_transport_open_connections(t), 1);
    T_EQ_INT(lop_transport_connects(t), 1);
    watches_stop(w, MANY_WATCHES);
    lop_transport_free(t);
}

/* DISABLE_HTTP2: HTTP/1.1, one connection per watch. */
static void test_disable_http2(void)
{
    lop_transport_t *t = h2_transport(true, false);
    T_CHECK(t != NULL);
    if (!t) return;
    watch_t w[3];
    watches_start(w, 3, t);
    T_EQ_INT(lop_transport_open_connections(t), 3);
    watches_stop(w, 3);
    lop_transport_free(t);
}

/* A consumer that stops reading pauses only its stream: the others still get their events. */
static void test_stalled_stream_does_not_block_others(void)
{
    lop_transport_t *t = h2_transport(false, false);
    T_CHECK(t != NULL);
    if (!t) return;
    watch_t w[3];
    watches_start(w, 3, t);
    pthread_mutex_lock(&mu);
    w[0].stall = true;
    pthread_mutex_unlock(&mu);
    /* far more than the stalled stream's inbox and h2 window take: 600 objects of ~4 KiB */
    char *big = lop_xmalloc(8192);
    memset(big, 'x', 4000);
    big[4000] = '\0';
    pthread_mutex_lock(&mu);
    int before = w[1].events;
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < 600; i++) {
        char body[4200];
        snprintf(
            body, sizeof body,
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"big-%d\"},\"data\":{\"x\":\"%s\"}}",
            i, big);
        int code = 0;
        T_EQ_INT(request(t, "POST", "/api/v1/namespaces/default/configmaps", body, &code), LOP_HTTP_OK);
    }
    wait_events(w, 3, before + 600, 0); /* streams 1 and 2 got all; stream 0 is still stalled */
    pthread_mutex_lock(&mu);
    T_CHECK(w[0].events < w[1].events);
    atomic_store(&w[0].release, true);
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
    wait_events(w, 3, before + 600, -1); /* and the stalled one catches up */
    pthread_mutex_lock(&mu);
    T_CHECK(w[0].events >= before + 600);
    pthread_mutex_unlock(&mu);
    watches_stop(w, 3);
    free(big);
    lop_transport_free(t);
}

/* Reload nghttpx (its old worker sends GOAWAY) and send GETs until t has opened its second
 * connection. The GOAWAY reaches the I/O thread some time after the signal: each GET before that
 * still goes on the old connection (or is refused there and sent again on a new one). */
static void reload_until_fresh_connection(lop_transport_t *t)
{
    t_nghttpx_reload(&px);
    int code = 0, gets = 0;
    while (lop_transport_connects(t) < 2 && gets < 10000) {
        T_EQ_INT(request(t, "GET", "/version", NULL, &code), LOP_HTTP_OK);
        T_EQ_INT(code, 200);
        gets++;
    }
    T_EQ_INT(lop_transport_connects(t), 2);
}

/* nghttpx reloads (SIGHUP): its old worker sends GOAWAY and serves the streams it has until they
 * end. New requests go to a fresh connection (never the one that said GOAWAY); the watches on the
 * old one are not broken by it and keep getting events; once they end, the old connection closes,
 * and watches started again share the new one. */
static void test_goaway_on_reload(void)
{
    lop_transport_t *t = h2_transport(false, false);
    T_CHECK(t != NULL);
    if (!t) return;
    watch_t w[NWATCH];
    watches_start(w, NWATCH, t);
    T_EQ_INT(lop_transport_connects(t), 1);
    reload_until_fresh_connection(t);
    int code = 0;
    create_configmap(t, "h2-after-goaway");
    wait_events(w, NWATCH, 1, -1);
    pthread_mutex_lock(&mu);
    for (int i = 0; i < NWATCH; i++) {
        T_CHECK(!w[i].ended);
        T_CHECK(w[i].events >= 1);
    }
    pthread_mutex_unlock(&mu);
    watches_stop(w, NWATCH);
    for (int i = 0; i < NWATCH; i++) T_EQ_INT(w[i].res, LOP_HTTP_EABORTED);
    T_EQ_INT(request(t, "GET", "/version", NULL, &code), LOP_HTTP_OK);
    T_EQ_INT(lop_transport_open_connections(t), 1); /* the old one went with its last stream */
    watches_start(w, NWATCH, t);
    for (int i = 0; i < NWATCH; i++) T_EQ_INT(w[i].code, 200);
    T_EQ_INT(lop_transport_connects(t), 2);
    watches_stop(w, NWATCH);
    lop_transport_free(t);
}

/* The processes whose parent is nghttpx's master (its workers), up to cap; how many. */
static int workers(pid_t *out, int cap)
{
    int n = 0;
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && (e = readdir(d)) && n < cap;) {
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = e->d_name[0] >= '0' && e->d_name[0] <= '9' ? fopen(path, "r") : NULL;
        if (!f) continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        const char *rp = strrchr(buf, ')'); /* "pid (comm) state ppid ..." */
        char state;
        int ppid;
        if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == px.pid) out[n++] = atoi(e->d_name);
    }
    if (d) closedir(d);
    return n;
}

/* After a GOAWAY the old connection takes no new stream, so a probe for it rides another
 * connection; that answer must not count for the old one. nghttpx reloads (the old worker keeps
 * the watches' connection after its GOAWAY), then the old worker stops answering: the watches on
 * its connection must end (ERESET) once the probe gives up on it, while the new connection
 * stays. Bounded by a 30 s cap: a probe that takes another connection's answer for the old
 * one's never ends them. */
static void test_probe_of_a_connection_after_goaway(void)
{
    lop_transport_t *t = h2_transport(false, true);
    T_CHECK(t != NULL);
    if (!t) return;
    pid_t old[8];
    int nold = workers(old, 8);
    T_CHECK(nold >= 1);
    watch_t w[NWATCH];
    watches_start(w, NWATCH, t);
    T_EQ_INT(lop_transport_connects(t), 1);
    reload_until_fresh_connection(t);
    int code = 0;
    for (int i = 0; i < nold; i++) kill(old[i], SIGSTOP); /* the old connection goes silent */
    struct timespec cap;
    clock_gettime(CLOCK_REALTIME, &cap);
    cap.tv_sec += 30;
    int ended = 0;
    pthread_mutex_lock(&mu);
    for (;;) {
        ended = 0;
        for (int i = 0; i < NWATCH; i++) ended += w[i].ended;
        if (ended == NWATCH || pthread_cond_timedwait(&cond, &mu, &cap) == ETIMEDOUT) break;
    }
    pthread_mutex_unlock(&mu);
    T_EQ_INT(ended, NWATCH);
    watches_stop(w, NWATCH);
    for (int i = 0; i < NWATCH; i++) T_EQ_INT(w[i].res, LOP_HTTP_ERESET);
    T_EQ_INT(lop_transport_dead_connections(t), 1);
    for (int i = 0; i < nold; i++) kill(old[i], SIGCONT);
    T_EQ_INT(request(t, "GET", "/version", NULL, &code), LOP_HTTP_OK);
    T_EQ_INT(code, 200);
    T_EQ_INT(lop_transport_connects(t), 2); /* the new connection was never taken for dead */
    lop_transport_free(t);
}

/* The probe's answer is late (the API server is slow: 5 s for /version against a 1 s ping
 * timeout) while the connection keeps reading a watch's events: it is alive and must stay, as
 * client-go's PING would find it (its answer comes from the h2 layer, not the handler). The probe
 * goes out after 1 ms of silence; while one is out, bookmarks, each sent once the previous one
 * arrived, keep the connection reading, until a probe sent with the latency on has ended. */
static void test_late_probe_answer_on_a_reading_connection(void)
{
    lop_transport_config_t cfg = {
        .server = px.url, .ca_pem = px.ca_pem, .h2_read_idle_ms = 1, .h2_ping_timeout_ms = 1000};
    lop_transport_t *t = NULL;
    lop_err_t err;
    T_EQ_INT(lop_transport_new(&cfg, &t, &err), LOP_OK);
    if (!t) return;
    watch_t w[1];
    memset(w, 0, sizeof w);
    w[0].t = t;
    w[0].target = "/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true";
    pthread_create(&w[0].thr, NULL, w_main, &w[0]);
    pthread_mutex_lock(&mu);
    while (w[0].code != 200 && !w[0].ended) pthread_cond_wait(&cond, &mu);
    pthread_mutex_unlock(&mu);
    T_EQ_INT(w[0].code, 200);
    lop_apiserver_set_latency(srv, 5000);
    /* every probe sent from here on (and one in flight already) is late; while one is in flight
     * the connection reads bookmarks, while none is it stays silent so that one goes out */
    long sent0 = lop_transport_probes_sent(t);
    long bookmarks = 0;
    for (long i = 0; lop_transport_probes(t) <= sent0 && i < 100000000; i++) {
        if (lop_transport_probes(t) == lop_transport_probes_sent(t)) {
            sched_yield();
            continue;
        }
        pthread_mutex_lock(&mu);
        int before = w[0].events;
        pthread_mutex_unlock(&mu);
        lop_apiserver_bookmark_now(srv);
        pthread_mutex_lock(&mu);
        while (w[0].events == before && !w[0].ended) pthread_cond_wait(&cond, &mu);
        bool ended = w[0].ended;
        pthread_mutex_unlock(&mu);
        if (ended) break;
        bookmarks++;
    }
    lop_apiserver_set_latency(srv, 0);
    T_CHECK(lop_transport_probes(t) > sent0);
    T_CHECK(bookmarks > 0);
    pthread_mutex_lock(&mu);
    T_CHECK(!w[0].ended);
    pthread_mutex_unlock(&mu);
    T_EQ_INT(lop_transport_dead_connections(t), 0);
    T_EQ_INT(lop_transport_connects(t), 1);
    watches_stop(w, 1);
    T_EQ_INT(w[0].res, LOP_HTTP_EABORTED);
    lop_transport_free(t);
}

/* nghttpx stops answering: the probe finds the connection dead, every watch ends with ERESET, and
 * the next request gets a fresh connection. */
static void test_dead_connection_found_by_probe(void)
{
    lop_transport_t *t = h2_transport(false, true);
    T_CHECK(t != NULL);
    if (!t) return;
    watch_t w[NWATCH];
    watches_start(w, NWATCH, t);
    T_EQ_INT(lop_transport_open_connections(t), 1);
    t_nghttpx_pause(&px); /* the whole group: master and worker */
    pthread_mutex_lock(&mu);
    for (;;) {
        int ended = 0;
        for (int i = 0; i < NWATCH; i++) ended += w[i].ended;
        if (ended == NWATCH) break;
        pthread_cond_wait(&cond, &mu);
    }
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < NWATCH; i++) T_EQ_INT(w[i].res, LOP_HTTP_ERESET);
    T_EQ_INT(lop_transport_dead_connections(t), 1);
    watches_stop(w, NWATCH);
    t_nghttpx_resume(&px);
    int code = 0;
    T_EQ_INT(request(t, "GET", "/version", NULL, &code), LOP_HTTP_OK);
    T_EQ_INT(code, 200);
    T_EQ_INT(lop_transport_connects(t), 2); /* a fresh connection, not the dead one */
    lop_transport_free(t);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    bool up = env_start();
    T_CHECK(up);
    if (up) {
        T_RUN(test_watches_share_one_connection);
        T_RUN(test_more_than_100_watches_share_one_connection);
        T_RUN(test_disable_http2);
        T_RUN(test_stalled_stream_does_not_block_others);
        T_RUN(test_goaway_on_reload);
        T_RUN(test_probe_of_a_connection_after_goaway);
        T_RUN(test_late_probe_answer_on_a_reading_connection);
        T_RUN(test_dead_connection_found_by_probe);
    }
    env_stop();
    return T_DONE();
}
