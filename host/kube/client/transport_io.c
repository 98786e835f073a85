/* SPDX-License-Identifier: Apache-2.0 */
/* transport_io.c — the transport's I/O thread (see transport.h): one curl multi handle driven by
 * curl_multi_socket_action over poll(2), the transfers' libcurl callbacks, and the dead-connection
 * probe for HTTP/2. Every libcurl call of a transport happens on this thread. */
#include "host/kube/client/transport_impl.h"

#include "host/util/log.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int64_t lop_tr_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void wake(lop_transport_t *t)
{
    uint64_t one = 1;
    while (write(t->wake_fd, &one, sizeof one) < 0 && errno == EINTR) {}
}

void lop_tr_io_queue(lop_tr_xfer_t *xf)
{
    lop_transport_t *t = xf->t;
    if (!xf->in_ops) {
        xf->in_ops = true;
        xf->next_op = t->ops;
        t->ops = xf;
    }
    wake(t);
}

/* ---- the socket table ---- */

static lop_tr_sock_t *sock_find(lop_transport_t *t, int fd)
{
    for (int i = 0; i < t->nsocks; i++)
        if (t->socks[i].fd == fd) return &t->socks[i];
    return NULL;
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *ud, void *socketp)
{
    (void)socketp;
    lop_transport_t *t = ud;
    lop_tr_xfer_t *xf = NULL;
    if (what != CURL_POLL_REMOVE && easy && curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&xf) == CURLE_OK && xf)
        xf->sock_fd = fd; /* the connection this transfer runs on (libcurl tells the first user) */
    lop_tr_sock_t *s = sock_find(t, fd);
    if (what == CURL_POLL_REMOVE) {
        if (s) *s = t->socks[--t->nsocks];
        return 0;
    }
    if (!s) {
        if (t->nsocks == t->capsocks) {
            t->capsocks = t->capsocks ? t->capsocks * 2 : 8;
            t->socks = lop_xrealloc(t->socks, (size_t)t->capsocks * sizeof *t->socks);
        }
        s = &t->socks[t->nsocks++];
        *s = (lop_tr_sock_t){.fd = fd, .last_read = lop_tr_now_ns()};
    }
    s->what = what;
    /* libcurl may drop a connection's socket while it waits on nothing and add it again later: a
     * transfer whose response is known to be h2 marks it again (else only the head's marking) */
    long v = 0;
    if (!s->h2 && xf && curl_easy_getinfo(easy, CURLINFO_HTTP_VERSION, &v) == CURLE_OK && v == CURL_HTTP_VERSION_2_0)
        s->h2 = true;
    return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *ud)
{
    (void)multi;
    lop_transport_t *t = ud;
    t->timer_ms = timeout_ms;
    return 0;
}

static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    (void)purpose;
    lop_transport_t *t = ud;
    int fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    if (fd < 0) return CURL_SOCKET_BAD;
    atomic_fetch_add(&t->connects, 1);
    atomic_fetch_add(&t->open, 1);
    return fd;
}

static int on_close_socket(void *ud, curl_socket_t fd)
{
    lop_transport_t *t = ud;
    atomic_fetch_sub(&t->open, 1);
    return close(fd);
}

/* ---- a transfer's callbacks (inside curl_multi_socket_action) ---- */

/* A line of the response head. Lines of interim (1xx) responses are dropped when the next status
 * line arrives; trailers after the final head are ignored. */
static size_t on_header_line(char *p, size_t size, size_t n, void *ud)
{
    lop_tr_xfer_t *xf = ud;
    size_t len = size * n;
    lop_transport_t *t = xf->t;
    bool status_line = len > 5 && memcmp(p, "HTTP/", 5) == 0;
    if (xf->probe) {
        if (status_line) { /* an answer: the connection is alive */
            lop_tr_sock_t *s = sock_find(t, xf->probe_fd);
            if (s) {
                s->probe_sent = 0;
                s->last_read = lop_tr_now_ns();
            }
        }
        return len;
    }
    bool h2 = false;
    pthread_mutex_lock(&t->mu);
    xf->started = true;
    lop_tr_head_rc_t rc =
        xf->head_done ? LOP_TR_HEAD_MORE /* trailers */ : lop_tr_head_line(&xf->head, &xf->code, p, len);
    if (rc == LOP_TR_HEAD_DONE) {
        xf->head_done = true;
        long v = 0;
        curl_easy_getinfo(xf->easy, CURLINFO_HTTP_VERSION, &v);
        h2 = v == CURL_HTTP_VERSION_2_0;
        lop_tr_signal(xf);
    } else if (rc == LOP_TR_HEAD_TOO_BIG) {
        xf->head_too_big = true;
        pthread_mutex_unlock(&t->mu);
        return 0; /* ends the transfer */
    }
    pthread_mutex_unlock(&t->mu);
    if (h2 && xf->sock_fd >= 0) { /* the connection carries h2 streams: watch it for silence */
        lop_tr_sock_t *s = sock_find(t, xf->sock_fd);
        if (s) s->h2 = true;
    }
    return len;
}

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
    lop_tr_xfer_t *xf = ud;
    size_t len = size * n;
    if (xf->probe) return len;
    lop_transport_t *t = xf->t;
    pthread_mutex_lock(&t->mu);
    if (xf->cancel) {
        pthread_mutex_unlock(&t->mu);
        return 0; /* CURLE_WRITE_ERROR; the cancel operation finishes it */
    }
    if (xf->inbox.len >= xf->hwm) {
        xf->paused = true;
        lop_tr_signal(xf); /* the caller resumes it once it has drained the inbox */
        pthread_mutex_unlock(&t->mu);
        return CURL_WRITEFUNC_PAUSE; /* the same bytes come again after the resume */
    }
    xf->decoded += (curl_off_t)len;
    if (xf->decoded > LOP_TR_BOMB_BYTES && xf->x->gzip) {
        curl_off_t wire = 0;
        curl_easy_getinfo(xf->easy, CURLINFO_SIZE_DOWNLOAD_T, &wire);
        if (xf->decoded > wire * LOP_TR_BOMB_RATIO) {
            xf->bomb = true;
            pthread_mutex_unlock(&t->mu);
            return 0;
        }
    }
    lop_buf_append(&xf->inbox, p, len);
    xf->started = true;
    pthread_mutex_unlock(&t->mu);
    if (!xf->dirty) { /* signalled by lop_tr_flush when libcurl's call returns */
        xf->dirty = true;
        xf->next_dirty = t->dirty;
        t->dirty = xf;
    }
    return len;
}

void lop_tr_flush(lop_transport_t *t)
{
    if (!t->dirty) return;
    pthread_mutex_lock(&t->mu);
    for (lop_tr_xfer_t *xf = t->dirty, *next; xf; xf = next) {
        next = xf->next_dirty;
        xf->dirty = false;
        xf->next_dirty = NULL;
        lop_tr_signal(xf);
    }
    t->dirty = NULL;
    pthread_mutex_unlock(&t->mu);
}

/* The local port of socket fd, or -1. */
static int local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &l) != 0) return -1;
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return -1;
}

/* The probe's: libcurl puts it on any connection to the server that takes a new stream, which is
 * not the one it checks when that one took a GOAWAY or is at its stream limit; an answer there
 * would say nothing of the checked connection. Then it is not sent, and the checked connection
 * must show a read within the ping timeout instead (health_check). */
static int on_probe_prereq(void *ud, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                           int conn_local_port)
{
    (void)conn_primary_ip, (void)conn_local_ip, (void)conn_primary_port;
    lop_tr_xfer_t *xf = ud;
    if (conn_local_port == local_port(xf->probe_fd)) return CURL_PREREQFUNC_OK;
    lop_tr_sock_t *s = sock_find(xf->t, xf->probe_fd);
    if (s && s->probe_sent) s->probe_elsewhere = true;
    return CURL_PREREQFUNC_ABORT;
}

/* Called before libcurl sends the request, and again before each resend. libcurl resends a request
 * whose reused connection failed, and can do so after part of the response arrived (an h2 stream
 * reset on a dying connection, an HTTP/1.1 connection closed mid-head); the bytes already passed
 * to the caller would then be followed by a second response. Refused: the caller sees a reset and
 * its own retry policy decides (client-go's rest.Request retries only what it knows is safe). */
static int on_prereq(void *ud, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port, int conn_local_port)
{
    (void)conn_primary_ip, (void)conn_local_ip, (void)conn_primary_port, (void)conn_local_port;
    lop_tr_xfer_t *xf = ud;
    if (!xf->started && xf->send_by_ns && lop_tr_now_ns() > xf->send_by_ns) { /* too late to send it */
        pthread_mutex_lock(&xf->t->mu);
        xf->late = true;
        pthread_mutex_unlock(&xf->t->mu);
        return CURL_PREREQFUNC_ABORT;
    }
    if (!xf->started) { /* started: written by this (the I/O) thread only */
        pthread_mutex_lock(&xf->t->mu);
        xf->sent = true;
        pthread_mutex_unlock(&xf->t->mu);
        return CURL_PREREQFUNC_OK;
    }
    pthread_mutex_lock(&xf->t->mu);
    xf->no_resend = true;
    pthread_mutex_unlock(&xf->t->mu);
    return CURL_PREREQFUNC_ABORT;
}

/* ---- setting up a transfer ---- */

static void set_common(lop_transport_t *t, lop_tr_xfer_t *xf, CURL *e)
{
    curl_easy_setopt(e, CURLOPT_URL, xf->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, xf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_SHARE, t->share);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, xf->errbuf);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, xf);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header_line);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, xf);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, t);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, t);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, xf->headers);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, xf->probe ? on_probe_prereq : on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, xf);
    if (xf->resolve) curl_easy_setopt(e, CURLOPT_RESOLVE, xf->resolve);
    curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, LOP_TR_KEEPALIVE_S);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, LOP_TR_KEEPALIVE_S);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                     t->tls && !t->disable_http2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
    if (t->tls && !t->disable_http2) curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    if (t->tls) {
        curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
        if (t->ca_pem) {
            struct curl_blob ca = {.data = t->ca_pem, .len = strlen(t->ca_pem), .flags = CURL_BLOB_NOCOPY};
            curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &ca);
            curl_easy_setopt(e, CURLOPT_CAINFO, NULL); /* only these CAs, as client-go's RootCAs */
            curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
        }
        if (t->insecure) {
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        }
    }
    if (t->connect_to) {
        static __thread struct curl_slist one; /* the I/O thread's: curl reads it while connecting */
        one.data = t->connect_to;
        one.next = NULL;
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, &one);
    }
    if (t->proxy.url) {
        static __thread struct curl_slist no_pc; /* no "Proxy-Connection: Keep-Alive" in CONNECT */
        no_pc.data = "Proxy-Connection:";
        no_pc.next = NULL;
        curl_easy_setopt(e, CURLOPT_PROXYHEADER, &no_pc);
        curl_easy_setopt(e, CURLOPT_PROXY, t->proxy.url);
        if (t->proxy.user) curl_easy_setopt(e, CURLOPT_PROXYUSERNAME, t->proxy.user);
        if (t->proxy.password) curl_easy_setopt(e, CURLOPT_PROXYPASSWORD, t->proxy.password);
    } else {
        curl_easy_setopt(e, CURLOPT_PROXY, ""); /* none, whatever the environment says */
    }
}

/* A request body through the read callback, so that libcurl cannot replay a non-idempotent
 * request it already sent: libcurl resends any request whose reused connection died before a
 * response byte, and rewinds the body to do so; refusing the rewind once a byte went out
 * (CURLE_SEND_FAIL_REWIND) gives Go's rule (net/http sends a request again only when it is
 * idempotent or was not written). */
static size_t on_read_body(char *p, size_t size, size_t n, void *ud)
{
    lop_tr_xfer_t *xf = ud;
    size_t room = size * n, left = xf->x->body_len - xf->body_off;
    size_t k = left < room ? left : room;
    if (k) memcpy(p, xf->x->body + xf->body_off, k);
    xf->body_off += k;
    return k;
}

static int on_seek_body(void *ud, curl_off_t offset, int origin)
{
    lop_tr_xfer_t *xf = ud;
    if (origin != SEEK_SET || offset != 0) return CURL_SEEKFUNC_CANTSEEK;
    if (xf->body_off && !xf->idempotent) return CURL_SEEKFUNC_FAIL;
    xf->body_off = 0;
    return CURL_SEEKFUNC_OK;
}

/* The request of a caller's exchange. */
static void set_request(lop_tr_xfer_t *xf, CURL *e)
{
    const lop_http_exchange_t *x = xf->x;
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     x->connect_timeout_ms > 0 ? x->connect_timeout_ms : LOP_TR_CONNECT_TIMEOUT_MS);
    if (x->timeout_ms > 0) { /* the whole exchange: what resolving the name took is spent */
        int64_t left = x->timeout_ms - (lop_tr_now_ns() - xf->begun_ns) / 1000000;
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(left > 1 ? left : 1));
    }
    if (x->gzip) curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "gzip");
    if (xf->t->tls && x->cert_pem && x->key_pem) {
        /* copied: a connection keeps them to match later transfers (a rotated certificate gets
         * a connection of its own) */
        struct curl_blob cert = {.data = (void *)x->cert_pem, .len = strlen(x->cert_pem), .flags = CURL_BLOB_COPY};
        struct curl_blob key = {.data = (void *)x->key_pem, .len = strlen(x->key_pem), .flags = CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (strcmp(x->method, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(x->method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else {
        if (x->body && x->body_len) {
            xf->idempotent = strcmp(x->method, "OPTIONS") == 0;
            curl_easy_setopt(e, CURLOPT_POST, 1L);
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
            curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read_body);
            curl_easy_setopt(e, CURLOPT_READDATA, xf);
            curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek_body);
            curl_easy_setopt(e, CURLOPT_SEEKDATA, xf);
        } else if (x->body || x->send_length) {
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
        }
        if (strcmp(x->method, "POST") != 0 || !(x->body || x->send_length))
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, x->method);
    }
}

/* The probe's: `GET <prefix>/version` without credentials, bounded by the ping timeout. */
static void set_probe(lop_transport_t *t, CURL *e)
{
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(t->ping_timeout_ns / 1000000));
}

/* ---- finishing ---- */

/* No answer within the ping timeout: the connection is dead. Shutting it down makes libcurl read
 * an end of stream, fail every stream on it and close it, never to be reused. */
static void declare_dead(lop_transport_t *t, lop_tr_sock_t *s)
{
    char fd[16];
    snprintf(fd, sizeof fd, "%d", s->fd);
    lop_log(LOP_LOG_WARN, "HTTP/2 connection to the API server did not answer the health probe; closing it", "server",
            t->host_port, "fd", fd, NULL);
    shutdown(s->fd, SHUT_RDWR);
    atomic_fetch_add(&t->dead, 1);
}

static void probe_finished(lop_transport_t *t, lop_tr_xfer_t *xf, CURLcode res)
{
    atomic_fetch_add(&t->probes_done, 1);
    lop_tr_sock_t *s = sock_find(t, xf->probe_fd);
    if (s && s->probe_sent && !s->probe_elsewhere) {
        /* a late answer from a slow server is no dead connection: anything read on it since the
         * probe went out proves it alive, as a PING's answer from the h2 layer would */
        if (res == CURLE_OPERATION_TIMEDOUT && s->last_read <= s->probe_sent) declare_dead(t, s);
        s->probe_sent = 0; /* answered or failed otherwise: probe again after read_idle */
        s->last_read = lop_tr_now_ns();
    }
}

/* Remove a transfer from the multi handle, free its libcurl state and tell its caller. */
static void finish(lop_transport_t *t, lop_tr_xfer_t *xf, CURLcode res)
{
    lop_tr_flush(t); /* xf may be on the list; its caller may free it once it is done */
    long os_errno = 0, connect_code = 0;
    if (xf->easy) {
        curl_easy_getinfo(xf->easy, CURLINFO_OS_ERRNO, &os_errno);
        curl_easy_getinfo(xf->easy, CURLINFO_HTTP_CONNECTCODE, &connect_code);
    }
    if (xf->easy) {
        curl_multi_remove_handle(t->multi, xf->easy);
        curl_easy_cleanup(xf->easy);
        xf->easy = NULL;
    }
    curl_slist_free_all(xf->headers);
    xf->headers = NULL;
    curl_slist_free_all(xf->resolve);
    xf->resolve = NULL;
    if (xf->probe) {
        for (lop_tr_xfer_t **pp = &t->probes; *pp; pp = &(*pp)->next_op)
            if (*pp == xf) {
                *pp = xf->next_op;
                break;
            }
        probe_finished(t, xf, res);
        free(xf->url);
        free(xf);
        return;
    }
    pthread_mutex_lock(&t->mu);
    xf->result = res;
    xf->os_errno = os_errno;
    xf->connect_code = connect_code;
    xf->done = true;
    lop_tr_signal(xf);
    pthread_mutex_unlock(&t->mu);
}

static void start(lop_transport_t *t, lop_tr_xfer_t *xf)
{
    CURL *e = curl_easy_init();
    if (!e) {
        snprintf(xf->errbuf, sizeof xf->errbuf, "libcurl could not create a transfer");
        finish(t, xf, CURLE_OUT_OF_MEMORY);
        return;
    }
    xf->easy = e;
    xf->sock_fd = -1;
    set_common(t, xf, e);
    if (xf->probe)
        set_probe(t, e);
    else
        set_request(xf, e);
    CURLMcode mc = curl_multi_add_handle(t->multi, e);
    if (mc != CURLM_OK) {
        snprintf(xf->errbuf, sizeof xf->errbuf, "libcurl: %s", curl_multi_strerror(mc));
        curl_easy_cleanup(e);
        xf->easy = NULL;
        finish(t, xf, CURLE_FAILED_INIT);
    }
}

/* ---- the dead-connection probe ---- */

/* Probe each HTTP/2 connection silent for read_idle; the time until the next one is due (ms,
 * -1 = none). */
static long health_check(lop_transport_t *t)
{
    if (t->read_idle_ns <= 0) return -1;
    int64_t now = lop_tr_now_ns(), next = -1;
    for (int i = 0; i < t->nsocks; i++) {
        lop_tr_sock_t *s = &t->socks[i];
        if (s->probe_elsewhere) { /* no probe could ride it: a read must come by the ping timeout */
            int64_t by = s->probe_sent + t->ping_timeout_ns;
            if (s->last_read > s->probe_sent || by <= now) {
                if (s->last_read <= s->probe_sent) declare_dead(t, s);
                s->probe_elsewhere = false;
                s->probe_sent = 0;
                s->last_read = now;
            } else {
                if (next < 0 || by < next) next = by;
                continue;
            }
        }
        if (!s->h2 || s->probe_sent) continue;
        int64_t due = s->last_read + t->read_idle_ns;
        if (due <= now) {
            lop_tr_xfer_t *xf = lop_xcalloc(1, sizeof *xf);
            xf->t = t;
            xf->probe = true;
            xf->probe_fd = s->fd;
            lop_buf_t u = LOP_BUF_INIT;
            lop_buf_printf(&u, "%s%s/version", t->base_url, t->prefix);
            xf->url = lop_buf_steal(&u);
            if (t->connect_to) {
                lop_buf_printf(&u, "Host: %s", t->host_hdr);
                xf->headers = curl_slist_append(NULL, u.data);
                lop_buf_free(&u);
            }
            s->probe_sent = now;
            atomic_fetch_add(&t->probes_sent, 1);
            xf->next_op = t->probes; /* probes never sit in the operations list */
            t->probes = xf;
            start(t, xf); /* may change t->socks */
            return 0;
        }
        if (next < 0 || due < next) next = due;
    }
    return next < 0 ? -1 : (long)((next - now) / 1000000 + 1);
}

/* ---- the loop ---- */

/* Take the operations list into an array (an exchange queued again while its operation runs is
 * relinked, which must not disturb this walk) and run each operation. An exchange stays "busy"
 * until its operation is over: its caller frees it only when it is neither listed nor busy. */
static void run_ops(lop_transport_t *t)
{
    pthread_mutex_lock(&t->mu);
    int n = 0;
    for (lop_tr_xfer_t *xf = t->ops; xf; xf = xf->next_op) {
        if (n == t->capbatch) {
            t->capbatch = t->capbatch ? t->capbatch * 2 : 16;
            t->batch = lop_xrealloc(t->batch, (size_t)t->capbatch * sizeof *t->batch);
        }
        t->batch[n++] = xf;
        xf->in_ops = false;
        xf->busy = true;
    }
    t->ops = NULL;
    pthread_mutex_unlock(&t->mu);
    for (int i = 0; i < n; i++) {
        lop_tr_xfer_t *xf = t->batch[i];
        pthread_mutex_lock(&t->mu);
        bool add = xf->op_add, resume = xf->op_resume, cancel = xf->op_cancel;
        xf->op_add = xf->op_resume = xf->op_cancel = false;
        if (resume) xf->paused = false;
        pthread_mutex_unlock(&t->mu);
        if (add) start(t, xf);
        if (cancel && xf->easy) {
            finish(t, xf, CURLE_ABORTED_BY_CALLBACK);
        } else if (resume && xf->easy) {
            curl_easy_pause(xf->easy, CURLPAUSE_CONT); /* may pass held bytes to on_write */
        }
        lop_tr_flush(t);
        pthread_mutex_lock(&t->mu);
        xf->busy = false;
        lop_tr_signal(xf);
        pthread_mutex_unlock(&t->mu);
    }
}

static void read_done(lop_transport_t *t)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(t->multi, &left))) {
        if (m->msg != CURLMSG_DONE) continue;
        lop_tr_xfer_t *xf = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&xf);
        CURLcode res = m->data.result;
        if (xf) finish(t, xf, res);
    }
}

static void *io_main(void *arg)
{
    lop_transport_t *t = arg;
    struct pollfd *pfd = NULL;
    int cap = 0;
    int64_t timer_at = -1; /* when libcurl wants CURL_SOCKET_TIMEOUT; -1 = never */
    for (;;) {
        run_ops(t);
        pthread_mutex_lock(&t->mu);
        bool stop = t->stopping;
        pthread_mutex_unlock(&t->mu);
        if (stop) break;
        if (t->timer_ms >= 0) {
            timer_at = lop_tr_now_ns() + (int64_t)t->timer_ms * 1000000;
            t->timer_ms = -2; /* consumed */
        } else if (t->timer_ms == -1) {
            timer_at = -1;
            t->timer_ms = -2;
        }
        long wait = -1;
        if (timer_at >= 0) {
            int64_t d = timer_at - lop_tr_now_ns();
            wait = d <= 0 ? 0 : (long)(d / 1000000 + 1);
        }
        long hc = health_check(t);
        if (hc >= 0 && (wait < 0 || hc < wait)) wait = hc;
        if (cap < t->nsocks + 1) {
            cap = t->nsocks + 8;
            pfd = lop_xrealloc(pfd, (size_t)cap * sizeof *pfd);
        }
        int n = 0;
        pfd[n++] = (struct pollfd){.fd = t->wake_fd, .events = POLLIN};
        for (int i = 0; i < t->nsocks; i++) {
            short ev = 0;
            if (t->socks[i].what & CURL_POLL_IN) ev |= POLLIN;
            if (t->socks[i].what & CURL_POLL_OUT) ev |= POLLOUT;
            pfd[n++] = (struct pollfd){.fd = t->socks[i].fd, .events = ev};
        }
        int r = poll(pfd, (nfds_t)n, wait > 60000 ? 60000 : (int)wait);
        if (r < 0 && errno != EINTR) {
            lop_log(LOP_LOG_ERROR, "transport I/O thread: poll failed", "error", strerror(errno), NULL);
            continue;
        }
        if (r > 0 && (pfd[0].revents & POLLIN)) {
            uint64_t v;
            while (read(t->wake_fd, &v, sizeof v) < 0 && errno == EINTR) {}
        }
        for (int i = 1; r > 0 && i < n; i++) {
            if (!pfd[i].revents) continue;
            int mask = 0;
            if (pfd[i].revents & (POLLIN | POLLHUP)) mask |= CURL_CSELECT_IN;
            if (pfd[i].revents & POLLOUT) mask |= CURL_CSELECT_OUT;
            if (pfd[i].revents & (POLLERR | POLLNVAL)) mask |= CURL_CSELECT_ERR;
            if (pfd[i].revents & (POLLIN | POLLHUP)) {
                lop_tr_sock_t *s = sock_find(t, pfd[i].fd);
                if (s) s->last_read = lop_tr_now_ns();
            }
            curl_multi_socket_action(t->multi, pfd[i].fd, mask, &t->running);
            lop_tr_flush(t);
        }
        if (timer_at >= 0 && lop_tr_now_ns() >= timer_at) {
            timer_at = -1;
            curl_multi_socket_action(t->multi, CURL_SOCKET_TIMEOUT, 0, &t->running);
            lop_tr_flush(t);
        }
        read_done(t);
    }
    free(pfd);
    return NULL;
}

lop_rc_t lop_tr_io_start(lop_transport_t *t, lop_err_t *err)
{
    t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (t->wake_fd < 0) return lop_err_set(err, LOP_ERR, 0, NULL, "transport: eventfd: %s", strerror(errno));
    t->multi = curl_multi_init();
    t->share = curl_share_init();
    if (!t->multi || !t->share) return lop_err_set(err, LOP_ERR, 0, NULL, "transport: libcurl could not initialise");
    /* one thread uses them all: no lock callbacks needed */
    curl_share_setopt(t->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(t->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_multi_setopt(t->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(t->multi, CURLMOPT_SOCKETDATA, t);
    curl_multi_setopt(t->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(t->multi, CURLMOPT_TIMERDATA, t);
    curl_multi_setopt(t->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    /* libcurl's own cap on streams per h2 connection is 100 (the effective limit is the lower of it
     * and the server's SETTINGS_MAX_CONCURRENT_STREAMS): with it the 101st watch opened a second
     * connection even where the server allows more. Go's http2 transport (client-go's) follows
     * the server's value, 1000 when the server names none (golang.org/x/net/http2/transport.go,
     * defaultMaxConcurrentStreams); this follows the server's value up to 1000. */
    curl_multi_setopt(t->multi, CURLMOPT_MAX_CONCURRENT_STREAMS, (long)LOP_TR_H2_MAX_STREAMS);
    t->timer_ms = -2;
    int e = pthread_create(&t->io, NULL, io_main, t);
    if (e) return lop_err_set(err, LOP_ERR, 0, NULL, "transport: cannot start the I/O thread: %s", strerror(e));
    t->io_started = true;
    return LOP_OK;
}

void lop_tr_io_stop(lop_transport_t *t)
{
    if (t->io_started) {
        pthread_mutex_lock(&t->mu);
        t->stopping = true;
        wake(t);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->io, NULL);
        t->io_started = false;
    }
    while (t->probes) finish(t, t->probes, CURLE_ABORTED_BY_CALLBACK); /* probes still in flight */
    if (t->multi) {
        curl_multi_cleanup(t->multi);
        t->multi = NULL;
    }
    if (t->share) curl_share_cleanup(t->share);
    t->share = NULL;
    if (t->wake_fd > 0) close(t->wake_fd);
    t->wake_fd = -1;
    free(t->socks);
    t->socks = NULL;
    free(t->batch);
    t->batch = NULL;
}
