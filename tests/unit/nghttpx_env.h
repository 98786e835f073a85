/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nghttpx_env.h — Debian's nghttpx (nghttp2-proxy) in front of a local HTTP/1.1 server, for the
 * HTTP/2 tests without a real cluster (test_transport_h2.c, test_informer_h2.c): nghttpx
 * terminates TLS with a self-signed certificate for 127.0.0.1 and speaks h2 (ALPN) to the client,
 * HTTP/1.1 to the backend. Header-only (static inline), loopback only.
 *
 * Process: nghttpx runs in a process group of its own (its master forks the worker that serves),
 * with one worker, so that t_nghttpx_pause stops every process that could answer and
 * t_nghttpx_reload (SIGHUP to the master) replaces the worker: the old worker sends GOAWAY on its
 * connections and serves the streams it has until they end. Readiness is a connect that succeeds
 * (a bad flag makes it exit at once, which waitpid reports); nothing waits for time.
 */
#ifndef TEST_NGHTTPX_ENV_H
#define TEST_NGHTTPX_ENV_H

#include "host/util/buf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct t_nghttpx {
    char dir[256]; /* scratch directory (key.pem, cert.pem, nghttpx.log), removed by stop */
    pid_t pid;     /* the master, leader of its process group; 0 when not running */
    int port;      /* the TLS front end on 127.0.0.1 */
    char *ca_pem;  /* the self-signed certificate (PEM, malloc'd): the CA clients trust */
    char url[64];  /* "https://127.0.0.1:<port>" */
} t_nghttpx_t;

/* A loopback port free now (bound and released), or -1. */
static inline int t_nghttpx_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &l) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* Whether something accepts connections on the loopback port now. */
static inline bool t_nghttpx_accepting(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

/*
 * Make the scratch directory and the certificate, start nghttpx in front of 127.0.0.1:backend_port
 * and wait until it accepts. max_streams: its SETTINGS_MAX_CONCURRENT_STREAMS ("200"), NULL =
 * nghttpx's default (100). Read and idle timeouts are off (1 h, 0), so only the tests end
 * streams. False after printing the cause; t_nghttpx_stop cleans up either way.
 */
static inline bool t_nghttpx_start(t_nghttpx_t *p, int backend_port, const char *max_streams)
{
    memset(p, 0, sizeof *p);
    snprintf(p->dir, sizeof p->dir, "/tmp/luaop-h2-XXXXXX");
    if (!mkdtemp(p->dir)) {
        p->dir[0] = '\0';
        perror("mkdtemp");
        return false;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 1 "
             "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
             p->dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "openssl could not make a certificate in %s\n", p->dir);
        return false;
    }
    snprintf(cmd, sizeof cmd, "%s/cert.pem", p->dir);
    p->ca_pem = lop_file_read(cmd, NULL);
    p->port = t_nghttpx_free_port();
    if (!p->ca_pem || p->port < 0) return false;
    snprintf(p->url, sizeof p->url, "https://127.0.0.1:%d", p->port);
    char front[64], back[64], key[300], cert[300], errlog[300], streams[96];
    snprintf(front, sizeof front, "--frontend=127.0.0.1,%d", p->port);
    snprintf(back, sizeof back, "--backend=127.0.0.1,%d", backend_port);
    snprintf(key, sizeof key, "%s/key.pem", p->dir);
    snprintf(cert, sizeof cert, "%s/cert.pem", p->dir);
    snprintf(errlog, sizeof errlog, "--errorlog-file=%s/nghttpx.log", p->dir);
    snprintf(streams, sizeof streams, "--frontend-http2-max-concurrent-streams=%s", max_streams ? max_streams : "100");
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0); /* its own group: nghttpx serves from a worker process it forks */
        execlp("nghttpx", "nghttpx", "--conf=/dev/null", front, back, "--workers=1", "--log-level=WARN", errlog,
               "--accesslog-file=/dev/null", "--no-ocsp", "--backend-read-timeout=1h", "--frontend-read-timeout=1h",
               "--stream-read-timeout=0", "--backend-connections-per-host=64", streams, key, cert, (char *)NULL);
        _exit(127);
    }
    if (pid < 0) {
        perror("fork");
        return false;
    }
    p->pid = pid;
    setpgid(pid, pid); /* also from here, so that a signal to the group cannot come before the child's */
    /* ready when it accepts (it exits at once on a bad flag: then waitpid says so) */
    for (int i = 0; i < 1000; i++) {
        if (t_nghttpx_accepting(p->port)) return true;
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            fprintf(stderr, "nghttpx exited (status %d); see %s/nghttpx.log\n", st, p->dir);
            p->pid = 0;
            return false;
        }
        poll(NULL, 0, 10); /* waiting for a process to start listening, not for time */
    }
    fprintf(stderr, "nghttpx did not listen on %d within 10 s; see %s/nghttpx.log\n", p->port, p->dir);
    return false;
}

/* Stop answering: SIGSTOP to the whole group (master and worker); connections stay open. */
static inline void t_nghttpx_pause(t_nghttpx_t *p)
{
    if (p->pid > 0) kill(-p->pid, SIGSTOP);
}

/* Answer again: SIGCONT to the group. */
static inline void t_nghttpx_resume(t_nghttpx_t *p)
{
    if (p->pid > 0) kill(-p->pid, SIGCONT);
}

/* Reload (SIGHUP to the master): a new worker takes new connections; the old one sends GOAWAY on
 * its connections and serves their streams until they end. */
static inline void t_nghttpx_reload(t_nghttpx_t *p)
{
    if (p->pid > 0) kill(p->pid, SIGHUP);
}

/* Stop nghttpx (continued first if paused), free the CA, remove the scratch directory. */
static inline void t_nghttpx_stop(t_nghttpx_t *p)
{
    if (p->pid > 0) {
        kill(-p->pid, SIGCONT);
        kill(p->pid, SIGTERM);
        waitpid(p->pid, NULL, 0);
        kill(-p->pid, SIGKILL); /* an old worker still draining after a reload, if any */
        p->pid = 0;
    }
    free(p->ca_pem);
    p->ca_pem = NULL;
    if (p->dir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", p->dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", p->dir);
        p->dir[0] = '\0';
    }
}

#endif
