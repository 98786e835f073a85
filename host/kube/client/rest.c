/* SPDX-License-Identifier: Apache-2.0 */
/* rest.c — the REST client: connection sharing, request building, retries (see rest.h). */
#include "host/kube/client/rest.h"

#include "host/kube/client/qps.h"
#include "host/kube/client/transport.h"
#include "host/util/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_TIMEOUT_MS 120000L

struct lop_rest_client {
    lop_rest_config_t cfg;
    const lop_clock_t *clock;
    lop_transport_t *tr;
    lop_qps_t *qps;
    atomic_long requests;
    _Atomic(lop_rest_observer_fn) observer;
    void *_Atomic observer_ud;
    /* lop_rest_client_wake: waits between attempts (wait_until) sleep on wake_cond */
    pthread_mutex_t wake_mu;
    pthread_cond_t wake_cond;
    unsigned wake_gen; /* wake_mu */
};

void lop_rest_resp_init(lop_rest_resp_t *r)
{
    memset(r, 0, sizeof *r);
    lop_buf_init(&r->body);
}

void lop_rest_resp_cleanup(lop_rest_resp_t *r)
{
    if (!r) return;
    lop_buf_free(&r->body);
    json_decref(r->status);
    r->status = NULL;
}

lop_rc_t lop_rest_client_new(lop_rest_config_t *cfg, lop_rest_client_t **out, lop_err_t *err)
{
    *out = NULL;
    if (!cfg->server || !*cfg->server) return lop_err_set(err, LOP_EINVAL, 0, NULL, "REST config has no server");
    lop_rest_client_t *c = lop_xcalloc(1, sizeof *c);
    c->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    c->clock = c->cfg.clock ? c->cfg.clock : &lop_clock_system;
    pthread_mutex_init(&c->wake_mu, NULL);
    lop_cond_init(&c->wake_cond);
    if (!c->cfg.user_agent) {
        lop_buf_t b = LOP_BUF_INIT;
        lop_buf_printf(&b, "luaop/%s (linux/amd64)", LUAOP_VERSION);
        c->cfg.user_agent = lop_buf_steal(&b);
    }
    if (!c->cfg.namespace) c->cfg.namespace = lop_xstrdup("default");
    if (!c->cfg.auth) c->cfg.auth = lop_auth_new(NULL, NULL, NULL, c->clock);
    lop_transport_config_t tc = {.server = c->cfg.server,
                                 .tls_server_name = c->cfg.tls_server_name,
                                 .ca_pem = c->cfg.ca_pem,
                                 .insecure = c->cfg.insecure,
                                 .proxy = c->cfg.proxy_url,
                                 .disable_http2 = c->cfg.disable_http2};
    lop_rc_t rc = lop_transport_new(&tc, &c->tr, err);
    if (rc != LOP_OK) {
        lop_rest_config_cleanup(&c->cfg);
        pthread_cond_destroy(&c->wake_cond);
        pthread_mutex_destroy(&c->wake_mu);
        free(c);
        return rc;
    }
    double qps = c->cfg.qps == 0 ? LOP_QPS_DEFAULT : c->cfg.qps;
    int burst = c->cfg.burst == 0 ? LOP_BURST_DEFAULT : c->cfg.burst;
    c->qps = lop_qps_new(qps, burst, c->clock);
    if (lop_transport_proxy(c->tr))
        lop_log(LOP_LOG_INFO, "connecting to the API server through a proxy", "server", c->cfg.server, "proxy",
                lop_transport_proxy(c->tr), NULL);
    if (c->cfg.insecure && lop_transport_is_tls(c->tr))
        lop_log(LOP_LOG_WARN, "INSECURE: TLS certificate verification is disabled for this API server", "server",
                c->cfg.server, NULL);
    *out = c;
    return LOP_OK;
}

void lop_rest_client_free(lop_rest_client_t *c)
{
    if (!c) return;
    lop_transport_free(c->tr);
    lop_qps_free(c->qps);
    lop_rest_config_cleanup(&c->cfg);
    pthread_cond_destroy(&c->wake_cond);
    pthread_mutex_destroy(&c->wake_mu);
    free(c);
}

void lop_rest_client_wake(lop_rest_client_t *c)
{
    pthread_mutex_lock(&c->wake_mu);
    c->wake_gen++;
    pthread_cond_broadcast(&c->wake_cond);
    pthread_mutex_unlock(&c->wake_mu);
    lop_transport_wake(c->tr);
}

const char *lop_rest_client_server(const lop_rest_client_t *c) { return c->cfg.server; }
const char *lop_rest_client_namespace(const lop_rest_client_t *c) { return c->cfg.namespace; }
const char *lop_rest_client_user_agent(const lop_rest_client_t *c) { return c->cfg.user_agent; }
long lop_rest_client_requests(lop_rest_client_t *c) { return atomic_load(&c->requests); }

const char *lop_rest_client_host(const lop_rest_client_t *c) { return lop_transport_host_port(c->tr); }
lop_transport_t *lop_rest_client_transport(lop_rest_client_t *c) { return c->tr; }

void lop_rest_client_set_observer(lop_rest_client_t *c, lop_rest_observer_fn fn, void *ud)
{
    atomic_store(&c->observer, NULL);
    atomic_store(&c->observer_ud, ud);
    atomic_store(&c->observer, fn);
}

/* the most of a body passed to fn at once (bytes): what arrived while the stream's consumer was
 * busy (up to the transport's 1 MiB inbox) is decoded as one block, so a backed-up watch yields
 * its events as one burst and few LIST items straddle two blocks (a straddling item is tracked
 * byte by byte before it is decoded); other bodies are passed 16 KiB at a time */
#define STREAM_READ_BYTES (1024L * 1024)
#define PLAIN_READ_BYTES  (16L * 1024)
#define BODY_MAX          ((size_t)512 << 20) /* a collected body larger than this is refused */

/* ---- one attempt ---- */

typedef struct attempt {
    lop_rest_client_t *c;
    lop_buf_t *body;  /* collects the body (non-stream, or a stream's error body) */
    lop_stream_fn fn; /* receives a 2xx body when non-NULL (a watch, or a request's sink) */
    void *fn_ud;
    bool fn_stopped;
    bool too_big;     /* the collected body passed BODY_MAX */
    size_t delivered; /* 2xx body bytes passed to fn */
    const atomic_bool *cancel;
    bool cancelled;
    long *tick_ms; /* the exchange's: when on_tick must run next */
    long idle_ms;
    int64_t send_by_ns; /* the request's (lop_rest_req_t.send_by_ns) */
    int64_t last_byte;
    bool idle_expired;
    int code;         /* HTTP status of the response being read */
    long retry_after; /* -1 = absent or not an integer */
    char content_type[128];
    char audit_id[64];
    char *warnings[8];
    int nwarnings;
} attempt_t;

static void copy_trunc(char *dst, size_t cap, const char *src, size_t n)
{
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void on_status(void *ud, int code) { ((attempt_t *)ud)->code = code; }

static void on_header(void *ud, const char *k, size_t kl, const char *v, size_t vl)
{
    attempt_t *a = ud;
    if (kl == 11 && strncasecmp(k, "Retry-After", 11) == 0) {
        char val[32];
        copy_trunc(val, sizeof val, v, vl);
        a->retry_after = lop_rest_parse_retry_after(val);
    } else if (kl == 12 && strncasecmp(k, "Content-Type", 12) == 0) {
        copy_trunc(a->content_type, sizeof a->content_type, v, vl);
    } else if (kl == 8 && strncasecmp(k, "Audit-Id", 8) == 0) {
        copy_trunc(a->audit_id, sizeof a->audit_id, v, vl);
    } else if (kl == 7 && strncasecmp(k, "Warning", 7) == 0 && a->nwarnings < 8) {
        a->warnings[a->nwarnings++] = lop_xstrndup(v, vl < 1023 ? vl : 1023);
    }
}

/* A read of the body. A 2xx body for fn is passed on (a reflector brackets the handler calls a
 * read causes itself: lop_handler_batch_t in host/kube/cache/reflector.h). */
static int on_body(void *ud, const char *p, size_t len)
{
    attempt_t *a = ud;
    a->last_byte = lop_clock_mono(a->c->clock);
    if (a->fn && a->code >= 200 && a->code < 300) {
        a->delivered += len;
        int stop = a->fn(a->fn_ud, p, len);
        if (stop) a->fn_stopped = true;
        return stop;
    }
    if (a->body->len + len > BODY_MAX) {
        a->too_big = true;
        return 1;
    }
    lop_buf_append(a->body, p, len);
    return 0;
}

/* When on_tick must run next: at the idle deadline (every 1 ms on a fake clock, which tests
 * step), else only on data and on lop_rest_client_wake (-1: no timed wakeups). */
static long next_tick_ms(const attempt_t *a)
{
    if (a->idle_ms <= 0) return -1;
    if (a->c->clock->fake) return 1;
    int64_t left = a->idle_ms * LOP_NS_PER_MS - (lop_clock_mono(a->c->clock) - a->last_byte);
    return left > 0 ? (long)((left + LOP_NS_PER_MS - 1) / LOP_NS_PER_MS) : 1;
}

/* After every read, every wake and at the idle deadline: the cancel flag and the idle timeout
 * (on the client's clock, so tests drive it). */
static int on_tick(void *ud)
{
    attempt_t *a = ud;
    if (a->cancel && atomic_load(a->cancel)) {
        a->cancelled = true;
        return 1;
    }
    if (a->idle_ms > 0 && lop_clock_mono(a->c->clock) - a->last_byte > a->idle_ms * LOP_NS_PER_MS) {
        a->idle_expired = true;
        return 1;
    }
    *a->tick_ms = next_tick_ms(a);
    return 0;
}

/* "299 - \"text\"" → text; anything else as is. */
static void log_warning(const char *w, const char *method, const char *path)
{
    const char *q = strchr(w, '"');
    const char *e = q ? strrchr(w, '"') : NULL;
    char text[1024];
    if (q && e > q)
        snprintf(text, sizeof text, "%.*s", (int)(e - q - 1), q + 1);
    else
        snprintf(text, sizeof text, "%s", w);
    lop_log(LOP_LOG_WARN, "API server warning", "warning", text, "method", method, "path", path, NULL);
}

/* Append "name: value\r\n" unless the value could split the header block (CR/LF from a config). */
static void add_header(lop_buf_t *h, const char *name, const char *value)
{
    if (strpbrk(value, "\r\n")) {
        lop_log(LOP_LOG_WARN, "header value contains a line break; header not sent", "header", name, NULL);
        return;
    }
    lop_buf_printf(h, "%s: %s\r\n", name, value);
}

/* The request's header lines (the transport adds Host, Content-Length, Accept-Encoding). */
static void build_headers(lop_rest_client_t *c, lop_buf_t *h, const lop_auth_cred_t *cred, const char *accept,
                          const char *content_type, bool has_body)
{
    add_header(h, "User-Agent", c->cfg.user_agent);
    add_header(h, "Accept", accept ? accept : "application/json");
    if (has_body) add_header(h, "Content-Type", content_type ? content_type : "application/json");
    if (cred->token) {
        lop_buf_t v = LOP_BUF_INIT;
        lop_buf_printf(&v, "Bearer %s", cred->token);
        add_header(h, "Authorization", v.data);
        explicit_bzero(v.data, v.len);
        lop_buf_free(&v);
    }
    if (c->cfg.impersonate_user) add_header(h, "Impersonate-User", c->cfg.impersonate_user);
    if (c->cfg.impersonate_uid) add_header(h, "Impersonate-Uid", c->cfg.impersonate_uid);
    for (size_t i = 0; i < c->cfg.n_impersonate_groups; i++)
        add_header(h, "Impersonate-Group", c->cfg.impersonate_groups[i]);
    for (size_t i = 0; i < c->cfg.n_impersonate_extra; i++) {
        const char *kv = c->cfg.impersonate_extra[i];
        const char *eq = strchr(kv, '=');
        if (!eq) continue;
        /* the key percent-encoded where it is not a header token character (client-go) */
        lop_buf_t name = LOP_BUF_INIT;
        lop_buf_append(&name, "Impersonate-Extra-", 18);
        for (const char *k = kv; k < eq; k++) {
            unsigned char ch = (unsigned char)*k;
            if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                (ch && strchr("!#$&'*+-.^_`|~", ch)))
                lop_buf_append(&name, k, 1);
            else
                lop_buf_printf(&name, "%%%02X", ch);
        }
        add_header(h, name.data, eq + 1);
        lop_buf_free(&name);
    }
}

/* Fill x for one attempt of a (its headers built into hdr, which the caller zeroes and frees once
 * the exchange has ended: they hold the credentials). */
static void exchange_init(lop_rest_client_t *c, attempt_t *a, lop_http_exchange_t *x, lop_buf_t *hdr,
                          const char *method, const char *path, const char *accept, const char *content_type,
                          const char *body, size_t len, long timeout_ms, const lop_auth_cred_t *cred)
{
    build_headers(c, hdr, cred, accept, content_type, body != NULL);
    bool needs_length = strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0;
    *x = (lop_http_exchange_t){
        .method = method,
        .target = path,
        .headers = hdr->data,
        .body = body,
        .body_len = len,
        .send_length = needs_length,
        .gzip = true,
        .cert_pem = cred->cert_pem ? cred->cert_pem : c->cfg.client_cert_pem,
        .key_pem = cred->cert_pem ? cred->key_pem : c->cfg.client_key_pem,
        .timeout_ms = timeout_ms > 0 ? timeout_ms : 0,
        .send_by_ns = a->send_by_ns,
        .read_bytes = a->fn ? STREAM_READ_BYTES : PLAIN_READ_BYTES,
        .ud = a,
        .on_status = on_status,
        .on_header = on_header,
        .on_body = on_body,
        .on_tick = on_tick,
    };
    a->last_byte = lop_clock_mono(c->clock);
    a->tick_ms = &x->tick_ms;
    x->tick_ms = next_tick_ms(a);
    atomic_fetch_add(&c->requests, 1);
}

/* The observer's report of an attempt that began at t0. */
static void observe(lop_rest_client_t *c, const char *method, int code, int64_t t0)
{
    lop_rest_observer_fn obs = atomic_load(&c->observer);
    if (obs)
        obs(atomic_load(&c->observer_ud), method, code, lop_transport_host_port(c->tr), lop_clock_mono(c->clock) - t0);
}

/* Perform one HTTP exchange; *code gets the HTTP status (0 if none), errbuf the transport's
 * reason on failure. */
static lop_http_result_t perform(lop_rest_client_t *c, attempt_t *a, const char *method, const char *path,
                                 const char *accept, const char *content_type, const char *body, size_t len,
                                 long timeout_ms, const lop_auth_cred_t *cred, int *code, char *errbuf, size_t errcap)
{
    lop_buf_t hdr = LOP_BUF_INIT;
    lop_http_exchange_t x;
    exchange_init(c, a, &x, &hdr, method, path, accept, content_type, body, len, timeout_ms, cred);
    int64_t t0 = lop_clock_mono(c->clock);
    lop_http_result_t res = lop_transport_exchange(c->tr, &x);
    *code = x.code;
    snprintf(errbuf, errcap, "%s", x.error);
    observe(c, method, x.code, t0);
    explicit_bzero(hdr.data, hdr.len); /* it held the credentials */
    lop_buf_free(&hdr);
    return res;
}

/* Wait until deadline on the client's clock; false when cancelled first. */
static bool wait_until(lop_rest_client_t *c, int64_t deadline, const atomic_bool *cancel)
{
    bool ok = true;
    pthread_mutex_lock(&c->wake_mu);
    for (;;) {
        if (cancel && atomic_load(cancel)) {
            ok = false;
            break;
        }
        if (lop_clock_mono(c->clock) >= deadline) break;
        unsigned gen = c->wake_gen; /* a wake ends this wait, then the flag is looked at again */
        while (gen == c->wake_gen && !lop_clock_wait_until(c->clock, &c->wake_cond, &c->wake_mu, deadline)) {}
    }
    pthread_mutex_unlock(&c->wake_mu);
    return ok;
}

static void attempt_free(attempt_t *a)
{
    for (int i = 0; i < a->nwarnings; i++) free(a->warnings[i]);
    a->nwarnings = 0;
}

/* The shared request loop for plain requests (fn == NULL) and streams. */
static lop_rc_t run(lop_rest_client_t *c, const lop_rest_req_t *req, lop_stream_fn fn, void *fn_ud, long idle_ms,
                    lop_rest_resp_t *resp, lop_err_t *err)
{
    bool is_get = strcmp(req->method, "GET") == 0;
    bool auth_retried = false;
    long timeout = fn ? -1 : (req->timeout_ms == 0 ? DEFAULT_TIMEOUT_MS : req->timeout_ms);
    /* what Retry-After waits may still take of the request's timeout (ns); < 0 = unbounded */
    int64_t wait_budget = timeout > 0 ? timeout * LOP_NS_PER_MS : -1;
    /* the whole call's deadline on the client's clock (INT64_MAX = none) */
    int64_t deadline = INT64_MAX;
    if (!fn && req->deadline_ms > 0) deadline = lop_clock_mono(c->clock) + req->deadline_ms * LOP_NS_PER_MS;
    lop_rest_resp_cleanup(resp);
    lop_rest_resp_init(resp);
    for (int attempt = 0;; attempt++) {
        if (req->cancel && atomic_load(req->cancel))
            return lop_err_set(err, LOP_ECLOSED, 0, NULL, "%s %s: cancelled", req->method, req->path);
        int64_t wait = lop_qps_reserve(c->qps);
        if (wait > 0 && deadline != INT64_MAX && lop_clock_mono(c->clock) + wait > deadline)
            return lop_err_set(err, LOP_ETIMEDOUT, 0, NULL,
                               "%s %s: the client rate limiter's wait would pass the deadline (%ld ms)", req->method,
                               req->path, req->deadline_ms);
        if (wait > 0 && !wait_until(c, lop_clock_mono(c->clock) + wait, req->cancel))
            return lop_err_set(err, LOP_ECLOSED, 0, NULL, "%s %s: cancelled", req->method, req->path);
        long attempt_timeout = timeout;
        if (deadline != INT64_MAX) {
            int64_t left = deadline - lop_clock_mono(c->clock);
            if (left <= 0)
                return lop_err_set(err, LOP_ETIMEDOUT, 0, NULL, "%s %s: deadline (%ld ms) passed", req->method,
                                   req->path, req->deadline_ms);
            long left_ms = (long)((left + LOP_NS_PER_MS - 1) / LOP_NS_PER_MS);
            if (attempt_timeout <= 0 || left_ms < attempt_timeout) attempt_timeout = left_ms;
        }
        lop_auth_cred_t cred;
        lop_rc_t rc = lop_auth_get(c->cfg.auth, &cred, err);
        if (rc != LOP_OK) return rc;
        lop_buf_reset(&resp->body);
        attempt_t a = {.c = c,
                       .body = &resp->body,
                       .fn = fn ? fn : req->sink,
                       .fn_ud = fn ? fn_ud : req->sink_ud,
                       .cancel = req->cancel,
                       .idle_ms = idle_ms,
                       .send_by_ns = req->send_by_ns,
                       .retry_after = -1};
        int code = 0;
        char why[256];
        lop_http_result_t hr = perform(c, &a, req->method, req->path, req->accept, req->content_type, req->body,
                                       req->len, attempt_timeout, &cred, &code, why, sizeof why);
        lop_auth_cred_cleanup(&cred);
        resp->code = code;
        snprintf(resp->content_type, sizeof resp->content_type, "%s", a.content_type);
        snprintf(resp->audit_id, sizeof resp->audit_id, "%s", a.audit_id);
        for (int i = 0; i < a.nwarnings; i++) log_warning(a.warnings[i], req->method, req->path);
        long retry_after = a.retry_after;
        attempt_free(&a);
        if (a.cancelled) return lop_err_set(err, LOP_ECLOSED, 0, NULL, "%s %s: cancelled", req->method, req->path);
        if (a.fn_stopped)
            return lop_err_set(err, LOP_ECLOSED, code, NULL, "%s %s: stopped by the consumer", req->method, req->path);
        if (a.idle_expired)
            return lop_err_set(err, LOP_ETIMEDOUT, code, NULL, "%s %s: no data for %ld ms", req->method, req->path,
                               idle_ms);
        if (a.too_big)
            return lop_err_set(err, LOP_EAGAIN, code, NULL, "%s %s: response body over %zu MiB", req->method, req->path,
                               BODY_MAX >> 20);
        if (hr != LOP_HTTP_OK) {
            if (is_get && !fn && !a.delivered && hr == LOP_HTTP_ERESET && attempt < LOP_REST_MAX_RETRIES &&
                (deadline == INT64_MAX || lop_clock_mono(c->clock) + LOP_NS_PER_S <= deadline)) {
                lop_log(LOP_LOG_DEBUG, "retrying GET after a connection error", "path", req->path, "error", why, NULL);
                resp->retries++;
                if (!wait_until(c, lop_clock_mono(c->clock) + LOP_NS_PER_S, req->cancel))
                    return lop_err_set(err, LOP_ECLOSED, 0, NULL, "%s %s: cancelled", req->method, req->path);
                continue;
            }
            if (hr == LOP_HTTP_ELATE)
                return lop_err_set(err, LOP_ECLOSED, 0, NULL, "%s %s: %s", req->method, req->path, why);
            lop_rc_t trc = hr == LOP_HTTP_ETIMEDOUT ? LOP_ETIMEDOUT : hr == LOP_HTTP_EREQUEST ? LOP_EINVAL : LOP_EAGAIN;
            return lop_err_set(err, trc, code, NULL, "%s %s%s: %s", req->method, c->cfg.server, req->path, why);
        }
        if (code >= 200 && code < 300) {
            lop_err_clear(err);
            return LOP_OK;
        }
        if (code == 401 && !auth_retried && lop_auth_invalidate(c->cfg.auth)) {
            lop_log(LOP_LOG_INFO, "401 from the API server; refreshing credentials and retrying once", "method",
                    req->method, "path", req->path, NULL);
            auth_retried = true;
            resp->retries++;
            continue;
        }
        if (!fn && (code == 429 || code >= 500) && retry_after >= 0 && attempt < LOP_REST_MAX_RETRIES) {
            char ra[24], n[16];
            snprintf(ra, sizeof ra, "%ld", retry_after);
            snprintf(n, sizeof n, "%d", attempt + 1);
            lop_log(LOP_LOG_DEBUG, "retrying after Retry-After", "method", req->method, "path", req->path, "code",
                    code == 429 ? "429" : "5xx", "retry_after_s", ra, "attempt", n, NULL);
            int64_t until = lop_clock_mono(c->clock) + retry_after * LOP_NS_PER_S;
            if ((wait_budget >= 0 && retry_after * LOP_NS_PER_S > wait_budget) || until > deadline) {
                lop_log(LOP_LOG_DEBUG, "Retry-After passes the request's deadline; not retrying", "method", req->method,
                        "path", req->path, "retry_after_s", ra, NULL);
                return lop_rest_status_parse(code, resp->body.data, resp->body.len, err, &resp->status);
            }
            if (wait_budget >= 0) wait_budget -= retry_after * LOP_NS_PER_S;
            resp->retries++;
            if (!wait_until(c, until, req->cancel))
                return lop_err_set(err, LOP_ECLOSED, 0, NULL, "%s %s: cancelled", req->method, req->path);
            continue;
        }
        return lop_rest_status_parse(code, resp->body.data, resp->body.len, err, &resp->status);
    }
}

lop_rc_t lop_rest_request(lop_rest_client_t *c, const lop_rest_req_t *req, lop_rest_resp_t *resp, lop_err_t *err)
{
    lop_rest_resp_t local = LOP_REST_RESP_INIT;
    lop_rc_t rc = run(c, req, NULL, NULL, 0, resp ? resp : &local, err);
    lop_rest_resp_cleanup(&local);
    return rc;
}

lop_rc_t lop_rest_do(lop_rest_client_t *c, const char *method, const char *path_and_query, const char *content_type,
                     const char *body, size_t len, lop_rest_resp_t *resp, lop_err_t *err)
{
    lop_rest_req_t req = {
        .method = method, .path = path_and_query, .content_type = content_type, .body = body, .len = len};
    return lop_rest_request(c, &req, resp, err);
}

lop_rc_t lop_rest_stream(lop_rest_client_t *c, const char *path, lop_stream_fn fn, void *ud,
                         const lop_rest_stream_opts_t *opts, int *code, lop_err_t *err)
{
    lop_rest_req_t req = {
        .method = "GET", .path = path, .cancel = opts ? opts->cancel : NULL, .accept = opts ? opts->accept : NULL};
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_rc_t rc = run(c, &req, fn, ud, opts ? opts->idle_timeout_ms : 0, &resp, err);
    if (code) *code = resp.code;
    lop_rest_resp_cleanup(&resp);
    return rc;
}

/* ---- asynchronous streams and sinks (lop_rest_stream_start, lop_rest_sink_start) ---- */

typedef enum stream_state { SS_RETRY, SS_WAITING, SS_RUNNING, SS_ENDED } stream_state_t;

struct lop_rest_stream_call {
    lop_rest_client_t *c;
    char *path, *accept;
    long idle_ms;
    bool plain; /* a request with a sink (lop_rest_sink_start): its timeout and retries */
    lop_transport_notify_fn notify;
    void *notify_ud;
    const atomic_bool *cancel; /* lop_rest_stream_set_cancel; NULL = none */
    stream_state_t state;
    int64_t retry_at; /* SS_RETRY: when the next attempt takes its rate limiter token */
    int64_t start_at; /* SS_WAITING: when the rate limiter's token is ours (client's clock) */
    int attempt;      /* attempts made */
    bool auth_retried;
    int64_t wait_budget; /* plain: what Retry-After waits may still take (ns) */
    /* the attempt in flight (SS_RUNNING) */
    attempt_t a;
    lop_buf_t body; /* a non-2xx body */
    lop_buf_t hdr;
    lop_auth_cred_t cred;
    lop_http_exchange_t x;
    lop_transport_call_t *tc;
    int64_t t0;
    /* SS_ENDED */
    lop_rc_t rc;
    lop_err_t err;
    int code;
};

/* The next attempt takes its token now (SS_WAITING until it is due). */
static void take_token(lop_rest_stream_call_t *s)
{
    int64_t wait = lop_qps_reserve(s->c->qps);
    s->start_at = lop_clock_mono(s->c->clock) + (wait > 0 ? wait : 0);
    s->state = SS_WAITING;
}

static lop_rc_t call_start(lop_rest_client_t *c, const char *path, const char *accept, long idle_ms, bool plain,
                           lop_transport_notify_fn notify, void *notify_ud, lop_rest_stream_call_t **out,
                           lop_err_t *err)
{
    *out = NULL;
    if (!path || !notify)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "stream: a path and a notify callback are required");
    lop_rest_stream_call_t *s = lop_xcalloc(1, sizeof *s);
    s->c = c;
    s->path = lop_xstrdup(path);
    s->accept = accept ? lop_xstrdup(accept) : NULL;
    s->idle_ms = idle_ms;
    s->plain = plain;
    s->wait_budget = DEFAULT_TIMEOUT_MS * LOP_NS_PER_MS;
    s->notify = notify;
    s->notify_ud = notify_ud;
    lop_buf_init(&s->body);
    lop_buf_init(&s->hdr);
    take_token(s);
    *out = s;
    return LOP_OK;
}

lop_rc_t lop_rest_stream_start(lop_rest_client_t *c, const char *path, const lop_rest_stream_opts_t *opts,
                               lop_transport_notify_fn notify, void *notify_ud, lop_rest_stream_call_t **out,
                               lop_err_t *err)
{
    lop_rc_t rc = call_start(c, path, opts ? opts->accept : NULL, opts ? opts->idle_timeout_ms : 0, false, notify,
                             notify_ud, out, err);
    if (rc == LOP_OK && opts) (*out)->cancel = opts->cancel;
    return rc;
}

lop_rc_t lop_rest_sink_start(lop_rest_client_t *c, const char *path, const char *accept, lop_transport_notify_fn notify,
                             void *notify_ud, lop_rest_stream_call_t **out, lop_err_t *err)
{
    return call_start(c, path, accept, 0, true, notify, notify_ud, out, err);
}

static void stream_end(lop_rest_stream_call_t *s, lop_rc_t rc, const lop_err_t *err)
{
    s->state = SS_ENDED;
    s->rc = rc;
    if (err)
        s->err = *err;
    else
        lop_err_clear(&s->err);
}

/* The attempt's exchange is over: its resources go, its observer and warnings are reported. */
static void attempt_release(lop_rest_stream_call_t *s)
{
    if (s->tc) {
        lop_transport_end(s->tc);
        s->tc = NULL;
        observe(s->c, "GET", s->x.code, s->t0);
    }
    if (s->hdr.data) explicit_bzero(s->hdr.data, s->hdr.len); /* it held the credentials */
    lop_buf_free(&s->hdr);
    lop_buf_init(&s->hdr);
    lop_auth_cred_cleanup(&s->cred);
    memset(&s->cred, 0, sizeof s->cred);
    for (int i = 0; i < s->a.nwarnings; i++) log_warning(s->a.warnings[i], "GET", s->path);
    attempt_free(&s->a);
}

/* How the finished exchange (hr) ends the attempt (as run() decides after perform): SS_ENDED, or
 * SS_RETRY / SS_WAITING for a retry. */
static void attempt_done(lop_rest_stream_call_t *s, lop_http_result_t hr)
{
    lop_rest_client_t *c = s->c;
    int code = s->x.code;
    char why[256];
    snprintf(why, sizeof why, "%s", s->x.error);
    long retry_after = s->a.retry_after;
    attempt_release(s);
    int attempt = s->attempt++;
    int64_t now = lop_clock_mono(c->clock);
    lop_err_t e;
    lop_err_clear(&e);
    lop_rc_t rc = LOP_OK;
    if (s->a.cancelled) {
        rc = lop_err_set(&e, LOP_ECLOSED, code, NULL, "GET %s: cancelled", s->path);
    } else if (s->a.fn_stopped) {
        rc = lop_err_set(&e, LOP_ECLOSED, code, NULL, "GET %s: stopped by the consumer", s->path);
    } else if (s->a.idle_expired) {
        rc = lop_err_set(&e, LOP_ETIMEDOUT, code, NULL, "GET %s: no data for %ld ms", s->path, s->idle_ms);
    } else if (s->a.too_big) {
        rc = lop_err_set(&e, LOP_EAGAIN, code, NULL, "GET %s: response body over %zu MiB", s->path, BODY_MAX >> 20);
    } else if (hr != LOP_HTTP_OK) {
        if (s->plain && !s->a.delivered && hr == LOP_HTTP_ERESET && attempt < LOP_REST_MAX_RETRIES) {
            lop_log(LOP_LOG_DEBUG, "retrying GET after a connection error", "path", s->path, "error", why, NULL);
            s->retry_at = now + LOP_NS_PER_S;
            s->state = SS_RETRY;
            return;
        }
        lop_rc_t trc = hr == LOP_HTTP_ETIMEDOUT ? LOP_ETIMEDOUT : hr == LOP_HTTP_EREQUEST ? LOP_EINVAL : LOP_EAGAIN;
        rc = lop_err_set(&e, trc, code, NULL, "GET %s%s: %s", c->cfg.server, s->path, why);
    } else if (code >= 200 && code < 300) {
        rc = LOP_OK;
    } else if (code == 401 && !s->auth_retried && lop_auth_invalidate(c->cfg.auth)) {
        lop_log(LOP_LOG_INFO, "401 from the API server; refreshing credentials and retrying once", "method", "GET",
                "path", s->path, NULL);
        s->auth_retried = true;
        take_token(s);
        return;
    } else if (s->plain && (code == 429 || code >= 500) && retry_after >= 0 && attempt < LOP_REST_MAX_RETRIES &&
               retry_after * LOP_NS_PER_S <= s->wait_budget) {
        char ra[24], n[16];
        snprintf(ra, sizeof ra, "%ld", retry_after);
        snprintf(n, sizeof n, "%d", attempt + 1);
        lop_log(LOP_LOG_DEBUG, "retrying after Retry-After", "method", "GET", "path", s->path, "code",
                code == 429 ? "429" : "5xx", "retry_after_s", ra, "attempt", n, NULL);
        s->wait_budget -= retry_after * LOP_NS_PER_S;
        s->retry_at = now + retry_after * LOP_NS_PER_S;
        s->state = SS_RETRY;
        return;
    } else {
        rc = lop_rest_status_parse(code, s->body.data, s->body.len, &e, NULL);
    }
    s->code = code;
    stream_end(s, rc, &e);
}

/* Begin an attempt; false when it ended at once (then SS_ENDED, or waiting for a retry). */
static bool attempt_begin(lop_rest_stream_call_t *s, lop_stream_fn fn, void *fn_ud)
{
    lop_rest_client_t *c = s->c;
    lop_err_t e;
    lop_err_clear(&e);
    lop_rc_t rc = lop_auth_get(c->cfg.auth, &s->cred, &e);
    if (rc != LOP_OK) {
        stream_end(s, rc, &e);
        return false;
    }
    lop_buf_reset(&s->body);
    s->a = (attempt_t){.c = c,
                       .body = &s->body,
                       .fn = fn,
                       .fn_ud = fn_ud,
                       .cancel = s->cancel,
                       .idle_ms = s->idle_ms,
                       .retry_after = -1};
    exchange_init(c, &s->a, &s->x, &s->hdr, "GET", s->path, s->accept, NULL, NULL, 0,
                  s->plain ? DEFAULT_TIMEOUT_MS : -1, &s->cred);
    s->t0 = lop_clock_mono(c->clock);
    lop_http_result_t hr;
    s->tc = lop_transport_begin(c->tr, &s->x, s->notify, s->notify_ud, &hr);
    if (!s->tc) {
        observe(c, "GET", 0, s->t0);
        attempt_done(s, hr);
        return false;
    }
    s->state = SS_RUNNING;
    return true;
}

bool lop_rest_stream_pump(lop_rest_stream_call_t *s, lop_stream_fn fn, void *fn_ud, lop_rc_t *rc, int64_t *next_ns,
                          lop_err_t *err)
{
    *next_ns = INT64_MAX;
    for (;;) {
        if (s->state == SS_ENDED) {
            *rc = s->rc;
            if (err) *err = s->err;
            return true;
        }
        if (s->state == SS_RETRY) {
            int64_t left = s->retry_at - lop_clock_mono(s->c->clock);
            if (left > 0) {
                *next_ns = left;
                return false;
            }
            take_token(s);
        }
        if (s->state == SS_WAITING) {
            int64_t left = s->start_at - lop_clock_mono(s->c->clock);
            if (left > 0) {
                *next_ns = left;
                return false;
            }
            if (!attempt_begin(s, fn, fn_ud)) continue;
        }
        s->a.fn = fn;
        s->a.fn_ud = fn_ud;
        lop_http_result_t hr;
        if (!lop_transport_pump(s->tc, &hr)) {
            if (s->idle_ms > 0) {
                int64_t left = s->idle_ms * LOP_NS_PER_MS - (lop_clock_mono(s->c->clock) - s->a.last_byte);
                *next_ns = left > 0 ? left + 1 : 1;
            } else if (s->plain) { /* the attempt's timeout is the transport's: it ends the exchange */
                *next_ns = INT64_MAX;
            }
            return false;
        }
        attempt_done(s, hr);
    }
}

int lop_rest_stream_code(const lop_rest_stream_call_t *s) { return s->code; }

void lop_rest_stream_set_cancel(lop_rest_stream_call_t *s, const atomic_bool *cancel)
{
    if (s) s->cancel = cancel;
}

void lop_rest_stream_free(lop_rest_stream_call_t *s)
{
    if (!s) return;
    attempt_release(s);
    lop_buf_free(&s->body);
    free(s->path);
    free(s->accept);
    free(s);
}
