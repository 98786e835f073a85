/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Name resolution is bounded (host/kube/client/transport.h): libcurl's threaded resolver runs
 * getaddrinfo on a thread of its own, so the connect timeout and a cancellation end an exchange
 * whose resolution never returns. This test interposes getaddrinfo (the executable's definition
 * wins over libc's for libcurl's calls): "stall.invalid" blocks until the test ends, every other
 * name goes to libc.
 *
 * The results prove the bound: with a resolver that never answers, ETIMEDOUT can only come from
 * the 300 ms connect timeout and EABORTED only from on_tick; an unbounded resolution would hang
 * the test (CTest's timeout), not pass it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "host/kube/client/transport.h"
#include "t.h"

#include <dlfcn.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

static pthread_mutex_t stall_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stall_cond = PTHREAD_COND_INITIALIZER;
static bool released;
static int stalled; /* resolutions blocked so far */

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res)
{
    if (node && strcmp(node, "stall.invalid") == 0) {
        pthread_mutex_lock(&stall_mu);
        stalled++;
        while (!released) pthread_cond_wait(&stall_cond, &stall_mu);
        pthread_mutex_unlock(&stall_mu);
        return EAI_AGAIN;
    }
    int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **) =
        (int (*)(const char *, const char *, const struct addrinfo *, struct addrinfo **))dlsym(RTLD_NEXT,
                                                                                                "getaddrinfo");
    return real(node, service, hints, res);
}

static lop_transport_t *stalling_transport(void)
{
    lop_transport_config_t cfg = {.server = "http://stall.invalid:8080", .proxy = ""};
    lop_transport_t *t = NULL;
    lop_err_t err;
    if (lop_transport_new(&cfg, &t, &err) != LOP_OK) fprintf(stderr, "transport: %s\n", err.message);
    return t;
}

/* The connect timeout covers resolution: ETIMEDOUT, naming the server, nothing received. */
static void test_connect_timeout_covers_resolution(void)
{
    lop_transport_t *t = stalling_transport();
    T_CHECK(t != NULL);
    if (!t) return;
    lop_http_exchange_t x = {.method = "GET", .target = "/version", .connect_timeout_ms = 300};
    T_EQ_INT(lop_transport_exchange(t, &x), LOP_HTTP_ETIMEDOUT);
    T_CHECK(strstr(x.error, "stall.invalid:8080") != NULL);
    T_CHECK(!x.response_started);
    pthread_mutex_lock(&stall_mu);
    T_CHECK(stalled >= 1); /* it really was stuck in getaddrinfo */
    pthread_mutex_unlock(&stall_mu);
    lop_transport_free(t);
}

static int abort_at_once(void *ud)
{
    (void)ud;
    return 1;
}

/* A cancellation (on_tick) ends an exchange stuck in resolution. */
static void test_cancel_during_resolution(void)
{
    lop_transport_t *t = stalling_transport();
    T_CHECK(t != NULL);
    if (!t) return;
    lop_http_exchange_t x = {.method = "GET", .target = "/version", .on_tick = abort_at_once};
    T_EQ_INT(lop_transport_exchange(t, &x), LOP_HTTP_EABORTED);
    lop_transport_free(t);
}

int main(void)
{
    T_RUN(test_connect_timeout_covers_resolution);
    T_RUN(test_cancel_during_resolution);
    pthread_mutex_lock(&stall_mu);
    released = true;
    pthread_cond_broadcast(&stall_cond);
    pthread_mutex_unlock(&stall_mu);
    return T_DONE();
}
