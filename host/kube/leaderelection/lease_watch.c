/* SPDX-License-Identifier: Apache-2.0 */
/* lease_watch.c — feed a Lease's watch events to an elector (see lease_watch.h). */
#include "host/kube/leaderelection/lease_watch.h"

#include "host/kube/client/rest.h"
#include "host/util/buf.h"
#include "host/util/dispatcher.h"
#include "host/util/log.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define BACKOFF_MIN_NS  (800 * LOP_NS_PER_MS)
#define BACKOFF_MAX_NS  (30 * LOP_NS_PER_S)
#define MAX_EVENT_BYTES (1024 * 1024)

struct lop_lease_watch {
    lop_rest_client_t *rest;
    lop_elector_t *elector;
    const lop_clock_t *clock;
    char *ns, *name;
    atomic_bool cancel;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long events;  /* under mu */
    bool stopped; /* under mu: the task saw cancel and let go of its stream */
    lop_dispatcher_t *disp;
    lop_dispatch_task_t task;
    /* the task's (one turn at a time) */
    lop_rest_stream_call_t *call; /* the stream in flight, or NULL */
    int64_t backoff;              /* the next failure's base wait */
    int64_t next_at;              /* no stream starts before this (the backoff), on the clock */
    long stream_events;           /* events in the current stream */
    lop_buf_t pending;            /* bytes of an incomplete line */
};

static uint64_t rnd(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) v = (uint64_t)lop_clock_mono(&lop_clock_system);
    return v;
}

static void handle_line(lop_lease_watch_t *w, const char *line, size_t n)
{
    if (n == 0) return;
    json_error_t jerr;
    json_t *ev = json_loadb(line, n, 0, &jerr);
    if (!ev) {
        lop_log(LOP_LOG_WARN, "lease watch: undecodable event", "lease", w->name, "error", jerr.text, NULL);
        return;
    }
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (type && strcmp(type, "ERROR") == 0) {
        /* The server ends the stream after an ERROR event; the loop reconnects from "now". */
        lop_log(LOP_LOG_INFO, "lease watch: ERROR event", "lease", w->name, NULL);
    } else if (type && strcmp(type, "BOOKMARK") != 0) {
        lop_err_t err;
        if (lop_elector_notify_lease_event(w->elector, type, json_object_get(ev, "object"), &err) != LOP_OK)
            lop_log(LOP_LOG_WARN, "lease watch: bad Lease in event", "lease", w->name, "error", err.message, NULL);
        w->stream_events++;
        pthread_mutex_lock(&w->mu);
        w->events++;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
    json_decref(ev);
}

static int on_bytes(void *ud, const char *data, size_t len)
{
    lop_lease_watch_t *w = ud;
    lop_buf_append(&w->pending, data, len);
    char *nl;
    while (w->pending.len && (nl = memchr(w->pending.data, '\n', w->pending.len)) != NULL) {
        size_t n = (size_t)(nl - w->pending.data);
        handle_line(w, w->pending.data, n);
        lop_buf_consume(&w->pending, n + 1);
    }
    if (w->pending.len > MAX_EVENT_BYTES) {
        lop_log(LOP_LOG_WARN, "lease watch: event too large, reconnecting", "lease", w->name, NULL);
        return 1;
    }
    return atomic_load(&w->cancel) ? 1 : 0;
}

static void notify_cb(void *ud)
{
    lop_lease_watch_t *w = ud;
    lop_dispatch_kick(&w->task);
}

static lop_lease_watch_t *of_task(lop_dispatch_task_t *t)
{
    return (lop_lease_watch_t *)(void *)((char *)t - offsetof(lop_lease_watch_t, task));
}

/* One turn on the dispatcher: pump the stream in flight; when it ended, reconnect at once after
 * a stream that delivered events, else after the backoff (a timer on the injected clock). */
static void watch_turn(lop_dispatch_task_t *t)
{
    lop_lease_watch_t *w = of_task(t);
    if (atomic_load(&w->cancel)) {
        lop_rest_stream_free(w->call);
        w->call = NULL;
        pthread_mutex_lock(&w->mu);
        w->stopped = true;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        return;
    }
    if (w->call) {
        lop_rc_t rc = LOP_OK;
        int64_t next = INT64_MAX;
        lop_err_t err;
        lop_err_clear(&err);
        if (!lop_rest_stream_pump(w->call, on_bytes, w, &rc, &next, &err)) {
            if (next != INT64_MAX) lop_dispatch_after(t, next);
            return;
        }
        lop_rest_stream_free(w->call);
        w->call = NULL;
        if (atomic_load(&w->cancel)) {
            lop_dispatch_kick(t);
            return;
        }
        if (w->stream_events > 0) w->backoff = BACKOFF_MIN_NS;
        if (rc == LOP_OK && w->stream_events > 0) { /* a normal end: reconnect at once */
            w->next_at = 0;
            lop_dispatch_kick(t);
            return;
        }
        lop_log(LOP_LOG_DEBUG, "lease watch: stream ended, backing off", "lease", w->name, "rc", lop_rc_str(rc),
                "error", err.message, NULL);
        /* jitter 1.0: wait in [backoff, 2 × backoff) */
        int64_t delay = w->backoff + (int64_t)(rnd() % (uint64_t)w->backoff);
        w->backoff = w->backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : w->backoff * 2;
        w->next_at = lop_clock_mono(w->clock) + delay;
        lop_dispatch_after(t, delay);
        return;
    }
    int64_t now = lop_clock_mono(w->clock);
    if (w->next_at > now) { /* a kick during the backoff */
        lop_dispatch_after(t, w->next_at - now);
        return;
    }
    char path[640];
    long timeout_s = 300 + (long)(rnd() % 300); /* rotate streams like a reflector */
    snprintf(path, sizeof path,
             "/apis/coordination.k8s.io/v1/namespaces/%s/leases?watch=true&allowWatchBookmarks=true"
             "&timeoutSeconds=%ld&fieldSelector=metadata.name%%3D%s",
             w->ns, timeout_s, w->name);
    w->stream_events = 0;
    lop_buf_reset(&w->pending);
    lop_err_t err;
    lop_rest_stream_opts_t so = {.cancel = &w->cancel}; /* stop also cuts a pump's name resolution short */
    if (lop_rest_stream_start(w->rest, path, &so, notify_cb, w, &w->call, &err) != LOP_OK) {
        lop_log(LOP_LOG_WARN, "lease watch: cannot start the stream", "lease", w->name, "error", err.message, NULL);
        int64_t delay = w->backoff + (int64_t)(rnd() % (uint64_t)w->backoff); /* as after a failed stream */
        w->backoff = w->backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : w->backoff * 2;
        w->next_at = now + delay;
        lop_dispatch_after(t, delay);
        return;
    }
    lop_dispatch_kick(t); /* the first pump sends it */
}

lop_lease_watch_t *lop_lease_watch_start(lop_rest_client_t *rest, const char *ns, const char *name,
                                         lop_elector_t *elector, const lop_clock_t *clock, lop_err_t *err)
{
    if (!rest || !elector) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "lease watch: REST client and elector are required");
        return NULL;
    }
    if (!ns || !lop_lease_name_valid(ns) || !name || !lop_lease_name_valid(name)) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "lease watch: invalid Lease namespace/name \"%.64s/%.64s\"", ns ? ns : "",
                    name ? name : "");
        return NULL;
    }
    lop_lease_watch_t *w = lop_xcalloc(1, sizeof *w);
    w->rest = rest;
    w->elector = elector;
    w->clock = clock ? clock : &lop_clock_system;
    w->ns = lop_xstrdup(ns);
    w->name = lop_xstrdup(name);
    atomic_init(&w->cancel, false);
    pthread_mutex_init(&w->mu, NULL);
    lop_cond_init(&w->cv);
    w->backoff = BACKOFF_MIN_NS;
    w->disp = lop_dispatcher_acquire(w->clock, err);
    if (!w->disp) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w->ns);
        free(w->name);
        free(w);
        return NULL;
    }
    lop_dispatch_init(w->disp, &w->task, watch_turn);
    lop_dispatch_kick(&w->task);
    return w;
}

long lop_lease_watch_events(lop_lease_watch_t *w)
{
    pthread_mutex_lock(&w->mu);
    long n = w->events;
    pthread_mutex_unlock(&w->mu);
    return n;
}

bool lop_lease_watch_wait_events(lop_lease_watch_t *w, long n, int64_t timeout_ns)
{
    int64_t deadline = lop_clock_mono(w->clock) + timeout_ns;
    pthread_mutex_lock(&w->mu);
    while (w->events < n && !lop_clock_wait_until(w->clock, &w->cv, &w->mu, deadline)) {}
    bool ok = w->events >= n;
    pthread_mutex_unlock(&w->mu);
    return ok;
}

void lop_lease_watch_stop(lop_lease_watch_t *w)
{
    if (!w) return;
    atomic_store(&w->cancel, true);
    lop_rest_client_wake(w->rest); /* a pump waiting on a name resolution looks at the flag */
    lop_dispatch_kick(&w->task);
    pthread_mutex_lock(&w->mu);
    while (!w->stopped) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    lop_dispatch_detach(&w->task);
    lop_dispatcher_release(w->disp);
    lop_buf_free(&w->pending);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->ns);
    free(w->name);
    free(w);
}
