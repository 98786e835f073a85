/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rest_fakesrv.h — a tiny scripted HTTP/1.1 server on 127.0.0.1:0 for the REST client's
 * unit tests (header-only, static). One thread accepts; one thread per connection reads requests
 * (headers + Content-Length body) and asks the test's handler what to do:
 *   - reply with raw bytes, written in the given pieces (so tests control chunking),
 *   - close the connection without replying (a connection reset for the client),
 *   - stall: send the pieces, then hold the connection open until the server stops.
 * Every request is recorded (request line + headers) for assertions.
 */
#ifndef TEST_REST_FAKESRV_H
#define TEST_REST_FAKESRV_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FS_MAX_PIECES 16
#define FS_MAX_REQS   256

typedef struct fs_reply {
    enum { FS_REPLY, FS_CLOSE, FS_STALL } action;
    const char *pieces[FS_MAX_PIECES]; /* NULL-terminated; static strings */
    char *owned;                       /* one malloc'd piece (freed by the server), used first */
    size_t owned_len;                  /* its length; 0 = strlen(owned) */
} fs_reply_t;

typedef struct fs_server fs_server_t;
/* n = 0-based index of this request over the server's life. */
typedef void (*fs_handler)(fs_server_t *s, int n, const char *method, const char *path, const char *headers,
                           const char *body, fs_reply_t *out);

struct fs_server {
    int lfd;
    int port;
    pthread_t thr;
    atomic_bool stop;
    fs_handler handler;
    void *ud;
    pthread_mutex_t mu;
    char *reqs[FS_MAX_REQS]; /* "METHOD PATH\nheaders..." */
    int nreqs;
    int conns;
    pthread_t conn_thr[FS_MAX_REQS];
};

typedef struct fs_conn {
    fs_server_t *s;
    int fd;
} fs_conn_t;

static void fs_write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

static void *fs_conn_main(void *arg)
{
    fs_conn_t *cn = arg;
    fs_server_t *s = cn->s;
    int one = 1;
    setsockopt(cn->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char *buf = malloc(1 << 20);
    size_t len = 0;
    for (;;) {
        char *end = NULL;
        while (!(end = memmem(buf, len, "\r\n\r\n", 4))) {
            struct pollfd pf = {cn->fd, POLLIN, 0};
            if (poll(&pf, 1, 50) == 0) {
                if (atomic_load(&s->stop)) goto done;
                continue;
            }
            ssize_t r = recv(cn->fd, buf + len, (1 << 20) - 1 - len, 0);
            if (r <= 0) goto done;
            len += (size_t)r;
        }
        size_t hlen = (size_t)(end - buf) + 4;
        buf[hlen - 2] = '\0';
        size_t clen = 0;
        const char *cl = strcasestr(buf, "\r\ncontent-length:");
        if (cl) clen = strtoul(cl + 17, NULL, 10);
        while (len < hlen + clen) {
            ssize_t r = recv(cn->fd, buf + len, (1 << 20) - 1 - len, 0);
            if (r <= 0) goto done;
            len += (size_t)r;
        }
        char method[16] = "", path[2048] = "";
        sscanf(buf, "%15s %2047s", method, path);
        const char *headers = strstr(buf, "\r\n");
        char *body = strndup(buf + hlen, clen);
        int n;
        pthread_mutex_lock(&s->mu);
        n = s->nreqs;
        if (s->nreqs < FS_MAX_REQS) {
            size_t need = strlen(buf) + 2;
            s->reqs[s->nreqs] = malloc(need);
            snprintf(s->reqs[s->nreqs], need, "%s", buf);
            s->nreqs++;
        }
        pthread_mutex_unlock(&s->mu);
        fs_reply_t rep;
        memset(&rep, 0, sizeof rep);
        s->handler(s, n, method, path, headers ? headers : "", body, &rep);
        free(body);
        memmove(buf, buf + hlen + clen, len - hlen - clen);
        len -= hlen + clen;
        if (rep.action == FS_CLOSE) {
            free(rep.owned);
            goto done;
        }
        if (rep.owned) fs_write_all(cn->fd, rep.owned, rep.owned_len ? rep.owned_len : strlen(rep.owned));
        free(rep.owned);
        for (int i = 0; i < FS_MAX_PIECES && rep.pieces[i]; i++) {
            fs_write_all(cn->fd, rep.pieces[i], strlen(rep.pieces[i]));
            usleep(2000); /* let the client see separate reads; correctness never depends on it */
        }
        if (rep.action == FS_STALL) {
            while (!atomic_load(&s->stop)) {
                struct pollfd pf = {cn->fd, POLLIN, 0};
                if (poll(&pf, 1, 20) > 0) {
                    char tmp[256];
                    if (recv(cn->fd, tmp, sizeof tmp, 0) <= 0) break; /* client went away */
                }
            }
            goto done;
        }
    }
done:
    free(buf);
    close(cn->fd);
    free(cn);
    return NULL;
}

static void *fs_accept_main(void *arg)
{
    fs_server_t *s = arg;
    while (!atomic_load(&s->stop)) {
        struct pollfd pf = {s->lfd, POLLIN, 0};
        if (poll(&pf, 1, 20) <= 0) continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0) continue;
        fs_conn_t *cn = malloc(sizeof *cn);
        cn->s = s;
        cn->fd = fd;
        pthread_mutex_lock(&s->mu);
        if (s->conns >= FS_MAX_REQS) {
            pthread_mutex_unlock(&s->mu);
            close(fd);
            free(cn);
            continue;
        }
        pthread_create(&s->conn_thr[s->conns++], NULL, fs_conn_main, cn);
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

static fs_server_t *fs_start(fs_handler h, void *ud)
{
    fs_server_t *s = calloc(1, sizeof *s);
    s->handler = h;
    s->ud = ud;
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(s->lfd, (struct sockaddr *)&a, sizeof a);
    listen(s->lfd, 64);
    socklen_t al = sizeof a;
    getsockname(s->lfd, (struct sockaddr *)&a, &al);
    s->port = ntohs(a.sin_port);
    pthread_create(&s->thr, NULL, fs_accept_main, s);
    return s;
}

/* Stop accepting, end every connection thread (they poll the stop flag) and free the server. */
static void fs_stop(fs_server_t *s)
{
    atomic_store(&s->stop, true);
    pthread_join(s->thr, NULL);
    close(s->lfd);
    for (int i = 0; i < s->conns; i++) pthread_join(s->conn_thr[i], NULL);
    for (int i = 0; i < s->nreqs; i++) free(s->reqs[i]);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static int fs_nreqs(fs_server_t *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->nreqs;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Copy of request i's text (request line + headers), or "" when absent. Caller frees. */
static char *fs_req(fs_server_t *s, int i)
{
    pthread_mutex_lock(&s->mu);
    char *r = strdup(i < s->nreqs ? s->reqs[i] : "");
    pthread_mutex_unlock(&s->mu);
    return r;
}

/* A complete response with Content-Length (malloc'd, for fs_reply_t.owned). */
static char *fs_resp(int code, const char *reason, const char *extra_headers, const char *ctype, const char *body)
{
    size_t n = strlen(body) + strlen(extra_headers) + 256;
    char *r = malloc(n);
    snprintf(r, n, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n%s", code, reason, ctype,
             strlen(body), extra_headers, body);
    return r;
}

#endif
