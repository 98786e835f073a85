/* SPDX-License-Identifier: Apache-2.0 */
/* leader_events.c — the LeaderElection Events on the Lease ("<identity> became leader" / "stopped
 * leading"): the elector's callbacks post to a small bounded queue; this unit's own thread drains
 * it, reads the Lease for its uid and writes through the recorder (see leader_events.h). Upstream:
 * client-go tools/leaderelection/resourcelock/leaselock.go RecordEvent. */
#include "cmd/leader_events.h"

#include "host/util/buf.h"
#include "host/util/log.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QUEUE_LEN          16
#define WHAT_MAX           32
#define REQUEST_TIMEOUT_MS 5000

struct lop_leader_events {
    lop_rest_client_t *rest;
    lop_recorder_t *recorder;
    char *ns, *name, *identity;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* signalled on post, on stop and when the queue drains */
    char queue[QUEUE_LEN][WHAT_MAX];
    int head, count;
    bool busy; /* the thread is writing an event */
    bool stop;
};

/* The Lease as JSON, for the recorder: a fresh GET (uid, resourceVersion), or only its identity
 * when the GET fails (the Event is still useful without a uid). Caller frees. */
static char *lease_json(lop_leader_events_t *e)
{
    lop_buf_t path = LOP_BUF_INIT;
    lop_buf_printf(&path, "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", e->ns, e->name);
    lop_rest_req_t req = {.method = "GET", .path = path.data, .timeout_ms = REQUEST_TIMEOUT_MS};
    lop_rest_resp_t resp;
    lop_rest_resp_init(&resp);
    lop_err_t err;
    lop_err_clear(&err);
    char *out = NULL;
    if (lop_rest_request(e->rest, &req, &resp, &err) == LOP_OK && resp.body.data) out = lop_xstrdup(resp.body.data);
    lop_rest_resp_cleanup(&resp);
    lop_buf_free(&path);
    if (out) return out;
    json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "coordination.k8s.io/v1", "kind", "Lease", "metadata",
                          "namespace", e->ns, "name", e->name);
    out = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return out;
}

static void write_event(lop_leader_events_t *e, const char *what)
{
    char *obj = lease_json(e);
    char msg[512];
    snprintf(msg, sizeof msg, "%s %s", e->identity, what);
    lop_err_t err;
    lop_err_clear(&err);
    /* The recorder logs a failure itself. */
    lop_rc_ignore(lop_recorder_record(e->recorder, obj, strlen(obj), "Normal", "LeaderElection", msg, &err));
    free(obj);
}

static void *run(void *ud)
{
    lop_leader_events_t *e = ud;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->stop && e->count == 0) pthread_cond_wait(&e->cond, &e->mu);
        if (e->count == 0) break; /* stopping and drained */
        char what[WHAT_MAX];
        memcpy(what, e->queue[e->head], WHAT_MAX);
        e->head = (e->head + 1) % QUEUE_LEN;
        e->count--;
        e->busy = true;
        pthread_mutex_unlock(&e->mu);
        write_event(e, what);
        pthread_mutex_lock(&e->mu);
        e->busy = false;
        pthread_cond_broadcast(&e->cond);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

lop_leader_events_t *lop_leader_events_new(lop_rest_client_t *rest, lop_recorder_t *recorder, const char *ns,
                                           const char *name, const char *identity)
{
    lop_leader_events_t *e = lop_xcalloc(1, sizeof *e);
    e->rest = rest;
    e->recorder = recorder;
    e->ns = lop_xstrdup(ns);
    e->name = lop_xstrdup(name);
    e->identity = lop_xstrdup(identity);
    pthread_mutex_init(&e->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cond, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&e->thread, NULL, run, e);
    if (rc != 0) {
        lop_log(LOP_LOG_ERROR, "leader election: cannot start the Event thread; no Events", "error", strerror(rc),
                NULL);
        pthread_cond_destroy(&e->cond);
        pthread_mutex_destroy(&e->mu);
        free(e->ns);
        free(e->name);
        free(e->identity);
        free(e);
        return NULL;
    }
    return e;
}

void lop_leader_events_post(lop_leader_events_t *e, const char *what)
{
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    bool full = e->count == QUEUE_LEN || e->stop;
    if (!full) {
        snprintf(e->queue[(e->head + e->count) % QUEUE_LEN], WHAT_MAX, "%s", what);
        e->count++;
        pthread_cond_broadcast(&e->cond);
    }
    pthread_mutex_unlock(&e->mu);
    if (full) lop_log(LOP_LOG_WARN, "leader election: Event dropped (queue full)", "event", what, NULL);
}

void lop_leader_events_free(lop_leader_events_t *e, int64_t flush_ns)
{
    if (!e) return;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    int64_t ns = (int64_t)deadline.tv_nsec + (flush_ns > 0 ? flush_ns : 0);
    deadline.tv_sec += (time_t)(ns / LOP_NS_PER_S);
    deadline.tv_nsec = (long)(ns % LOP_NS_PER_S);
    pthread_mutex_lock(&e->mu);
    bool timed_out = false;
    while ((e->count > 0 || e->busy) && !timed_out)
        timed_out = pthread_cond_timedwait(&e->cond, &e->mu, &deadline) == ETIMEDOUT;
    int dropped = e->count;
    e->count = 0; /* what is left is dropped; an in-flight write finishes (bounded by timeouts) */
    e->stop = true;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->mu);
    if (dropped > 0) {
        char n[16];
        snprintf(n, sizeof n, "%d", dropped);
        lop_log(LOP_LOG_WARN, "leader election: Events not written before exit", "dropped", n, NULL);
    }
    pthread_join(e->thread, NULL);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->mu);
    free(e->ns);
    free(e->name);
    free(e->identity);
    free(e);
}
