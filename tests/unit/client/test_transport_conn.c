/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the HTTP/1.1 transport's connections and requests (host/kube/client/transport.h), against
 * raw loopback servers (test_transport_srv.h) and, for TLS, the embedded API server: keep-alive
 * and the one safe resend, concurrency, stop / abort / timeout, connect errors, server URL
 * parsing, TLS verification and reuse, request splitting refused, answers that arrive while the
 * request is still being written. Framing is in test_transport.c.
 *
 * Nothing here waits for time to pass: servers wait for the client, the client for the servers;
 * every exchange has a 10 s timeout so a bug fails a check instead of hanging the test.
 */
#include "test_transport_srv.h"

#include <sched.h>
#include <stdatomic.h>

static const char OK2[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/* ---- keep-alive ---- */

/* Sequential exchanges share one connection. */
static void test_keepalive_reuses_connection(void)
{
    reply_t r[] = {{.data = OK2}};
    SETUP(r, 1);
    lop_http_exchange_t x;
    for (int i = 0; i < 3; i++) {
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
        T_EQ_STR(g.body.data, "ok");
    }
    T_EQ_INT(lop_transport_connects(t), 1);
    T_EQ_INT(srv_nconns(s), 1);
    T_EQ_INT(srv_req(s, 2).conn, 0);
    teardown(s, t, &g);
}

/* Not reused (though the server keeps each open): after `Connection: close`, after an HTTP/1.0
 * response without keep-alive, after a response followed by unasked bytes. An HTTP/1.0 response
 * with `Connection: keep-alive` is reused. */
static void test_connection_not_reused_when_it_must_not_be(void)
{
    reply_t r[] = {{.data = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"},
                   {.data = "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"},
                   {.data = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"},
                   {.data = "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok"},
                   {.data = OK2}};
    SETUP(r, 5);
    lop_http_exchange_t x;
    for (int i = 0; i < 5; i++) {
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
        T_EQ_STR(g.body.data, "ok");
    }
    T_EQ_INT(lop_transport_connects(t), 4);
    T_EQ_INT(srv_req(s, 3).conn, 3);
    T_EQ_INT(srv_req(s, 4).conn, 3);
    teardown(s, t, &g);
}

/* The server closes an idle pooled connection: the next GET succeeds on a new connection. */
static void test_pooled_connection_closed_by_server(void)
{
    reply_t r[] = {{.data = OK2, .close = true}, {.data = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nnew"}};
    SETUP(r, 2);
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    srv_wait_closed(s, 1);
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_STR(g.body.data, "new");
    T_EQ_INT(lop_transport_connects(t), 2);
    T_EQ_INT(srv_nreqs(s), 2);
    T_EQ_INT(srv_req(s, 1).conn, 1);
    teardown(s, t, &g);
}

/* A pooled connection closed after the request was sent, before any response byte: a GET is sent
 * once more on a new connection (once only); a POST is not (ERESET); nor a GET whose response had
 * begun. */
static void test_resend_only_when_safe(void)
{
    reply_t r[] = {{.data = OK2}, {.data = NULL}, {.data = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain"}};
    SETUP(r, 3);
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_INT(get(t, "/again", &x, &g), LOP_HTTP_OK);
    T_EQ_STR(g.body.data, "again");
    T_EQ_STR(x.error, "");
    T_EQ_INT(lop_transport_connects(t), 2);
    T_EQ_INT(srv_nreqs(s), 3);
    T_EQ_INT(srv_req(s, 1).conn, 0);
    T_EQ_INT(srv_req(s, 2).conn, 1);
    T_CHECK(has(srv_req(s, 2).head, "GET /again "));
    lop_transport_free(t);
    srv_stop(s);

    /* the new connection fails the same way: no third try */
    reply_t r2[] = {{.data = OK2}, {.data = NULL}};
    if (!setup(&s, &t, r2, 2)) return;
    g.s = s;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_ERESET);
    T_EQ_INT(lop_transport_connects(t), 2);
    T_EQ_INT(srv_nreqs(s), 3);
    lop_transport_free(t);
    srv_stop(s);

    /* a POST is not sent twice */
    if (!setup(&s, &t, r2, 2)) return;
    g.s = s;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    x = (lop_http_exchange_t){.method = "POST", .target = "/create", .body = "{}", .body_len = 2};
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_ERESET);
    T_CHECK(!x.response_started);
    T_EQ_INT(x.code, 0);
    T_CHECK(has(x.error, "closed the connection before responding"));
    T_CHECK(has(x.error, "POST is not sent again"));
    T_EQ_INT(srv_nreqs(s), 2); /* libcurl may have connected again, but sent nothing on it */
    lop_transport_free(t);
    srv_stop(s);

    /* nor a GET once its response began */
    reply_t r3[] = {{.data = OK2}, {.data = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", .close = true}};
    if (!setup(&s, &t, r3, 2)) return;
    g.s = s;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_ERESET);
    T_CHECK(x.response_started);
    T_EQ_INT(x.code, 200);
    T_EQ_INT(lop_transport_connects(t), 1);
    T_EQ_INT(srv_nreqs(s), 2);
    teardown(s, t, &g);
}

/* Threads share the pool: never more connections than exchanges at once. */
typedef struct par {
    lop_transport_t *t;
    int ok;
} par_t;

static void *par_main(void *arg)
{
    par_t *p = arg;
    got_t g = {0};
    for (int i = 0; i < 25; i++) {
        lop_http_exchange_t x;
        p->ok += get(p->t, "/", &x, &g) == LOP_HTTP_OK && strcmp(g.body.data, "ok") == 0;
    }
    got_free(&g);
    return NULL;
}

static void test_concurrent_exchanges_share_the_pool(void)
{
    reply_t r[] = {{.data = OK2}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 1)) return;
    pthread_t th[4];
    par_t p[4];
    for (int i = 0; i < 4; i++) {
        p[i] = (par_t){.t = t};
        pthread_create(&th[i], NULL, par_main, &p[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        T_EQ_INT(p[i].ok, 25);
    }
    T_CHECK(lop_transport_connects(t) >= 1 && lop_transport_connects(t) <= 4);
    T_EQ_INT(srv_nreqs(s), 100);
    lop_transport_free(t);
    srv_stop(s);
}

/* ---- stop, abort, timeout ---- */

/* on_body returning non-zero ends the exchange (ESTOPPED); the connection is not reused. */
static void test_on_body_stop(void)
{
    char *body = lop_xmalloc(100 * 1000);
    memset(body, 'x', 100 * 1000);
    lop_buf_t b = LOP_BUF_INIT;
    response_into(&b, "", body, 100 * 1000, 0);
    reply_t r[] = {{.data = b.data, .len = b.len}, {.data = OK2}};
    srv_t *s;
    lop_transport_t *t;
    if (setup(&s, &t, r, 2)) {
        got_t g = {.s = s, .stop_at = 1};
        lop_http_exchange_t x = {.read_bytes = 1000};
        T_EQ_INT(run(t, &x, &g), LOP_HTTP_ESTOPPED);
        T_EQ_INT(g.pieces, 1);
        T_CHECK(has(x.error, "stopped"));
        g.stop_at = 0;
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_OK);
        T_EQ_STR(g.body.data, "ok");
        /* 2 when the stop cut the response short; 1 when libcurl had read it all already */
        T_CHECK(lop_transport_connects(t) >= 1 && lop_transport_connects(t) <= 2);
        got_free(&g);
        lop_transport_free(t);
        srv_stop(s);
    }
    lop_buf_free(&b);
    free(body);
}

/* on_tick returning non-zero while the server is silent ends the exchange at once (EABORTED), in
 * the middle of a body and before any response byte; the connection is closed. */
static void test_on_tick_abort(void)
{
    reply_t r[] = {{.data = CHUNKED_HEAD "5\r\nhello\r\n", .stall = true}, {.data = "", .stall = true}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 2)) return;
    got_t g = {.s = s, .abort_after_body = true};
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_EABORTED);
    int64_t took = now_ns() - g.body_ns;
    T_EQ_STR(g.body.data, "hello");
    T_EQ_INT(x.code, 200);
    T_EQ_INT(g.aborts, 1);
    T_CHECK(has(x.error, "aborted"));
    T_CHECK(took < 1000000000LL); /* a tick is due every 50 ms */
    srv_wait_closed(s, 1);        /* the client closed it: the server saw the end */
    g.abort_after_body = false;
    g.abort_at_tick = 3;
    int64_t t0 = now_ns();
    T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_EABORTED);
    T_CHECK(now_ns() - t0 < 1000000000LL); /* the third tick comes ~100 ms in */
    T_EQ_INT(g.ticks, 3);
    T_EQ_INT(g.aborts, 1);
    T_CHECK(!x.response_started);
    T_EQ_INT(x.code, 0);
    srv_wait_closed(s, 2);
    T_EQ_INT(lop_transport_connects(t), 2);
    teardown(s, t, &g);
}

/* With no timed ticks (tick_ms < 0) a caller waiting in the middle of a body wakes only for data
 * and for lop_transport_wake: each wake is one on_tick, and a wake after the caller's flag is set
 * ends the exchange at once (EABORTED). */
typedef struct wake_run {
    lop_transport_t *t;
    lop_http_exchange_t x;
    atomic_int ticks, bodies, ticks_at_body;
    atomic_bool stop;
    lop_http_result_t res;
} wake_run_t;

static int wr_body(void *ud, const char *p, size_t len)
{
    wake_run_t *w = ud;
    atomic_store(&w->ticks_at_body, atomic_load(&w->ticks));
    atomic_fetch_add(&w->bodies, 1);
    (void)p;
    (void)len;
    return 0;
}

static int wr_tick(void *ud)
{
    wake_run_t *w = ud;
    atomic_fetch_add(&w->ticks, 1);
    return atomic_load(&w->stop);
}

static void *wr_main(void *arg)
{
    wake_run_t *w = arg;
    w->res = lop_transport_exchange(w->t, &w->x);
    return NULL;
}

static void test_wake_without_timed_ticks(void)
{
    reply_t r[] = {{.data = CHUNKED_HEAD "5\r\nhello\r\n", .stall = true}};
    srv_t *s;
    lop_transport_t *t;
    if (!setup(&s, &t, r, 1)) return;
    static wake_run_t w;
    w.t = t;
    w.x = (lop_http_exchange_t){.method = "GET",
                                .target = "/",
                                .ud = &w,
                                .on_body = wr_body,
                                .on_tick = wr_tick,
                                .tick_ms = -1,
                                .timeout_ms = 60000};
    pthread_t thr;
    pthread_create(&thr, NULL, wr_main, &w);
    /* "hello", then the tick of the same pump (the head may have come in a pump of its own, with
     * its own tick, before the body) */
    while (atomic_load(&w.bodies) < 1 || atomic_load(&w.ticks) <= atomic_load(&w.ticks_at_body)) sched_yield();
    int base = atomic_load(&w.ticks);
    lop_transport_wake(t);
    while (atomic_load(&w.ticks) < base + 1) sched_yield();
    atomic_store(&w.stop, true);
    lop_transport_wake(t);
    pthread_join(thr, NULL);
    T_EQ_INT(w.res, LOP_HTTP_EABORTED);
    T_EQ_INT(atomic_load(&w.ticks), base + 2); /* one per wake, none timed */
    srv_wait_closed(s, 1);
    got_t g = {0};
    teardown(s, t, &g);
}

/* ---- buffers after a burst ---- */

typedef struct note {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    long n;
} note_t;

static void on_note(void *ud) /* the I/O thread, under the transport's lock */
{
    note_t *n = ud;
    pthread_mutex_lock(&n->mu);
    n->n++;
    pthread_cond_signal(&n->cond);
    pthread_mutex_unlock(&n->mu);
}

/* Pump call (after notifies) until g holds want body bytes; false if it ended first. */
static bool pump_until(lop_transport_call_t *call, note_t *n, long *seen, got_t *g, size_t want)
{
    lop_http_result_t res;
    while (g->body.len < want) {
        pthread_mutex_lock(&n->mu);
        while (n->n == *seen) pthread_cond_wait(&n->cond, &n->mu);
        *seen = n->n;
        pthread_mutex_unlock(&n->mu);
        if (lop_transport_pump(call, &res)) return false;
    }
    return true;
}

/* A stream that got 2 MiB while its consumer was away (the inbox filled to its high-water mark
 * and the transfer paused) gives back its grown buffers at its next small event once the consumer
 * has caught up, so an idle watch does not keep MiBs; that event arrives whole. */
static void test_idle_stream_gives_back_burst_buffers(void)
{
    enum { BURST = 2 * 1024 * 1024 };
    lop_buf_t data = LOP_BUF_INIT;
    lop_buf_printf(&data, "%s%x\r\n", CHUNKED_HEAD, (unsigned)BURST);
    for (int i = 0; i < BURST; i++) lop_buf_putc(&data, 'x');
    lop_buf_puts(&data, "\r\n");
    size_t split = data.len;
    lop_buf_puts(&data, "5\r\nhello\r\n");
    /* the server sends the burst, waits for srv_bump, then one more chunk, then holds the stream */
    reply_t r[] = {{.data = data.data, .len = data.len, .split = split, .stall = true}};
    SETUP(r, 1);
    static note_t n = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    long seen = 0;
    lop_http_exchange_t x = {.method = "GET", .target = "/watch", .ud = &g, .on_body = on_body, .tick_ms = -1};
    lop_http_result_t res;
    lop_transport_call_t *call = lop_transport_begin(t, &x, on_note, &n, &res);
    T_CHECK(call != NULL);
    if (!call) {
        lop_buf_free(&data);
        teardown(s, t, &g);
        return;
    }
    while (lop_transport_call_buffer_bytes(call) < 256 * 1024) sched_yield(); /* the inbox filled */
    T_CHECK(pump_until(call, &n, &seen, &g, BURST));
    T_EQ_INT(g.body.len, BURST);
    srv_bump(s, &s->events);
    T_CHECK(pump_until(call, &n, &seen, &g, BURST + 5));
    T_EQ_INT(g.body.len, BURST + 5);
    /* the small event after the burst, with nothing else waiting: the buffers went back */
    T_CHECK(lop_transport_call_buffer_bytes(call) <= 2 * 64 * 1024);
    T_CHECK(g.body.len >= 5 && memcmp(g.body.data + g.body.len - 5, "hello", 5) == 0);
    size_t xs = 0;
    for (size_t i = 0; i < BURST && i < g.body.len; i++) xs += g.body.data[i] == 'x';
    T_EQ_INT(xs, BURST);
    lop_transport_end(call);
    lop_buf_free(&data);
    teardown(s, t, &g);
}

/* timeout_ms against a silent server: ETIMEDOUT after that long (not much later), before the
 * response and in the middle of a body. */
static void test_timeout(void)
{
    reply_t r[] = {{.data = "", .stall = true},
                   {.data = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", .stall = true}};
    SETUP(r, 2);
    lop_http_exchange_t x = {.timeout_ms = 200};
    int64_t t0 = now_ns();
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_ETIMEDOUT);
    int64_t took = now_ns() - t0;
    T_CHECK(took >= 200 * 1000000LL && took < 2000 * 1000000LL);
    T_CHECK(has(x.error, "timed out after 200 ms"));
    T_CHECK(!x.response_started);
    x = (lop_http_exchange_t){.timeout_ms = 200};
    t0 = now_ns();
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_ETIMEDOUT);
    took = now_ns() - t0;
    T_CHECK(took >= 200 * 1000000LL && took < 2000 * 1000000LL);
    T_CHECK(x.response_started);
    T_EQ_INT(x.code, 200);
    T_EQ_STR(g.body.data, "abc");
    srv_wait_closed(s, 2);
    teardown(s, t, &g);
}

/* ---- connecting ---- */

/* A server that accepts and never answers the TLS handshake: the connect timeout (300 ms) ends
 * the exchange, not its 10 s timeout, and the error says which fired (it named the 10 s one). */
static void test_connect_timeout_named(void)
{
    reply_t r[] = {{.data = "", .stall = true}}; /* a ClientHello is never a whole request head */
    srv_t *s = srv_start(serve_replies, r, 1, false);
    T_CHECK(s != NULL);
    if (!s) return;
    char url[80];
    snprintf(url, sizeof url, "https://127.0.0.1:%d", s->port);
    lop_transport_t *t = tr_new(url);
    T_CHECK(t != NULL);
    if (t) {
        got_t g = {0};
        lop_http_exchange_t x = {.connect_timeout_ms = 300, .timeout_ms = 10000};
        int64_t t0 = now_ns();
        T_EQ_INT(run(t, &x, &g), LOP_HTTP_ETIMEDOUT);
        int64_t took = now_ns() - t0;
        T_CHECK(took >= 300 * 1000000LL && took < 5000 * 1000000LL);
        T_CHECK(has(x.error, "300 ms"));
        T_CHECK(!has(x.error, "10000 ms"));
        T_CHECK(!x.response_started);
        got_free(&g);
        lop_transport_free(t);
    }
    srv_stop(s);
}

/* A port bound but not listening refuses: ECONNECT naming host:port, nothing started. */
static void test_connect_refused(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    T_CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, al) == 0 && getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    char url[64], hp[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    snprintf(hp, sizeof hp, "127.0.0.1:%d", ntohs(a.sin_port));
    lop_transport_t *t = tr_new(url);
    T_CHECK(t);
    if (t) {
        got_t g = {0};
        lop_http_exchange_t x;
        T_EQ_INT(get(t, "/", &x, &g), LOP_HTTP_ECONNECT);
        T_CHECK(has(x.error, hp));
        T_CHECK(has(x.error, "refused"));
        T_CHECK(!x.response_started);
        T_EQ_INT(x.code, 0);
        T_EQ_INT(g.nstatus, 0);
        T_EQ_INT(lop_transport_connects(t), 1); /* the socket was opened; the connect failed */
        got_free(&g);
        lop_transport_free(t);
    }
    close(fd);
}

/* ---- the server URL ---- */

static void test_url_parsing(void)
{
    static const struct {
        const char *url, *host_port;
        bool tls;
    } good[] = {
        {"http://127.0.0.1", "127.0.0.1:80", false},
        {"https://kube.example.com", "kube.example.com:443", true},
        {"HTTPS://Kube.Example.com:8443/", "Kube.Example.com:8443", true},
        {"http://localhost:8080/prefix/", "localhost:8080", false},
        {"http://[::1]:6443", "[::1]:6443", false},
        {"https://[::1]", "[::1]:443", true},
        {"https://[fd00::2]:8443/k8s//", "[fd00::2]:8443", true},
        {"http://host:", "host:80", false},
        {"http://host:65535", "host:65535", false},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        lop_transport_t *t = tr_new(good[i].url);
        T_CHECK(t);
        if (!t) continue;
        T_EQ_STR(lop_transport_host_port(t), good[i].host_port);
        T_EQ_INT(lop_transport_is_tls(t), good[i].tls);
        T_EQ_INT(lop_transport_connects(t), 0);
        lop_transport_free(t);
    }
    static const char *const bad[] = {
        "ftp://host",          "host:80",          "http:/host",        "http//host",
        "http://[::1",         "http://[::1]x",    "http://[::1]:x",    "http://host:0",
        "http://host:65536",   "http://host:8o",   "http://host:-1",    "http://host: 80",
        "http://host:+80",     "http://user@host", "http://u:pw@host/", "http://",
        "http://:80",          "http://[]:80",     "http:///path",      "http://host?x=1",
        "http://host/api?x=1", "http://host#f",    "http://host/api#f", "http://ho st",
        "http://host/a b",
    };
    int nbad = 0;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        lop_transport_config_t cfg = {.server = bad[i]};
        lop_transport_t *t = (lop_transport_t *)&cfg; /* must be reset to NULL */
        lop_err_t err;
        lop_rc_t rc = lop_transport_new(&cfg, &t, &err);
        if (rc != LOP_EINVAL || t || !has(err.message, bad[i])) {
            fprintf(stderr, "URL \"%s\": rc %d, error \"%s\"\n", bad[i], rc, rc == LOP_OK ? "" : err.message);
            nbad++;
        }
        if (rc == LOP_OK) lop_transport_free(t);
    }
    T_EQ_INT(nbad, 0);
    lop_err_t err;
    lop_transport_t *t = NULL;
    lop_transport_config_t none = {.server = NULL}, empty = {.server = ""};
    T_EQ_INT(lop_transport_new(&none, &t, &err), LOP_EINVAL);
    T_EQ_INT(lop_transport_new(&empty, &t, &err), LOP_EINVAL);
    lop_transport_config_t junk_ca = {.server = "https://127.0.0.1:6443", .ca_pem = "not a certificate"};
    T_EQ_INT(lop_transport_new(&junk_ca, &t, &err), LOP_EINVAL);
    T_CHECK(has(err.message, "certificate authority"));
    T_CHECK(!t);
}

/* Requests go to the URL's path prefix + target (trailing slashes of the prefix dropped), with the
 * Host header of the URL; an IPv6 server in brackets. */
static void test_url_prefix_and_ipv6(void)
{
    reply_t r[] = {{.data = OK2}};
    srv_t *s = srv_start(serve_replies, r, 1, true);
    T_CHECK(s);
    if (!s) return;
    char url[128], want[256], hp[64];
    snprintf(url, sizeof url, "%s/base/v1//", s->url);
    snprintf(hp, sizeof hp, "[::1]:%d", s->port);
    lop_transport_t *t = tr_new(url);
    T_CHECK(t);
    if (t) {
        T_EQ_STR(lop_transport_host_port(t), hp);
        got_t g = {.s = s};
        lop_http_exchange_t x;
        T_EQ_INT(get(t, "/api/x?watch=1", &x, &g), LOP_HTTP_OK);
        T_EQ_STR(g.body.data, "ok");
        snprintf(want, sizeof want, "GET /base/v1/api/x?watch=1 HTTP/1.1\r\nHost: [::1]:%d\r\n\r\n", s->port);
        T_EQ_STR(srv_req(s, 0).head, want);
        got_free(&g);
        lop_transport_free(t);
    }
    srv_stop(s);
}

/* ---- TLS, against the embedded API server ---- */

/* GET /version over TLS verified with the kubeconfig's CA (the certificate names 127.0.0.1, and
 * localhost for tls_server_name); sequential exchanges share one connection. */
static void test_tls_get_and_reuse(void)
{
    tls_env_t e;
    T_CHECK(tls_start(&e));
    if (!e.srv) return;
    const char *names[] = {NULL, "localhost"};
    for (int i = 0; i < 2; i++) {
        lop_transport_t *t = tls_transport(&e, e.cfg.ca_pem, names[i], false);
        T_CHECK(t);
        if (!t) continue;
        T_CHECK(lop_transport_is_tls(t));
        got_t g = {0};
        for (int k = 0; k < 3; k++) {
            lop_http_exchange_t x = {.target = "/version", .gzip = true};
            T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
            T_EQ_INT(x.code, 200);
            T_CHECK(has(g.body.data, "\"gitVersion\""));
        }
        T_EQ_INT(lop_transport_connects(t), 1);
        got_free(&g);
        lop_transport_free(t);
    }
    tls_stop(&e);
}

/* Verification failures are ECONNECT (nothing sent) naming the server and the certificate
 * verification: a tls_server_name the certificate does not hold; no CA (the system's store does
 * not know the self-signed certificate). insecure connects without a CA. */
static void test_tls_verification(void)
{
    tls_env_t e;
    T_CHECK(tls_start(&e));
    if (!e.srv) return;
    char hp[64];
    snprintf(hp, sizeof hp, "127.0.0.1:%d", lop_apiserver_port(e.srv));
    lop_transport_t *bad_name = tls_transport(&e, e.cfg.ca_pem, "not-the-server.example", false);
    lop_transport_t *no_ca = tls_transport(&e, NULL, NULL, false);
    lop_transport_t *insecure = tls_transport(&e, NULL, NULL, true);
    T_CHECK(bad_name && no_ca && insecure);
    got_t g = {0};
    lop_http_exchange_t x;
    if (bad_name) {
        T_EQ_INT(get(bad_name, "/version", &x, &g), LOP_HTTP_ECONNECT);
        T_CHECK(has(x.error, "SSL"));
        T_CHECK(has(x.error, hp));
        T_CHECK(has(x.error, "not-the-server.example"));
        T_CHECK(!x.response_started);
        T_EQ_INT(x.code, 0);
    }
    if (no_ca) {
        T_EQ_INT(get(no_ca, "/version", &x, &g), LOP_HTTP_ECONNECT);
        T_CHECK(has(x.error, "certificate"));
    }
    if (insecure) {
        for (int k = 0; k < 2; k++) {
            T_EQ_INT(get(insecure, "/version", &x, &g), LOP_HTTP_OK);
            T_EQ_INT(x.code, 200);
            T_CHECK(has(g.body.data, "\"gitVersion\""));
        }
        T_EQ_INT(lop_transport_connects(insecure), 1);
    }
    got_free(&g);
    lop_transport_free(bad_name);
    lop_transport_free(no_ca);
    lop_transport_free(insecure);
    tls_stop(&e);
}

/* A method or target that could end the request line early or add header lines (request
 * splitting: a Lua script building a query from a custom resource's fields) is refused before
 * anything is sent. */
static void test_request_line_injection_refused(void)
{
    reply_t r[1] = {{.data = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"}};
    SETUP(r, 1);
    static const struct {
        const char *method, *target;
    } cases[] = {
        {"GET", "/api/v1/pods?x HTTP/1.1\r\nHost: x\r\n\r\nDELETE /api/v1/namespaces/d/pods/p"},
        {"GET", "/a b"},
        {"GET", "/a\tb"},
        {"GET", "/a\x7f"},
        {"GET", "api/v1"},
        {"GET", ""},
        {"GE T", "/"},
        {"GET\r\nX: y", "/"},
        {"", "/"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lop_http_exchange_t x = {.method = cases[i].method, .target = cases[i].target};
        T_EQ_INT(run(t, &x, &g), LOP_HTTP_EREQUEST);
        T_CHECK(has(x.error, "not valid on the wire"));
        T_CHECK(!strchr(x.error, '\r') && !strchr(x.error, '\n'));
    }
    T_EQ_INT(lop_transport_connects(t), 0);
    T_EQ_INT(srv_nreqs(s), 0);
    lop_http_exchange_t x;
    T_EQ_INT(get(t, "/api/v1/pods?labelSelector=a%3Db", &x, &g), LOP_HTTP_OK); /* escaped is fine */
    T_EQ_INT(srv_nreqs(s), 1);
    teardown(s, t, &g);
}

/* The server answers after the request head, without reading the body, and holds the connection
 * until the client closes it. */
static void serve_early_answer(srv_t *s, int fd, int conn)
{
    (void)s, (void)conn;
    char buf[8192];
    size_t len = 0;
    while (!memmem(buf, len, "\r\n\r\n", 4) && len < sizeof buf) {
        ssize_t r = recv(fd, buf + len, sizeof buf - len, 0);
        if (r <= 0) return;
        len += (size_t)r;
    }
    const char *a = "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 5\r\nConnection: close\r\n\r\nlarge";
    srv_send(fd, a, strlen(a));
    struct pollfd pf = {fd, POLLRDHUP, 0}; /* (not POLLIN: the unread body keeps it readable) */
    while (poll(&pf, 1, -1) == 1 && !(pf.revents & (POLLRDHUP | POLLHUP | POLLERR))) {}
}

/* An answer that arrives while the request body is still being written (kube-apiserver refuses a
 * body over 3 MB with 413 before reading it; a 401 comes before the body too): the client stops
 * sending and returns that answer, not a transport error. */
static void test_answer_before_the_body_is_sent(void)
{
    srv_t *s = srv_start(serve_early_answer, NULL, 0, false);
    if (!s) return;
    lop_transport_t *t = tr_new(s->url);
    size_t n = (size_t)32 << 20; /* more than the loopback socket buffers hold */
    char *body = malloc(n);
    memset(body, '{', n);
    got_t g = {0};
    lop_http_exchange_t x = {.method = "PUT",
                             .target = "/api/v1/namespaces/d/configmaps/big",
                             .body = body,
                             .body_len = n,
                             .timeout_ms = 10000};
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
    T_EQ_INT(x.code, 413);
    T_CHECK(g.body.len == 5 && memcmp(g.body.data, "large", 5) == 0);
    T_EQ_INT(lop_transport_connects(t), 1);
    free(body);
    teardown(s, t, &g);
}

/* The server answers the head with 100 Continue, reads the whole body, then answers 201. */
static void serve_interim_first(srv_t *s, int fd, int conn)
{
    (void)conn;
    char c;
    lop_buf_t head = LOP_BUF_INIT; /* ...but first the head alone, answered with a 100 */
    while (head.len < 4 || memcmp(head.data + head.len - 4, "\r\n\r\n", 4) != 0) {
        if (recv(fd, &c, 1, 0) != 1) {
            lop_buf_free(&head);
            return;
        }
        lop_buf_putc(&head, c);
    }
    const char *cont = "HTTP/1.1 100 Continue\r\n\r\n";
    srv_send(fd, cont, strlen(cont));
    const char *cl = strcasestr(head.data, "\r\nContent-Length: ");
    size_t want = cl ? strtoul(cl + 18, NULL, 10) : 0, have = 0;
    lop_buf_free(&head);
    char buf[65536];
    while (have < want) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r <= 0) return;
        have += (size_t)r;
    }
    srv_bump(s, &s->events); /* the whole body arrived */
    const char *a = "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
    srv_send(fd, a, strlen(a));
}

/* An interim 100 that arrives while a large body is being written does not stop the writing
 * (RFC 9110 §15.2 lets a server send one unasked): the whole body goes out, the final answer is
 * read. */
static void test_interim_answer_while_writing(void)
{
    srv_t *s = srv_start(serve_interim_first, NULL, 0, false);
    if (!s) return;
    lop_transport_t *t = tr_new(s->url);
    size_t n = (size_t)32 << 20;
    char *body = malloc(n);
    memset(body, '{', n);
    got_t g = {0};
    lop_http_exchange_t x = {.method = "PUT", .target = "/big", .body = body, .body_len = n, .timeout_ms = 20000};
    T_EQ_INT(run(t, &x, &g), LOP_HTTP_OK);
    T_EQ_INT(x.code, 201);
    T_EQ_INT(g.nstatus, 1);
    T_EQ_INT(srv_count(s, &s->events), 1); /* the server read all 32 MiB */
    T_CHECK(g.body.len == 2 && memcmp(g.body.data, "ok", 2) == 0);
    free(body);
    teardown(s, t, &g);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/luaop-transport-conn-XXXXXX");
    if (!mkdtemp(dir)) return 2;
    T_RUN(test_request_line_injection_refused);
    T_RUN(test_answer_before_the_body_is_sent);
    T_RUN(test_interim_answer_while_writing);
    T_RUN(test_keepalive_reuses_connection);
    T_RUN(test_connection_not_reused_when_it_must_not_be);
    T_RUN(test_pooled_connection_closed_by_server);
    T_RUN(test_resend_only_when_safe);
    T_RUN(test_concurrent_exchanges_share_the_pool);
    T_RUN(test_on_body_stop);
    T_RUN(test_on_tick_abort);
    T_RUN(test_wake_without_timed_ticks);
    T_RUN(test_idle_stream_gives_back_burst_buffers);
    T_RUN(test_timeout);
    T_RUN(test_connect_timeout_named);
    T_RUN(test_connect_refused);
    T_RUN(test_url_parsing);
    T_RUN(test_url_prefix_and_ipv6);
    T_RUN(test_tls_get_and_reuse);
    T_RUN(test_tls_verification);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return T_DONE();
}
