/* transport.c — HTTP/1.1 over TCP or TLS with a shared keep-alive pool (see transport.h): the
 * server URL, the pool, waiting and raw I/O, connecting (through a proxy too), the exchange. */
#include "host/kube/client/transport_impl.h"

#include "host/util/buf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int64_t lop_tr_now_ns(void)
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
const char *lop_tr_excerpt(char *dst, size_t cap, const char *p, size_t n)
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
        if (rc == LOP_OK && t->tls) rc = lop_tr_tls_setup(t, cfg, err);
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
        int64_t now = lop_tr_now_ns();
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
    cn->idle_since = lop_tr_now_ns();
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

int lop_tr_failf(io_t *io, lop_http_result_t res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(io->x->error, sizeof io->x->error, fmt, ap);
    va_end(ap);
    io->res = res;
    return -1;
}

/* Wait for events on fd until deadline (0 = none), ticking every TICK_MS. 0 ready, -1 failed. */
int lop_tr_io_wait(io_t *io, int fd, short events, int64_t deadline, const char *doing)
{
    for (;;) {
        if (io->x->on_tick && io->x->on_tick(io->x->ud))
            return lop_tr_failf(io, LOP_HTTP_EABORTED, "%s %s: aborted", doing, io->t->host_port);
        int ms = TICK_MS;
        if (deadline) {
            int64_t left = deadline - lop_tr_now_ns();
            if (left <= 0) {
                if (deadline == io->deadline)
                    return lop_tr_failf(io, LOP_HTTP_ETIMEDOUT, "%s %s: timed out after %ld ms", doing,
                                        io->t->host_port, io->timeout_ms);
                return lop_tr_failf(io, LOP_HTTP_ETIMEDOUT, "%s %s: timed out", doing, io->t->host_port);
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
            return lop_tr_failf(io, LOP_HTTP_ERESET, "%s %s: poll: %s", doing, io->t->host_port, strerror(errno));
    }
}

/* Read up to cap bytes: > 0 read, 0 end of stream, -1 failed (io->res set). */
ssize_t lop_tr_conn_read(io_t *io, conn_t *cn, char *p, size_t cap)
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
                lop_tr_ssl_error_text(NULL, why, sizeof why);
                return lop_tr_failf(io, LOP_HTTP_ERESET, "reading from %s: %s", io->t->host_port, why);
            }
            if (lop_tr_io_wait(io, cn->fd, ev, io->deadline, "reading the response from") < 0) return -1;
        } else {
            ssize_t n = recv(cn->fd, p, cap, 0);
            if (n >= 0) return n;
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return lop_tr_failf(io, LOP_HTTP_ERESET, "reading from %s: %s", io->t->host_port, strerror(errno));
            if (lop_tr_io_wait(io, cn->fd, POLLIN, io->deadline, "reading the response from") < 0) return -1;
        }
    }
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
                if (e == SSL_ERROR_WANT_READ)
                    ev = POLLIN;
                else if (e != SSL_ERROR_WANT_WRITE) {
                    if (errno == EPIPE || errno == ECONNRESET) return 1; /* maybe it answered: read */
                    char why[240];
                    lop_tr_ssl_error_text(NULL, why, sizeof why);
                    return lop_tr_failf(io, LOP_HTTP_ERESET, "writing to %s: %s", io->t->host_port, why);
                }
            }
        } else {
            w = send(cn->fd, p, len, MSG_NOSIGNAL);
            if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) return 1;
            if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                return lop_tr_failf(io, LOP_HTTP_ERESET, "writing to %s: %s", io->t->host_port, strerror(errno));
        }
        if (w > 0) {
            p += w;
            len -= (size_t)w;
            continue;
        }
        if (lop_tr_io_wait(io, cn->fd, ev | POLLIN, io->deadline, "sending the request to") < 0) return -1;
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
                if (lop_tr_final_answer(rbuf, *got)) return 1;
                continue;
            }
            int e = SSL_get_error(cn->ssl, r);
            if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return 1;
        } else {
            ssize_t r = recv(cn->fd, rbuf + *got, left, 0);
            if (r > 0) {
                *got += (size_t)r;
                if (lop_tr_final_answer(rbuf, *got)) return 1;
                continue;
            }
            if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return 1;
        }
    }
    return 0;
}

/* ---- connecting ---- */

/* Open a tunnel to the server through the proxy (CONNECT, RFC 9110 §9.3.6) on cn, before TLS. */
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
    while (w >= 0 && !(end = lop_tr_head_end(buf, len))) {
        if (len == sizeof buf) {
            lop_tr_failf(io, LOP_HTTP_ECONNECT, "an answer over %zu bytes", sizeof buf);
            w = -1;
            break;
        }
        ssize_t n = lop_tr_conn_read(io, cn, buf + len, sizeof buf - len);
        if (n <= 0) {
            if (n == 0) lop_tr_failf(io, LOP_HTTP_ECONNECT, "the proxy closed the connection without answering");
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
        return lop_tr_failf(io, io->res, "CONNECT to %s through proxy %s: %s", t->host_port, t->proxy.host_port, why);
    }
    size_t sl = strcspn(buf, "\r\n");
    bool ok = sl >= 12 && memcmp(buf, "HTTP/1.", 7) == 0 && buf[8] == ' ' && buf[9] == '2' && buf[10] >= '0' &&
              buf[10] <= '9' && buf[11] >= '0' && buf[11] <= '9' && (sl == 12 || buf[12] == ' ');
    if (!ok)
        return lop_tr_failf(io, LOP_HTTP_ECONNECT, "proxy %s refused CONNECT to %s: \"%s\"", t->proxy.host_port,
                            t->host_port, lop_tr_excerpt(ex, sizeof ex, buf, sl));
    if (end != len) /* the server speaks first only in TLS after our hello */
        return lop_tr_failf(io, LOP_HTTP_ECONNECT, "proxy %s sent data after its CONNECT answer", t->proxy.host_port);
    return 0;
}

static conn_t *dial(io_t *io, uint64_t cert_id)
{
    lop_transport_t *t = io->t;
    lop_http_exchange_t *x = io->x;
    long cto =
        x->connect_timeout_ms > 0 && x->connect_timeout_ms < 3600000L ? x->connect_timeout_ms : CONNECT_TIMEOUT_MS;
    int64_t deadline = lop_tr_now_ns() + (int64_t)cto * 1000000;
    if (io->deadline && io->deadline < deadline) deadline = io->deadline;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    const char *dhost = t->proxy.host ? t->proxy.host : t->host;
    const char *dport = t->proxy.host ? t->proxy.port : t->port;
    const char *dhp = t->proxy.host ? t->proxy.host_port : t->host_port; /* for messages */
    const char *via = t->proxy.host ? "proxy " : "";
    int gr = getaddrinfo(dhost, dport, &hints, &res);
    if (gr != 0) {
        lop_tr_failf(io, LOP_HTTP_ECONNECT, "cannot resolve %s%s: %s", via, dhost, gai_strerror(gr));
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
        int64_t now = lop_tr_now_ns(), until = deadline;
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
        if (lop_tr_io_wait(io, fd, POLLOUT, until, "connecting to") < 0) {
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
        lop_tr_failf(io, LOP_HTTP_ECONNECT, "connecting to %s%s: %s", via, dhp,
                     last        ? strerror(last)
                     : timed_out ? "timed out"
                                 : strerror(ECONNREFUSED));
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
    if (t->tls && lop_tr_tls_handshake(io, cn, deadline) < 0) {
        conn_close(cn, false);
        return NULL;
    }
    return cn;
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
        lop_buf_printf(b, "%s http://%s%s%s HTTP/1.1\r\nHost: %s\r\n", x->method, t->host_hdr, t->prefix, x->target,
                       t->host_hdr);
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
    if (lop_tr_read_head(io, cn, r) < 0) return -1;
    /* both framings, or chunked from an HTTP/1.0 server: read as chunked, never reused (RFC 9112
     * §6.1, §6.3) */
    if (r->chunked && (r->have_length || r->http10)) r->close = true;
    if (r->code == 101) r->close = true; /* switched protocols: not HTTP any more */
    bool no_body = strcmp(x->method, "HEAD") == 0 || r->code == 204 || r->code == 304 || r->code == 101;
    r->mode = no_body ? BODY_NONE : r->chunked ? BODY_CHUNKED : r->have_length ? BODY_LENGTH : BODY_EOF;
    if (r->mode == BODY_LENGTH && r->left == 0) r->mode = BODY_NONE;
    if (r->mode != BODY_NONE && lop_tr_read_body(io, cn, r) < 0) return -1;
    return 0;
}

lop_http_result_t lop_transport_exchange(lop_transport_t *t, lop_http_exchange_t *x)
{
    io_t io = {.t = t, .x = x, .timeout_ms = x->timeout_ms, .res = LOP_HTTP_OK};
    if (x->timeout_ms > 0)
        io.deadline =
            lop_tr_now_ns() + (int64_t)(x->timeout_ms < TIMEOUT_MAX_MS ? x->timeout_ms : TIMEOUT_MAX_MS) * 1000000;
    x->code = 0;
    x->response_started = false;
    x->error[0] = '\0';
    if (!request_line_ok(x->method, x->target)) {
        char ex[48];
        lop_tr_failf(&io, LOP_HTTP_EREQUEST, "request to %s: the method or target is not valid on the wire: \"%s\"",
                     t->host_port,
                     lop_tr_excerpt(ex, sizeof ex, x->target ? x->target : "", x->target ? strlen(x->target) : 0));
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
        bool reusable = rc == 0 && r.mode != BODY_EOF && !r.close && (!r.http10 || r.keep_alive) && r.start == r.end &&
                        !(cn->ssl && SSL_has_pending(cn->ssl));
        if (reusable)
            pool_put(t, cn);
        else
            conn_close(cn, rc == 0);
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
