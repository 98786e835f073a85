/* SPDX-License-Identifier: Apache-2.0 */
/* httpserver.c — /metrics, /healthz, /readyz over libevent's evhttp (see httpserver.h). */
#include "host/runtime/httpserver.h"

#include "host/codec/certgen.h"
#include "host/runtime/webhook/certwatcher.h"
#include "host/util/buf.h"
#include "host/util/log.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_EXCLUDES 32

struct lop_httpserver {
    struct event_base *base;
    struct evhttp *http;
    struct event *wake_ev;
    int wake[2]; /* socketpair: a byte written to wake[1] stops the loop */
    pthread_t thread;
    lop_metrics_t *metrics;
    lop_health_t *health;
    lop_metrics_auth_t *auth; /* NULL = every request is served */
    lop_certwatcher_t *certs; /* HTTPS from files */
    SSL_CTX *self_signed;     /* HTTPS with a certificate made at start */
    int port;
    char addr[300];
    pthread_mutex_t mu; /* stopped */
    bool stopped;
};

/* ---------------------------------------------------------------- address parsing */

lop_rc_t lop_httpserver_parse_addr(const char *bind_addr, char *host, size_t hostlen, int *port, lop_err_t *err)
{
    if (!bind_addr || !*bind_addr)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "bind address is empty (use \"0\" to disable)");
    if (strcmp(bind_addr, "0") == 0) {
        if (hostlen) host[0] = '\0';
        *port = -1;
        return LOP_OK;
    }
    const char *colon = strrchr(bind_addr, ':');
    if (!colon)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "bind address \"%s\" has no port (want host:port, :port or 0)",
                           bind_addr);
    const char *h = bind_addr;
    size_t hl = (size_t)(colon - bind_addr);
    if (hl > 0 && h[0] == '[') {
        if (hl < 2 || h[hl - 1] != ']')
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "bind address \"%s\": unbalanced [ ] around the host",
                               bind_addr);
        h++;
        hl -= 2;
    } else if (memchr(h, ':', hl)) {
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "bind address \"%s\": write IPv6 hosts as [addr]:port", bind_addr);
    }
    const char *p = colon + 1;
    if (!*p || strlen(p) > 5 || strspn(p, "0123456789") != strlen(p))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "bind address \"%s\": port must be a number", bind_addr);
    long pv = strtol(p, NULL, 10);
    if (pv > 65535) return lop_err_set(err, LOP_EINVAL, 0, NULL, "bind address \"%s\": port above 65535", bind_addr);
    if (hl == 0) {
        h = "0.0.0.0";
        hl = strlen(h);
    }
    if (hl + 1 > hostlen) return lop_err_set(err, LOP_EINVAL, 0, NULL, "bind address \"%s\": host too long", bind_addr);
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (int)pv;
    return LOP_OK;
}

/* ---------------------------------------------------------------- request handling */

static void reply(struct evhttp_request *req, int status, const char *ctype, const char *body, size_t len)
{
    struct evkeyvalq *hdrs = evhttp_request_get_output_headers(req);
    evhttp_add_header(hdrs, "Content-Type", ctype);
    evhttp_add_header(hdrs, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(hdrs, "Cache-Control", "no-cache, private");
    struct evbuffer *buf = evbuffer_new();
    if (!buf) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    if (evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) evbuffer_add(buf, body, len);
    const char *reason = status == 200   ? "OK"
                         : status == 401 ? "Unauthorized"
                         : status == 403 ? "Forbidden"
                         : status == 404 ? "Not Found"
                         : status == 405 ? "Method Not Allowed"
                         : status == 500 ? "Internal Server Error"
                                         : "Error";
    evhttp_send_reply(req, status, reason, buf);
    evbuffer_free(buf);
}

static void reply_text(struct evhttp_request *req, int status, const char *body)
{
    reply(req, status, "text/plain; charset=utf-8", body, strlen(body));
}

/* Query of a probe: "verbose" (with or without a value) and any number of "exclude=<name>". */
typedef struct probe_query {
    bool verbose;
    char *exclude[MAX_EXCLUDES];
    size_t nexclude;
} probe_query_t;

static void parse_query(const char *q, probe_query_t *pq)
{
    memset(pq, 0, sizeof *pq);
    if (!q) return;
    char *copy = lop_xstrdup(q), *save = NULL;
    for (char *part = strtok_r(copy, "&", &save); part; part = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(part, '=');
        if (eq) *eq = '\0';
        if (strcmp(part, "verbose") == 0) {
            pq->verbose = true;
        } else if (strcmp(part, "exclude") == 0 && eq && pq->nexclude < MAX_EXCLUDES) {
            char *v = evhttp_uridecode(eq + 1, 1, NULL);
            if (v) pq->exclude[pq->nexclude++] = v;
        }
    }
    free(copy);
}

static void free_query(probe_query_t *pq)
{
    for (size_t i = 0; i < pq->nexclude; i++) free(pq->exclude[i]);
}

/* Log a failed probe with its reasons: the "[-]" lines of a listing, or a single check's text. */
static void log_failure(lop_health_kind_t kind, const char *only, const char *body)
{
    lop_buf_t why = LOP_BUF_INIT;
    if (only) {
        const char *p = strstr(body, ": ");
        lop_buf_puts(&why, p ? p + 2 : body);
    } else {
        for (const char *p = body; *p;) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            if (len > 3 && strncmp(p, "[-]", 3) == 0) {
                if (why.len) lop_buf_puts(&why, "; ");
                lop_buf_append(&why, p + 3, len - 3);
            }
            p += len + (nl ? 1 : 0);
        }
    }
    while (why.len && why.data[why.len - 1] == '\n') why.data[--why.len] = '\0';
    lop_log(LOP_LOG_INFO, "probe failed", "probe", lop_health_kind_name(kind), "check", only ? only : "", "failures",
            why.data ? why.data : "", NULL);
    lop_buf_free(&why);
}

/* path is "/healthz..." or "/readyz...": rest is what follows the prefix. */
static void serve_probe(lop_httpserver_t *s, struct evhttp_request *req, lop_health_kind_t kind, const char *rest,
                        const char *query)
{
    const char *only = NULL;
    if (rest[0] == '/' && rest[1])
        only = rest + 1;
    else if (rest[0] && strcmp(rest, "/") != 0) {
        reply_text(req, 404, "404 page not found\n");
        return;
    }
    probe_query_t pq;
    parse_query(query, &pq);
    lop_buf_t body = LOP_BUF_INIT;
    int status = lop_health_run(s->health, kind, only, pq.verbose, (const char *const *)pq.exclude, pq.nexclude, &body);
    if (status == 500) log_failure(kind, only, body.data ? body.data : "");
    reply(req, status, "text/plain; charset=utf-8", body.data ? body.data : "", body.len);
    lop_buf_free(&body);
    free_query(&pq);
}

static void handle(struct evhttp_request *req, void *arg)
{
    lop_httpserver_t *s = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    if (!path || !*path) path = "/";
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (s->auth) { /* controller-runtime's filter wraps the whole metrics handler */
        char msg[512];
        const char *authz = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
        int code =
            lop_metrics_auth_check(s->auth, authz, cmd == EVHTTP_REQ_HEAD ? "HEAD" : "GET", path, msg, sizeof msg - 1);
        if (code) {
            strcat(msg, "\n");
            reply_text(req, code, msg);
            return;
        }
    }
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        reply_text(req, 405, "405 method not allowed\n");
        return;
    }

    if (s->metrics && strcmp(path, "/metrics") == 0) {
        lop_buf_t body = LOP_BUF_INIT;
        lop_metrics_render(s->metrics, &body);
        reply(req, 200, "text/plain; version=0.0.4; charset=utf-8", body.data ? body.data : "", body.len);
        lop_buf_free(&body);
        return;
    }
    if (s->health && strncmp(path, "/healthz", 8) == 0) {
        serve_probe(s, req, LOP_HEALTHZ, path + 8, query);
        return;
    }
    if (s->health && strncmp(path, "/readyz", 7) == 0) {
        serve_probe(s, req, LOP_READYZ, path + 7, query);
        return;
    }
    reply_text(req, 404, "404 page not found\n");
}

/* ---------------------------------------------------------------- lifecycle */

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    lop_httpserver_t *s = arg;
    char c;
    (void)what;
    while (read(fd, &c, 1) > 0) {}
    event_base_loopbreak(s->base);
}

void lop_event_loop_run(struct event_base *base, const char *thread_name)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    pthread_setname_np(pthread_self(), thread_name);
    event_base_dispatch(base);
}

static void *serve(void *arg)
{
    lop_httpserver_t *s = arg;
    lop_event_loop_run(s->base, "lop-http");
    return NULL;
}

/* Close the listener, connections and loop (the thread is not running). */
static void release(lop_httpserver_t *s)
{
    if (s->wake_ev) event_free(s->wake_ev);
    if (s->http) evhttp_free(s->http);
    lop_certwatcher_free(s->certs);
    SSL_CTX_free(s->self_signed);
    s->certs = NULL;
    s->self_signed = NULL;
    if (s->base) event_base_loop(s->base, EVLOOP_NONBLOCK); /* TLS bufferevents finish freeing */
    if (s->base) event_base_free(s->base);
    if (s->wake[0] >= 0) close(s->wake[0]);
    if (s->wake[1] >= 0) close(s->wake[1]);
    s->wake_ev = NULL;
    s->http = NULL;
    s->base = NULL;
    s->wake[0] = s->wake[1] = -1;
}

static void destroy(lop_httpserver_t *s)
{
    release(s);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static int bound_port(struct evhttp_bound_socket *h)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(evhttp_bound_socket_get_fd(h), (struct sockaddr *)&ss, &len) != 0) return -1;
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

struct bufferevent *lop_tls_accept_bev(struct event_base *base, SSL_CTX *ctx)
{
    SSL *ssl = SSL_new(ctx);
    if (!ssl) return NULL;
    struct bufferevent *bev =
        bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev)
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    else
        SSL_free(ssl);
    return bev;
}

/* Each accepted connection of an HTTPS server: TLS on the current context. */
static struct bufferevent *make_tls_bev(struct event_base *base, void *arg)
{
    lop_httpserver_t *s = arg;
    return lop_tls_accept_bev(base, s->certs ? lop_certwatcher_ctx(s->certs) : s->self_signed);
}

/* A self-signed serving certificate for localhost / 127.0.0.1 / ::1, as controller-runtime's
 * metrics server makes in memory when it has no certificate directory. */
static SSL_CTX *self_signed_ctx(lop_err_t *err)
{
    lop_cert_pair_t ca = {0}, srv = {0};
    SSL_CTX *ctx = NULL;
    const int64_t year = 365LL * 24 * 3600;
    if (lop_certgen_ca("luaop-metrics-ca", year, &ca, err) == LOP_OK &&
        lop_certgen_serving(&ca, "localhost", "DNS:localhost,IP:127.0.0.1,IP:::1", year, &srv, err) == LOP_OK) {
        lop_buf_t chain = LOP_BUF_INIT; /* the leaf, then its CA, so a client may pin either */
        lop_buf_printf(&chain, "%s%s", srv.cert_pem, ca.cert_pem);
        ctx = lop_tls_server_ctx_from_pem(chain.data, srv.key_pem, err);
        lop_buf_free(&chain);
    }
    lop_cert_pair_free(&ca);
    lop_cert_pair_free(&srv);
    return ctx;
}

static lop_rc_t tls_setup(lop_httpserver_t *s, const lop_httpserver_opts_t *o, lop_err_t *err)
{
    if (o->cert_dir && *o->cert_dir) {
        lop_rc_t rc = lop_certwatcher_new(s->base, o->cert_dir, o->cert_name ? o->cert_name : "tls.crt",
                                          o->key_name ? o->key_name : "tls.key", &s->certs, err);
        if (rc != LOP_OK) return rc;
    } else if (!(s->self_signed = self_signed_ctx(err))) {
        return LOP_ERR;
    }
    evhttp_set_bevcb(s->http, make_tls_bev, s);
    return LOP_OK;
}

lop_rc_t lop_httpserver_start(const char *bind_addr, lop_metrics_t *metrics, lop_health_t *health,
                              lop_httpserver_t **out, lop_err_t *err)
{
    lop_httpserver_opts_t o = {.bind_addr = bind_addr, .metrics = metrics, .health = health};
    return lop_httpserver_start_opts(&o, out, err);
}

lop_rc_t lop_httpserver_start_opts(const lop_httpserver_opts_t *o, lop_httpserver_t **out, lop_err_t *err)
{
    if (!out) return lop_err_set(err, LOP_EINVAL, 0, NULL, "httpserver: no result pointer");
    *out = NULL;
    const char *bind_addr = o->bind_addr;
    lop_metrics_t *metrics = o->metrics;
    lop_health_t *health = o->health;
    char host[256];
    int port;
    lop_rc_t rc = lop_httpserver_parse_addr(bind_addr, host, sizeof host, &port, err);
    if (rc != LOP_OK || port < 0) return rc;

    lop_httpserver_t *s = lop_xcalloc(1, sizeof *s);
    s->wake[0] = s->wake[1] = -1;
    s->metrics = metrics;
    s->health = health;
    pthread_mutex_init(&s->mu, NULL);
    snprintf(s->addr, sizeof s->addr, "%s", bind_addr);

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, s->wake) != 0) {
        rc = lop_err_set(err, LOP_ERR, 0, NULL, "httpserver %s: socketpair: %s", bind_addr, strerror(errno));
        goto fail;
    }
    s->base = event_base_new();
    s->http = s->base ? evhttp_new(s->base) : NULL;
    s->wake_ev = s->base ? event_new(s->base, s->wake[0], EV_READ | EV_PERSIST, on_wake, s) : NULL;
    if (!s->http || !s->wake_ev || event_add(s->wake_ev, NULL) != 0) {
        rc = lop_err_set(err, LOP_ERR, 0, NULL, "httpserver %s: cannot set up the event loop", bind_addr);
        goto fail;
    }
    /* Every method reaches handle(), which answers 405 itself (evhttp would say 501). */
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_timeout(s->http, 30);
    evhttp_set_max_headers_size(s->http, 16384);
    evhttp_set_max_body_size(s->http, 4096);
    evhttp_set_gencb(s->http, handle, s);
    s->auth = o->auth;
    if (o->tls && (rc = tls_setup(s, o, err)) != LOP_OK) goto fail;

    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(s->http, host, (uint16_t)port);
    if (!bs) {
        int e = errno;
        rc = lop_err_set(err, LOP_ERR, 0, NULL, "httpserver: cannot listen on %s: %s", bind_addr,
                         e ? strerror(e) : "bind failed");
        goto fail;
    }
    s->port = bound_port(bs);

    int perr = pthread_create(&s->thread, NULL, serve, s);
    if (perr != 0) {
        rc = lop_err_set(err, LOP_ERR, 0, NULL, "httpserver %s: cannot start thread: %s", bind_addr, strerror(perr));
        goto fail;
    }
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", s->port);
    lop_log(LOP_LOG_INFO, "http server listening", "addr", bind_addr, "port", portstr, "metrics",
            metrics ? "true" : "false", "probes", health ? "true" : "false", "secure",
            o->tls ? (o->auth ? "https+auth" : "https") : "false", NULL);
    *out = s;
    return LOP_OK;

fail:
    destroy(s);
    return rc;
}

int lop_httpserver_port(const lop_httpserver_t *s) { return s ? s->port : -1; }

void lop_httpserver_stop(lop_httpserver_t *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    if (!s->stopped) {
        char c = 'x';
        ssize_t n;
        do {
            n = write(s->wake[1], &c, 1);
        } while (n < 0 && errno == EINTR);
        /* EAGAIN means the pipe already holds a wake-up byte: the loop will stop anyway. */
        pthread_join(s->thread, NULL);
        release(s); /* closes the listening socket: new connections are refused */
        s->stopped = true;
    }
    pthread_mutex_unlock(&s->mu);
}

void lop_httpserver_free(lop_httpserver_t *s)
{
    if (!s) return;
    lop_httpserver_stop(s);
    destroy(s);
}
