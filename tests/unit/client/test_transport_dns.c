/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Name resolution is bounded (host/kube/client/transport.h): libcurl's threaded resolver runs
 * getaddrinfo on a thread of its own, so the connect timeout and a cancellation end an exchange
 * whose resolution never returns. This test interposes getaddrinfo (the executable's definition
 * wins over libc's for libcurl's calls): "stall.invalid" blocks until the test ends, every other
 * name goes to libc.
 *
 * The results prove the bound: with a resolver that never answers, ETIMEDOUT can only come from
 * the 300 ms connect timeout and EABORTED only from on_tick; an unbounded resolution would hang
 * the test (CTest's timeout), not pass it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "host/kube/client/rest.h"
#include "host/kube/client/transport.h"
#include "host/kube/client/transport_impl.h" /* lop_tr_dns_ttl_ns */
#include "t.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t stall_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stall_cond = PTHREAD_COND_INITIALIZER;
static bool released;
static int stalled; /* resolutions blocked so far */

static bool slow_released; /* stall_mu: "slow.invalid" answers (as 127.0.0.1) once set */
static bool flaky_stalls;  /* stall_mu: "flaky.invalid" is 127.0.0.1, or stalls while set */
static int flaky_stalled;  /* stall_mu: resolutions of it that stalled */

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res)
{
    if (node && strcmp(node, "flaky.invalid") == 0) {
        pthread_mutex_lock(&stall_mu);
        if (flaky_stalls) flaky_stalled++;
        while (flaky_stalls && !released) pthread_cond_wait(&stall_cond, &stall_mu);
        pthread_mutex_unlock(&stall_mu);
        node = "127.0.0.1";
    }
    if (node && strcmp(node, "slow.invalid") == 0) {
        pthread_mutex_lock(&stall_mu);
        while (!slow_released && !released) pthread_cond_wait(&stall_cond, &stall_mu);
        pthread_mutex_unlock(&stall_mu);
        node = "127.0.0.1";
    }
    if (node && strcmp(node, "stall.invalid") == 0) {
        pthread_mutex_lock(&stall_mu);
        stalled++;
        while (!released) pthread_cond_wait(&stall_cond, &stall_mu);
        pthread_mutex_unlock(&stall_mu);
        return EAI_AGAIN;
    }
    int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **) =
        (int (*)(const char *, const char *, const struct addrinfo *, struct addrinfo **))dlsym(RTLD_NEXT,
                                                                                                "getaddrinfo");
    return real(node, service, hints, res);
}

static lop_transport_t *stalling_transport(void)
{
    lop_transport_config_t cfg = {.server = "http://stall.invalid:8080", .proxy = ""};
    lop_transport_t *t = NULL;
    lop_err_t err;
    if (lop_transport_new(&cfg, &t, &err) != LOP_OK) fprintf(stderr, "transport: %s\n", err.message);
    return t;
}

/* The connect timeout covers resolution: ETIMEDOUT, naming the server, nothing received. */
static void test_connect_timeout_covers_resolution(void)
{
    lop_transport_t *t = stalling_transport();
    T_CHECK(t != NULL);
    if (!t) return;
    lop_http_exchange_t x = {.method = "GET", .target = "/version", .connect_timeout_ms = 300};
    T_EQ_INT(lop_transport_exchange(t, &x), LOP_HTTP_ETIMEDOUT);
    T_CHECK(strstr(x.error, "stall.invalid:8080") != NULL);
    T_CHECK(!x.response_started);
    pthread_mutex_lock(&stall_mu);
    T_CHECK(stalled >= 1); /* it really was stuck in getaddrinfo */
    pthread_mutex_unlock(&stall_mu);
    lop_transport_free(t);
}

/* timeout_ms is the whole exchange, name resolution included: a resolver that answers after
 * 1.8 s of a 2 s timeout leaves the server (which never answers) 0.2 s, not another 2 s. The
 * resolver is released by on_tick, which runs every 50 ms while the caller waits for it. */
static int64_t slow_t0;

static int release_at_1800_ms(void *ud)
{
    (void)ud;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    if (now - slow_t0 >= 1800 * 1000000LL) {
        pthread_mutex_lock(&stall_mu);
        slow_released = true;
        pthread_cond_broadcast(&stall_cond);
        pthread_mutex_unlock(&stall_mu);
    }
    return 0;
}

/* A listening socket on 127.0.0.1 and a free port (its address in *a), or -1 after a failed check. */
static int loopback_listener(struct sockaddr_in *a)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    *a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof *a;
    bool ok = fd >= 0 && bind(fd, (struct sockaddr *)a, al) == 0 && listen(fd, 16) == 0 &&
              getsockname(fd, (struct sockaddr *)a, &al) == 0;
    T_CHECK(ok);
    if (!ok && fd >= 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* A plain-HTTP transport (no proxy) for http://host:<a's port>: host is one of the resolver
 * shim's names. NULL after a failed check. */
static lop_transport_t *named_transport(const char *host, const struct sockaddr_in *a)
{
    char url[64];
    snprintf(url, sizeof url, "http://%s:%d", host, ntohs(a->sin_port));
    lop_transport_config_t cfg = {.server = url, .proxy = ""};
    lop_transport_t *t = NULL;
    lop_err_t err;
    T_EQ_INT(lop_transport_new(&cfg, &t, &err), LOP_OK);
    return t;
}

static void test_timeout_covers_resolution(void)
{
    /* a server that never answers: the kernel completes the handshakes of a listener that never
     * accepts, and the request sits in its buffer */
    struct sockaddr_in a;
    int fd = loopback_listener(&a);
    lop_transport_t *t = named_transport("slow.invalid", &a);
    if (t) {
        lop_http_exchange_t x = {
            .method = "GET", .target = "/version", .timeout_ms = 2000, .on_tick = release_at_1800_ms};
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        slow_t0 = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
        T_EQ_INT(lop_transport_exchange(t, &x), LOP_HTTP_ETIMEDOUT);
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t took = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec - slow_t0;
        pthread_mutex_lock(&stall_mu);
        T_CHECK(slow_released); /* it waited for the resolver, then for the server */
        pthread_mutex_unlock(&stall_mu);
        T_CHECK(took >= 1800 * 1000000LL);
        T_CHECK(took < 3000 * 1000000LL); /* ~2 s; 3.8 s when the timeout restarted after resolution */
        lop_transport_free(t);
    }
    close(fd);
}

/* A keep-alive HTTP server on fd's one connection: 200 with no body to every request. */
static void *answer_all(void *arg)
{
    int fd = accept4(*(int *)arg, NULL, NULL, SOCK_CLOEXEC);
    char buf[4096];
    size_t len = 0;
    for (ssize_t n; fd >= 0 && (n = recv(fd, buf + len, sizeof buf - len, 0)) > 0;) {
        len += (size_t)n;
        char *end;
        while ((end = memmem(buf, len, "\r\n\r\n", 4)) != NULL) {
            const char *a = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
            if (send(fd, a, strlen(a), MSG_NOSIGNAL) < 0) break;
            size_t used = (size_t)(end + 4 - buf);
            memmove(buf, buf + used, len - used);
            len -= used;
        }
    }
    if (fd >= 0) close(fd);
    return NULL;
}

/* Once an answer is older than its TTL it is refreshed, but a refresh that stalls must not stall
 * the exchanges: they go on with the last good answer at once, and one refresh is in flight at a
 * time (before, each exchange waited its whole connect timeout for a refresh of its own). */
static void test_stalled_refresh_uses_the_last_answer(void)
{
    struct sockaddr_in a;
    int lfd = loopback_listener(&a);
    pthread_t srv;
    pthread_create(&srv, NULL, answer_all, &lfd);
    lop_transport_t *t = named_transport("flaky.invalid", &a);
    int64_t ttl = atomic_exchange(&lop_tr_dns_ttl_ns, 0); /* every answer is stale at once */
    lop_http_exchange_t x = {.method = "GET", .target = "/version", .timeout_ms = 10000, .connect_timeout_ms = 1000};
    if (t) T_EQ_INT(lop_transport_exchange(t, &x), LOP_HTTP_OK); /* resolved, connected */
    pthread_mutex_lock(&stall_mu);
    flaky_stalls = true;
    pthread_mutex_unlock(&stall_mu);
    for (int i = 0; t && i < 3; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        x = (lop_http_exchange_t){
            .method = "GET", .target = "/version", .timeout_ms = 10000, .connect_timeout_ms = 1000};
        T_EQ_INT(lop_transport_exchange(t, &x), LOP_HTTP_OK);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int64_t took = (t1.tv_sec - t0.tv_sec) * 1000000000LL + t1.tv_nsec - t0.tv_nsec;
        T_CHECK(took < 900 * 1000000LL); /* not the 1 s connect timeout spent waiting for the name */
    }
    for (long i = 0; i < 100000000; i++) { /* the background helper gets to getaddrinfo */
        pthread_mutex_lock(&stall_mu);
        int n = flaky_stalled;
        pthread_mutex_unlock(&stall_mu);
        if (n) break;
        sched_yield();
    }
    pthread_mutex_lock(&stall_mu);
    T_EQ_INT(flaky_stalled, 1); /* one refresh for the three */
    pthread_mutex_unlock(&stall_mu);
    atomic_store(&lop_tr_dns_ttl_ns, ttl);
    lop_transport_free(t);
    shutdown(lfd, SHUT_RDWR);
    pthread_join(srv, NULL);
    close(lfd);
}

static int abort_at_once(void *ud)
{
    (void)ud;
    return 1;
}

/* A cancellation (on_tick) ends an exchange stuck in resolution. */
static void test_cancel_during_resolution(void)
{
    lop_transport_t *t = stalling_transport();
    T_CHECK(t != NULL);
    if (!t) return;
    lop_http_exchange_t x = {.method = "GET", .target = "/version", .on_tick = abort_at_once};
    T_EQ_INT(lop_transport_exchange(t, &x), LOP_HTTP_EABORTED);
    lop_transport_free(t);
}

/* With no timed ticks (tick_ms < 0), a wait for a name is still ended by lop_transport_wake: the
 * caller's on_tick runs after the wake and stops the exchange. */
typedef struct wake_run {
    lop_transport_t *t;
    lop_http_exchange_t x;
    atomic_int ticks;
    atomic_bool stop;
    lop_http_result_t res;
} wake_run_t;

static int stop_when_told(void *ud)
{
    wake_run_t *w = ud;
    atomic_fetch_add(&w->ticks, 1);
    return atomic_load(&w->stop);
}

static void *exchange_main(void *arg)
{
    wake_run_t *w = arg;
    w->res = lop_transport_exchange(w->t, &w->x);
    return NULL;
}

static void test_wake_during_resolution(void)
{
    static wake_run_t w; /* static: zeroed, and large */
    w.t = stalling_transport();
    T_CHECK(w.t != NULL);
    if (!w.t) return;
    w.x = (lop_http_exchange_t){.method = "GET",
                                .target = "/version",
                                .on_tick = stop_when_told,
                                .ud = &w,
                                .tick_ms = -1,
                                .connect_timeout_ms = 60000};
    pthread_mutex_lock(&stall_mu);
    int before = stalled;
    pthread_mutex_unlock(&stall_mu);
    pthread_t thr;
    pthread_create(&thr, NULL, exchange_main, &w);
    for (;;) { /* until the resolution is stuck in getaddrinfo */
        pthread_mutex_lock(&stall_mu);
        bool stuck = stalled > before;
        pthread_mutex_unlock(&stall_mu);
        if (stuck) break;
        sched_yield();
    }
    while (atomic_load(&w.ticks) < 1) sched_yield(); /* the first, as the wait begins */
    lop_transport_wake(w.t);                         /* a wake without the flag: one tick, the wait goes on */
    while (atomic_load(&w.ticks) < 2) sched_yield();
    atomic_store(&w.stop, true);
    lop_transport_wake(w.t);
    pthread_join(thr, NULL);
    T_EQ_INT(w.res, LOP_HTTP_EABORTED);
    T_CHECK(strstr(w.x.error, "aborted by the caller while resolving") != NULL);
    T_EQ_INT(atomic_load(&w.ticks), 3); /* the first and one per wake, none timed */
    lop_transport_free(w.t);
}

/* An asynchronous stream (lop_rest_stream_start: a reflector's watch on the cache dispatcher)
 * whose pump is stuck resolving the server's name: its cancel flag and lop_rest_client_wake end
 * the pump at once and the stream with LOP_ECLOSED (a stopping reflector must not wait for the
 * 30 s connect timeout while it holds a dispatcher thread). Without the flag reaching the attempt
 * the pump would return only at that timeout, with LOP_EAGAIN or LOP_ETIMEDOUT. */
typedef struct pump_run {
    lop_rest_stream_call_t *s;
    atomic_bool cancel;
    bool ended;
    lop_rc_t rc;
} pump_run_t;

static void no_notify(void *ud) { (void)ud; }
static int no_bytes(void *ud, const char *data, size_t len)
{
    (void)ud;
    (void)data;
    (void)len;
    return 0;
}

static void *pump_main(void *arg)
{
    pump_run_t *p = arg;
    int64_t next;
    lop_err_t err;
    p->ended = lop_rest_stream_pump(p->s, no_bytes, NULL, &p->rc, &next, &err);
    return NULL;
}

static void test_stream_cancel_during_resolution(void)
{
    lop_rest_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = strdup("http://stall.invalid:8080");
    cfg.proxy_url = strdup(""); /* no proxy from the environment */
    lop_rest_client_t *c = NULL;
    lop_err_t err;
    T_EQ_INT(lop_rest_client_new(&cfg, &c, &err), LOP_OK);
    lop_rest_config_cleanup(&cfg);
    if (!c) return;
    static pump_run_t p;
    atomic_init(&p.cancel, false);
    lop_rest_stream_opts_t so = {.cancel = &p.cancel};
    T_EQ_INT(lop_rest_stream_start(c, "/api/v1/configmaps?watch=true", &so, no_notify, NULL, &p.s, &err), LOP_OK);
    pthread_mutex_lock(&stall_mu);
    int before = stalled;
    pthread_mutex_unlock(&stall_mu);
    pthread_t thr;
    pthread_create(&thr, NULL, pump_main, &p);
    for (;;) { /* until the pump is stuck in getaddrinfo */
        pthread_mutex_lock(&stall_mu);
        bool stuck = stalled > before;
        pthread_mutex_unlock(&stall_mu);
        if (stuck) break;
        sched_yield();
    }
    atomic_store(&p.cancel, true);
    lop_rest_client_wake(c);
    pthread_join(thr, NULL);
    lop_rc_t rc = p.rc;
    if (!p.ended) { /* the cut-short attempt ends at the next pump */
        int64_t next;
        T_CHECK(lop_rest_stream_pump(p.s, no_bytes, NULL, &rc, &next, &err));
    }
    T_EQ_INT(rc, LOP_ECLOSED);
    lop_rest_stream_free(p.s);
    lop_rest_client_free(c);
}

int main(void)
{
    T_RUN(test_connect_timeout_covers_resolution);
    T_RUN(test_timeout_covers_resolution);
    T_RUN(test_stalled_refresh_uses_the_last_answer);
    T_RUN(test_cancel_during_resolution);
    T_RUN(test_wake_during_resolution);
    T_RUN(test_stream_cancel_during_resolution);
    pthread_mutex_lock(&stall_mu);
    released = true;
    pthread_cond_broadcast(&stall_cond);
    pthread_mutex_unlock(&stall_mu);
    return T_DONE();
}
