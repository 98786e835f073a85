/* SPDX-License-Identifier: Apache-2.0 */
/* transport_dns.c — bounded name resolution for the transport (see transport_impl.h).
 *
 * Why not libcurl's threaded resolver alone: when a resolution times out, libcurl 7.88 joins the
 * resolver thread inside curl_multi_socket_action, so one getaddrinfo that never returns would
 * freeze the I/O thread and every transfer on it. Instead the requesting thread resolves the name
 * on a detached helper thread and waits for it under the exchange's connect timeout and on_tick;
 * a helper that stalls is abandoned (it frees its job when getaddrinfo returns). The answer is
 * handed to libcurl as a CURLOPT_RESOLVE entry, so libcurl never calls getaddrinfo itself, and
 * kept for lop_tr_dns_ttl_ns. An older answer is refreshed in the background (one helper at a
 * time) while the exchanges go on with it at once, so a resolver that stalls costs them nothing
 * once a name has been answered; a failed refresh keeps the last good answer for another TTL. */
#include "host/kube/client/transport_impl.h"
#include "host/util/clock.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

_Atomic int64_t lop_tr_dns_ttl_ns = 30LL * 1000000000LL;

typedef struct lop_tr_dns_job {
    atomic_int refs; /* the helper and the waiter */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool done;
    char *host, *port;
    int rc;      /* getaddrinfo's */
    char *addrs; /* "a,b" (IPv6 in brackets), or NULL */
} dns_job_t;

static void job_unref(dns_job_t *j)
{
    if (atomic_fetch_sub(&j->refs, 1) != 1) return;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cond);
    free(j->host);
    free(j->port);
    free(j->addrs);
    free(j);
}

static void *dns_main(void *arg)
{
    dns_job_t *j = arg;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(j->host, j->port, &hints, &res);
    lop_buf_t b = LOP_BUF_INIT;
    for (struct addrinfo *a = rc == 0 ? res : NULL; a; a = a->ai_next) {
        char ip[INET6_ADDRSTRLEN];
        const void *src = a->ai_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr
                                                   : (const void *)&((struct sockaddr_in *)a->ai_addr)->sin_addr;
        if (!inet_ntop(a->ai_family, src, ip, sizeof ip)) continue;
        if (b.len) lop_buf_putc(&b, ',');
        lop_buf_printf(&b, a->ai_family == AF_INET6 ? "[%s]" : "%s", ip);
    }
    if (res) freeaddrinfo(res);
    pthread_mutex_lock(&j->mu);
    j->rc = rc;
    j->addrs = b.len ? lop_buf_steal(&b) : NULL;
    j->done = true;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->mu);
    lop_buf_free(&b);
    job_unref(j);
    return NULL;
}

/* A job resolving host:port on a detached helper; refs: the helper's and `holders` more. */
static dns_job_t *job_start(const char *host, const char *port, int holders)
{
    dns_job_t *j = lop_xcalloc(1, sizeof *j);
    atomic_init(&j->refs, holders + 1);
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cond, &ca);
    pthread_condattr_destroy(&ca);
    j->host = lop_xstrdup(host);
    j->port = lop_xstrdup(port);
    pthread_t thr;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thr, &attr, dns_main, j) != 0) {
        atomic_store(&j->refs, holders);
        j->done = true;
        j->rc = EAI_SYSTEM;
    }
    pthread_attr_destroy(&attr);
    return j;
}

/* Take the background refresh's answer once it has come (t->mu held). */
static void harvest(lop_transport_t *t, int64_t now)
{
    dns_job_t *j = t->dns_refresh;
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    bool done = j->done;
    char *addrs = done ? j->addrs : NULL;
    if (done) j->addrs = NULL;
    pthread_mutex_unlock(&j->mu);
    if (!done) return;
    if (addrs) {
        free(t->dns_addrs);
        t->dns_addrs = addrs;
    }
    t->dns_expires = now + atomic_load(&lop_tr_dns_ttl_ns); /* failed: the last answer again until then */
    t->dns_refresh = NULL;
    job_unref(j);
}

void lop_tr_dns_free(lop_transport_t *t)
{
    if (t->dns_refresh) job_unref(t->dns_refresh); /* a helper still running frees it when it returns */
    t->dns_refresh = NULL;
}

static bool is_ip_literal(const char *host)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* Wait until the helper answers, deadline (monotonic ns) passes (ETIMEDOUT) or on_tick asks to
 * stop (EABORTED): on_tick runs every tick_ms (0 = LOP_TR_TICK_MS, < 0 = never timed) and after
 * each lop_transport_wake, for which the wait is registered on t. */
static lop_http_result_t wait_for_answer(lop_transport_t *t, dns_job_t *j, lop_http_exchange_t *x, int64_t deadline)
{
    unsigned woken = 1; /* on_tick once before the first wait: a wake may have come before we registered */
    lop_tr_dns_wait_t w = {&j->mu, &j->cond, &woken, NULL};
    pthread_mutex_lock(&t->mu);
    w.next = t->dns_waiting;
    t->dns_waiting = &w;
    pthread_mutex_unlock(&t->mu);
    lop_http_result_t res = LOP_HTTP_OK;
    pthread_mutex_lock(&j->mu);
    while (!j->done) {
        int64_t left = deadline - lop_tr_now_ns();
        if (left <= 0) {
            res = LOP_HTTP_ETIMEDOUT;
            break;
        }
        int64_t tick = x->tick_ms > 0   ? x->tick_ms * LOP_NS_PER_MS
                       : x->tick_ms < 0 ? left
                                        : LOP_TR_TICK_MS * LOP_NS_PER_MS;
        int64_t step = left < tick ? left : tick;
        if (!woken) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_nsec += step % 1000000000;
            ts.tv_sec += step / 1000000000 + ts.tv_nsec / 1000000000;
            ts.tv_nsec %= 1000000000;
            pthread_cond_timedwait(&j->cond, &j->mu, &ts);
        }
        woken = 0;
        if (!j->done && x->on_tick) {
            pthread_mutex_unlock(&j->mu);
            bool stop = x->on_tick(x->ud) != 0;
            pthread_mutex_lock(&j->mu);
            if (stop && !j->done) {
                res = LOP_HTTP_EABORTED;
                break;
            }
        }
    }
    pthread_mutex_unlock(&j->mu);
    pthread_mutex_lock(&t->mu);
    for (lop_tr_dns_wait_t **p = &t->dns_waiting; *p; p = &(*p)->next)
        if (*p == &w) {
            *p = w.next;
            break;
        }
    pthread_mutex_unlock(&t->mu);
    return res;
}

lop_http_result_t lop_tr_resolve(lop_transport_t *t, const char *host, const char *port, lop_http_exchange_t *x,
                                 struct curl_slist **resolve)
{
    *resolve = NULL;
    if (is_ip_literal(host)) return LOP_HTTP_OK;
    int64_t now = lop_tr_now_ns();
    lop_buf_t entry = LOP_BUF_INIT;
    pthread_mutex_lock(&t->mu);
    harvest(t, now);
    bool have = t->dns_addrs != NULL;
    bool refresh = have && now >= t->dns_expires && !t->dns_refresh; /* stale: refresh it behind us */
    if (have) lop_buf_printf(&entry, "%s:%s:%s", host, port, t->dns_addrs);
    pthread_mutex_unlock(&t->mu);
    if (refresh) {
        dns_job_t *j = job_start(host, port, 1); /* the transport's reference */
        pthread_mutex_lock(&t->mu);
        if (!t->dns_refresh) {
            t->dns_refresh = j;
            j = NULL;
        }
        pthread_mutex_unlock(&t->mu);
        if (j) job_unref(j); /* another exchange started one first */
    }
    if (!have) {
        dns_job_t *j = job_start(host, port, 1); /* the waiter's reference */
        long limit_ms = x->connect_timeout_ms > 0 ? x->connect_timeout_ms : LOP_TR_CONNECT_TIMEOUT_MS;
        if (x->timeout_ms > 0 && x->timeout_ms < limit_ms) limit_ms = x->timeout_ms;
        int64_t deadline = now + (int64_t)limit_ms * 1000000;
        lop_http_result_t res = wait_for_answer(t, j, x, deadline);
        pthread_mutex_lock(&j->mu);
        bool done = j->done;
        int rc = j->rc;
        char *addrs = j->addrs ? lop_xstrdup(j->addrs) : NULL;
        pthread_mutex_unlock(&j->mu);
        job_unref(j);
        if (done && addrs) {
            lop_buf_reset(&entry);
            lop_buf_printf(&entry, "%s:%s:%s", host, port, addrs);
            pthread_mutex_lock(&t->mu);
            free(t->dns_addrs);
            t->dns_addrs = addrs;
            t->dns_expires = lop_tr_now_ns() + atomic_load(&lop_tr_dns_ttl_ns);
            pthread_mutex_unlock(&t->mu);
        } else {
            free(addrs);
        }
        if (!entry.len) { /* no answer now and none before */
            if (res == LOP_HTTP_ETIMEDOUT)
                snprintf(x->error, sizeof x->error, "%s: resolving %s timed out after %ld ms", t->host_port, host,
                         limit_ms);
            else if (res == LOP_HTTP_EABORTED)
                snprintf(x->error, sizeof x->error, "%s: aborted by the caller while resolving %s", t->host_port, host);
            else {
                snprintf(x->error, sizeof x->error, "%s: cannot resolve %s: %s", t->host_port, host,
                         rc ? gai_strerror(rc) : "no address");
                res = LOP_HTTP_ECONNECT;
            }
            lop_buf_free(&entry);
            return res;
        }
        if (res == LOP_HTTP_EABORTED) {
            lop_buf_free(&entry);
            return res;
        }
    }
    *resolve = curl_slist_append(NULL, entry.data);
    lop_buf_free(&entry);
    return LOP_HTTP_OK;
}
