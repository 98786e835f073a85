/* SPDX-License-Identifier: Apache-2.0 */
/* webhook_server.c — the webhook HTTPS server: evhttp + OpenSSL on a loop thread, reviews on a
 * bounded worker pool, replies handed back to the loop (see webhook_server.h). */
#include "host/runtime/webhook/webhook_server.h"

#include "host/runtime/httpserver.h"
#include "host/runtime/webhook/certwatcher.h"
#include "host/runtime/webhook/webhook_review.h"
#include "host/util/buf.h"
#include "host/util/clock.h"
#include "host/util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_WORKERS 256

/* One review on its way: made on the loop, handled by a worker, answered on the loop. The
 * evhttp request is only ever touched on the loop thread; libevent keeps it alive until it is
 * answered even if the client hangs up (it is then detached and freed by the reply). */
typedef struct job {
    struct job *next;
    struct evhttp_request *req;
    char *path;
    char *body; /* len bytes + NUL */
    size_t len;
    int64_t received_ns;
    lop_webhook_reply_t reply;
} job_t;

typedef struct job_list {
    job_t *head, *tail;
    size_t n;
} job_list_t;

struct lop_webhook_server {
    struct event_base *base;
    struct evhttp *http;
    struct event *wake_ev;
    int wake[2]; /* socketpair: a byte on wake[1] = replies are ready, or stop */
    lop_certwatcher_t *certs;
    pthread_t loop_thread;
    pthread_t workers[MAX_WORKERS];
    int nworkers;
    lop_webhook_dispatch_t dispatch;
    int port;
    size_t queue_depth;

    pthread_mutex_t mu; /* queue, done, stopping */
    pthread_cond_t work_cv;
    job_list_t queue, done;
    size_t admitted; /* reviews queued or in a worker: at most nworkers + queue_depth */
    bool stopping;

    pthread_mutex_t stop_mu; /* stopped */
    bool stopped;
    uint64_t reloads_at_stop;

    lop_metric_family_t *m_total, *m_latency, *m_inflight; /* NULL without a registry */
};

/* ---------------------------------------------------------------- jobs */

static void list_push(job_list_t *l, job_t *j)
{
    j->next = NULL;
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
    l->n++;
}

static job_t *list_pop(job_list_t *l)
{
    job_t *j = l->head;
    if (!j) return NULL;
    l->head = j->next;
    if (!l->head) l->tail = NULL;
    l->n--;
    j->next = NULL;
    return j;
}

static void job_free(job_t *j)
{
    free(j->path);
    free(j->body);
    lop_buf_free(&j->reply.body);
    free(j);
}

/* ---------------------------------------------------------------- replies (loop thread) */

static const char *status_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 503: return "Service Unavailable";
    default: return status >= 500 ? "Internal Server Error" : "Error";
    }
}

static void send_reply(struct evhttp_request *req, int status, bool json, const char *body, size_t len)
{
    struct evkeyvalq *hdrs = evhttp_request_get_output_headers(req);
    evhttp_add_header(hdrs, "Content-Type", json ? "application/json" : "text/plain; charset=utf-8");
    evhttp_add_header(hdrs, "X-Content-Type-Options", "nosniff");
    struct evbuffer *buf = evbuffer_new();
    if (!buf) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    evbuffer_add(buf, body, len);
    evhttp_send_reply(req, status, status_reason(status), buf);
    evbuffer_free(buf);
}

static void send_text(struct evhttp_request *req, int status, const char *msg)
{
    send_reply(req, status, false, msg, strlen(msg));
}

/* Send every finished review, then stop the loop if asked to. */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    lop_webhook_server_t *s = arg;
    char c[64];
    (void)what;
    while (read(fd, c, sizeof c) > 0) {}
    pthread_mutex_lock(&s->mu);
    job_list_t done = s->done;
    memset(&s->done, 0, sizeof s->done);
    bool stopping = s->stopping;
    pthread_mutex_unlock(&s->mu);
    job_t *j;
    while ((j = list_pop(&done)) != NULL) {
        const lop_webhook_reply_t *r = &j->reply;
        send_reply(j->req, r->status, r->json, r->body.data ? r->body.data : "", r->body.len);
        job_free(j);
    }
    if (stopping) event_base_loopbreak(s->base);
}

static void wake_loop(lop_webhook_server_t *s)
{
    char c = 'x';
    ssize_t n;
    do {
        n = write(s->wake[1], &c, 1);
    } while (n < 0 && errno == EINTR);
    /* EAGAIN: the socket already holds unread bytes, so the loop will wake anyway. */
}

/* ---------------------------------------------------------------- workers */

static void observe(lop_webhook_server_t *s, const job_t *j)
{
    if (!s->m_total || j->reply.status == 404) return;
    const char *path = j->path;
    char code[16];
    snprintf(code, sizeof code, "%d", j->reply.status);
    const char *tv[] = {path, code};
    const char *lv[] = {path};
    double secs = (double)(lop_clock_mono(&lop_clock_system) - j->received_ns) / 1e9;
    lop_metric_counter_add(s->m_total, tv, 1, NULL);
    lop_metric_histogram_observe(s->m_latency, lv, secs, NULL);
}

static void handle_job(lop_webhook_server_t *s, job_t *j)
{
    const char *lv[] = {j->path};
    if (s->m_inflight) lop_metric_gauge_add(s->m_inflight, lv, 1, NULL);
    if (strcmp(j->path, LOP_WEBHOOK_CONVERT_PATH) == 0)
        lop_webhook_review_conversion(&s->dispatch, j->body, j->len, &j->reply);
    else
        lop_webhook_review_admission(&s->dispatch, j->path, j->body, j->len, &j->reply);
    if (s->m_inflight) lop_metric_gauge_add(s->m_inflight, lv, -1, NULL);
    observe(s, j);
}

static void *worker_main(void *arg)
{
    lop_webhook_server_t *s = arg;
    pthread_setname_np(pthread_self(), "lop-webhook");
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stopping && !s->queue.head) pthread_cond_wait(&s->work_cv, &s->mu);
        if (s->stopping) break;
        job_t *j = list_pop(&s->queue);
        pthread_mutex_unlock(&s->mu);
        handle_job(s, j);
        pthread_mutex_lock(&s->mu);
        s->admitted--;
        list_push(&s->done, j);
        wake_loop(s);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---------------------------------------------------------------- requests (loop thread) */

/* "application/json", optionally with parameters ("; charset=utf-8"). */
static bool is_json_type(const char *ct)
{
    static const char want[] = "application/json";
    if (!ct || strncasecmp(ct, want, sizeof want - 1) != 0) return false;
    char next = ct[sizeof want - 1];
    return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

/* Queue the review; false when every worker is busy and queue_depth reviews already wait.
 * (Counting admitted reviews rather than the queue's length, so a burst that arrives before an
 * idle worker has woken up is not refused.) */
static bool enqueue(lop_webhook_server_t *s, job_t *j)
{
    pthread_mutex_lock(&s->mu);
    bool ok = !s->stopping && s->admitted < (size_t)s->nworkers + s->queue_depth;
    if (ok) {
        s->admitted++;
        list_push(&s->queue, j);
        pthread_cond_signal(&s->work_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static void handle(struct evhttp_request *req, void *arg)
{
    lop_webhook_server_t *s = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path || !*path) path = "/";
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
        send_text(req, 405, "405 method not allowed: webhooks take POST\n");
        return;
    }
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
    if (!is_json_type(ct)) {
        send_text(req, 415, "415 unsupported media type: the review must be sent as application/json\n");
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    job_t *j = lop_xcalloc(1, sizeof *j);
    j->req = req;
    j->path = lop_xstrdup(path);
    j->len = evbuffer_get_length(in);
    j->body = lop_xmalloc(j->len + 1);
    evbuffer_remove(in, j->body, j->len);
    j->body[j->len] = '\0';
    j->received_ns = lop_clock_mono(&lop_clock_system);
    if (!enqueue(s, j)) {
        job_free(j);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
        send_text(req, 429, "429 too many requests: every webhook worker is busy and the queue is full\n");
    }
}

static struct bufferevent *make_tls_bev(struct event_base *base, void *arg)
{
    lop_webhook_server_t *s = arg;
    return lop_tls_accept_bev(base, lop_certwatcher_ctx(s->certs)); /* the current certificate */
}

/* ---------------------------------------------------------------- lifecycle */

static void *loop_main(void *arg)
{
    lop_webhook_server_t *s = arg;
    lop_event_loop_run(s->base, "lop-webhook-io");
    return NULL;
}

static void declare_metrics(lop_webhook_server_t *s, lop_metrics_t *m)
{
    if (!m) return;
    static const char *const by_code[] = {"webhook", "code", NULL};
    static const char *const by_hook[] = {"webhook", NULL};
    lop_err_t err;
    s->m_total = lop_metrics_counter(m, "controller_runtime_webhook_requests_total",
                                     "Total number of admission requests by HTTP status code.", by_code, &err);
    s->m_latency =
        lop_metrics_histogram(m, "controller_runtime_webhook_latency_seconds",
                              "Histogram of the latency of processing admission requests", by_hook, NULL, 0, &err);
    s->m_inflight = lop_metrics_gauge(m, "controller_runtime_webhook_requests_in_flight",
                                      "Current number of admission requests being served.", by_hook, &err);
    if (!s->m_total || !s->m_latency || !s->m_inflight) {
        lop_log(LOP_LOG_WARN, "webhook metrics not registered", "error", err.message, NULL);
        s->m_total = s->m_latency = s->m_inflight = NULL;
    }
}

/* Everything the threads use is gone after this (no thread is running). Every request still
 * held is answered (queued ones 503) so that libevent frees it; evhttp_free then drops the
 * connections without writing those answers. */
static void release(lop_webhook_server_t *s)
{
    job_t *j;
    while ((j = list_pop(&s->queue)) != NULL) {
        send_text(j->req, 503, "503 the webhook server is shutting down\n");
        job_free(j);
    }
    while ((j = list_pop(&s->done)) != NULL) {
        send_reply(j->req, j->reply.status, j->reply.json, j->reply.body.data ? j->reply.body.data : "",
                   j->reply.body.len);
        job_free(j);
    }
    lop_certwatcher_free(s->certs);
    s->certs = NULL;
    if (s->wake_ev) event_free(s->wake_ev);
    if (s->http) evhttp_free(s->http);
    if (s->base) event_base_free(s->base);
    if (s->wake[0] >= 0) close(s->wake[0]);
    if (s->wake[1] >= 0) close(s->wake[1]);
    s->wake_ev = NULL;
    s->http = NULL;
    s->base = NULL;
    s->wake[0] = s->wake[1] = -1;
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

/* The event loop, the certificates and evhttp, bound to host:port. */
static lop_rc_t setup_loop(lop_webhook_server_t *s, const lop_webhook_server_opts_t *o, const char *host, int port,
                           lop_err_t *err)
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, s->wake) != 0)
        return lop_err_set(err, LOP_ERR, 0, NULL, "webhook server: socketpair: %s", strerror(errno));
    s->base = event_base_new();
    if (!s->base) return lop_err_set(err, LOP_ERR, 0, NULL, "webhook server: cannot make an event loop");
    char dflt_dir[4096];
    const char *dir = o->cert_dir;
    if (!dir) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dflt_dir, sizeof dflt_dir, "%s/k8s-webhook-server/serving-certs", tmp && *tmp ? tmp : "/tmp");
        dir = dflt_dir;
    }
    lop_rc_t rc = lop_certwatcher_new(s->base, dir, o->cert_name ? o->cert_name : "tls.crt",
                                      o->key_name ? o->key_name : "tls.key", &s->certs, err);
    if (rc != LOP_OK) return rc;
    s->http = evhttp_new(s->base);
    s->wake_ev = event_new(s->base, s->wake[0], EV_READ | EV_PERSIST, on_wake, s);
    if (!s->http || !s->wake_ev || event_add(s->wake_ev, NULL) != 0)
        return lop_err_set(err, LOP_ERR, 0, NULL, "webhook server: cannot set up the event loop");
    /* Every method reaches handle(), which answers 405 itself (evhttp would say 501). */
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_timeout(s->http, 60);
    evhttp_set_max_headers_size(s->http, 65536);
    evhttp_set_max_body_size(s->http,
                             (ev_ssize_t)(o->max_body_bytes ? o->max_body_bytes : LOP_WEBHOOK_MAX_BODY_DEFAULT));
    /* Read (and discard) an oversized body before answering 413, so the client, still sending,
     * sees the answer rather than a reset connection. */
    evhttp_set_flags(s->http, EVHTTP_SERVER_LINGERING_CLOSE);
    evhttp_set_bevcb(s->http, make_tls_bev, s);
    evhttp_set_gencb(s->http, handle, s);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(s->http, host, (uint16_t)port);
    if (!bs) {
        int e = errno;
        return lop_err_set(err, LOP_ERR, 0, NULL, "webhook server: cannot listen on %s:%d: %s", host, port,
                           e ? strerror(e) : "bind failed");
    }
    s->port = bound_port(bs);
    /* No Nagle: an answer goes out in more than one write (TLS records, headers then body), and
     * with the client's delayed ACK each review would wait ~40 ms. Accepted sockets inherit it. */
    int one = 1;
    setsockopt(evhttp_bound_socket_get_fd(bs), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return LOP_OK;
}

/* Start the workers and the loop thread. */
static lop_rc_t start_threads(lop_webhook_server_t *s, int concurrency, lop_err_t *err)
{
    for (int i = 0; i < concurrency; i++) {
        int perr = pthread_create(&s->workers[i], NULL, worker_main, s);
        if (perr != 0)
            return lop_err_set(err, LOP_ERR, 0, NULL, "webhook server: cannot start a worker: %s", strerror(perr));
        s->nworkers++;
    }
    int perr = pthread_create(&s->loop_thread, NULL, loop_main, s);
    if (perr != 0)
        return lop_err_set(err, LOP_ERR, 0, NULL, "webhook server: cannot start its thread: %s", strerror(perr));
    return LOP_OK;
}

/* Tell every thread to stop and join them (those started). */
static void stop_threads(lop_webhook_server_t *s, bool loop_running)
{
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    if (loop_running) {
        wake_loop(s);
        pthread_join(s->loop_thread, NULL);
    }
    for (int i = 0; i < s->nworkers; i++) pthread_join(s->workers[i], NULL);
    s->nworkers = 0;
}

static void destroy(lop_webhook_server_t *s)
{
    release(s);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work_cv);
    pthread_mutex_destroy(&s->stop_mu);
    free(s);
}

lop_rc_t lop_webhook_server_start(const lop_webhook_server_opts_t *opts, const lop_webhook_dispatch_t *dispatch,
                                  lop_webhook_server_t **out, lop_err_t *err)
{
    if (!out || !opts || !dispatch)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "webhook server: missing options, dispatcher or result");
    *out = NULL;
    const char *addr = opts->bind_addr ? opts->bind_addr : ":9443";
    char host[256];
    int port;
    lop_rc_t rc = lop_httpserver_parse_addr(addr, host, sizeof host, &port, err);
    if (rc != LOP_OK || port < 0) return rc;
    int concurrency = opts->concurrency > 0 ? opts->concurrency : 4;
    if (concurrency > MAX_WORKERS)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "webhook server: concurrency %d is above %d", concurrency,
                           MAX_WORKERS);

    lop_webhook_server_t *s = lop_xcalloc(1, sizeof *s);
    s->wake[0] = s->wake[1] = -1;
    s->dispatch = *dispatch;
    s->queue_depth = (size_t)(opts->queue_depth > 0 ? opts->queue_depth : 16 * concurrency);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_mutex_init(&s->stop_mu, NULL);
    declare_metrics(s, opts->metrics);
    rc = setup_loop(s, opts, host, port, err);
    if (rc == LOP_OK) rc = start_threads(s, concurrency, err);
    if (rc != LOP_OK) {
        /* the loop thread is the last thing started: if it runs, start succeeded */
        stop_threads(s, false);
        destroy(s);
        return rc;
    }
    char portstr[16], conc[16];
    snprintf(portstr, sizeof portstr, "%d", s->port);
    snprintf(conc, sizeof conc, "%d", concurrency);
    lop_log(LOP_LOG_INFO, "webhook server listening", "addr", addr, "port", portstr, "concurrency", conc, NULL);
    *out = s;
    return LOP_OK;
}

int lop_webhook_server_port(const lop_webhook_server_t *s) { return s ? s->port : -1; }

uint64_t lop_webhook_server_cert_reloads(const lop_webhook_server_t *s)
{
    if (!s) return 0;
    return s->certs ? lop_certwatcher_reloads(s->certs) : s->reloads_at_stop;
}

bool lop_webhook_server_stopping(lop_webhook_server_t *s)
{
    if (!s) return false;
    pthread_mutex_lock(&s->mu);
    bool stopping = s->stopping;
    pthread_mutex_unlock(&s->mu);
    return stopping;
}

void lop_webhook_server_stop(lop_webhook_server_t *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->stop_mu);
    if (!s->stopped) {
        stop_threads(s, true);
        s->reloads_at_stop = lop_certwatcher_reloads(s->certs);
        release(s); /* closes the listener: new connections are refused */
        s->stopped = true;
    }
    pthread_mutex_unlock(&s->stop_mu);
}

void lop_webhook_server_free(lop_webhook_server_t *s)
{
    if (!s) return;
    lop_webhook_server_stop(s);
    destroy(s);
}
