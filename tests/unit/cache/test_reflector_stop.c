/* SPDX-License-Identifier: Apache-2.0 */
/* Stopping a reflector over the REST listwatch wakes the shared client's exchanges once, not
 * every 20 ms while it waits (issue 19's review): lop_reflector_stop cancels the listwatch once
 * (the cancel is sticky, listwatch.h) and then waits for the loop's own signal. Counted on a
 * bystander: an idle watch of another namespace on the same client, whose notify callback runs
 * once per lop_transport_wake (transport.h). The reflector's handler is held inside its turn
 * (or its thread) so that the stop has to wait; while it waits the bystander must not be woken
 * again. Both ways a reflector runs: on the cache dispatcher, and on a thread of its own
 * (LUAOP_REFLECTOR_OWN_THREAD=1). The local API server runs in-process on a free loopback port.
 *
 * Waits are on condition variables signalled by the callbacks, with a 60 s real-time cap so a bug
 * fails the test instead of hanging it. One wait is for something that must not happen (a second
 * wake while the stop is held): it watches for it for HOLD_MS of real time; the old stop re-woke
 * every 20 ms, so it fails there, and nothing in the fixed code can make it fail (there is no
 * second wake to come, however the threads are scheduled). */
#include "apiserver/apiserver.h"
#include "apiserver_client.h"
#include "host/kube/cache/reflector.h"
#include "host/kube/cache/rest_listwatch.h"
#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"
#include "t.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HOLD_MS 200

static lop_apiserver_t *srv;
static lop_rest_client_t *cli;
static const lop_rest_mapping_t cm_mapping = {"", "v1", "configmaps", "ConfigMap", true};

/* Everything the callbacks (I/O thread, dispatcher or reflector thread) and the test share. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static long by_notifies; /* the bystander's notify calls */
static bool synced, held, release, stopped;

static void by_notify(void *ud)
{
    (void)ud;
    pthread_mutex_lock(&mu);
    by_notifies++;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
}

static void h_synced(void *ud)
{
    (void)ud;
    pthread_mutex_lock(&mu);
    synced = true;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
}

/* The ADDED event of "held": the handler stays inside the reflector's turn until released. */
static void h_add(void *ud, lop_obj_t *o)
{
    (void)ud;
    if (strcmp(o->name, "held") != 0) return;
    pthread_mutex_lock(&mu);
    held = true;
    pthread_cond_broadcast(&cond);
    while (!release) pthread_cond_wait(&cond, &mu);
    pthread_mutex_unlock(&mu);
}

/* Wait (mu held) until *flag, or until the by_notifies reach want when flag is NULL; false
 * after cap_ms of real time. */
static bool wait_locked(const bool *flag, long want, long cap_ms)
{
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += cap_ms / 1000;
    dl.tv_nsec += (cap_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    while (flag ? !*flag : by_notifies < want)
        if (pthread_cond_timedwait(&cond, &mu, &dl) != 0) return flag ? *flag : by_notifies >= want;
    return true;
}

static bool wait_flag(const bool *flag)
{
    pthread_mutex_lock(&mu);
    bool ok = wait_locked(flag, 0, 60000);
    pthread_mutex_unlock(&mu);
    return ok;
}

static void *stopper(void *arg)
{
    lop_reflector_stop(arg);
    pthread_mutex_lock(&mu);
    stopped = true;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void create_cm(const char *ns, const char *name)
{
    char path[128], body[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/configmaps", ns);
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"}}", name);
    lop_err_t err;
    lop_rc_t rc = lop_rest_do(cli, "POST", path, NULL, body, strlen(body), NULL, &err);
    if (rc != LOP_OK) fprintf(stderr, "POST %s: %s\n", path, err.message);
    T_EQ_INT(rc, LOP_OK);
}

/* One pump of the bystander on this thread (it never blocks): true while the stream goes on. */
static bool by_pump(lop_rest_stream_call_t *s, lop_rc_t *rc, lop_err_t *err)
{
    int64_t next = 0;
    return !lop_rest_stream_pump(s, NULL, NULL, rc, &next, err);
}

static void run_stop_with_requests_in_flight(bool own_thread)
{
    lop_apiserver_reset(srv);
    const char *ns = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"other\"}}";
    lop_err_t err;
    T_EQ_INT(lop_rest_do(cli, "POST", "/api/v1/namespaces", NULL, ns, strlen(ns), NULL, &err), LOP_OK);
    pthread_mutex_lock(&mu);
    by_notifies = 0;
    synced = held = release = stopped = false;
    pthread_mutex_unlock(&mu);

    /* the bystander: an idle WATCH of namespace "other" on the same client, pumped here */
    atomic_bool by_cancel;
    atomic_init(&by_cancel, false);
    lop_rest_stream_opts_t so = {.cancel = &by_cancel};
    lop_rest_stream_call_t *by = NULL;
    T_EQ_INT(
        lop_rest_stream_start(cli, "/api/v1/namespaces/other/configmaps?watch=true", &so, by_notify, NULL, &by, &err),
        LOP_OK);
    if (!by) return;
    lop_rc_t rc = LOP_OK;
    T_CHECK(by_pump(by, &rc, &err)); /* sends it */
    pthread_mutex_lock(&mu);
    T_CHECK(wait_locked(NULL, 1, 60000)); /* its response head */
    pthread_mutex_unlock(&mu);
    T_CHECK(by_pump(by, &rc, &err)); /* takes the head; the stream is open and quiet */

    /* the reflector under test, on the same client */
    if (own_thread) setenv("LUAOP_REFLECTOR_OWN_THREAD", "1", 1);
    lop_store_t *store = lop_store_new();
    lop_listwatch_t *lw = lop_rest_listwatch_new(cli, &cm_mapping, "default", NULL, NULL);
    lop_reflector_config_t cfg = {.name = "v1/configmaps",
                                  .lw = lw,
                                  .store = store,
                                  .handlers = {.on_add = h_add, .on_synced = h_synced},
                                  .idle_timeout_ms = -1,
                                  .seed = 1};
    lop_reflector_t *r = lop_reflector_new(&cfg, &err);
    free(lw); /* the reflector copied it and owns its ud */
    T_CHECK(r != NULL);
    if (!r) return;
    T_EQ_INT(lop_reflector_start(r, &err), LOP_OK);
    unsetenv("LUAOP_REFLECTOR_OWN_THREAD");
    T_CHECK(wait_flag(&synced));
    create_cm("default", "held");
    T_CHECK(wait_flag(&held)); /* the reflector is inside its handler, its watch in flight */

    pthread_mutex_lock(&mu);
    long base = by_notifies;
    pthread_mutex_unlock(&mu);
    pthread_t th;
    T_EQ_INT(pthread_create(&th, NULL, stopper, r), 0);
    pthread_mutex_lock(&mu);
    T_CHECK(wait_locked(NULL, base + 1, 60000)); /* the stop's one cancel woke the client */
    /* while the stop waits for the held handler, nothing wakes the client again */
    T_CHECK(!wait_locked(NULL, base + 2, HOLD_MS));
    T_EQ_INT(by_notifies, base + 1);
    T_CHECK(!stopped); /* it did wait for the handler */
    release = true;
    pthread_cond_broadcast(&cond);
    T_CHECK(wait_locked(&stopped, 0, 60000)); /* and ends once it is let go */
    T_EQ_INT(by_notifies, base + 1);
    pthread_mutex_unlock(&mu);
    pthread_join(th, NULL);

    /* the bystander was not disturbed: it still gets its events, then its own cancel's error */
    create_cm("other", "after");
    pthread_mutex_lock(&mu);
    T_CHECK(wait_locked(NULL, base + 2, 60000));
    pthread_mutex_unlock(&mu);
    T_CHECK(by_pump(by, &rc, &err));
    atomic_store(&by_cancel, true);
    lop_rest_client_wake(cli);
    bool going = by_pump(by, &rc, &err);
    T_CHECK(!going);
    T_EQ_INT(rc, LOP_ECLOSED);
    lop_rest_stream_free(by);
    lop_reflector_free(r);
    lop_store_free(store);
}

static void test_stop_on_the_dispatcher_wakes_the_client_once(void) { run_stop_with_requests_in_flight(false); }

static void test_stop_of_an_own_thread_reflector_wakes_the_client_once(void) { run_stop_with_requests_in_flight(true); }

int main(void)
{
    lop_cond_init(&cond);
    if (!T_SETUP("start the API server and a client", t_apiserver_client_start(&srv, &cli) == 0)) return T_DONE();
    T_RUN(test_stop_on_the_dispatcher_wakes_the_client_once);
    T_RUN(test_stop_of_an_own_thread_reflector_wakes_the_client_once);
    lop_rest_client_free(cli);
    lop_apiserver_stop(srv);
    return T_DONE();
}
