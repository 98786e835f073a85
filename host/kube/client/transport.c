/* SPDX-License-Identifier: Apache-2.0 */
/* transport.c — the caller's side of the libcurl transport (see transport.h): the server URL,
 * the transport's lifetime, and lop_transport_exchange, which hands an exchange to the I/O thread
 * (transport_io.c) and passes what arrives to the exchange's callbacks on the calling thread. */
#include "host/kube/client/transport_impl.h"

#include "host/util/log.h"

#include <errno.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* Up to 40 bytes of p for an error message, bytes outside printable ASCII as '.'. */
static const char *excerpt(char *dst, size_t cap, const char *p, size_t n)
{
    if (n > 40) n = 40;
    if (n >= cap) n = cap - 1;
    for (size_t i = 0; i < n; i++) dst[i] = p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '.';
    dst[n] = '\0';
    return dst;
}

/* ---- URL ---- */

static lop_rc_t parse_url(lop_transport_t *t, const char *url, lop_err_t *err)
{
    const char *p = url;
    if (strncasecmp(p, "https://", 8) == 0)
        t->tls = true, p += 8;
    else if (strncasecmp(p, "http://", 7) == 0)
        p += 7;
    else
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "invalid server URL %s: the scheme must be http or https", url);
    size_t alen = strcspn(p, "/?#");
    const char *rest = p + alen;
    if (memchr(p, '@', alen))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "invalid server URL %s: user information is not supported", url);
    const char *hs = p, *he, *ps = NULL;
    if (*p == '[') {
        const char *rb = memchr(p, ']', alen);
        if (!rb) return lop_err_set(err, LOP_EINVAL, 0, NULL, "invalid server URL %s: unclosed '['", url);
        hs = p + 1;
        he = rb;
        if (rb + 1 < p + alen) {
            if (rb[1] != ':') return lop_err_set(err, LOP_EINVAL, 0, NULL, "invalid server URL %s", url);
            ps = rb + 2;
        }
    } else {
        const char *colon = memchr(p, ':', alen);
        he = colon ? colon : p + alen;
        if (colon) ps = colon + 1;
    }
    if (he == hs) return lop_err_set(err, LOP_EINVAL, 0, NULL, "invalid server URL %s: no host", url);
    for (const char *q = hs; q < he; q++)
        if ((unsigned char)*q <= ' ' || *q == '\\')
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "invalid server URL %s: bad host", url);
    long port = t->tls ? 443 : 80;
    if (ps) {
        const char *pe = p + alen;
        char *end;
        if (ps == pe) goto port_default;
        port = strtol(ps, &end, 10);
        if (end != pe || port < 1 || port > 65535 || *ps < '0' || *ps > '9')
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "invalid server URL %s: bad port", url);
    }
port_default:
    if (strpbrk(rest, "?#"))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "invalid server URL %s: a query or fragment is not allowed", url);
    size_t rl = strlen(rest);
    while (rl && rest[rl - 1] == '/') rl--;
    for (size_t i = 0; i < rl; i++)
        if ((unsigned char)rest[i] <= ' ')
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "invalid server URL %s: bad path", url);
    bool v6 = *p == '[';
    lop_buf_t b = LOP_BUF_INIT;
    t->host = lop_xstrndup(hs, (size_t)(he - hs));
    lop_buf_printf(&b, "%ld", port);
    t->port = lop_buf_steal(&b);
    lop_buf_printf(&b, "%s%s%s:%ld", v6 ? "[" : "", t->host, v6 ? "]" : "", port);
    t->host_port = lop_buf_steal(&b);
    if (port == (t->tls ? 443 : 80))
        lop_buf_printf(&b, "%s%s%s", v6 ? "[" : "", t->host, v6 ? "]" : "");
    else
        lop_buf_printf(&b, "%s", t->host_port);
    t->host_hdr = lop_buf_steal(&b);
    t->prefix = lop_xstrndup(rest, rl);
    return LOP_OK;
}

/* ---- lifecycle ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* Whether pem holds at least one certificate. */
static bool pem_has_cert(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    bool ok = x != NULL;
    X509_free(x);
    BIO_free(b);
    return ok;
}

/* A duration in seconds from the environment (client-go's HTTP2_* switches), else def_ms. */
static long env_seconds_ms(const char *name, long def_ms)
{
    const char *v = getenv(name);
    if (!v || !*v) return def_ms;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || n < 0 || n > 86400) {
        lop_log(LOP_LOG_WARN, "ignoring a malformed environment variable (want whole seconds)", "name", name, "value",
                v, NULL);
        return def_ms;
    }
    return n * 1000;
}

static bool env_true(const char *name)
{
    const char *v = getenv(name);
    return v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0);
}

lop_rc_t lop_transport_new(const lop_transport_config_t *cfg, lop_transport_t **out, lop_err_t *err)
{
    *out = NULL;
    if (!cfg->server || !*cfg->server) return lop_err_set(err, LOP_EINVAL, 0, NULL, "no server URL");
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return lop_err_set(err, LOP_ERR, 0, NULL, "libcurl could not initialise: %s", curl_easy_strerror(curl_init_rc));
    lop_transport_t *t = lop_xcalloc(1, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    t->wake_fd = -1;
    lop_rc_t rc = parse_url(t, cfg->server, err);
    if (rc == LOP_OK && t->tls && cfg->ca_pem && *cfg->ca_pem && !pem_has_cert(cfg->ca_pem))
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "the certificate authority data for %s holds no PEM certificate",
                         cfg->server);
    if (rc == LOP_OK) rc = lop_proxy_select(cfg->proxy, t->tls, t->host, t->port, &t->proxy, err);
    if (rc == LOP_OK) {
        t->insecure = cfg->insecure;
        t->ca_pem = cfg->ca_pem && *cfg->ca_pem ? lop_xstrdup(cfg->ca_pem) : NULL;
        t->disable_http2 = cfg->disable_http2 || env_true("DISABLE_HTTP2");
        long idle =
            cfg->h2_read_idle_ms ? cfg->h2_read_idle_ms : env_seconds_ms("HTTP2_READ_IDLE_TIMEOUT_SECONDS", 30000);
        long ping =
            cfg->h2_ping_timeout_ms > 0 ? cfg->h2_ping_timeout_ms : env_seconds_ms("HTTP2_PING_TIMEOUT_SECONDS", 15000);
        t->read_idle_ns = idle > 0 ? (int64_t)idle * 1000000 : 0; /* 0 s disables, as in client-go */
        t->ping_timeout_ns = (int64_t)(ping > 0 ? ping : 15000) * 1000000;
        bool v6 = strchr(t->host, ':') != NULL;
        const char *sni = t->tls && cfg->tls_server_name && *cfg->tls_server_name ? cfg->tls_server_name : NULL;
        lop_buf_t b = LOP_BUF_INIT;
        if (sni && strcasecmp(sni, t->host) != 0) {
            /* verify and send SNI for sni, connect to the real host, keep the real Host header */
            bool sv6 = strchr(sni, ':') != NULL;
            lop_buf_printf(&b, "https://%s%s%s:%s", sv6 ? "[" : "", sni, sv6 ? "]" : "", t->port);
            t->base_url = lop_buf_steal(&b);
            lop_buf_printf(&b, "%s%s%s:%s:%s%s%s:%s", sv6 ? "[" : "", sni, sv6 ? "]" : "", t->port, v6 ? "[" : "",
                           t->host, v6 ? "]" : "", t->port);
            t->connect_to = lop_buf_steal(&b);
            t->tls_server_name = lop_xstrdup(sni);
        } else {
            lop_buf_printf(&b, "%s://%s%s%s:%s", t->tls ? "https" : "http", v6 ? "[" : "", t->host, v6 ? "]" : "",
                           t->port);
            t->base_url = lop_buf_steal(&b);
        }
        rc = lop_tr_io_start(t, err);
    }
    if (rc != LOP_OK) {
        lop_transport_free(t);
        return rc;
    }
    *out = t;
    return LOP_OK;
}

void lop_transport_free(lop_transport_t *t)
{
    if (!t) return;
    lop_tr_io_stop(t);
    lop_proxy_cleanup(&t->proxy);
    pthread_mutex_destroy(&t->mu);
    free(t->host);
    free(t->port);
    free(t->host_hdr);
    free(t->host_port);
    free(t->prefix);
    free(t->base_url);
    free(t->connect_to);
    free(t->tls_server_name);
    lop_tr_dns_free(t);
    free(t->dns_addrs);
    if (t->ca_pem) free(t->ca_pem);
    free(t);
}

const char *lop_transport_host_port(const lop_transport_t *t) { return t->host_port; }
bool lop_transport_is_tls(const lop_transport_t *t) { return t->tls; }
const char *lop_transport_proxy(const lop_transport_t *t) { return t->proxy.host_port; }
long lop_transport_connects(lop_transport_t *t) { return atomic_load(&t->connects); }
long lop_transport_open_connections(lop_transport_t *t) { return atomic_load(&t->open); }
long lop_transport_dead_connections(lop_transport_t *t) { return atomic_load(&t->dead); }
long lop_transport_probes_sent(lop_transport_t *t) { return atomic_load(&t->probes_sent); }
long lop_transport_probes(lop_transport_t *t) { return atomic_load(&t->probes_done); }

/* ---- an exchange ---- */

/* The method is a token and the target starts with '/' and holds no space or control byte, so
 * neither can end the request line early or add lines (request splitting). */
static bool request_line_ok(const char *method, const char *target)
{
    if (!method || !*method || !target || *target != '/') return false;
    for (const char *m = method; *m; m++)
        if (!((*m >= 'A' && *m <= 'Z') || (*m >= 'a' && *m <= 'z') || (*m >= '0' && *m <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *m)))
            return false;
    for (const unsigned char *q = (const unsigned char *)target; *q; q++)
        if (*q <= 0x20 || *q == 0x7f) return false;
    return true;
}

/* The request's header list for libcurl: the caller's lines, the Host header when the URL names
 * tls_server_name instead, and empty Expect / Content-Type so libcurl adds neither of its own. */
static struct curl_slist *header_list(const lop_transport_t *t, const lop_http_exchange_t *x)
{
    struct curl_slist *l = NULL;
    bool has_ctype = false, has_accept = false;
    lop_buf_t line = LOP_BUF_INIT;
    for (const char *p = x->headers; p && *p;) {
        size_t n = strcspn(p, "\r\n");
        if (n) {
            lop_buf_reset(&line);
            lop_buf_append(&line, p, n);
            if (n >= 13 && strncasecmp(p, "Content-Type:", 13) == 0) has_ctype = true;
            if (n >= 7 && strncasecmp(p, "Accept:", 7) == 0) has_accept = true;
            l = curl_slist_append(l, line.data);
        }
        p += n;
        p += strspn(p, "\r\n");
    }
    if (line.data) explicit_bzero(line.data, line.len); /* it may have held credentials */
    lop_buf_free(&line);
    if (t->connect_to) {
        lop_buf_printf(&line, "Host: %s", t->host_hdr);
        l = curl_slist_append(l, line.data);
        lop_buf_free(&line);
    }
    if (!has_accept) l = curl_slist_append(l, "Accept:"); /* not libcurl's default Accept */
    l = curl_slist_append(l, "Expect:");
    if (!has_ctype) l = curl_slist_append(l, "Content-Type:");
    return l;
}

/* Pass the final response's head (status first) to the exchange's callbacks. */
static void deliver_head(lop_http_exchange_t *x, int code, const lop_buf_t *head)
{
    x->code = code;
    if (x->on_status) x->on_status(x->ud, code);
    if (x->on_header) lop_tr_head_each(head->data, head->len, x->on_header, x->ud);
}

/* How a finished transfer ended, for the caller. */
static lop_http_result_t map_result(lop_transport_t *t, lop_tr_xfer_t *xf, lop_http_exchange_t *x)
{
    CURLcode c = xf->result;
    const char *why = xf->errbuf[0] ? xf->errbuf : curl_easy_strerror(c);
    lop_http_result_t r;
    if (xf->bomb) {
        snprintf(x->error, sizeof x->error,
                 "%s: the response body decompressed to over %d times its size (a decompression bomb); refused",
                 t->host_port, LOP_TR_BOMB_RATIO);
        return LOP_HTTP_EPROTO;
    }
    if (xf->head_too_big) {
        snprintf(x->error, sizeof x->error, "%s: the response header block is over %d KiB", t->host_port,
                 LOP_TR_HEAD_MAX / 1024);
        return LOP_HTTP_EPROTO;
    }
    if (c != CURLE_OK && xf->connect_code && xf->connect_code != 200) {
        snprintf(x->error, sizeof x->error, "proxy %s refused CONNECT to %s: HTTP %ld", t->proxy.host_port,
                 t->host_port, xf->connect_code);
        return LOP_HTTP_ECONNECT;
    }
    if (xf->late) {
        snprintf(x->error, sizeof x->error, "%s: not sent: its send-by deadline had passed", t->host_port);
        return LOP_HTTP_ELATE;
    }
    if (xf->no_resend) {
        snprintf(x->error, sizeof x->error,
                 "%s: the connection died after the response began; the request is not sent again", t->host_port);
        return LOP_HTTP_ERESET;
    }
    if (c == CURLE_OK && !xf->head_done) {
        snprintf(x->error, sizeof x->error, "%s: the connection closed in the middle of the response headers",
                 t->host_port);
        return LOP_HTTP_ERESET;
    }
    switch (c) {
    case CURLE_OK: return LOP_HTTP_OK;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_PROXY: r = LOP_HTTP_ECONNECT; break;
    case CURLE_OPERATION_TIMEDOUT: {
        /* while connecting, libcurl's bound is the shorter of the two (the request never left) */
        long ct = x->connect_timeout_ms > 0 ? x->connect_timeout_ms : LOP_TR_CONNECT_TIMEOUT_MS;
        if (!xf->sent && (x->timeout_ms <= 0 || ct < x->timeout_ms))
            snprintf(x->error, sizeof x->error, "%s: connecting timed out after %ld ms", t->host_port, ct);
        else
            snprintf(x->error, sizeof x->error, "%s: timed out after %ld ms", t->host_port, x->timeout_ms);
        return LOP_HTTP_ETIMEDOUT;
    }
    case CURLE_SEND_FAIL_REWIND:
        snprintf(x->error, sizeof x->error,
                 "%s: the server closed the connection before responding; a %s is not sent again", t->host_port,
                 x->method);
        return LOP_HTTP_ERESET;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_HTTP2:
    case CURLE_HTTP3:
    case CURLE_FILESIZE_EXCEEDED: r = LOP_HTTP_EPROTO; break;
    case CURLE_URL_MALFORMAT: r = LOP_HTTP_EREQUEST; break;
    default: r = LOP_HTTP_ERESET; break; /* RECV/SEND errors, GOT_NOTHING, PARTIAL_FILE, HTTP2_STREAM */
    }
    if (r == LOP_HTTP_ECONNECT && t->proxy.url && c == CURLE_COULDNT_CONNECT)
        snprintf(x->error, sizeof x->error, "connecting to proxy %s for %s: %.120s (%s)", t->proxy.host_port,
                 t->host_port, why, xf->os_errno ? strerror((int)xf->os_errno) : "failed");
    else if (r == LOP_HTTP_ECONNECT && xf->os_errno)
        snprintf(x->error, sizeof x->error, "%s: %.160s (%s)", t->host_port, why, strerror((int)xf->os_errno));
    else
        snprintf(x->error, sizeof x->error, "%s: %.200s", t->host_port, why);
    return r;
}

/* Ask the I/O thread to drop the transfer and wait until it has. */
static void cancel_and_wait(lop_transport_t *t, lop_tr_xfer_t *xf)
{
    pthread_mutex_lock(&t->mu);
    if (!xf->done) {
        xf->cancel = true;
        xf->op_cancel = true;
        lop_tr_io_queue(xf);
        while (!xf->done) pthread_cond_wait(&xf->cond, &t->mu);
    }
    pthread_mutex_unlock(&t->mu);
}

/* Wait on cond for ms (< 0: until signalled). */
/* Wait on cond (mu held) until ready(arg) holds or ms have passed (< 0: no limit). Spurious
 * wake-ups and signals that brought nothing go back to waiting, so the caller's on_tick runs once
 * per real event or per ms, never more often. */
static void wait_ready(pthread_cond_t *cond, pthread_mutex_t *mu, long ms, bool (*ready)(const void *), const void *arg)
{
    if (ms < 0) {
        while (!ready(arg)) pthread_cond_wait(cond, mu);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    while (!ready(arg))
        if (pthread_cond_timedwait(cond, mu, &ts) == ETIMEDOUT) return;
}

/* The caller's side of one exchange (lop_transport_begin .. lop_transport_end). */
struct lop_transport_call {
    lop_transport_t *t;
    lop_http_exchange_t *x;
    lop_tr_xfer_t *xf;
    size_t rb;
    unsigned seen_gen;
    bool head_delivered, finished;
    int code;
    lop_http_result_t res;
    lop_buf_t got, head;
};

lop_transport_call_t *lop_transport_begin(lop_transport_t *t, lop_http_exchange_t *x, lop_transport_notify_fn notify,
                                          void *notify_ud, lop_http_result_t *res)
{
    x->code = 0;
    x->response_started = false;
    x->error[0] = '\0';
    if (!request_line_ok(x->method, x->target)) {
        char ex[48];
        snprintf(x->error, sizeof x->error, "request to %s: the method or target is not valid on the wire: \"%s\"",
                 t->host_port, excerpt(ex, sizeof ex, x->target ? x->target : "", x->target ? strlen(x->target) : 0));
        *res = LOP_HTTP_EREQUEST;
        return NULL;
    }
    /* the name libcurl would connect to (the proxy's, when there is one), resolved here, bounded */
    int64_t begun = lop_tr_now_ns();
    struct curl_slist *resolve = NULL;
    lop_http_result_t rr = t->proxy.url ? lop_tr_resolve(t, t->proxy.host, t->proxy.port, x, &resolve)
                                        : lop_tr_resolve(t, t->host, t->port, x, &resolve);
    if (rr != LOP_HTTP_OK) {
        *res = rr;
        return NULL;
    }
    lop_transport_call_t *call = lop_xcalloc(1, sizeof *call);
    call->t = t;
    call->x = x;
    call->rb = x->read_bytes ? x->read_bytes : LOP_TR_READ_DEFAULT;
    lop_buf_init(&call->got);
    lop_buf_init(&call->head);
    lop_tr_xfer_t *xf = lop_xcalloc(1, sizeof *xf);
    call->xf = xf;
    xf->t = t;
    xf->x = x;
    xf->send_by_ns = x->send_by_ns;
    xf->begun_ns = begun;
    xf->notify = notify;
    xf->notify_ud = notify_ud;
    xf->hwm = 8 * call->rb > LOP_TR_INBOX_MIN ? 8 * call->rb : LOP_TR_INBOX_MIN;
    if (xf->hwm > LOP_TR_INBOX_MAX) xf->hwm = LOP_TR_INBOX_MAX;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&xf->cond, &ca);
    pthread_condattr_destroy(&ca);
    lop_buf_t u = LOP_BUF_INIT;
    lop_buf_printf(&u, "%s%s%s", t->base_url, t->prefix, x->target);
    xf->url = lop_buf_steal(&u);
    xf->headers = header_list(t, x);
    xf->resolve = resolve;

    pthread_mutex_lock(&t->mu);
    xf->op_add = true;
    lop_tr_io_queue(xf);
    xf->next_waiting = t->waiting;
    t->waiting = xf;
    call->seen_gen = t->wake_gen - 1; /* no wait before the first on_tick: a wake may have come
                                       * before we were on the list */
    pthread_mutex_unlock(&t->mu);
    *res = LOP_HTTP_OK;
    return call;
}

/* Whether the caller has something to do (t->mu held). */
static bool call_ready(const lop_transport_call_t *call)
{
    const lop_tr_xfer_t *xf = call->xf;
    return xf->inbox.len || (xf->head_done && !call->head_delivered) || xf->done || call->t->wake_gen != call->seen_gen;
}

static bool call_ready_cb(const void *call) { return call_ready(call); }

/* A burst grew the two buffers an exchange's bytes pass through (the inbox the I/O thread fills and
 * the one the caller drains, swapped each pump) to up to the high-water mark each. Called after a
 * pump that passed little (under LOP_TR_KEEP_BYTES: the burst is over; an idle stream's next event,
 * or its idle-deadline tick): if the caller has caught up (nothing waits in the inbox) the buffers
 * over LOP_TR_KEEP_BYTES are freed, so an idle watch does not keep MiBs for the next burst. A
 * transfer in full flow keeps them: freeing whenever the consumer is momentarily ahead made the
 * I/O thread grow a fresh 1 MiB buffer for every batch of a LIST (~9 % of sync's CPU). */
static void give_back_burst_buffers(lop_transport_call_t *call)
{
    lop_tr_xfer_t *xf = call->xf;
    pthread_mutex_lock(&call->t->mu);
    bool caught_up = !xf->inbox.len;
    if (caught_up && xf->inbox.cap > LOP_TR_KEEP_BYTES) lop_buf_free(&xf->inbox);
    pthread_mutex_unlock(&call->t->mu);
    if (caught_up && call->got.cap > LOP_TR_KEEP_BYTES) lop_buf_free(&call->got);
}

size_t lop_transport_call_buffer_bytes(lop_transport_call_t *call)
{
    pthread_mutex_lock(&call->t->mu);
    size_t n = call->xf->inbox.cap;
    pthread_mutex_unlock(&call->t->mu);
    return n + call->got.cap;
}

bool lop_transport_pump(lop_transport_call_t *call, lop_http_result_t *res)
{
    lop_transport_t *t = call->t;
    lop_tr_xfer_t *xf = call->xf;
    lop_http_exchange_t *x = call->x;
    if (call->finished) {
        *res = call->res;
        return true;
    }
    lop_http_result_t r = LOP_HTTP_OK;
    pthread_mutex_lock(&t->mu);
    call->seen_gen = t->wake_gen;
    bool new_head = xf->head_done && !call->head_delivered;
    if (new_head) {
        lop_buf_swap(&call->head, &xf->head);
        call->code = xf->code;
    }
    if (xf->started) x->response_started = true;
    if (call->head_delivered || new_head) lop_buf_swap(&call->got, &xf->inbox);
    /* the I/O thread only appends to the inbox we just handed it, so its size now is what it was */
    bool grown = call->got.cap > LOP_TR_KEEP_BYTES || xf->inbox.cap > LOP_TR_KEEP_BYTES;
    if (xf->paused && !xf->op_resume) {
        xf->op_resume = true;
        lop_tr_io_queue(xf);
    }
    bool done = xf->done && !xf->inbox.len;
    pthread_mutex_unlock(&t->mu);

    if (new_head) {
        deliver_head(x, call->code, &call->head);
        call->head_delivered = true;
    }
    lop_buf_t *got = &call->got;
    size_t batch = got->len;
    for (size_t off = 0; off < got->len && r == LOP_HTTP_OK;) {
        size_t n = got->len - off < call->rb ? got->len - off : call->rb;
        if (x->on_body && x->on_body(x->ud, got->data + off, n)) r = LOP_HTTP_ESTOPPED;
        off += n;
    }
    lop_buf_reset(got);
    if (grown && batch < LOP_TR_KEEP_BYTES) give_back_burst_buffers(call);
    if (r == LOP_HTTP_OK && x->on_tick && x->on_tick(x->ud)) r = LOP_HTTP_EABORTED;
    if (r != LOP_HTTP_OK || (call->head_delivered && call->code == 101)) {
        /* stopped by the caller, or switched protocols: what follows is not HTTP */
        cancel_and_wait(t, xf);
        call->finished = true;
        if (r == LOP_HTTP_ESTOPPED)
            snprintf(x->error, sizeof x->error, "%s: stopped by the body consumer", t->host_port);
        else if (r == LOP_HTTP_EABORTED)
            snprintf(x->error, sizeof x->error, "%s: aborted by the caller", t->host_port);
    } else if (done) {
        r = map_result(t, xf, x);
        call->finished = true;
    }
    if (!call->finished) return false;
    if (!call->head_delivered) x->code = 0;
    call->res = r;
    *res = r;
    return true;
}

void lop_transport_end(lop_transport_call_t *call)
{
    if (!call) return;
    lop_transport_t *t = call->t;
    lop_tr_xfer_t *xf = call->xf;
    if (!call->finished) {
        cancel_and_wait(t, xf);
        if (!call->head_delivered) call->x->code = 0;
    }
    pthread_mutex_lock(&t->mu); /* until the I/O thread lets go of it */
    for (lop_tr_xfer_t **p = &t->waiting; *p; p = &(*p)->next_waiting)
        if (*p == xf) {
            *p = xf->next_waiting;
            break;
        }
    xf->notify = NULL;
    while (xf->in_ops || xf->busy) pthread_cond_wait(&xf->cond, &t->mu);
    pthread_mutex_unlock(&t->mu);
    lop_buf_free(&call->got);
    lop_buf_free(&call->head);
    lop_buf_free(&xf->inbox);
    lop_buf_free(&xf->head);
    pthread_cond_destroy(&xf->cond);
    free(xf->url);
    free(xf);
    free(call);
}

lop_http_result_t lop_transport_exchange(lop_transport_t *t, lop_http_exchange_t *x)
{
    lop_http_result_t res;
    lop_transport_call_t *call = lop_transport_begin(t, x, NULL, NULL, &res);
    if (!call) return res;
    for (;;) {
        pthread_mutex_lock(&t->mu);
        wait_ready(&call->xf->cond, &t->mu, x->tick_ms ? x->tick_ms : LOP_TR_TICK_MS, call_ready_cb, call);
        pthread_mutex_unlock(&t->mu);
        if (lop_transport_pump(call, &res)) break;
    }
    lop_transport_end(call);
    return res;
}

void lop_transport_wake(lop_transport_t *t)
{
    pthread_mutex_lock(&t->mu);
    t->wake_gen++;
    for (lop_tr_xfer_t *xf = t->waiting; xf; xf = xf->next_waiting) lop_tr_signal(xf);
    for (lop_tr_dns_wait_t *w = t->dns_waiting; w; w = w->next) {
        pthread_mutex_lock(w->mu);
        *w->woken = 1;
        pthread_cond_signal(w->cond);
        pthread_mutex_unlock(w->mu);
    }
    pthread_mutex_unlock(&t->mu);
}
