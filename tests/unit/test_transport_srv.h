/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_transport_srv.h — scripted raw loopback HTTP servers and client-side recorders for the
 * transport's unit tests (test_transport.c, test_transport_proxy.c); header-only, static.
 * Servers run one thread per connection and wait only for the client (its requests, its
 * callbacks, its closing the connection); every exchange has a 10 s timeout so a bug fails a
 * check instead of hanging the test.
 */
#ifndef TEST_TRANSPORT_SRV_H
#define TEST_TRANSPORT_SRV_H

#include "apiserver/apiserver.h"
#include "host/kube/client/kubeconfig.h"
#include "host/kube/client/transport.h"
#include "host/util/buf.h"
#include "t.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/tcp.h> /* TCP_NODELAY, struct tcp_info with tcpi_bytes_received */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EXCHANGE_TIMEOUT_MS 10000

static char dir[256]; /* a scratch directory the test's main makes */

static inline int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- a scripted loopback server ---- */

#define SRV_MAX_CONNS   64
#define SRV_MAX_REQS    512
#define SRV_MAX_REPLIES 64

typedef struct reply {
    const char *data; /* NULL: close the connection without answering */
    size_t len;       /* 0 = strlen(data) */
    size_t split;     /* > 0: send data[0, split), wait for the client's on_status, then the rest */
    bool close;       /* close the connection after sending */
    bool stall;       /* after sending, hold the connection until the client closes it */
} reply_t;

typedef struct req {
    int conn;   /* the connection it came on (0-based, in accept order) */
    char *head; /* request line and header lines, through the empty line */
    char *body;
    size_t body_len;
} req_t;

typedef struct srv srv_t;
typedef void (*serve_fn)(srv_t *s, int fd, int conn);

struct srv {
    int lfd, port;
    char url[80];
    serve_fn serve;
    reply_t replies[SRV_MAX_REPLIES]; /* serve_replies: request n (over the server's life) gets
                                         replies[n], any after the last gets the last */
    int nreplies;
    pthread_t thr;
    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;
    bool stop;
    int nconns, nclosed;
    int conn_fd[SRV_MAX_CONNS]; /* -1 once closed */
    pthread_t conn_thr[SRV_MAX_CONNS];
    req_t reqs[SRV_MAX_REQS];
    int nreqs;
    long events;      /* srv_event calls: the client's on_status */
    long ticks;       /* the client's on_tick calls */
    long client_ends; /* serve_split_everywhere: connections whose client end it found */
};

typedef struct conn_arg {
    srv_t *s;
    int fd, conn;
} conn_arg_t;

static inline void srv_send(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

/* Read one request (head, then a Content-Length body) and record it: its index, or -1 when the
 * client closed the connection (or the server stops). */
static inline int srv_read_request(srv_t *s, int fd, int conn)
{
    lop_buf_t head = LOP_BUF_INIT;
    while (head.len < 4 || memcmp(head.data + head.len - 4, "\r\n\r\n", 4) != 0) {
        char c;
        if (recv(fd, &c, 1, 0) != 1) {
            lop_buf_free(&head);
            return -1;
        }
        lop_buf_putc(&head, c);
    }
    const char *cl = strcasestr(head.data, "\r\nContent-Length:");
    size_t blen = cl ? strtoul(cl + 17, NULL, 10) : 0, got = 0;
    char *body = lop_xmalloc(blen + 1);
    while (got < blen) {
        ssize_t n = recv(fd, body + got, blen - got, 0);
        if (n <= 0) {
            free(body);
            lop_buf_free(&head);
            return -1;
        }
        got += (size_t)n;
    }
    body[blen] = '\0';
    pthread_mutex_lock(&s->mu);
    int n = s->nreqs;
    if (n < SRV_MAX_REQS) {
        s->reqs[n] = (req_t){.conn = conn, .head = lop_buf_steal(&head), .body = body, .body_len = blen};
        s->nreqs++;
        body = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    free(body);
    lop_buf_free(&head);
    return n;
}

/* Hold the connection until the client closes it (or the server stops). */
static inline void srv_wait_client_close(int fd)
{
    char tmp[4096];
    while (recv(fd, tmp, sizeof tmp, 0) > 0) {}
}

static inline long srv_count(srv_t *s, const long *counter)
{
    pthread_mutex_lock(&s->mu);
    long v = *counter;
    pthread_mutex_unlock(&s->mu);
    return v;
}

static inline void srv_bump(srv_t *s, long *counter)
{
    pthread_mutex_lock(&s->mu);
    (*counter)++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Wait until *counter >= n: false when the server stops first. */
static inline bool srv_wait(srv_t *s, const long *counter, long n)
{
    pthread_mutex_lock(&s->mu);
    while (*counter < n && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
    bool ok = *counter >= n;
    pthread_mutex_unlock(&s->mu);
    return ok;
}

/* Wait until n connections have been closed by the server's side. */
static inline void srv_wait_closed(srv_t *s, int n)
{
    pthread_mutex_lock(&s->mu);
    while (s->nclosed < n && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

static inline void *srv_conn_main(void *arg)
{
    conn_arg_t *a = arg;
    srv_t *s = a->s;
    s->serve(s, a->fd, a->conn);
    pthread_mutex_lock(&s->mu);
    s->conn_fd[a->conn] = -1;
    close(a->fd);
    s->nclosed++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    free(a);
    return NULL;
}

static inline void *srv_accept_main(void *arg)
{
    srv_t *s = arg;
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
        pthread_mutex_lock(&s->mu);
        if (s->stop) {
            pthread_mutex_unlock(&s->mu);
            if (fd >= 0) close(fd);
            return NULL;
        }
        if (fd < 0 || s->nconns == SRV_MAX_CONNS) {
            pthread_mutex_unlock(&s->mu);
            if (fd >= 0) close(fd);
            continue;
        }
        int one = 1; /* pieces go out at once, not held for the client's ACK */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn_arg_t *a = lop_xmalloc(sizeof *a);
        *a = (conn_arg_t){.s = s, .fd = fd, .conn = s->nconns};
        s->conn_fd[s->nconns] = fd;
        pthread_create(&s->conn_thr[s->nconns], NULL, srv_conn_main, a);
        s->nconns++;
        pthread_mutex_unlock(&s->mu);
    }
}

/* A server on 127.0.0.1:0 (or [::1]:0) running serve for each connection; replies (copied, the
 * data borrowed until srv_stop) script serve_replies. NULL when the socket cannot be made. */
static inline srv_t *srv_start(serve_fn serve, const reply_t *replies, int nreplies, bool v6)
{
    srv_t *s = lop_xcalloc(1, sizeof *s);
    s->serve = serve;
    if (nreplies > SRV_MAX_REPLIES) nreplies = SRV_MAX_REPLIES;
    if (nreplies) memcpy(s->replies, replies, (size_t)nreplies * sizeof *replies);
    s->nreplies = nreplies;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t al;
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        al = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        al = sizeof *a;
    }
    s->lfd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&ss, al) < 0 || listen(s->lfd, 64) < 0 ||
        getsockname(s->lfd, (struct sockaddr *)&ss, &al) < 0) {
        if (s->lfd >= 0) close(s->lfd);
        free(s);
        return NULL;
    }
    s->port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
    snprintf(s->url, sizeof s->url, v6 ? "http://[::1]:%d" : "http://127.0.0.1:%d", s->port);
    pthread_create(&s->thr, NULL, srv_accept_main, s);
    return s;
}

/* Stop: shutting the sockets down wakes every thread blocked in accept, recv or send. */
static inline void srv_stop(srv_t *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    shutdown(s->lfd, SHUT_RDWR);
    for (int i = 0; i < s->nconns; i++)
        if (s->conn_fd[i] >= 0) shutdown(s->conn_fd[i], SHUT_RDWR);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thr, NULL);
    for (int i = 0; i < s->nconns; i++) pthread_join(s->conn_thr[i], NULL);
    close(s->lfd);
    for (int i = 0; i < s->nreqs; i++) {
        free(s->reqs[i].head);
        free(s->reqs[i].body);
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static inline int srv_nreqs(srv_t *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->nreqs;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static inline int srv_nconns(srv_t *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->nconns;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Request i (recorded, never changed again), or an empty one. */
static inline req_t srv_req(srv_t *s, int i)
{
    static char empty[] = "";
    req_t r = {.conn = -1, .head = empty, .body = empty};
    pthread_mutex_lock(&s->mu);
    if (i < s->nreqs) r = s->reqs[i];
    pthread_mutex_unlock(&s->mu);
    return r;
}

/* Answer each request with the next scripted reply (see reply_t). */
static inline void serve_replies(srv_t *s, int fd, int conn)
{
    for (;;) {
        int n = srv_read_request(s, fd, conn);
        if (n < 0) return;
        long e0 = srv_count(s, &s->events); /* the previous exchange has ended: its on_status counted */
        const reply_t *r = &s->replies[n < s->nreplies ? n : s->nreplies - 1];
        if (!r->data) return;
        size_t len = r->len ? r->len : strlen(r->data);
        if (r->split) {
            srv_send(fd, r->data, r->split);
            if (!srv_wait(s, &s->events, e0 + 1)) return;
            srv_send(fd, r->data + r->split, len - r->split);
        } else {
            srv_send(fd, r->data, len);
        }
        if (r->stall) {
            srv_wait_client_close(fd);
            return;
        }
        if (r->close) return;
    }
}

/* ---- the client side ---- */

typedef struct got {
    srv_t *s; /* told of on_status (events) and on_tick (ticks) when set */
    int status, nstatus;
    lop_buf_t headers; /* "Name: value\n" per on_header call */
    int nheaders;
    lop_buf_t body;
    int pieces;
    size_t max_piece;
    size_t stop_at; /* on_body returns 1 once the body holds this many bytes (0 = never) */
    int ticks;
    int abort_at_tick;     /* on_tick returns 1 from this call on (0 = never) */
    bool abort_after_body; /* on_tick returns 1 once some body has arrived */
    int aborts;            /* on_tick calls that returned 1 */
    int64_t body_ns;       /* when the first body byte arrived */
} got_t;

static inline void on_status(void *ud, int code)
{
    got_t *g = ud;
    g->status = code;
    g->nstatus++;
    if (g->s) srv_bump(g->s, &g->s->events);
}

static inline void on_header(void *ud, const char *name, size_t nl, const char *value, size_t vl)
{
    got_t *g = ud;
    lop_buf_printf(&g->headers, "%.*s: %.*s\n", (int)nl, name, (int)vl, value);
    g->nheaders++;
}

static inline int on_body(void *ud, const char *p, size_t len)
{
    got_t *g = ud;
    if (!g->body.len) g->body_ns = now_ns();
    lop_buf_append(&g->body, p, len);
    g->pieces++;
    if (len > g->max_piece) g->max_piece = len;
    return g->stop_at && g->body.len >= g->stop_at;
}

static inline int on_tick(void *ud)
{
    got_t *g = ud;
    g->ticks++;
    if (g->s) srv_bump(g->s, &g->s->ticks);
    bool abort = (g->abort_at_tick && g->ticks >= g->abort_at_tick) || (g->abort_after_body && g->body.len);
    g->aborts += abort;
    return abort;
}

/* Forget the last exchange's results (the settings stay). */
static inline void got_reset(got_t *g)
{
    g->status = g->nstatus = g->nheaders = g->pieces = g->ticks = g->aborts = 0;
    g->max_piece = 0;
    g->body_ns = 0;
    lop_buf_reset(&g->headers);
    lop_buf_reset(&g->body);
    lop_buf_reserve(&g->headers, 1); /* data is "" from now on, never NULL */
    lop_buf_reserve(&g->body, 1);
    g->headers.data[0] = g->body.data[0] = '\0';
}

static inline void got_free(got_t *g)
{
    lop_buf_free(&g->headers);
    lop_buf_free(&g->body);
}

/* Run x (method, target default to GET /) with g's callbacks. */
static inline lop_http_result_t run(lop_transport_t *t, lop_http_exchange_t *x, got_t *g)
{
    got_reset(g);
    if (!x->method) x->method = "GET";
    if (!x->target) x->target = "/";
    if (!x->timeout_ms) x->timeout_ms = EXCHANGE_TIMEOUT_MS;
    x->ud = g;
    x->on_status = on_status;
    x->on_header = on_header;
    x->on_body = on_body;
    x->on_tick = on_tick;
    return lop_transport_exchange(t, x);
}

static inline lop_http_result_t get(lop_transport_t *t, const char *target, lop_http_exchange_t *x, got_t *g)
{
    memset(x, 0, sizeof *x);
    x->target = target;
    return run(t, x, g);
}

static inline lop_transport_t *tr_new(const char *url)
{
    lop_transport_config_t cfg = {.server = url};
    lop_transport_t *t = NULL;
    lop_err_t err;
    if (lop_transport_new(&cfg, &t, &err) != LOP_OK) fprintf(stderr, "transport %s: %s\n", url, err.message);
    return t;
}

/* A server with replies and a transport for it; false (after a failed check) when either fails. */
static inline bool setup(srv_t **s, lop_transport_t **t, const reply_t *replies, int n)
{
    *s = srv_start(serve_replies, replies, n, false);
    *t = *s ? tr_new((*s)->url) : NULL;
    T_CHECK(*s && *t);
    if (*t) return true;
    srv_stop(*s);
    return false;
}

#define CHUNKED_HEAD "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

/* "HTTP/1.1 200 OK" with the given headers and body, framed by Content-Length or as chunks of
 * chunk bytes (0 = Content-Length). */
static inline void response_into(lop_buf_t *out, const char *headers, const char *body, size_t n, size_t chunk)
{
    lop_buf_printf(out, "HTTP/1.1 200 OK\r\n%s", headers);
    if (!chunk) {
        lop_buf_printf(out, "Content-Length: %zu\r\n\r\n", n);
        lop_buf_append(out, body, n);
        return;
    }
    lop_buf_puts(out, "Transfer-Encoding: chunked\r\n\r\n");
    for (size_t i = 0; i < n; i += chunk) {
        size_t k = n - i < chunk ? n - i : chunk;
        lop_buf_printf(out, "%zx\r\n", k);
        lop_buf_append(out, body + i, k);
        lop_buf_puts(out, "\r\n");
    }
    lop_buf_puts(out, "0\r\n\r\n");
}

/* A test's server s, transport t and recorder g for replies[0, n), as the test's own locals
 * (hence a macro); returns from the test, after a failed check, when either cannot start. The
 * test ends with teardown(s, t, &g). */
#define SETUP(replies, n)                   \
    srv_t *s;                               \
    lop_transport_t *t;                     \
    if (!setup(&s, &t, replies, n)) return; \
    got_t g = {.s = s}

/* The end of a test made with setup(): the recorder, the transport, the server. */
static inline void teardown(srv_t *s, lop_transport_t *t, got_t *g)
{
    got_free(g);
    lop_transport_free(t);
    srv_stop(s);
}

static inline bool has(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

/* ---- the embedded API server over TLS ---- */

typedef struct tls_env {
    lop_apiserver_t *srv;
    lop_rest_config_t cfg; /* from the kubeconfig it wrote: server URL, CA data */
} tls_env_t;

static inline bool tls_start(tls_env_t *e)
{
    memset(e, 0, sizeof *e);
    lop_apiserver_opts_t o = {.tls = true};
    lop_err_t err;
    char kc[300];
    snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
    lop_kubeconfig_opts_t ko = {.path = kc};
    if (lop_apiserver_start(&o, &e->srv, &err) != LOP_OK ||
        lop_apiserver_write_kubeconfig(e->srv, kc, &err) != LOP_OK ||
        lop_kubeconfig_load(&ko, &e->cfg, &err) != LOP_OK) {
        fprintf(stderr, "TLS API server: %s\n", err.message);
        lop_apiserver_stop(e->srv);
        e->srv = NULL;
        return false;
    }
    if (e->cfg.ca_pem && e->cfg.server && strncmp(e->cfg.server, "https://", 8) == 0) return true;
    fprintf(stderr, "TLS API server: the kubeconfig has no CA data or no https URL\n");
    lop_rest_config_cleanup(&e->cfg);
    lop_apiserver_stop(e->srv);
    e->srv = NULL;
    return false;
}

static inline void tls_stop(tls_env_t *e)
{
    lop_rest_config_cleanup(&e->cfg);
    lop_apiserver_stop(e->srv);
}

static inline lop_transport_t *tls_transport(const tls_env_t *e, const char *ca, const char *name, bool insecure)
{
    lop_transport_config_t cfg = {.server = e->cfg.server, .ca_pem = ca, .tls_server_name = name, .insecure = insecure};
    lop_transport_t *t = NULL;
    lop_err_t err;
    if (lop_transport_new(&cfg, &t, &err) != LOP_OK) fprintf(stderr, "transport: %s\n", err.message);
    return t;
}

#endif
