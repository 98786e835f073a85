/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cache dispatcher (dispatcher.h) and reflectors running on it (issue 19 part 1: threads
 * independent of the number of watches):
 *  - timers fire on the injected clock only once it has been stepped past them, in deadline
 *    order; a kick runs a task once however often it comes; a task never runs on two threads;
 *  - 50 reflectors on fake asynchronous listwatches sync, get a watch event each and stop, and
 *    the process's thread count (/proc/self/task) is the same with 0 and with 50 of them (while
 *    5 reflectors on blocking listwatches add 5 threads: the count does see reflector threads);
 *  - a failed asynchronous watch backs off on the injected clock: no new watch before the clock
 *    has moved by the backoff, one right after; an ERROR 410 event relists after its backoff.
 * The fake listwatch plays the I/O thread from the test's thread: it queues bytes or the end of
 * a watch and calls notify, as the transport does. Waits are on a condition variable with a
 * real-time cap (a bug fails the test instead of hanging it), never sleeps.
 */
#include "host/util/dispatcher.h"
#include "host/kube/cache/reflector.h"
#include "proc_threads.h"
#include "t.h"

#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static int threads(void) { return proc_threads(); }

/* Wait (mu held) until pred() holds, re-checked when cond is signalled and at least every 5 ms
 * (a state the reflector changes without signalling, e.g. its resume point, is seen too); false
 * after 20 s of real time. */
static bool wait_for(bool (*pred)(void *), void *arg)
{
    struct timespec end;
    clock_gettime(CLOCK_REALTIME, &end);
    end.tv_sec += 20;
    while (!pred(arg)) {
        struct timespec now, ts;
        clock_gettime(CLOCK_REALTIME, &now);
        if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec)) return pred(arg);
        ts = now;
        ts.tv_nsec += 5 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&cond, &mu, &ts);
    }
    return true;
}

/* ---- the dispatcher alone ---- */

typedef struct ttask {
    lop_dispatch_task_t task;
    int runs, concurrent, max_concurrent;
    int order; /* the turn's rank among all turns */
} ttask_t;

static int g_order;

static void trun(lop_dispatch_task_t *t)
{
    ttask_t *tt = (ttask_t *)(void *)t;
    pthread_mutex_lock(&mu);
    tt->concurrent++;
    if (tt->concurrent > tt->max_concurrent) tt->max_concurrent = tt->concurrent;
    pthread_mutex_unlock(&mu);
    /* a little work, so that overlapping turns would show */
    volatile unsigned x = 0;
    for (int i = 0; i < 20000; i++) x += (unsigned)i;
    pthread_mutex_lock(&mu);
    tt->concurrent--;
    tt->runs++;
    tt->order = ++g_order;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
}

static ttask_t g_tasks[3];

static bool runs_at_least(void *arg)
{
    int *want = arg;
    return g_tasks[0].runs + g_tasks[1].runs + g_tasks[2].runs >= *want;
}

static void test_timers_on_the_injected_clock(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_err_t err;
    lop_dispatcher_t *d = lop_dispatcher_new(2, &fc.base, &err);
    T_CHECK(d != NULL);
    if (!d) return;
    T_EQ_INT(lop_dispatcher_threads(d), 2);
    for (int i = 0; i < 3; i++) lop_dispatch_init(d, &g_tasks[i].task, trun);
    g_order = 0;
    lop_dispatch_after(&g_tasks[0].task, 3 * LOP_NS_PER_S);
    lop_dispatch_after(&g_tasks[1].task, 1 * LOP_NS_PER_S);
    lop_dispatch_after(&g_tasks[2].task, 2 * LOP_NS_PER_S);
    lop_dispatch_after(&g_tasks[2].task, INT64_MAX); /* cleared */
    lop_dispatch_after(&g_tasks[2].task, 2 * LOP_NS_PER_S);
    /* nothing is due until the clock moves: a kick of another task runs while they wait */
    static ttask_t probe;
    lop_dispatch_init(d, &probe.task, trun);
    lop_dispatch_kick(&probe.task);
    pthread_mutex_lock(&mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 20;
    while (probe.runs < 1 && pthread_cond_timedwait(&cond, &mu, &ts) == 0) {}
    T_EQ_INT(probe.runs, 1);
    T_EQ_INT(g_tasks[0].runs + g_tasks[1].runs + g_tasks[2].runs, 0);
    pthread_mutex_unlock(&mu);

    lop_fake_clock_step(&fc, 1 * LOP_NS_PER_S); /* task 1 due */
    pthread_mutex_lock(&mu);
    T_CHECK(wait_for(runs_at_least, &(int){1}));
    T_EQ_INT(g_tasks[1].runs, 1);
    pthread_mutex_unlock(&mu);
    lop_fake_clock_step(&fc, 2 * LOP_NS_PER_S); /* tasks 2 then 0 due */
    pthread_mutex_lock(&mu);
    T_CHECK(wait_for(runs_at_least, &(int){3}));
    T_EQ_INT(g_tasks[0].runs, 1);
    T_EQ_INT(g_tasks[2].runs, 1);
    pthread_mutex_unlock(&mu);

    /* kicks: however many, never two turns of one task at once, at least one turn after the
     * last kick */
    for (int i = 0; i < 2000; i++) lop_dispatch_kick(&g_tasks[0].task);
    pthread_mutex_lock(&mu);
    int base = g_tasks[0].runs;
    pthread_mutex_unlock(&mu);
    lop_dispatch_kick(&g_tasks[0].task);
    pthread_mutex_lock(&mu);
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 20;
    while (g_tasks[0].runs < base + 1 && pthread_cond_timedwait(&cond, &mu, &ts) == 0) {}
    T_CHECK(g_tasks[0].runs >= base + 1);
    T_CHECK(g_tasks[0].runs <= 2002);
    T_EQ_INT(g_tasks[0].max_concurrent, 1);
    pthread_mutex_unlock(&mu);

    for (int i = 0; i < 3; i++) lop_dispatch_detach(&g_tasks[i].task);
    lop_dispatch_detach(&probe.task);
    lop_dispatch_kick(&g_tasks[1].task); /* ignored once detached */
    lop_dispatcher_free(d);
    T_EQ_INT(g_tasks[1].runs, 1);
}

static void test_shared_dispatcher_per_clock(void)
{
    lop_fake_clock_t a, b;
    lop_fake_clock_init(&a, 0);
    lop_fake_clock_init(&b, 0);
    int t0 = threads();
    lop_dispatcher_t *da = lop_dispatcher_acquire(&a.base, NULL);
    lop_dispatcher_t *da2 = lop_dispatcher_acquire(&a.base, NULL);
    lop_dispatcher_t *db = lop_dispatcher_acquire(&b.base, NULL);
    T_CHECK(da && da == da2 && db && db != da);
    T_EQ_INT(threads(), t0 + 2 * LOP_DISPATCHER_THREADS);
    lop_dispatcher_release(da);
    T_EQ_INT(threads(), t0 + 2 * LOP_DISPATCHER_THREADS);
    lop_dispatcher_release(da2);
    lop_dispatcher_release(db);
    T_EQ_INT(proc_threads_settle(t0), t0);
}

/* ---- fake asynchronous listwatch ---- */

typedef struct fcall {
    bool list; /* a LIST page (list_stream_start), else a watch */
    struct flw *lw;
    void (*notify)(void *);
    void *nud;
    char *q; /* bytes not pumped yet (mu) */
    size_t qlen;
    bool ended; /* mu: the "server" ended it with rc */
    lop_rc_t rc;
} fcall_t;

typedef struct flw {
    int idx;
    fcall_t *cur; /* mu: the watch in flight */
    int starts, ends, lists, blocking_watches, adds;
    bool synced;
    bool paged;           /* serve LIST pages through list_stream_start */
    bool expire_continue; /* the continue page answers 410 */
    char list_log[256];   /* each page asked: "limit/rv/continue;" */
} flw_t;

static lop_rc_t f_list(void *ud, const lop_list_opts_t *o, lop_buf_t *body, lop_err_t *err)
{
    flw_t *f = ud;
    pthread_mutex_lock(&mu);
    f->lists++;
    pthread_mutex_unlock(&mu);
    lop_buf_printf(body,
                   "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"10\"},"
                   "\"items\":[{\"metadata\":{\"name\":\"cm-%d\",\"namespace\":\"ns\",\"resourceVersion\":\"5\"}}]}",
                   f->idx);
    return LOP_OK;
}

static lop_rc_t f_watch(void *ud, const lop_watch_opts_t *o, lop_stream_fn fn, void *fn_ud, lop_err_t *err)
{
    flw_t *f = ud;
    pthread_mutex_lock(&mu);
    f->blocking_watches++;
    pthread_mutex_unlock(&mu);
    return lop_err_set(err, LOP_EAGAIN, 0, NULL, "the blocking watch is not used on the dispatcher");
}

static void f_cancel(void *ud) {}

static lop_rc_t f_watch_start(void *ud, const lop_watch_opts_t *o, void (*notify)(void *), void *nud, void **call,
                              lop_err_t *err)
{
    flw_t *f = ud;
    fcall_t *c = calloc(1, sizeof *c);
    c->lw = f;
    c->notify = notify;
    c->nud = nud;
    pthread_mutex_lock(&mu);
    f->cur = c;
    f->starts++;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
    *call = c;
    return LOP_OK;
}

static bool f_watch_pump(void *ud, void *call, lop_stream_fn fn, void *fn_ud, lop_rc_t *rc, int64_t *next_ns,
                         lop_err_t *err)
{
    fcall_t *c = call;
    *next_ns = INT64_MAX;
    pthread_mutex_lock(&mu);
    char *q = c->q;
    size_t n = c->qlen;
    c->q = NULL;
    c->qlen = 0;
    bool ended = c->ended;
    lop_rc_t erc = c->rc;
    pthread_mutex_unlock(&mu);
    int stop = n ? fn(fn_ud, q, n) : 0;
    free(q);
    if (stop) {
        *rc = lop_err_set(err, LOP_ECLOSED, 0, NULL, "stopped by the consumer");
        return true;
    }
    if (!ended) return false;
    *rc = erc == LOP_OK ? LOP_OK : lop_err_set(err, erc, 0, NULL, "the fake watch failed");
    return true;
}

/* Pages of two objects, one per page (limit 1) with a continue token, or both (no limit). */
static lop_rc_t f_list_stream_start(void *ud, const lop_list_opts_t *o, void (*notify)(void *), void *nud, void **call,
                                    lop_err_t *err)
{
    flw_t *f = ud;
    const char *cont = o->continue_token ? o->continue_token : "";
    pthread_mutex_lock(&mu);
    size_t n = strlen(f->list_log);
    snprintf(f->list_log + n, sizeof f->list_log - n, "%ld/%s/%s;", o->limit,
             o->resource_version ? o->resource_version : "-", cont);
    if (!cont[0]) f->lists++;
    pthread_mutex_unlock(&mu);
    fcall_t *c = calloc(1, sizeof *c);
    c->list = true;
    c->lw = f;
    c->notify = notify;
    c->nud = nud;
    c->ended = true;
    char body[600];
    const char *item_a = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"15\"}}";
    const char *item_b = "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"resourceVersion\":\"16\"}}";
    if (cont[0] && f->expire_continue) {
        c->rc = LOP_EGONE;
        body[0] = '\0';
    } else if (o->limit == 1) {
        snprintf(body, sizeof body,
                 "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"20\","
                 "\"continue\":\"%s\"},\"items\":[%s]}",
                 cont[0] ? "" : "p2", cont[0] ? item_b : item_a);
    } else {
        snprintf(body, sizeof body,
                 "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"20\"},"
                 "\"items\":[%s,%s]}",
                 item_a, item_b);
    }
    c->q = strdup(body);
    c->qlen = strlen(body);
    *call = c;
    (void)err;
    return LOP_OK;
}

static void f_watch_end(void *ud, void *call)
{
    flw_t *f = ud;
    fcall_t *c = call;
    pthread_mutex_lock(&mu);
    if (f->cur == c) f->cur = NULL;
    if (!c->list) f->ends++;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
    free(c->q);
    free(c);
}

/* The "I/O thread": bytes for f's watch in flight, then notify (as the transport does). */
static void f_push(flw_t *f, const char *bytes, bool end, lop_rc_t rc)
{
    pthread_mutex_lock(&mu);
    fcall_t *c = f->cur;
    if (c) {
        size_t n = strlen(bytes);
        c->q = realloc(c->q, c->qlen + n + 1);
        memcpy(c->q + c->qlen, bytes, n);
        c->qlen += n;
        if (end) {
            c->ended = true;
            c->rc = rc;
        }
    }
    pthread_mutex_unlock(&mu);
    if (c) c->notify(c->nud); /* the call lives until watch_end, which waits for this reflector's turn */
}

static void h_add(void *ud, lop_obj_t *o)
{
    flw_t *f = ud;
    pthread_mutex_lock(&mu);
    f->adds++;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
}

static void h_synced(void *ud)
{
    flw_t *f = ud;
    pthread_mutex_lock(&mu);
    f->synced = true;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
}

#define NREFL 50

typedef struct fleet {
    flw_t f[NREFL];
    lop_store_t *s[NREFL];
    lop_reflector_t *r[NREFL];
    int n;
} fleet_t;

static void fleet_start_paged(fleet_t *fl, int n, lop_dispatcher_t *d, const lop_clock_t *clock, bool async, bool paged)
{
    fl->n = n;
    for (int i = 0; i < n; i++) {
        memset(&fl->f[i], 0, sizeof fl->f[i]);
        fl->f[i].idx = i;
        fl->f[i].paged = paged;
        fl->s[i] = lop_store_new();
        lop_listwatch_t lw = {.ud = &fl->f[i], .list = f_list, .watch = f_watch, .cancel = f_cancel};
        if (async) {
            if (fl->f[i].paged) lw.list_stream_start = f_list_stream_start;
            lw.watch_start = f_watch_start;
            lw.call_pump = f_watch_pump;
            lw.call_end = f_watch_end;
        }
        char name[32];
        snprintf(name, sizeof name, "fake-%d", i);
        lop_reflector_config_t cfg = {.name = name,
                                      .lw = &lw,
                                      .store = fl->s[i],
                                      .clock = clock,
                                      .handlers = {.on_add = h_add, .on_synced = h_synced, .ud = &fl->f[i]},
                                      .idle_timeout_ms = -1,
                                      .seed = (uint64_t)i + 1,
                                      .page_size = paged ? 1 : 0,
                                      .dispatcher = d};
        fl->r[i] = lop_reflector_new(&cfg, NULL);
        T_CHECK(lop_reflector_start(fl->r[i], NULL) == LOP_OK);
    }
}

static void fleet_start(fleet_t *fl, int n, lop_dispatcher_t *d, const lop_clock_t *clock, bool async)
{
    fleet_start_paged(fl, n, d, clock, async, false);
}

static void fleet_free(fleet_t *fl)
{
    for (int i = 0; i < fl->n; i++) {
        lop_reflector_free(fl->r[i]);
        lop_store_free(fl->s[i]);
    }
}

static bool all_watching(void *arg)
{
    fleet_t *fl = arg;
    for (int i = 0; i < fl->n; i++)
        if (!fl->f[i].synced || !fl->f[i].cur) return false;
    return true;
}

static bool all_got_event(void *arg)
{
    fleet_t *fl = arg;
    for (int i = 0; i < fl->n; i++) {
        if (fl->f[i].adds < 2) return false;
        char rv[32]; /* the resume point moves right after the handlers ran */
        lop_reflector_last_rv(fl->r[i], rv, sizeof rv);
        if (strcmp(rv, "11") != 0) return false;
    }
    return true;
}

static fleet_t fleet;

static void test_fifty_reflectors_no_more_threads(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_dispatcher_t *d = lop_dispatcher_new(LOP_DISPATCHER_THREADS, &fc.base, NULL);
    T_CHECK(d != NULL);
    if (!d) return;
    int base = threads();
    T_CHECK(base > 0);

    fleet_start(&fleet, NREFL, d, &fc.base, true);
    pthread_mutex_lock(&mu);
    T_CHECK(wait_for(all_watching, &fleet));
    pthread_mutex_unlock(&mu);
    T_EQ_INT(threads(), base); /* 50 listed and watching: not one thread more */

    for (int i = 0; i < NREFL; i++) {
        char ev[200];
        snprintf(ev, sizeof ev,
                 "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"new-%d\",\"namespace\":\"ns\","
                 "\"resourceVersion\":\"11\"}}}\n",
                 i);
        f_push(&fleet.f[i], ev, false, LOP_OK);
    }
    pthread_mutex_lock(&mu);
    T_CHECK(wait_for(all_got_event, &fleet));
    pthread_mutex_unlock(&mu);
    T_EQ_INT(threads(), base);
    int listed = 0, blocking = 0;
    for (int i = 0; i < NREFL; i++) {
        lop_store_stats_t ss;
        lop_store_stats(fleet.s[i], &ss);
        T_EQ_INT(ss.count, 2);
        char rv[32];
        lop_reflector_last_rv(fleet.r[i], rv, sizeof rv);
        T_EQ_STR(rv, "11");
        listed += fleet.f[i].lists;
        blocking += fleet.f[i].blocking_watches;
        T_EQ_INT(fleet.f[i].starts, 1);
    }
    T_EQ_INT(listed, NREFL);
    T_EQ_INT(blocking, 0);

    fleet_free(&fleet); /* stop: every watch in flight is ended */
    for (int i = 0; i < NREFL; i++) T_EQ_INT(fleet.f[i].ends, fleet.f[i].starts);
    T_EQ_INT(threads(), base);
    lop_dispatcher_free(d);
    T_EQ_INT(proc_threads_settle(base - LOP_DISPATCHER_THREADS), base - LOP_DISPATCHER_THREADS);

    /* the contrast: reflectors on blocking listwatches each take a thread */
    base = threads();
    fleet_start(&fleet, 5, NULL, &fc.base, false);
    T_EQ_INT(threads(), base + 5);
    fleet_free(&fleet);
    T_EQ_INT(proc_threads_settle(base), base);
}

/* ---- backoff on the injected clock ---- */

static bool started_n(void *arg)
{
    flw_t *f = ((void **)arg)[0];
    int n = *(int *)((void **)arg)[1];
    return f->starts >= n && f->cur;
}

static lop_dispatcher_t *g_d1;
static ttask_t sentinel;

static void sentinel_run(lop_dispatch_task_t *t)
{
    ttask_t *tt = (ttask_t *)(void *)t;
    pthread_mutex_lock(&mu);
    tt->runs++;
    bool again = tt->runs % 2 == 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
    if (again) lop_dispatch_kick(t); /* a second hop: behind anything queued meanwhile */
}

/* Let the single dispatcher thread finish what is queued now (twice through the run queue). */
static void drain(void)
{
    pthread_mutex_lock(&mu);
    int want = sentinel.runs + 2;
    pthread_mutex_unlock(&mu);
    lop_dispatch_kick(&sentinel.task);
    pthread_mutex_lock(&mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 20;
    while (sentinel.runs < want && pthread_cond_timedwait(&cond, &mu, &ts) == 0) {}
    T_CHECK(sentinel.runs >= want);
    pthread_mutex_unlock(&mu);
}

static void test_async_watch_backoff_on_injected_clock(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    g_d1 = lop_dispatcher_new(1, &fc.base, NULL);
    T_CHECK(g_d1 != NULL);
    if (!g_d1) return;
    lop_dispatch_init(g_d1, &sentinel.task, sentinel_run);
    fleet_start(&fleet, 1, g_d1, &fc.base, true);
    flw_t *f = &fleet.f[0];
    pthread_mutex_lock(&mu);
    T_CHECK(wait_for(started_n, (void *[]){f, &(int){1}}));
    pthread_mutex_unlock(&mu);

    /* a transport error: back off, then re-watch from the resume point */
    f_push(f, "", true, LOP_EAGAIN);
    drain();
    lop_reflector_stats_t st;
    lop_reflector_stats(fleet.r[0], &st);
    T_EQ_INT(st.watch_errors, 1);
    T_CHECK(st.last_backoff_ns >= 800 * LOP_NS_PER_MS && st.last_backoff_ns < 1600 * LOP_NS_PER_MS);
    T_EQ_INT(f->starts, 1);
    lop_fake_clock_step(&fc, st.last_backoff_ns - LOP_NS_PER_MS);
    drain();
    T_EQ_INT(f->starts, 1); /* not before the backoff has passed */
    lop_fake_clock_step(&fc, LOP_NS_PER_MS);
    pthread_mutex_lock(&mu);
    T_CHECK(wait_for(started_n, (void *[]){f, &(int){2}}));
    pthread_mutex_unlock(&mu);
    T_EQ_INT(f->lists, 1);

    /* ERROR 410 in the stream: back off, then relist */
    f_push(f, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}\n", false,
           LOP_OK);
    drain();
    lop_reflector_stats(fleet.r[0], &st);
    T_EQ_INT(st.relists_410, 1);
    T_EQ_INT(st.watch_errors, 2);
    T_EQ_INT(f->lists, 1);
    lop_fake_clock_step(&fc, st.last_backoff_ns);
    pthread_mutex_lock(&mu);
    T_CHECK(wait_for(started_n, (void *[]){f, &(int){3}}));
    pthread_mutex_unlock(&mu);
    T_EQ_INT(f->lists, 2);

    /* a malformed stream: counted, backed off, re-watched */
    f_push(f, "{\"type\":\"ADDED\",\"object\":[1]}\n", false, LOP_OK);
    drain();
    lop_reflector_stats(fleet.r[0], &st);
    T_EQ_INT(st.malformed, 1);
    T_EQ_INT(f->starts, 3);

    /* stop while waiting out the backoff: prompt, nothing left in flight */
    fleet_free(&fleet);
    T_EQ_INT(f->ends, f->starts);
    lop_dispatch_detach(&sentinel.task);
    lop_dispatcher_free(g_d1);
}

/* A paged LIST through list_stream_start, pumped in turns: both pages fetched (the continue
 * page without resourceVersion), the store replaced once; a 410 on the continue page of a
 * relist falls back to one full list at the original resourceVersion (client-go's pager). */
static void test_async_paged_list(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    g_d1 = lop_dispatcher_new(1, &fc.base, NULL);
    T_CHECK(g_d1 != NULL);
    if (!g_d1) return;
    lop_dispatch_init(g_d1, &sentinel.task, sentinel_run);
    fleet_start_paged(&fleet, 1, g_d1, &fc.base, true, true);
    flw_t *f = &fleet.f[0];
    pthread_mutex_lock(&mu);
    T_CHECK(wait_for(started_n, (void *[]){f, &(int){1}}));
    pthread_mutex_unlock(&mu);
    T_EQ_STR(f->list_log, "1/0/;1/-/p2;");
    lop_store_stats_t ss;
    lop_store_stats(fleet.s[0], &ss);
    T_EQ_INT(ss.count, 2);
    T_EQ_INT(f->adds, 2);
    lop_reflector_stats_t st;
    lop_reflector_stats(fleet.r[0], &st);
    T_EQ_INT(st.lists, 1);
    T_EQ_INT(st.list_pages, 2);
    T_EQ_INT(f->blocking_watches, 0);
    char rv[32];
    lop_reflector_last_rv(fleet.r[0], rv, sizeof rv);
    T_EQ_STR(rv, "20");

    /* relist after an ERROR 410, the continue page expired: one full list at RV 20 */
    pthread_mutex_lock(&mu);
    f->expire_continue = true;
    f->list_log[0] = '\0';
    pthread_mutex_unlock(&mu);
    f_push(f, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}\n", false,
           LOP_OK);
    drain();
    lop_reflector_stats(fleet.r[0], &st);
    lop_fake_clock_step(&fc, st.last_backoff_ns);
    pthread_mutex_lock(&mu);
    T_CHECK(wait_for(started_n, (void *[]){f, &(int){2}}));
    pthread_mutex_unlock(&mu);
    T_EQ_STR(f->list_log, "1/20/;1/-/p2;0/20/;");
    lop_reflector_stats(fleet.r[0], &st);
    T_EQ_INT(st.list_fallbacks, 1);
    T_EQ_INT(st.lists, 2);
    T_EQ_INT(st.list_reused, 3); /* same resourceVersions: the cached entries kept (a on the
                                  * dropped first page, then a and b) */
    lop_store_stats(fleet.s[0], &ss);
    T_EQ_INT(ss.count, 2);
    fleet_free(&fleet);
    T_EQ_INT(f->ends, f->starts);
    lop_dispatch_detach(&sentinel.task);
    lop_dispatcher_free(g_d1);
}

int main(void)
{
    T_RUN(test_timers_on_the_injected_clock);
    T_RUN(test_shared_dispatcher_per_clock);
    T_RUN(test_fifty_reflectors_no_more_threads);
    T_RUN(test_async_watch_backoff_on_injected_clock);
    T_RUN(test_async_paged_list);
    return T_DONE();
}
