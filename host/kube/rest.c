/* rest.c — the REST client: connection sharing, request building, retries (see rest.h). */
#include "host/kube/rest.h"

#include "host/kube/qps.h"
#include "host/kube/workqueue.h"
#include "host/util/log.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_TIMEOUT_MS 120000L
#define POOL_MAX 16

struct lop_rest_client {
    lop_rest_config_t cfg;
    const lop_clock_t *clock;
    char *base_url;   /* scheme://host[:port][/prefix] as used in request URLs */
    char *connect_to; /* CURLOPT_CONNECT_TO entry for tls-server-name, or NULL */
    lop_qps_t *qps;
    CURLSH *share;
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
    pthread_mutex_t pool_mu;
    CURL *pool[POOL_MAX];
    int npool;
    atomic_long requests;
    char *host_port; /* host:port of the server URL, the "host" label of request metrics */
    _Atomic(lop_rest_observer_fn) observer;
    void *_Atomic observer_ud;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_global(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *ud)
{
    lop_rest_client_t *c = ud;
    pthread_mutex_lock(&c->share_mu[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *ud)
{
    lop_rest_client_t *c = ud;
    pthread_mutex_unlock(&c->share_mu[d]);
}

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

/* Split the server URL; with tls-server-name, requests go to that name and CONNECT_TO maps it
 * to the real host, so SNI and certificate verification use it. */
static lop_rc_t setup_url(lop_rest_client_t *c, lop_err_t *err)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
    lop_rc_t rc = LOP_OK;
    if (curl_url_set(u, CURLUPART_URL, c->cfg.server, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "invalid server URL %s", c->cfg.server);
        goto out;
    }
    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    curl_url_get(u, CURLUPART_PATH, &path, 0);
    lop_buf_t b = LOP_BUF_INIT;
    const char *p = path && strcmp(path, "/") != 0 ? path : "";
    size_t pl = strlen(p);
    while (pl && p[pl - 1] == '/') pl--;
    const char *h = c->cfg.tls_server_name && strcmp(scheme, "https") == 0 ? c->cfg.tls_server_name : host;
    lop_buf_printf(&b, "%s://%s:%s%.*s", scheme, h, port ? port : "443", (int)pl, p);
    c->base_url = lop_buf_steal(&b);
    lop_buf_printf(&b, "%s:%s", host, port ? port : "443");
    c->host_port = lop_buf_steal(&b);
    if (h != host) {
        lop_buf_printf(&b, "%s:%s:%s:%s", h, port, host, port);
        c->connect_to = lop_buf_steal(&b);
    }
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    return rc;
}

lop_rc_t lop_rest_client_new(lop_rest_config_t *cfg, lop_rest_client_t **out, lop_err_t *err)
{
    *out = NULL;
    pthread_once(&curl_once, curl_global);
    if (!cfg->server || !*cfg->server)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "REST config has no server");
    lop_rest_client_t *c = lop_xcalloc(1, sizeof *c);
    c->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    c->clock = c->cfg.clock ? c->cfg.clock : &lop_clock_system;
    if (!c->cfg.user_agent) {
        lop_buf_t b = LOP_BUF_INIT;
        lop_buf_printf(&b, "luaop/%s (linux/amd64)", LUAOP_VERSION);
        c->cfg.user_agent = lop_buf_steal(&b);
    }
    if (!c->cfg.namespace) c->cfg.namespace = lop_xstrdup("default");
    if (!c->cfg.auth) c->cfg.auth = lop_auth_new(NULL, NULL, NULL, c->clock);
    lop_rc_t rc = setup_url(c, err);
    if (rc != LOP_OK) {
        lop_rest_config_cleanup(&c->cfg);
        free(c);
        return rc;
    }
    double qps = c->cfg.qps == 0 ? LOP_QPS_DEFAULT : c->cfg.qps;
    int burst = c->cfg.burst == 0 ? LOP_BURST_DEFAULT : c->cfg.burst;
    c->qps = lop_qps_new(qps, burst, c->clock);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&c->share_mu[i], NULL);
    pthread_mutex_init(&c->pool_mu, NULL);
    c->share = curl_share_init();
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    if (c->cfg.insecure && strncmp(c->base_url, "https", 5) == 0)
        lop_log(LOP_LOG_WARN, "INSECURE: TLS certificate verification is disabled for this API server",
                "server", c->cfg.server, NULL);
    *out = c;
    return LOP_OK;
}

void lop_rest_client_free(lop_rest_client_t *c)
{
    if (!c) return;
    for (int i = 0; i < c->npool; i++) curl_easy_cleanup(c->pool[i]);
    curl_share_cleanup(c->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&c->share_mu[i]);
    pthread_mutex_destroy(&c->pool_mu);
    lop_qps_free(c->qps);
    lop_rest_config_cleanup(&c->cfg);
    free(c->base_url);
    free(c->host_port);
    free(c->connect_to);
    free(c);
}

const char *lop_rest_client_server(const lop_rest_client_t *c) { return c->cfg.server; }
const char *lop_rest_client_namespace(const lop_rest_client_t *c) { return c->cfg.namespace; }
const char *lop_rest_client_user_agent(const lop_rest_client_t *c) { return c->cfg.user_agent; }
long lop_rest_client_requests(lop_rest_client_t *c) { return atomic_load(&c->requests); }

const char *lop_rest_client_host(const lop_rest_client_t *c) { return c->host_port; }

void lop_rest_client_set_observer(lop_rest_client_t *c, lop_rest_observer_fn fn, void *ud)
{
    atomic_store(&c->observer, NULL);
    atomic_store(&c->observer_ud, ud);
    atomic_store(&c->observer, fn);
}

static CURL *pool_get(lop_rest_client_t *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->pool_mu);
    if (c->npool > 0) h = c->pool[--c->npool];
    pthread_mutex_unlock(&c->pool_mu);
    if (!h) h = curl_easy_init();
    else curl_easy_reset(h);
    if (!h) abort(); /* curl_easy_init fails only without memory */
    return h;
}

static void pool_put(lop_rest_client_t *c, CURL *h)
{
    pthread_mutex_lock(&c->pool_mu);
    if (c->npool < POOL_MAX) {
        c->pool[c->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->pool_mu);
    if (h) curl_easy_cleanup(h);
}

/* read size of a streamed body (bytes); see perform */
#define STREAM_READ_BYTES (128L * 1024)

/* ---- one attempt ---- */

typedef struct attempt {
    lop_rest_client_t *c;
    lop_buf_t *body;            /* collects the body (non-stream, or a stream's error body) */
    lop_stream_fn fn;           /* receives a 2xx body when non-NULL (a watch, or a request's sink) */
    void *fn_ud;
    bool fn_stopped;
    size_t delivered;           /* 2xx body bytes passed to fn (or held in pend for it) */
    bool join;                  /* a request's sink: pass whole reads (pend), not curl's pieces */
    lop_buf_t pend;             /* join: 2xx body bytes of the current read, passed to fn whole */
    size_t unpublished;         /* bytes passed to fn since its workqueue adds were published */
    const atomic_bool *cancel;
    bool cancelled;
    long idle_ms;
    int64_t last_byte;
    bool idle_expired;
    CURL *h;
    long retry_after;           /* -1 = absent or not an integer */
    char content_type[128];
    char audit_id[64];
    char *warnings[8];
    int nwarnings;
} attempt_t;

static void attempt_reset_headers(attempt_t *a)
{
    a->retry_after = -1;
    a->content_type[0] = a->audit_id[0] = '\0';
    for (int i = 0; i < a->nwarnings; i++) free(a->warnings[i]);
    a->nwarnings = 0;
}

static void copy_trunc(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    attempt_t *a = ud;
    size_t len = size * n;
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new response (after 100 Continue...) */
        attempt_reset_headers(a);
        return len;
    }
    const char *colon = memchr(p, ':', len);
    if (!colon) return len;
    size_t kl = (size_t)(colon - p);
    const char *v = colon + 1;
    size_t vl = len - kl - 1;
    while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' ')) vl--;
    char val[1024];
    snprintf(val, sizeof val, "%.*s", (int)(vl < sizeof val - 1 ? vl : sizeof val - 1), v);
    if (kl == 11 && strncasecmp(p, "Retry-After", 11) == 0) a->retry_after = lop_rest_parse_retry_after(val);
    else if (kl == 12 && strncasecmp(p, "Content-Type", 12) == 0) copy_trunc(a->content_type, sizeof a->content_type, val);
    else if (kl == 8 && strncasecmp(p, "Audit-Id", 8) == 0) copy_trunc(a->audit_id, sizeof a->audit_id, val);
    else if (kl == 7 && strncasecmp(p, "Warning", 7) == 0 && a->nwarnings < 8) a->warnings[a->nwarnings++] = lop_xstrdup(val);
    return len;
}

/* Pass body bytes to fn; false when fn asks to stop. Every read's worth of bytes, the workqueue
 * adds fn made meanwhile are published (perform_stream batches them per curl_multi_perform,
 * which reads on while the socket has data). */
static bool pass(attempt_t *a, const char *p, size_t len)
{
    if (a->fn(a->fn_ud, p, len) != 0) {
        a->fn_stopped = true;
        return false;
    }
    a->unpublished += len;
    if (a->unpublished >= STREAM_READ_BYTES) {
        lop_workqueue_batch_flush();
        a->unpublished = 0;
    }
    return true;
}

/* Pass the bytes held since the last call (join); false when fn asks to stop. */
static bool flush_pend(attempt_t *a)
{
    if (!a->pend.len || a->fn_stopped) return !a->fn_stopped;
    bool ok = pass(a, a->pend.data, a->pend.len);
    lop_buf_reset(&a->pend);
    return ok;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    attempt_t *a = ud;
    size_t len = size * n;
    a->last_byte = lop_clock_mono(a->c->clock);
    if (a->fn) {
        long code = 0;
        curl_easy_getinfo(a->h, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200 && code < 300) {
            a->delivered += len;
            if (!a->join) /* a watch: the API server frames every event as its own HTTP chunk,
                           * so curl's pieces already end at event boundaries */
                return pass(a, p, len) ? len : 0; /* 0: CURLE_WRITE_ERROR ends the transfer */
            /* a LIST sink: curl hands the body over in pieces of at most 16 KiB, which would cut
             * most ~10 KB items; the pieces of a read are joined and passed on together, so the
             * list decoder sees whole reads and tracks only the items cut by a read's end */
            lop_buf_append(&a->pend, p, len);
            if (a->pend.len >= STREAM_READ_BYTES && !flush_pend(a)) return 0;
            return len;
        }
    }
    if (a->body->len + len > (size_t)512 << 20) return 0; /* refuse absurd bodies (512 MiB) */
    lop_buf_append(a->body, p, len);
    return len;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
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
    return 0;
}

/* A body passed to fn (a watch, or a request with a sink) runs on a private multi handle polled
 * every 50 ms, so cancel and the idle timeout act promptly even when the connection is silent
 * (the progress callback alone may wait ~1 s), and each read's bytes reach fn in one call. */
static CURLcode perform_stream(attempt_t *a, CURL *h)
{
    CURLM *mh = curl_multi_init();
    if (!mh) return CURLE_OUT_OF_MEMORY;
    curl_multi_add_handle(mh, h);
    CURLcode cc = CURLE_OK;
    int running = 1;
    for (;;) {
        /* the workqueue adds fn makes for the bytes of these reads are queued together, with
         * one wake-up, when they have all been passed on (workqueue.h) */
        lop_workqueue_batch_begin();
        CURLMcode mc = curl_multi_perform(mh, &running);
        bool go_on = flush_pend(a); /* the reads just made, also the last one or before an error */
        lop_workqueue_batch_end();
        if (!go_on) {
            cc = CURLE_WRITE_ERROR;
            break;
        }
        if (mc != CURLM_OK) {
            cc = CURLE_RECV_ERROR;
            break;
        }
        if (!running) {
            int left;
            CURLMsg *msg;
            while ((msg = curl_multi_info_read(mh, &left)))
                if (msg->msg == CURLMSG_DONE) cc = msg->data.result;
            break;
        }
        if (on_progress(a, 0, 0, 0, 0)) {
            cc = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        curl_multi_poll(mh, NULL, 0, 50, NULL);
    }
    curl_multi_remove_handle(mh, h);
    curl_multi_cleanup(mh);
    return cc;
}

/* "299 - \"text\"" → text; anything else as is. */
static void log_warning(const char *w, const char *method, const char *path)
{
    const char *q = strchr(w, '"');
    const char *e = q ? strrchr(w, '"') : NULL;
    char text[1024];
    if (q && e > q) snprintf(text, sizeof text, "%.*s", (int)(e - q - 1), q + 1);
    else snprintf(text, sizeof text, "%s", w);
    lop_log(LOP_LOG_WARN, "API server warning", "warning", text, "method", method, "path", path, NULL);
}

/* Append "name: value" unless the value could split the header block (CR/LF from a config). */
static struct curl_slist *add_header(struct curl_slist *hl, lop_buf_t *b, const char *name, const char *value)
{
    if (strpbrk(value, "\r\n")) {
        lop_log(LOP_LOG_WARN, "header value contains a line break; header not sent", "header", name, NULL);
        return hl;
    }
    lop_buf_reset(b);
    lop_buf_printf(b, "%s: %s", name, value);
    hl = curl_slist_append(hl, b->data);
    explicit_bzero(b->data, b->len);
    lop_buf_reset(b);
    return hl;
}

static struct curl_slist *build_headers(lop_rest_client_t *c, const lop_auth_cred_t *cred, const char *accept,
                                        const char *content_type, bool has_body)
{
    struct curl_slist *hl = NULL;
    lop_buf_t b = LOP_BUF_INIT;
    hl = add_header(hl, &b, "Accept", accept ? accept : "application/json");
    if (has_body) {
        lop_buf_printf(&b, "Content-Type: %s", content_type ? content_type : "application/json");
        hl = curl_slist_append(hl, b.data);
        lop_buf_reset(&b);
    }
    hl = curl_slist_append(hl, "Expect:");
    if (cred->token) {
        lop_buf_t v = LOP_BUF_INIT;
        lop_buf_printf(&v, "Bearer %s", cred->token);
        hl = add_header(hl, &b, "Authorization", v.data);
        explicit_bzero(v.data, v.len);
        lop_buf_free(&v);
    }
    if (c->cfg.impersonate_user) hl = add_header(hl, &b, "Impersonate-User", c->cfg.impersonate_user);
    if (c->cfg.impersonate_uid) hl = add_header(hl, &b, "Impersonate-Uid", c->cfg.impersonate_uid);
    for (size_t i = 0; i < c->cfg.n_impersonate_groups; i++)
        hl = add_header(hl, &b, "Impersonate-Group", c->cfg.impersonate_groups[i]);
    for (size_t i = 0; i < c->cfg.n_impersonate_extra; i++) {
        const char *kv = c->cfg.impersonate_extra[i];
        const char *eq = strchr(kv, '=');
        if (!eq) continue;
        char name[192];
        snprintf(name, sizeof name, "Impersonate-Extra-%.*s", (int)(eq - kv), kv);
        hl = add_header(hl, &b, name, eq + 1);
    }
    lop_buf_free(&b);
    return hl;
}

/* Perform one HTTP exchange. Returns the curl code; *code gets the HTTP status (0 if none). */
static CURLcode perform(lop_rest_client_t *c, attempt_t *a, const char *method, const char *path,
                        const char *accept, const char *content_type, const char *body, size_t len,
                        long timeout_ms, const lop_auth_cred_t *cred, int *code)
{
    CURL *h = pool_get(c);
    a->h = h;
    lop_buf_t url = LOP_BUF_INIT;
    lop_buf_printf(&url, "%s%s", c->base_url, path);
    struct curl_slist *hl = build_headers(c, cred, accept, content_type, body != NULL);
    struct curl_slist *ct = NULL;
    curl_easy_setopt(h, CURLOPT_SHARE, c->share);
    curl_easy_setopt(h, CURLOPT_URL, url.data);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "gzip");
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->cfg.user_agent);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 30000L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (timeout_ms > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, a);
    if (c->connect_to) {
        ct = curl_slist_append(NULL, c->connect_to);
        curl_easy_setopt(h, CURLOPT_CONNECT_TO, ct);
    }
    if (c->cfg.insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (c->cfg.ca_pem) {
        struct curl_blob blob = {c->cfg.ca_pem, strlen(c->cfg.ca_pem), CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    }
    const char *cert = cred->cert_pem ? cred->cert_pem : c->cfg.client_cert_pem;
    const char *key = cred->cert_pem ? cred->key_pem : c->cfg.client_key_pem;
    if (cert && key) {
        struct curl_blob cb = {(void *)cert, strlen(cert), CURL_BLOB_COPY};
        struct curl_blob kb = {(void *)key, strlen(key), CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        if (body) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        } else if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        }
    }
    /* a body passed to fn (watch, streamed LIST) is read 128 KiB at a time: a backed-up watch
     * yields ~80 events per read instead of ~10, whose workqueue adds are batched together
     * (perform_stream); other requests keep curl's 16 KiB */
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, a->fn ? STREAM_READ_BYTES : CURL_MAX_WRITE_SIZE);
    a->last_byte = lop_clock_mono(c->clock);
    atomic_fetch_add(&c->requests, 1);
    int64_t t0 = lop_clock_mono(c->clock);
    CURLcode cc = a->fn ? perform_stream(a, h) : curl_easy_perform(h);
    long http = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http);
    *code = (int)http;
    lop_rest_observer_fn obs = atomic_load(&c->observer);
    if (obs) obs(atomic_load(&c->observer_ud), method, (int)http, c->host_port,
                 lop_clock_mono(c->clock) - t0);
    curl_slist_free_all(hl);
    curl_slist_free_all(ct);
    lop_buf_free(&url);
    a->h = NULL;
    pool_put(c, h);
    return cc;
}

static bool is_conn_reset(CURLcode cc)
{
    return cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR || cc == CURLE_GOT_NOTHING ||
           cc == CURLE_PARTIAL_FILE || cc == CURLE_HTTP2 || cc == CURLE_HTTP2_STREAM;
}

/* Wait until deadline on the client's clock; false when cancelled first. */
static bool wait_until(lop_rest_client_t *c, int64_t deadline, const atomic_bool *cancel)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond;
    lop_cond_init(&cond);
    bool ok = true;
    pthread_mutex_lock(&mu);
    for (;;) {
        if (cancel && atomic_load(cancel)) {
            ok = false;
            break;
        }
        int64_t now = lop_clock_mono(c->clock);
        if (now >= deadline) break;
        int64_t step = deadline - now > 100 * LOP_NS_PER_MS ? now + 100 * LOP_NS_PER_MS : deadline;
        lop_clock_wait_until(c->clock, &cond, &mu, c->clock->fake ? deadline : step);
    }
    pthread_mutex_unlock(&mu);
    pthread_cond_destroy(&cond);
    return ok;
}

static void attempt_free(attempt_t *a)
{
    lop_buf_free(&a->pend);
    for (int i = 0; i < a->nwarnings; i++) free(a->warnings[i]);
    a->nwarnings = 0;
}

/* The shared request loop for plain requests (fn == NULL) and streams. */
static lop_rc_t run(lop_rest_client_t *c, const lop_rest_req_t *req, lop_stream_fn fn, void *fn_ud,
                    long idle_ms, lop_rest_resp_t *resp, lop_err_t *err)
{
    bool is_get = strcmp(req->method, "GET") == 0;
    bool auth_retried = false;
    long timeout = fn ? -1 : (req->timeout_ms == 0 ? DEFAULT_TIMEOUT_MS : req->timeout_ms);
    lop_rest_resp_cleanup(resp);
    lop_rest_resp_init(resp);
    for (int attempt = 0;; attempt++) {
        if (req->cancel && atomic_load(req->cancel))
            return lop_err_set(err, LOP_ECLOSED, 0, NULL, "%s %s: cancelled", req->method, req->path);
        int64_t wait = lop_qps_reserve(c->qps);
        if (wait > 0 && !wait_until(c, lop_clock_mono(c->clock) + wait, req->cancel))
            return lop_err_set(err, LOP_ECLOSED, 0, NULL, "%s %s: cancelled", req->method, req->path);
        lop_auth_cred_t cred;
        lop_rc_t rc = lop_auth_get(c->cfg.auth, &cred, err);
        if (rc != LOP_OK) return rc;
        lop_buf_reset(&resp->body);
        attempt_t a = {.c = c, .body = &resp->body, .fn = fn ? fn : req->sink, .join = !fn && req->sink,
                       .fn_ud = fn ? fn_ud : req->sink_ud, .cancel = req->cancel,
                       .idle_ms = idle_ms, .retry_after = -1};
        int code = 0;
        CURLcode cc = perform(c, &a, req->method, req->path, req->accept, req->content_type, req->body,
                              req->len, timeout, &cred, &code);
        lop_auth_cred_cleanup(&cred);
        resp->code = code;
        snprintf(resp->content_type, sizeof resp->content_type, "%s", a.content_type);
        snprintf(resp->audit_id, sizeof resp->audit_id, "%s", a.audit_id);
        for (int i = 0; i < a.nwarnings; i++) log_warning(a.warnings[i], req->method, req->path);
        long retry_after = a.retry_after;
        attempt_free(&a);
        if (a.cancelled)
            return lop_err_set(err, LOP_ECLOSED, 0, NULL, "%s %s: cancelled", req->method, req->path);
        if (a.fn_stopped)
            return lop_err_set(err, LOP_ECLOSED, code, NULL, "%s %s: stopped by the consumer", req->method, req->path);
        if (a.idle_expired)
            return lop_err_set(err, LOP_ETIMEDOUT, code, NULL, "%s %s: no data for %ld ms", req->method,
                               req->path, idle_ms);
        if (cc != CURLE_OK) {
            if (is_get && !fn && !a.delivered && is_conn_reset(cc) && attempt < LOP_REST_MAX_RETRIES) {
                lop_log(LOP_LOG_DEBUG, "retrying GET after a connection error", "path", req->path,
                        "error", curl_easy_strerror(cc), NULL);
                resp->retries++;
                if (!wait_until(c, lop_clock_mono(c->clock) + LOP_NS_PER_S, req->cancel))
                    return lop_err_set(err, LOP_ECLOSED, 0, NULL, "%s %s: cancelled", req->method, req->path);
                continue;
            }
            lop_rc_t trc = cc == CURLE_OPERATION_TIMEDOUT ? LOP_ETIMEDOUT : LOP_EAGAIN;
            return lop_err_set(err, trc, code, NULL, "%s %s%s: %s", req->method, c->cfg.server, req->path,
                               curl_easy_strerror(cc));
        }
        if (code >= 200 && code < 300) {
            lop_err_clear(err);
            return LOP_OK;
        }
        if (code == 401 && !auth_retried && lop_auth_invalidate(c->cfg.auth)) {
            lop_log(LOP_LOG_INFO, "401 from the API server; refreshing credentials and retrying once",
                    "method", req->method, "path", req->path, NULL);
            auth_retried = true;
            resp->retries++;
            continue;
        }
        if (!fn && (code == 429 || code >= 500) && retry_after >= 0 && attempt < LOP_REST_MAX_RETRIES) {
            char ra[24], n[16];
            snprintf(ra, sizeof ra, "%ld", retry_after);
            snprintf(n, sizeof n, "%d", attempt + 1);
            lop_log(LOP_LOG_DEBUG, "retrying after Retry-After", "method", req->method, "path", req->path,
                    "code", code == 429 ? "429" : "5xx", "retry_after_s", ra, "attempt", n, NULL);
            resp->retries++;
            if (!wait_until(c, lop_clock_mono(c->clock) + retry_after * LOP_NS_PER_S, req->cancel))
                return lop_err_set(err, LOP_ECLOSED, 0, NULL, "%s %s: cancelled", req->method, req->path);
            continue;
        }
        return lop_rest_status_parse(code, resp->body.data, resp->body.len, err, &resp->status);
    }
}

lop_rc_t lop_rest_request(lop_rest_client_t *c, const lop_rest_req_t *req, lop_rest_resp_t *resp,
                          lop_err_t *err)
{
    lop_rest_resp_t local = LOP_REST_RESP_INIT;
    lop_rc_t rc = run(c, req, NULL, NULL, 0, resp ? resp : &local, err);
    lop_rest_resp_cleanup(&local);
    return rc;
}

lop_rc_t lop_rest_do(lop_rest_client_t *c, const char *method, const char *path_and_query,
                     const char *content_type, const char *body, size_t len, lop_rest_resp_t *resp,
                     lop_err_t *err)
{
    lop_rest_req_t req = {.method = method, .path = path_and_query, .content_type = content_type,
                          .body = body, .len = len};
    return lop_rest_request(c, &req, resp, err);
}

lop_rc_t lop_rest_stream(lop_rest_client_t *c, const char *path, lop_stream_fn fn, void *ud,
                         const lop_rest_stream_opts_t *opts, int *code, lop_err_t *err)
{
    lop_rest_req_t req = {.method = "GET", .path = path, .cancel = opts ? opts->cancel : NULL,
                          .accept = opts ? opts->accept : NULL};
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_rc_t rc = run(c, &req, fn, ud, opts ? opts->idle_timeout_ms : 0, &resp, err);
    if (code) *code = resp.code;
    lop_rest_resp_cleanup(&resp);
    return rc;
}
