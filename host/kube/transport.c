/* transport.c — HTTP/1.1 over TCP or TLS with a shared keep-alive pool (see transport.h). */
#include "host/kube/transport.h"

#include "host/util/buf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define TICK_MS 50
#define POOL_MAX 16
#define IDLE_MAX_NS (90LL * 1000000000LL)   /* Go's IdleConnTimeout, used by client-go */
#define CONNECT_TIMEOUT_MS 30000L
#define HEADER_MAX (64 * 1024)              /* bytes of one response's header block */
#define READ_DEFAULT (16 * 1024)
#define KEEPALIVE_S 30                      /* TCP keep-alive, as client-go's dialer */
#define ONE_WRITE_MAX (64 * 1024)           /* a body up to this size goes out with the headers */

typedef struct conn {
    int fd;
    SSL *ssl;
    uint64_t cert_id;  /* which client certificate the TLS session presented (0 = none) */
    int64_t idle_since;
    struct conn *next;
} conn_t;

struct lop_transport {
    bool tls;
    char *host;        /* without brackets: for getaddrinfo and verification */
    char *port;
    char *host_hdr;    /* the Host header: host (bracketed for IPv6), ":port" unless the default */
    char *host_port;   /* host:port (bracketed for IPv6) */
    char *prefix;      /* the URL's path without a trailing '/', "" for none */
    char *verify_name; /* tls_server_name or host */
    bool insecure;
    lop_proxy_t proxy;  /* proxy.host NULL = direct */
    SSL_CTX *ctx;
    pthread_mutex_t mu; /* pool, session */
    conn_t *idle;
    int nidle;
    SSL_SESSION *session; /* the last resumable session, for connections with session_cert */
    uint64_t session_cert;
    atomic_long connects;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t fnv64(uint64_t h, const char *s)
{
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

/* Identity of a client certificate + key pair for pooling and session reuse; 0 = none. */
static uint64_t cert_identity(const char *cert, const char *key)
{
    if (!cert || !key) return 0;
    uint64_t h = fnv64(fnv64(0xcbf29ce484222325ULL, cert), key);
    return h ? h : 1;
}

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
    if (strncasecmp(p, "https://", 8) == 0) t->tls = true, p += 8;
    else if (strncasecmp(p, "http://", 7) == 0) p += 7;
    else return lop_err_set(err, LOP_EINVAL, 0, NULL, "invalid server URL %s: the scheme must be http or https", url);
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
    if (port == (t->tls ? 443 : 80)) lop_buf_printf(&b, "%s%s%s", v6 ? "[" : "", t->host, v6 ? "]" : "");
    else lop_buf_printf(&b, "%s", t->host_port);
    t->host_hdr = lop_buf_steal(&b);
    t->prefix = lop_xstrndup(rest, rl);
    return LOP_OK;
}

/* ---- TLS ---- */

/* OpenSSL's socket BIO writes with write(2), which raises SIGPIPE on a closed connection; this one
 * sends with MSG_NOSIGNAL, so a server hanging up cannot kill the process. */
static BIO_METHOD *sock_method;
static pthread_once_t sock_once = PTHREAD_ONCE_INIT;

static int sock_write(BIO *b, const char *p, int n)
{
    ssize_t w = send(BIO_get_fd(b, NULL), p, (size_t)n, MSG_NOSIGNAL);
    BIO_clear_retry_flags(b);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
    return (int)w;
}

static int sock_read(BIO *b, char *p, int n)
{
    ssize_t r = recv(BIO_get_fd(b, NULL), p, (size_t)n, 0);
    BIO_clear_retry_flags(b);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
    /* the end of the stream as BIO_eof reports it: OpenSSL applies SSL_OP_IGNORE_UNEXPECTED_EOF
     * only then */
    if (r == 0 && n > 0) BIO_set_flags(b, BIO_FLAGS_IN_EOF);
    return (int)r;
}

static void sock_method_init(void)
{
    const BIO_METHOD *base = BIO_s_socket();
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                 "luaop socket");
    if (!m) return;
    BIO_meth_set_write(m, sock_write);
    BIO_meth_set_read(m, sock_read);
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(base)); /* fd get/set, flush, eof, ... */
    BIO_meth_set_create(m, BIO_meth_get_create(base));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(base));
    BIO_meth_set_puts(m, BIO_meth_get_puts(base));
    sock_method = m;
}

/* OpenSSL's error queue (and the verification result) as one line. */
static void ssl_error_text(SSL *ssl, char *out, size_t cap)
{
    unsigned long e = ERR_peek_last_error();
    long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    char reason[200] = "";
    if (e) ERR_error_string_n(e, reason, sizeof reason);
    if (v != X509_V_OK) snprintf(out, cap, "certificate verify failed: %s", X509_verify_cert_error_string(v));
    else if (e) snprintf(out, cap, "%s", reason);
    else snprintf(out, cap, "%s", errno ? strerror(errno) : "connection closed");
    ERR_clear_error();
}

/* Keep the newest session offered by the server, for the client certificate it was made with
 * (a session resumed by another identity would authenticate as the first). */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    lop_transport_t *t = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    conn_t *cn = SSL_get_app_data(ssl);
    if (!t || !cn || !SSL_SESSION_is_resumable(sess)) return 0;
    pthread_mutex_lock(&t->mu);
    SSL_SESSION *old = t->session;
    t->session = sess;
    t->session_cert = cn->cert_id;
    pthread_mutex_unlock(&t->mu);
    if (old) SSL_SESSION_free(old);
    return 1; /* the reference is ours */
}

static lop_rc_t tls_setup(lop_transport_t *t, const lop_transport_config_t *cfg, lop_err_t *err)
{
    pthread_once(&sock_once, sock_method_init);
    if (!sock_method) return lop_err_set(err, LOP_ERR, 0, NULL, "OpenSSL: cannot make a BIO method");
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ctx) return lop_err_set(err, LOP_ERR, 0, NULL, "OpenSSL: cannot make a TLS context");
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    /* a server closing without close_notify ends the stream like a TCP close; the framing
     * (Content-Length, chunked) still tells a truncated body from a whole one */
    SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(t->ctx, alpn, sizeof alpn - 1);
    SSL_CTX_set_app_data(t->ctx, t);
    SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(t->ctx, on_new_session);
    if (cfg->insecure) {
        SSL_CTX_set_verify(t->ctx, SSL_VERIFY_NONE, NULL);
        return LOP_OK;
    }
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    if (!cfg->ca_pem) {
        if (SSL_CTX_set_default_verify_paths(t->ctx) != 1)
            return lop_err_set(err, LOP_ERR, 0, NULL, "OpenSSL: cannot load the system's CA store");
        return LOP_OK;
    }
    /* each certificate block on its own: one that does not parse is skipped (as Go's
     * AppendCertsFromPEM does), the others are trusted */
    X509_STORE *store = SSL_CTX_get_cert_store(t->ctx);
    static const char begin[] = "-----BEGIN CERTIFICATE-----";
    int added = 0;
    for (const char *b = strstr(cfg->ca_pem, begin); b; b = strstr(b + 1, begin)) {
        const char *e = strstr(b, "-----END CERTIFICATE-----");
        if (!e) break;
        e += 25;
        BIO *bio = BIO_new_mem_buf(b, (int)(e - b));
        X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
        if (x && X509_STORE_add_cert(store, x) == 1) added++;
        X509_free(x);
        BIO_free(bio);
    }
    ERR_clear_error();
    if (!added)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "the certificate authority data holds no PEM certificate");
    return LOP_OK;
}

/* ---- lifecycle ---- */

lop_rc_t lop_transport_new(const lop_transport_config_t *cfg, lop_transport_t **out, lop_err_t *err)
{
    *out = NULL;
    if (!cfg->server || !*cfg->server) return lop_err_set(err, LOP_EINVAL, 0, NULL, "no server URL");
    lop_transport_t *t = lop_xcalloc(1, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    lop_rc_t rc = parse_url(t, cfg->server, err);
    if (rc == LOP_OK) {
        t->insecure = cfg->insecure;
        t->verify_name = lop_xstrdup(cfg->tls_server_name && *cfg->tls_server_name ? cfg->tls_server_name : t->host);
        rc = lop_proxy_select(cfg->proxy, t->tls, t->host, t->port, &t->proxy, err);
        if (rc == LOP_OK && t->tls) rc = tls_setup(t, cfg, err);
    }
    if (rc != LOP_OK) {
        lop_transport_free(t);
        return rc;
    }
    *out = t;
    return LOP_OK;
}

/* Close. clean: the connection ended between responses, so its TLS session stays resumable (an
 * SSL freed without a shutdown marks its session bad). No close_notify is sent: the peer sees the
 * TCP close. */
static void conn_close(conn_t *cn, bool clean)
{
    if (!cn) return;
    if (cn->ssl) {
        if (clean) SSL_set_shutdown(cn->ssl, SSL_SENT_SHUTDOWN);
        SSL_free(cn->ssl);
    }
    if (cn->fd >= 0) close(cn->fd);
    free(cn);
}

void lop_transport_free(lop_transport_t *t)
{
    if (!t) return;
    while (t->idle) {
        conn_t *cn = t->idle;
        t->idle = cn->next;
        conn_close(cn, true);
    }
    if (t->session) SSL_SESSION_free(t->session);
    lop_proxy_cleanup(&t->proxy);
    SSL_CTX_free(t->ctx);
    pthread_mutex_destroy(&t->mu);
    free(t->host);
    free(t->port);
    free(t->host_hdr);
    free(t->host_port);
    free(t->prefix);
    free(t->verify_name);
    free(t);
}

const char *lop_transport_host_port(const lop_transport_t *t) { return t->host_port; }
bool lop_transport_is_tls(const lop_transport_t *t) { return t->tls; }
const char *lop_transport_proxy(const lop_transport_t *t) { return t->proxy.host_port; }
long lop_transport_connects(lop_transport_t *t) { return atomic_load(&t->connects); }

/* ---- the pool ---- */

/* An idle connection presenting cert_id, or NULL. Connections idle too long, or readable (the
 * server closed them or sent something unasked), are closed. */
static conn_t *pool_take(lop_transport_t *t, uint64_t cert_id)
{
    for (;;) {
        conn_t *found = NULL, *stale = NULL;
        int64_t now = now_ns();
        pthread_mutex_lock(&t->mu);
        for (conn_t **pp = &t->idle; *pp;) {
            conn_t *cn = *pp;
            if (now - cn->idle_since > IDLE_MAX_NS) {
                *pp = cn->next;
                cn->next = stale;
                stale = cn;
                t->nidle--;
            } else if (!found && cn->cert_id == cert_id) {
                *pp = cn->next;
                found = cn;
                t->nidle--;
            } else {
                pp = &cn->next;
            }
        }
        pthread_mutex_unlock(&t->mu);
        while (stale) {
            conn_t *n = stale->next;
            conn_close(stale, true);
            stale = n;
        }
        if (!found) return NULL;
        struct pollfd pf = {found->fd, POLLIN, 0};
        if (poll(&pf, 1, 0) == 0 && !(found->ssl && SSL_has_pending(found->ssl))) return found;
        conn_close(found, false);
    }
}

static void pool_put(lop_transport_t *t, conn_t *cn)
{
    cn->idle_since = now_ns();
    pthread_mutex_lock(&t->mu);
    if (t->nidle < POOL_MAX) {
        cn->next = t->idle;
        t->idle = cn;
        t->nidle++;
        cn = NULL;
    }
    pthread_mutex_unlock(&t->mu);
    conn_close(cn, true);
}

/* ---- waiting and raw I/O ---- */

typedef struct io {
    lop_transport_t *t;
    lop_http_exchange_t *x;
    int64_t deadline;  /* whole exchange, 0 = none */
    long timeout_ms;
    lop_http_result_t res;
    short revents;     /* what the last successful io_wait saw */
} io_t;

static int failf(io_t *io, lop_http_result_t res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(io->x->error, sizeof io->x->error, fmt, ap);
    va_end(ap);
    io->res = res;
    return -1;
}

/* Wait for events on fd until deadline (0 = none), ticking every TICK_MS. 0 ready, -1 failed. */
static int io_wait(io_t *io, int fd, short events, int64_t deadline, const char *doing)
{
    for (;;) {
        if (io->x->on_tick && io->x->on_tick(io->x->ud))
            return failf(io, LOP_HTTP_EABORTED, "%s %s: aborted", doing, io->t->host_port);
        int ms = TICK_MS;
        if (deadline) {
            int64_t left = deadline - now_ns();
            if (left <= 0) {
                if (deadline == io->deadline)
                    return failf(io, LOP_HTTP_ETIMEDOUT, "%s %s: timed out after %ld ms", doing, io->t->host_port,
                                 io->timeout_ms);
                return failf(io, LOP_HTTP_ETIMEDOUT, "%s %s: timed out", doing, io->t->host_port);
            }
            if (left < (int64_t)TICK_MS * 1000000) ms = (int)((left + 999999) / 1000000);
        }
        struct pollfd pf = {fd, events, 0};
        int r = poll(&pf, 1, ms);
        if (r > 0) { /* also POLLERR / POLLHUP: the next read or write says what */
            io->revents = pf.revents;
            return 0;
        }
        if (r < 0 && errno != EINTR)
            return failf(io, LOP_HTTP_ERESET, "%s %s: poll: %s", doing, io->t->host_port, strerror(errno));
    }
}

/* Read up to cap bytes: > 0 read, 0 end of stream, -1 failed (io->res set). */
static ssize_t conn_read(io_t *io, conn_t *cn, char *p, size_t cap)
{
    for (;;) {
        if (cn->ssl) {
            ERR_clear_error();
            errno = 0;
            int n = SSL_read(cn->ssl, p, cap > INT32_MAX ? INT32_MAX : (int)cap);
            if (n > 0) return n;
            int e = SSL_get_error(cn->ssl, n);
            short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
            if (e == SSL_ERROR_ZERO_RETURN) return 0;
            if (!ev) {
                char why[240];
                ssl_error_text(NULL, why, sizeof why);
                return failf(io, LOP_HTTP_ERESET, "reading from %s: %s", io->t->host_port, why);
            }
            if (io_wait(io, cn->fd, ev, io->deadline, "reading the response from") < 0) return -1;
        } else {
            ssize_t n = recv(cn->fd, p, cap, 0);
            if (n >= 0) return n;
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return failf(io, LOP_HTTP_ERESET, "reading from %s: %s", io->t->host_port, strerror(errno));
            if (io_wait(io, cn->fd, POLLIN, io->deadline, "reading the response from") < 0) return -1;
        }
    }
}

static size_t head_end(const char *p, size_t n);

/* Whether p[0, n) holds the start of a final answer (a status line >= 200 or 101, or one that is
 * not a status line at all) after any complete interim (1xx) responses. */
static bool final_answer(const char *p, size_t n)
{
    for (size_t pos = 0; pos < n;) {
        const char *nl = memchr(p + pos, '\n', n - pos);
        if (!nl) return false;
        const char *l = p + pos;
        if ((size_t)(nl - l) < 12 || memcmp(l, "HTTP/1.", 7) != 0 || l[9] != '1' || (l[10] == '0' && l[11] == '1'))
            return true;
        size_t e = head_end(l, n - pos); /* an interim response: skip it once complete */
        if (!e) return false;
        pos += e;
    }
    return false;
}

/* Write p. A server may answer before it has read the whole request (a 413 for a large body, a
 * 401) and close: while waiting to write, input is watched for and read into rbuf (room bytes,
 * *got of them used); the write is abandoned once it holds a final answer (not only 1xx, which
 * a server may send unasked), at its end, or when rbuf is full. Returns 0 when all was written,
 * 1 when the server answered or hung up first (*got bytes of its answer in rbuf, maybe 0), -1 on
 * failure. */
static int conn_write(io_t *io, conn_t *cn, const char *p, size_t len, char *rbuf, size_t room, size_t *got)
{
    while (len) {
        ssize_t w;
        short ev = POLLOUT;
        if (cn->ssl) {
            ERR_clear_error();
            errno = 0;
            size_t n = len > INT32_MAX ? INT32_MAX : len;
            int r = SSL_write(cn->ssl, p, (int)n);
            w = r;
            if (r <= 0) {
                int e = SSL_get_error(cn->ssl, r);
                if (e == SSL_ERROR_WANT_READ) ev = POLLIN;
                else if (e != SSL_ERROR_WANT_WRITE) {
                    if (errno == EPIPE || errno == ECONNRESET) return 1; /* maybe it answered: read */
                    char why[240];
                    ssl_error_text(NULL, why, sizeof why);
                    return failf(io, LOP_HTTP_ERESET, "writing to %s: %s", io->t->host_port, why);
                }
            }
        } else {
            w = send(cn->fd, p, len, MSG_NOSIGNAL);
            if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) return 1;
            if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                return failf(io, LOP_HTTP_ERESET, "writing to %s: %s", io->t->host_port, strerror(errno));
        }
        if (w > 0) {
            p += w;
            len -= (size_t)w;
            continue;
        }
        if (io_wait(io, cn->fd, ev | POLLIN, io->deadline, "sending the request to") < 0) return -1;
        if (ev == POLLIN || !(io->revents & (POLLIN | POLLHUP | POLLERR))) continue;
        /* input while the request is not all written: the answer, a close, or (TLS) a session
         * ticket, which SSL_read takes in without returning data */
        size_t left = room - *got;
        if (!left) return 1;
        if (cn->ssl) {
            ERR_clear_error();
            int r = SSL_read(cn->ssl, rbuf + *got, left > INT32_MAX ? INT32_MAX : (int)left);
            if (r > 0) {
                *got += (size_t)r;
                if (final_answer(rbuf, *got)) return 1;
                continue;
            }
            int e = SSL_get_error(cn->ssl, r);
            if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return 1;
        } else {
            ssize_t r = recv(cn->fd, rbuf + *got, left, 0);
            if (r > 0) {
                *got += (size_t)r;
                if (final_answer(rbuf, *got)) return 1;
                continue;
            }
            if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return 1;
        }
    }
    return 0;
}

/* ---- connecting ---- */

static bool is_ip(const char *s)
{
    unsigned char b[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

/* An encrypted key is refused, not prompted for on the terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *ud)
{
    (void)buf, (void)size, (void)rwflag, (void)ud;
    return -1;
}

static int set_client_cert(SSL *ssl, const char *cert_pem, const char *key_pem, char *why, size_t cap)
{
    BIO *cb = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
    X509 *cert = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
    EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, no_passphrase, NULL) : NULL;
    int ok = cert && key && SSL_use_certificate(ssl, cert) == 1 && SSL_use_PrivateKey(ssl, key) == 1 &&
             SSL_check_private_key(ssl) == 1;
    /* the certificates after the first are the chain to send along */
    for (X509 *extra; ok && cb && (extra = PEM_read_bio_X509(cb, NULL, NULL, NULL));)
        if (SSL_add0_chain_cert(ssl, extra) != 1) X509_free(extra);
    if (!ok)
        snprintf(why, cap, "the client certificate or key is not usable PEM%s",
                 cert && key ? " (the key does not match the certificate)" : "");
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cb);
    BIO_free(kb);
    ERR_clear_error();
    return ok ? 0 : -1;
}

static int tls_handshake(io_t *io, conn_t *cn, int64_t deadline)
{
    lop_transport_t *t = io->t;
    char why[240];
    cn->ssl = SSL_new(t->ctx);
    BIO *bio = cn->ssl ? BIO_new(sock_method) : NULL;
    if (!bio) return failf(io, LOP_HTTP_ECONNECT, "TLS with %s: out of memory", t->host_port);
    BIO_set_fd(bio, cn->fd, BIO_NOCLOSE);
    SSL_set_bio(cn->ssl, bio, bio);
    SSL_set_app_data(cn->ssl, cn);
    bool ip = is_ip(t->verify_name);
    if (!ip) SSL_set_tlsext_host_name(cn->ssl, t->verify_name);
    if (!t->insecure) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(cn->ssl);
        /* names from the subject alternative names only, never the subject's CN (Go ≥ 1.15) */
        X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
        int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, t->verify_name) : X509_VERIFY_PARAM_set1_host(vp, t->verify_name, 0);
        if (ok != 1) return failf(io, LOP_HTTP_ECONNECT, "TLS with %s: bad name to verify: %s", t->host_port, t->verify_name);
    }
    if (io->x->cert_pem && io->x->key_pem &&
        set_client_cert(cn->ssl, io->x->cert_pem, io->x->key_pem, why, sizeof why) < 0)
        return failf(io, LOP_HTTP_ECONNECT, "TLS with %s: %s", t->host_port, why);
    pthread_mutex_lock(&t->mu);
    if (t->session && t->session_cert == cn->cert_id) SSL_set_session(cn->ssl, t->session);
    pthread_mutex_unlock(&t->mu);
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_connect(cn->ssl);
        if (r == 1) return 0;
        int e = SSL_get_error(cn->ssl, r);
        short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
        if (!ev) {
            ssl_error_text(cn->ssl, why, sizeof why);
            return failf(io, LOP_HTTP_ECONNECT, "TLS handshake with %s (verifying %s): %s", t->host_port,
                         t->verify_name, why);
        }
        if (io_wait(io, cn->fd, ev, deadline, "TLS handshake with") < 0) {
            if (io->res == LOP_HTTP_ERESET) io->res = LOP_HTTP_ECONNECT;
            return -1;
        }
    }
}

/* Open a tunnel to the server through the proxy (CONNECT, RFC 9110 §9.3.6) on cn, before TLS. */
/* The end of a header block in p[0, n) (after "\r\n\r\n" or a bare "\n\n"), or 0. */
static size_t head_end(const char *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (p[i] == '\n' && (p[i + 1] == '\n' || (p[i + 1] == '\r' && i + 2 < n && p[i + 2] == '\n')))
            return i + (p[i + 1] == '\n' ? 2 : 3);
    return 0;
}

static int proxy_connect(io_t *io, conn_t *cn, int64_t deadline)
{
    lop_transport_t *t = io->t;
    lop_buf_t req = LOP_BUF_INIT;
    lop_buf_printf(&req, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", t->host_port, t->host_port,
                   t->proxy.auth_header ? t->proxy.auth_header : "");
    char buf[8192], ex[48];
    size_t len = 0, got = 0, end = 0;
    int64_t saved = io->deadline;
    io->deadline = deadline; /* the connect timeout covers the tunnel */
    int w = conn_write(io, cn, req.data, req.len, buf, sizeof buf, &got);
    explicit_bzero(req.data, req.len);
    lop_buf_free(&req);
    len = got;
    while (w >= 0 && !(end = head_end(buf, len))) {
        if (len == sizeof buf) {
            failf(io, LOP_HTTP_ECONNECT, "an answer over %zu bytes", sizeof buf);
            w = -1;
            break;
        }
        ssize_t n = conn_read(io, cn, buf + len, sizeof buf - len);
        if (n <= 0) {
            if (n == 0) failf(io, LOP_HTTP_ECONNECT, "the proxy closed the connection without answering");
            w = -1;
            break;
        }
        len += (size_t)n;
    }
    io->deadline = saved;
    if (w < 0) { /* name the proxy, not the server the I/O messages name */
        char why[sizeof io->x->error];
        snprintf(why, sizeof why, "%s", io->res == LOP_HTTP_ETIMEDOUT ? "timed out" : io->x->error);
        if (io->res != LOP_HTTP_ETIMEDOUT && io->res != LOP_HTTP_EABORTED) io->res = LOP_HTTP_ECONNECT;
        return failf(io, io->res, "CONNECT to %s through proxy %s: %s", t->host_port, t->proxy.host_port, why);
    }
    size_t sl = strcspn(buf, "\r\n");
    bool ok = sl >= 12 && memcmp(buf, "HTTP/1.", 7) == 0 && buf[8] == ' ' && buf[9] == '2' && buf[10] >= '0' &&
              buf[10] <= '9' && buf[11] >= '0' && buf[11] <= '9' && (sl == 12 || buf[12] == ' ');
    if (!ok)
        return failf(io, LOP_HTTP_ECONNECT, "proxy %s refused CONNECT to %s: \"%s\"", t->proxy.host_port,
                     t->host_port, excerpt(ex, sizeof ex, buf, sl));
    if (end != len) /* the server speaks first only in TLS after our hello */
        return failf(io, LOP_HTTP_ECONNECT, "proxy %s sent data after its CONNECT answer", t->proxy.host_port);
    return 0;
}

static conn_t *dial(io_t *io, uint64_t cert_id)
{
    lop_transport_t *t = io->t;
    lop_http_exchange_t *x = io->x;
    long cto = x->connect_timeout_ms > 0 && x->connect_timeout_ms < 3600000L ? x->connect_timeout_ms : CONNECT_TIMEOUT_MS;
    int64_t deadline = now_ns() + (int64_t)cto * 1000000;
    if (io->deadline && io->deadline < deadline) deadline = io->deadline;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    const char *dhost = t->proxy.host ? t->proxy.host : t->host;
    const char *dport = t->proxy.host ? t->proxy.port : t->port;
    const char *dhp = t->proxy.host ? t->proxy.host_port : t->host_port; /* for messages */
    const char *via = t->proxy.host ? "proxy " : "";
    int gr = getaddrinfo(dhost, dport, &hints, &res);
    if (gr != 0) {
        failf(io, LOP_HTTP_ECONNECT, "cannot resolve %s%s: %s", via, dhost, gai_strerror(gr));
        return NULL;
    }
    conn_t *cn = lop_xcalloc(1, sizeof *cn);
    cn->fd = -1;
    cn->cert_id = cert_id;
    int last = 0, naddr = 0;
    bool timed_out = false;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) naddr++;
    for (struct addrinfo *ai = res; ai && cn->fd < 0; ai = ai->ai_next, naddr--) {
        /* each address gets its share of the time left (at least 2 s), so a blackholed first
         * address does not use it all (as Go's dialSerial) */
        int64_t now = now_ns(), until = deadline;
        if (naddr > 1) {
            int64_t share = (deadline - now) / naddr;
            if (share < 2000000000LL) share = 2000000000LL;
            if (now + share < deadline) until = now + share;
        }
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
            last = errno;
            close(fd);
            continue;
        }
        if (io_wait(io, fd, POLLOUT, until, "connecting to") < 0) {
            close(fd);
            if (io->res == LOP_HTTP_ETIMEDOUT && until < deadline) { /* the next address */
                io->res = LOP_HTTP_OK;
                x->error[0] = '\0';
                timed_out = true;
                continue;
            }
            freeaddrinfo(res);
            free(cn);
            if (io->res == LOP_HTTP_ERESET) io->res = LOP_HTTP_ECONNECT;
            if (io->res == LOP_HTTP_ETIMEDOUT)
                snprintf(x->error, sizeof x->error, "connecting to %s%s: timed out", via, dhp);
            return NULL;
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        if (soerr) {
            last = soerr;
            close(fd);
            continue;
        }
        cn->fd = fd;
    }
    freeaddrinfo(res);
    if (cn->fd < 0) {
        free(cn);
        failf(io, LOP_HTTP_ECONNECT, "connecting to %s%s: %s", via, dhp,
              last ? strerror(last) : timed_out ? "timed out" : strerror(ECONNREFUSED));
        return NULL;
    }
    int one = 1, idle = KEEPALIVE_S;
    setsockopt(cn->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(cn->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(cn->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(cn->fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof idle);
    atomic_fetch_add(&t->connects, 1);
    if (t->proxy.host && t->tls && proxy_connect(io, cn, deadline) < 0) {
        conn_close(cn, false);
        return NULL;
    }
    if (t->tls && tls_handshake(io, cn, deadline) < 0) {
        conn_close(cn, false);
        return NULL;
    }
    return cn;
}

/* ---- the response ---- */

typedef enum { BODY_NONE, BODY_LENGTH, BODY_CHUNKED, BODY_EOF } body_mode_t;
typedef enum { CK_SIZE, CK_DATA, CK_DATA_END, CK_TRAILER, CK_DONE } chunk_state_t;

typedef struct resp {
    char *buf;
    size_t cap, start, end;  /* unparsed bytes are buf[start, end) */
    size_t read_bytes;
    int code;
    bool http10, keep_alive, close;
    body_mode_t mode;
    uint64_t left;           /* BODY_LENGTH: bytes to come; CK_DATA: bytes of the chunk */
    chunk_state_t ck;
    bool chunked, have_length;
    int coding;              /* 0 identity, 16 + MAX_WBITS gzip, 32 + MAX_WBITS deflate (zlib or gzip) */
    z_stream z;
    bool z_on, z_end;
    char *zout;
} resp_t;

static bool token_has(const char *v, size_t vl, const char *tok)
{
    size_t tl = strlen(tok);
    for (size_t i = 0; i + tl <= vl; i++)
        if (strncasecmp(v + i, tok, tl) == 0 && (i == 0 || v[i - 1] == ' ' || v[i - 1] == ',') &&
            (i + tl == vl || v[i + tl] == ' ' || v[i + tl] == ',' || v[i + tl] == ';'))
            return true;
    return false;
}

static bool value_is(const char *v, size_t vl, const char *word)
{
    return vl == strlen(word) && strncasecmp(v, word, vl) == 0;
}

/* One header line of the final response (not NUL-terminated, no CR/LF). */
static int header_line(io_t *io, resp_t *r, const char *p, size_t n)
{
    char ex[48];
    const char *colon = memchr(p, ':', n);
    size_t kl = colon ? (size_t)(colon - p) : 0;
    /* no name, whitespace in or before the name (also an obsolete folded line): refused, as Go's
     * reader does, since two parsers reading such a block differently is how responses split */
    if (!kl || memchr(p, ' ', kl) || memchr(p, '\t', kl))
        return failf(io, LOP_HTTP_EPROTO, "response from %s: bad header line \"%s\"", io->t->host_port,
                     excerpt(ex, sizeof ex, p, n));
    const char *v = colon + 1;
    size_t vl = n - kl - 1;
    while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
    if (kl == 14 && strncasecmp(p, "Content-Length", 14) == 0) {
        uint64_t len = 0;
        size_t i = 0;
        for (; i < vl && v[i] >= '0' && v[i] <= '9' && len < (UINT64_MAX - 9) / 10; i++) len = len * 10 + (uint64_t)(v[i] - '0');
        if (i == 0 || i != vl || (r->have_length && r->left != len))
            return failf(io, LOP_HTTP_EPROTO, "response from %s: bad Content-Length", io->t->host_port);
        r->have_length = true;
        r->left = len;
    } else if (kl == 17 && strncasecmp(p, "Transfer-Encoding", 17) == 0) {
        /* only "chunked" alone: with another coding the body would not be what it claims */
        if (r->chunked || !value_is(v, vl, "chunked"))
            return failf(io, LOP_HTTP_EPROTO, "response from %s: unsupported Transfer-Encoding \"%s\"",
                         io->t->host_port, excerpt(ex, sizeof ex, v, vl));
        r->chunked = true;
    } else if (kl == 16 && strncasecmp(p, "Content-Encoding", 16) == 0 && io->x->gzip) {
        if (value_is(v, vl, "gzip") || value_is(v, vl, "x-gzip")) r->coding = 16 + MAX_WBITS;
        else if (value_is(v, vl, "deflate")) r->coding = 32 + MAX_WBITS;
        else if (vl == 0 || value_is(v, vl, "identity")) r->coding = 0;
        else
            return failf(io, LOP_HTTP_EPROTO, "response from %s: unsupported Content-Encoding \"%s\"",
                         io->t->host_port, excerpt(ex, sizeof ex, v, vl));
    } else if (kl == 10 && strncasecmp(p, "Connection", 10) == 0) {
        if (token_has(v, vl, "close")) r->close = true;
        if (token_has(v, vl, "keep-alive")) r->keep_alive = true;
    }
    if (io->x->on_header) io->x->on_header(io->x->ud, p, kl, v, vl);
    return 0;
}

#define INTERIM_MAX 5 /* 1xx responses before the final one (Go allows 5) */

/* Read the status line and headers, skipping 1xx responses. The whole header block, interim
 * responses included, is bounded by HEADER_MAX bytes. */
static int read_head(io_t *io, conn_t *cn, resp_t *r)
{
    size_t pos = r->start;   /* next byte not yet searched for '\n' */
    size_t total = 0;        /* header bytes taken so far */
    int interim = 0;
    bool status = true;
    char ex[48];
    for (;;) {
        char *nl = memchr(r->buf + pos, '\n', r->end - pos);
        if (!nl) {
            if (total + (r->end - r->start) >= HEADER_MAX)
                return failf(io, LOP_HTTP_EPROTO, "response from %s: header block over %d bytes", io->t->host_port, HEADER_MAX);
            pos = r->end;
            if (r->end == r->cap) {
                size_t keep = r->end - r->start;
                memmove(r->buf, r->buf + r->start, keep);
                pos -= r->start;
                r->start = 0;
                r->end = keep;
                if (r->end == r->cap) { /* a header line larger than the buffer */
                    r->cap *= 2;
                    r->buf = lop_xrealloc(r->buf, r->cap);
                }
            }
            ssize_t n = conn_read(io, cn, r->buf + r->end, r->cap - r->end);
            if (n < 0) return -1;
            if (n == 0)
                return failf(io, LOP_HTTP_ERESET, "%s closed the connection %s", io->t->host_port,
                             io->x->response_started ? "in the middle of the response headers" : "before responding");
            io->x->response_started = true;
            r->end += (size_t)n;
            continue;
        }
        char *line = r->buf + r->start;
        size_t len = (size_t)(nl - line);
        total += len + 1;
        if (total > HEADER_MAX)
            return failf(io, LOP_HTTP_EPROTO, "response from %s: header block over %d bytes", io->t->host_port, HEADER_MAX);
        if (len && line[len - 1] == '\r') len--;
        pos = r->start = (size_t)(nl - r->buf) + 1;
        if (status) {
            if (len < 12 || memcmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
                line[9] < '1' || line[9] > '9' || line[10] < '0' || line[10] > '9' || line[11] < '0' ||
                line[11] > '9' || (len > 12 && line[12] != ' '))
                return failf(io, LOP_HTTP_EPROTO, "response from %s is not HTTP/1.x: \"%s\"", io->t->host_port,
                             excerpt(ex, sizeof ex, line, len));
            r->code = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
            r->http10 = line[7] == '0';
            status = false;
            if (r->code < 200 && r->code != 101) {
                if (++interim > INTERIM_MAX)
                    return failf(io, LOP_HTTP_EPROTO, "response from %s: more than %d interim (1xx) responses",
                                 io->t->host_port, INTERIM_MAX);
            } else {
                io->x->code = r->code;
                if (io->x->on_status) io->x->on_status(io->x->ud, r->code);
            }
            continue;
        }
        bool final = r->code >= 200 || r->code == 101;
        if (len == 0) {
            if (!final) { /* an interim response (100, 103): the real one follows */
                status = true;
                continue;
            }
            return 0;
        }
        if (final && header_line(io, r, line, len) < 0) return -1;
    }
}

/* Pass decoded body bytes on (through zlib when the body is encoded). */
static int deliver(io_t *io, resp_t *r, const char *p, size_t n)
{
    lop_http_exchange_t *x = io->x;
    if (!n) return 0;
    if (!r->coding) { /* in pieces of read_bytes: the first read (with the headers) may hold more */
        for (size_t k; n; p += k, n -= k) {
            k = n < r->read_bytes ? n : r->read_bytes;
            if (x->on_body && x->on_body(x->ud, p, k))
                return failf(io, LOP_HTTP_ESTOPPED, "response from %s: stopped by the consumer", io->t->host_port);
        }
        return 0;
    }
    if (!r->z_on) {
        if (inflateInit2(&r->z, r->coding) != Z_OK) return failf(io, LOP_HTTP_EPROTO, "response from %s: zlib cannot start", io->t->host_port);
        r->z_on = true;
        r->zout = lop_xmalloc(r->read_bytes);
    }
    r->z.next_in = (Bytef *)p;
    r->z.avail_in = (uInt)n;
    while (r->z.avail_in) {
        if (r->z_end) { /* another gzip member follows */
            inflateReset(&r->z);
            r->z_end = false;
        }
        r->z.next_out = (Bytef *)r->zout;
        r->z.avail_out = (uInt)r->read_bytes;
        int zr = inflate(&r->z, Z_NO_FLUSH);
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
            return failf(io, LOP_HTTP_EPROTO, "response from %s: bad compressed body: %s", io->t->host_port,
                         r->z.msg ? r->z.msg : "zlib error");
        if (zr == Z_STREAM_END) r->z_end = true;
        size_t got = r->read_bytes - r->z.avail_out;
        if (got && x->on_body && x->on_body(x->ud, r->zout, got))
            return failf(io, LOP_HTTP_ESTOPPED, "response from %s: stopped by the consumer", io->t->host_port);
        if (zr == Z_BUF_ERROR && !got) break;
    }
    return 0;
}

/* Decode the framing of the bytes in buf[start, end), moving the body bytes down to buf[start, *w).
 * Leaves start at the first unparsed byte. Returns 1 when the body is complete, 0 for more, -1. */
static int unframe(io_t *io, resp_t *r, size_t *w)
{
    char *b = r->buf;
    size_t i = r->start, o = r->start;
    while (i < r->end) {
        if (r->mode == BODY_EOF) {
            memmove(b + o, b + i, r->end - i);
            o += r->end - i;
            i = r->end;
        } else if (r->mode == BODY_LENGTH || r->ck == CK_DATA) {
            size_t n = r->end - i;
            if (n > r->left) n = (size_t)r->left;
            if (o != i) memmove(b + o, b + i, n);
            o += n;
            i += n;
            r->left -= n;
            if (r->left) continue;
            if (r->mode == BODY_LENGTH) {
                r->start = i;
                *w = o;
                return 1;
            }
            r->ck = CK_DATA_END;
        } else {
            char *nl = memchr(b + i, '\n', r->end - i);
            if (!nl) {
                if (r->end - i > 4096)
                    return failf(io, LOP_HTTP_EPROTO, "response from %s: bad chunked framing", io->t->host_port);
                break; /* the line's end is in the next read */
            }
            const char *line = b + i;
            size_t len = (size_t)(nl - line);
            if (len && line[len - 1] == '\r') len--;
            i = (size_t)(nl - b) + 1;
            if (r->ck == CK_DATA_END) {
                if (len) return failf(io, LOP_HTTP_EPROTO, "response from %s: chunk longer than its size", io->t->host_port);
                r->ck = CK_SIZE;
            } else if (r->ck == CK_SIZE) {
                uint64_t size = 0;
                size_t k = 0;
                for (; k < len; k++) {
                    int d = line[k] >= '0' && line[k] <= '9' ? line[k] - '0'
                            : (line[k] | 0x20) >= 'a' && (line[k] | 0x20) <= 'f' ? (line[k] | 0x20) - 'a' + 10 : -1;
                    if (d < 0) break;
                    if (size >> 58) return failf(io, LOP_HTTP_EPROTO, "response from %s: chunk size too large", io->t->host_port);
                    size = size * 16 + (uint64_t)d;
                }
                size_t d0 = k;
                while (k < len && (line[k] == ' ' || line[k] == '\t')) k++; /* then only an extension */
                if (d0 == 0 || (k < len && line[k] != ';'))
                    return failf(io, LOP_HTTP_EPROTO, "response from %s: bad chunk size line", io->t->host_port);
                if (size == 0) r->ck = CK_TRAILER;
                else r->ck = CK_DATA, r->left = size;
            } else { /* CK_TRAILER: fields until an empty line */
                if (len == 0) {
                    r->ck = CK_DONE;
                    r->start = i;
                    *w = o;
                    return 1;
                }
            }
        }
    }
    r->start = i;
    *w = o;
    return 0;
}

static int read_body(io_t *io, conn_t *cn, resp_t *r)
{
    for (;;) {
        size_t from = r->start, w = from;
        int done = r->start < r->end ? unframe(io, r, &w) : 0;
        if (done < 0) return -1;
        if (deliver(io, r, r->buf + from, w - from) < 0) return -1;
        if (done) break;
        /* keep what is left (a partial chunk-size line) at the front, read more after it */
        size_t keep = r->end - r->start;
        memmove(r->buf, r->buf + r->start, keep);
        r->start = 0;
        r->end = keep;
        size_t room = r->cap - r->end;
        if (room > r->read_bytes) room = r->read_bytes;
        if (!room) return failf(io, LOP_HTTP_EPROTO, "response from %s: bad chunked framing", io->t->host_port);
        if (io->x->on_tick && io->x->on_tick(io->x->ud)) return failf(io, LOP_HTTP_EABORTED, "reading the response from %s: aborted", io->t->host_port);
        if (io->deadline && now_ns() >= io->deadline) /* also while the data never stops */
            return failf(io, LOP_HTTP_ETIMEDOUT, "reading the response from %s: timed out after %ld ms",
                         io->t->host_port, io->timeout_ms);
        ssize_t n = conn_read(io, cn, r->buf + r->end, room);
        if (n < 0) return -1;
        if (n == 0) {
            if (r->mode == BODY_EOF) break;
            return failf(io, LOP_HTTP_ERESET, "%s closed the connection before the end of the body", io->t->host_port);
        }
        r->end += (size_t)n;
    }
    if (r->z_on && !r->z_end)
        return failf(io, LOP_HTTP_EPROTO, "response from %s: the compressed body is truncated", io->t->host_port);
    return 0;
}

/* ---- one exchange ---- */

#define TIMEOUT_MAX_MS (100LL * 365 * 24 * 3600 * 1000) /* a century: no overflow in ns */

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

static void build_request(lop_transport_t *t, const lop_http_exchange_t *x, lop_buf_t *b)
{
    if (t->proxy.host && !t->tls) { /* absolute-form through a proxy (RFC 9112 §3.2.2) */
        lop_buf_printf(b, "%s http://%s%s%s HTTP/1.1\r\nHost: %s\r\n", x->method, t->host_hdr, t->prefix,
                       x->target, t->host_hdr);
        if (t->proxy.auth_header) lop_buf_append(b, t->proxy.auth_header, strlen(t->proxy.auth_header));
    } else {
        lop_buf_printf(b, "%s %s%s HTTP/1.1\r\nHost: %s\r\n", x->method, t->prefix, x->target, t->host_hdr);
    }
    if (x->headers) lop_buf_append(b, x->headers, strlen(x->headers));
    if (x->gzip) lop_buf_append(b, "Accept-Encoding: gzip\r\n", 23);
    if (x->body || x->send_length) lop_buf_printf(b, "Content-Length: %zu\r\n", x->body ? x->body_len : 0);
    lop_buf_append(b, "\r\n", 2);
    if (x->body && x->body_len <= ONE_WRITE_MAX) lop_buf_append(b, x->body, x->body_len);
}

/* Send the request and read the response on cn. *sent: the whole request was written. */
static int exchange_on(io_t *io, conn_t *cn, const lop_buf_t *head, resp_t *r, bool *sent)
{
    lop_http_exchange_t *x = io->x;
    size_t got = 0;
    int w = conn_write(io, cn, head->data, head->len, r->buf, r->cap, &got);
    if (w == 0 && x->body && x->body_len > ONE_WRITE_MAX)
        w = conn_write(io, cn, x->body, x->body_len, r->buf, r->cap, &got);
    if (w < 0) return -1;
    *sent = w == 0;
    r->end = got; /* what came while writing: interim responses, or the answer itself */
    if (got) x->response_started = true;
    if (w == 1) r->close = true; /* answered (or closed) before the request was all written */
    if (read_head(io, cn, r) < 0) return -1;
    /* both framings, or chunked from an HTTP/1.0 server: read as chunked, never reused (RFC 9112
     * §6.1, §6.3) */
    if (r->chunked && (r->have_length || r->http10)) r->close = true;
    if (r->code == 101) r->close = true; /* switched protocols: not HTTP any more */
    bool no_body = strcmp(x->method, "HEAD") == 0 || r->code == 204 || r->code == 304 || r->code == 101;
    r->mode = no_body ? BODY_NONE : r->chunked ? BODY_CHUNKED : r->have_length ? BODY_LENGTH : BODY_EOF;
    if (r->mode == BODY_LENGTH && r->left == 0) r->mode = BODY_NONE;
    if (r->mode != BODY_NONE && read_body(io, cn, r) < 0) return -1;
    return 0;
}

lop_http_result_t lop_transport_exchange(lop_transport_t *t, lop_http_exchange_t *x)
{
    io_t io = {.t = t, .x = x, .timeout_ms = x->timeout_ms, .res = LOP_HTTP_OK};
    if (x->timeout_ms > 0) io.deadline = now_ns() + (int64_t)(x->timeout_ms < TIMEOUT_MAX_MS ? x->timeout_ms : TIMEOUT_MAX_MS) * 1000000;
    x->code = 0;
    x->response_started = false;
    x->error[0] = '\0';
    if (!request_line_ok(x->method, x->target)) {
        char ex[48];
        failf(&io, LOP_HTTP_EREQUEST, "request to %s: the method or target is not valid on the wire: \"%s\"",
              t->host_port, excerpt(ex, sizeof ex, x->target ? x->target : "", x->target ? strlen(x->target) : 0));
        return io.res;
    }
    uint64_t cert_id = t->tls ? cert_identity(x->cert_pem, x->key_pem) : 0;
    lop_buf_t head = LOP_BUF_INIT;
    build_request(t, x, &head);
    size_t rb = x->read_bytes ? x->read_bytes : READ_DEFAULT;
    resp_t r;
    for (int attempt = 0;; attempt++) {
        memset(&r, 0, sizeof r);
        r.read_bytes = rb;
        r.cap = rb < READ_DEFAULT ? READ_DEFAULT : rb;
        r.buf = lop_xmalloc(r.cap);
        conn_t *cn = attempt == 0 ? pool_take(t, cert_id) : NULL; /* a resend: a new connection */
        bool reused = cn != NULL;
        if (!cn) cn = dial(&io, cert_id);
        if (!cn) {
            free(r.buf);
            break;
        }
        bool sent = false;
        int rc = exchange_on(&io, cn, &head, &r, &sent);
        bool reusable = rc == 0 && r.mode != BODY_EOF && !r.close && (!r.http10 || r.keep_alive) &&
                        r.start == r.end && !(cn->ssl && SSL_has_pending(cn->ssl));
        if (reusable) pool_put(t, cn);
        else conn_close(cn, rc == 0);
        if (r.z_on) inflateEnd(&r.z);
        free(r.zout);
        free(r.buf);
        /* a kept-alive connection the server had closed meanwhile: send once more on a new one */
        if (rc < 0 && io.res == LOP_HTTP_ERESET && reused && attempt == 0 && !x->response_started &&
            (!sent || strcmp(x->method, "GET") == 0)) {
            io.res = LOP_HTTP_OK;
            x->error[0] = '\0';
            continue;
        }
        break;
    }
    explicit_bzero(head.data, head.len); /* it held the credentials */
    lop_buf_free(&head);
    return io.res;
}
