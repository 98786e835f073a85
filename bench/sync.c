/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sync.c — lopbench-luaop: luaop's informer path under benchmark, built from the host libraries
 * (build/lib*.a): kubeconfig → REST client → REST mapper → REST listwatch → reflector → store, with a
 * trivial handler that puts each object's key on a workqueue drained by one worker thread (the
 * same shape as the client-node peer: informer + small queue).
 *
 *   sync  KUBECONFIG API_VERSION KIND strip|keep|meta|meta-client
 *         time from start until the reflector has synced (first LIST delivered); then RSS per
 *         cached object (malloc_trim first, so freed page buffers do not count). strip: the
 *         default cache (managedFields cut); keep: managedFields kept; meta: metadata only, as a
 *         metadata_only watch does it (the server sends PartialObjectMetadata); meta-client: the
 *         same cache from full objects stripped here (a server that ignores `as=`). recv_bytes:
 *         the list/watch body bytes received until synced
 *   watch KUBECONFIG API_VERSION KIND FROM_RV M
 *         the reflector lists, but its watch starts at FROM_RV (the list's resourceVersion is
 *         rewritten), so the server replays M MODIFIED events from its history as fast as it
 *         can send them; time from the watch request to the M-th handler call, and the latency
 *         from a chunk's arrival to the enqueue of each event decoded from it (p50/p99)
 *
 *   burst KUBECONFIG API_VERSION KIND FROM_RV M DELAY_US
 *         watch as above (M MODIFIED events replayed from FROM_RV, on a modest set of keys), but
 *         the worker is slow: each reconcile reads the key's object from the store (its
 *         resourceVersion is what it "saw"), then takes DELAY_US (nanosleep) before Done. Events
 *         arrive far faster than it drains, so the workqueue's per-key dedup must keep the queue
 *         ≤ keys and memory flat. Reports reconciles, queue depth max (after every add), RSS at
 *         watch start / 10 % / 50 % / all events / drained, the peak (VmHWM reset at watch start),
 *         and `lost`: keys whose last reconcile did not see the store's final resourceVersion.
 *
 *   relist KUBECONFIG API_VERSION KIND SERVER_URL
 *         sync, then make the server compact its history and end every watch (fault API: the
 *         server must run with --enable-fault-control): the reflector re-watches, gets 410 and
 *         relists (paged, RV unset). Time from the fault to the last relisted object reaching the
 *         handler; RSS when steady before, peak during (VmHWM reset through clear_refs), after.
 *
 * Client-side rate limiting is off (qps < 0), as in client-node. LOPBENCH_NO_QUEUE=1 leaves the
 * workqueue out of the handler (to split the informer's cost from the queue hand-off).
 * Output: one key=value line.
 */
#include "bench_util.h"

#include "host/codec/jsonscan.h"
#include "host/kube/cache/object.h"
#include "host/kube/client/kubeconfig.h"
#include "host/kube/cache/reflector.h"
#include "host/kube/cache/rest_listwatch.h"
#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"
#include "host/kube/cache/store.h"
#include "host/codec/strmap.h"
#include "host/kube/workqueue/workqueue.h"
#include "host/util/malloc_tune.h"
#include "host/util/log.h"

#include <curl/curl.h>
#include <jansson.h>
#include <malloc.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>

static lop_workqueue_t *queue;
static bool no_queue; /* LOPBENCH_NO_QUEUE=1: the handler only counts (isolates the informer) */
static atomic_long adds, updates;
/* watch mode: posted by the handler at the M-th event, so that the main thread sleeps until
 * then instead of polling (a 1 ms poll is ~600 wake-ups on the 2 cores the measured threads use) */
static sem_t all_events;
static sem_t synced_sem; /* posted by the reflector's on_synced: the sync's end, without polling */
static void on_synced(void *ud)
{
    (void)ud;
    sem_post(&synced_sem);
}
static long want_events;
static double chunk_arrival; /* set on the reflector's thread before its decoder runs */
static float *lat_ms;
static long lat_cap;
/* burst mode */
static lop_store_t *burst_store; /* non-NULL: the worker is the slow reconcile */
static long delay_us, burst_want;
static double t_last_event;                 /* when the burst_want-th event reached the handler */
static lop_strmap_t seen = LOP_STRMAP_INIT; /* key -> resourceVersion read (worker thread only) */
static atomic_long reconciles, depth_max, rss_start_kb = -1;
static pthread_t worker_thread;

static void enqueue(lop_obj_t *o)
{
    if (no_queue) return;
    char key[512];
    lop_obj_key(o, key, sizeof key);
    lop_workqueue_add(queue, key);
    if (burst_store) {
        long d = (long)lop_workqueue_len(queue), m = atomic_load(&depth_max);
        while (d > m && !atomic_compare_exchange_weak(&depth_max, &m, d)) {}
    }
}

static void on_add(void *ud, lop_obj_t *o)
{
    enqueue(o);
    atomic_fetch_add(&adds, 1);
}

static void on_update(void *ud, lop_obj_t *old, lop_obj_t *o)
{
    enqueue(o);
    /* only the reflector's thread counts updates: set the time before the count publishes it */
    if (burst_store && atomic_load(&updates) + 1 == burst_want) t_last_event = bu_now();
    long n = atomic_fetch_add(&updates, 1);
    if (lat_ms && n < lat_cap) lat_ms[n] = (float)((bu_now() - chunk_arrival) * 1e3);
    if (want_events && n + 1 == want_events) sem_post(&all_events);
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
    nanosleep(&ts, NULL);
}

static void *worker(void *ud)
{
    char *item;
    while (lop_workqueue_get(queue, &item) == LOP_OK) {
        if (burst_store) { /* the slow reconcile: read the state, work, Done */
            lop_obj_t *o = lop_store_get(burst_store, item);
            if (o) {
                free(lop_strmap_put(&seen, item, strdup(o->rv)));
                lop_obj_unref(o);
            }
            sleep_us(delay_us);
            atomic_fetch_add(&reconciles, 1);
        }
        lop_workqueue_done(queue, item);
        free(item);
    }
    return NULL;
}

/* ---- a listwatch wrapper: list's resourceVersion rewritten, watch start timed ---- */

typedef struct wrap {
    lop_listwatch_t *inner;
    bool consistent; /* LOPBENCH_SYNC_MODE=paged: the first list is a consistent read, so paged */
    const char *from_rv;
    double t_watch;
    lop_stream_fn fn, list_fn;
    void *fn_ud, *list_fn_ud;
} wrap_t;

/* list and watch body bytes received (sync: until synced, the figure printed as recv_bytes) */
static atomic_size_t recv_bytes;

static int w_list_bytes(void *ud, const char *data, size_t len)
{
    wrap_t *w = ud;
    atomic_fetch_add(&recv_bytes, len);
    return w->list_fn(w->list_fn_ud, data, len);
}

/* sync/relist: the host's streamed LIST (LOPBENCH_NO_STREAM=1: the whole page collected first);
 * watch/burst rewrite the collected list's RV (from_rv), so they use list. */
static lop_rc_t w_list_stream(void *ud, const lop_list_opts_t *o, lop_stream_fn fn, void *fn_ud, lop_err_t *err)
{
    wrap_t *w = ud;
    lop_list_opts_t c = *o;
    /* RV "0" is served from the watch cache in one page whatever the limit: unset it to page */
    if (w->consistent && c.resource_version && !strcmp(c.resource_version, "0")) c.resource_version = NULL;
    w->list_fn = fn;
    w->list_fn_ud = fn_ud;
    return w->inner->list_stream(w->inner->ud, &c, w_list_bytes, w, err);
}

static lop_rc_t w_list(void *ud, const lop_list_opts_t *o, lop_buf_t *body, lop_err_t *err)
{
    wrap_t *w = ud;
    lop_rc_t rc = w->inner->list(w->inner->ud, o, body, err);
    if (rc == LOP_OK) atomic_fetch_add(&recv_bytes, body->len);
    if (rc != LOP_OK || !w->from_rv) return rc;
    /* splice the new RV into metadata.resourceVersion (the harness's own cost stays small:
     * this runs inside the measured CPU time) */
    size_t ms, me, vs, ve;
    if (lop_jscan_find(body->data, body->len, 0, "metadata", &ms, &me) != 1 ||
        lop_jscan_find(body->data, me, ms, "resourceVersion", &vs, &ve) != 1)
        return lop_err_set(err, LOP_ERR, 0, NULL, "bench: list body without metadata.resourceVersion");
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_append(&b, body->data, vs);
    lop_buf_json_str(&b, w->from_rv, strlen(w->from_rv));
    lop_buf_append(&b, body->data + ve, body->len - ve);
    lop_buf_free(body);
    *body = b;
    return rc;
}

static int w_bytes(void *ud, const char *data, size_t len)
{
    wrap_t *w = ud;
    chunk_arrival = bu_now();
    atomic_fetch_add(&recv_bytes, len);
    return w->fn(w->fn_ud, data, len);
}

static void reset_peak(void);

static lop_rc_t w_watch(void *ud, const lop_watch_opts_t *o, lop_stream_fn fn, void *fn_ud, lop_err_t *err)
{
    wrap_t *w = ud;
    if (w->t_watch == 0) {
        if (burst_store) { /* the listed objects are cached: the burst starts here */
            atomic_store(&rss_start_kb, bu_status_kb("VmRSS"));
            reset_peak();
        }
        w->t_watch = bu_now();
    }
    w->fn = fn;
    w->fn_ud = fn_ud;
    return w->inner->watch(w->inner->ud, o, w_bytes, w, err);
}

static void w_cancel(void *ud)
{
    wrap_t *w = ud;
    w->inner->cancel(w->inner->ud);
}

static void w_free(void *ud)
{
    wrap_t *w = ud;
    lop_rest_listwatch_free(w->inner);
}

/* POST body (JSON) to SERVER_URL + path; 0 on a 2xx. */
static int post(const char *base, const char *path, const char *body)
{
    char url[1024];
    snprintf(url, sizeof url, "%s%s", base, path);
    CURL *h = curl_easy_init();
    size_t ignored = 0;
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, bu_curl_count);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &ignored);
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
    if (rc != CURLE_OK || code < 200 || code > 299) {
        fprintf(stderr, "luaop: POST %s -> %ld %s\n", url, code, curl_easy_strerror(rc));
        return -1;
    }
    return 0;
}

/* Reset VmHWM to the current RSS (Linux: "5" to clear_refs). */
static void reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

static int cmp_f(const void *x, const void *y)
{
    float a = *(const float *)x, b = *(const float *)y;
    return a < b ? -1 : a > b;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The burst measurement (see the header): wait for the M-th event, then for the queue to drain,
 * stop, and compare what the worker last saw per key with the store's final state. */
static int burst(lop_reflector_t *r, wrap_t *w, long want, double c0, double deadline)
{
    long rss_at[2] = {-1, -1}, peak_sampled = 0;
    while (atomic_load(&updates) < want && bu_now() < deadline) {
        long u = atomic_load(&updates), rss = bu_status_kb("VmRSS");
        if (atomic_load(&rss_start_kb) < 0) { /* still listing: the burst has not started */
            sleep_ms(1);
            continue;
        }
        if (rss > peak_sampled) peak_sampled = rss;
        if (rss_at[0] < 0 && u >= want / 10) rss_at[0] = rss;
        if (rss_at[1] < 0 && u >= want / 2) rss_at[1] = rss;
        sleep_ms(10); /* sampling costs CPU, counted in cpu_s: 100 reads of /proc a second */
    }
    long got = atomic_load(&updates);
    if (got < want) {
        fprintf(stderr, "luaop: %ld of %ld events after 600 s\n", got, want);
        return 1;
    }
    double t_all = t_last_event, dt = t_all - w->t_watch;
    long rss_all = bu_status_kb("VmRSS");
    lop_workqueue_stats_t st;
    for (;;) {
        lop_workqueue_stats(queue, &st);
        if ((st.depth == 0 && st.processing == 0 && st.waiting == 0) || bu_now() > deadline) break;
        sleep_ms(1);
    }
    double drain = bu_now() - t_all, cpu = bu_cpu() - c0;
    long rss_end = bu_status_kb("VmRSS"), peak = bu_status_kb("VmHWM");
    lop_reflector_stop(r);
    lop_workqueue_shutdown(queue);
    pthread_join(worker_thread, NULL);
    /* no lost update: each key's last reconcile read the resourceVersion the store ends with */
    size_t nkeys = 0;
    char **keys = lop_store_keys(burst_store, &nkeys);
    long lost = 0;
    for (size_t i = 0; i < nkeys; i++) {
        lop_obj_t *o = lop_store_get(burst_store, keys[i]);
        const char *rv = lop_strmap_get(&seen, keys[i]);
        if (!o || !rv || strcmp(rv, o->rv)) {
            if (!lost)
                fprintf(stderr, "luaop: %s last reconciled at %s, final %s\n", keys[i], rv ? rv : "(never)",
                        o ? o->rv : "(gone)");
            lost++;
        }
        lop_obj_unref(o);
        free(keys[i]);
    }
    free(keys);
    lop_strmap_iter_t it;
    for (lop_strmap_ent_t *e = lop_strmap_first(&seen, &it); e; e = lop_strmap_next(&seen, &it, e)) free(e->val);
    printf("events=%ld keys=%zu seconds=%.4f rate=%.1f cpu_s=%.4f reconciles=%ld adds=%llu depth_max=%ld "
           "drain_s=%.4f delay_us=%ld rss_start_kb=%ld rss_10_kb=%ld rss_50_kb=%ld rss_all_kb=%ld "
           "rss_end_kb=%ld peak_kb=%ld peak_sampled_kb=%ld lost=%ld\n",
           want, nkeys, dt, want / dt, cpu, atomic_load(&reconciles), (unsigned long long)st.adds,
           atomic_load(&depth_max), drain, delay_us, atomic_load(&rss_start_kb), rss_at[0], rss_at[1], rss_all, rss_end,
           peak, peak_sampled, lost);
    return 0; /* a lost update is reported (lost > 0) and judged by bench.py */
}

/* build mode: the host's object build (validate, cut managedFields, index metadata) on one
 * document N times, for callgrind's instructions per byte (json-micro's regression guard). The
 * fixture's @NS@/@NAME@/@I@ are filled in as json_micro.lua does. */
static int build_only(const char *path, long n)
{
    char *doc = bu_fixture(path);
    if (!doc) return 1;
    size_t size = strlen(doc);
    for (long i = 0; i < n; i++) {
        lop_obj_t *o;
        lop_err_t err;
        if (lop_obj_new(doc, size, 0, &o, &err) != LOP_OK) {
            fprintf(stderr, "luaop: %s: %s\n", path, err.message);
            return 1;
        }
        lop_obj_unref(o);
    }
    printf("bytes=%zu builds=%ld\n", size, n);
    free(doc);
    return 0;
}

/* relist: recovery from a 410 after the reflector's resume point was made stale (server_url: the
 * local API server's fault API). 0, or 1 when the relist was not delivered in time. */
static int relist_report(lop_reflector_t *r, lop_store_t *store, const char *server_url, double deadline)
{
    while (!lop_reflector_has_synced(r) && bu_now() < deadline) sleep_ms(1);
    lop_store_stats_t st;
    lop_store_stats(store, &st);
    /* wait for the watch to be established before the fault */
    lop_reflector_stats_t rs;
    do {
        sleep_ms(5);
        lop_reflector_stats(r, &rs);
    } while (rs.watches == 0 && bu_now() < deadline);
    sleep_ms(100);
    malloc_trim(0);
    long steady = bu_status_kb("VmRSS");
    reset_peak();
    long base_updates = atomic_load(&updates);
    double tf = bu_now();
    /* Make the reflector's resume point stale: hold its watch, write one object it will not
     * see, drop the history, end the watch, let new watches flow. Its re-watch gets 410. */
    if (post(server_url, "/luaop-fault/stall?on=true", "") ||
        post(server_url, "/api/v1/namespaces/default/configmaps",
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bench-relist\"}}") ||
        post(server_url, "/luaop-fault/compact", "") || post(server_url, "/luaop-fault/close-watches", "") ||
        post(server_url, "/luaop-fault/stall?on=false", ""))
        return 1;
    while (atomic_load(&updates) - base_updates < (long)st.count && bu_now() < deadline) sleep_ms(1);
    double dt = bu_now() - tf;
    long peak = bu_status_kb("VmHWM");
    malloc_trim(0);
    long after = bu_status_kb("VmRSS");
    lop_reflector_stats(r, &rs);
    if (atomic_load(&updates) - base_updates < (long)st.count) {
        fprintf(stderr, "luaop: relist not delivered after 600 s\n");
        return 1;
    }
    printf("objects=%zu recover_s=%.4f steady_kb=%ld peak_kb=%ld after_kb=%ld relists_410=%llu "
           "lists=%llu list_pages=%llu backoff_ms=%.1f\n",
           st.count, dt, steady, peak, after, (unsigned long long)rs.relists_410, (unsigned long long)rs.lists,
           (unsigned long long)rs.list_pages, rs.last_backoff_ns / 1e6);
    return 0;
}

/* sync: time, CPU and memory of the first list into the store, once synced. */
static int sync_report(lop_reflector_t *r, lop_store_t *store, double t0, double c0, long rss0)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 600;
    while (sem_timedwait(&synced_sem, &until) != 0 && errno == EINTR) {}
    double dt = bu_now() - t0, cpu = bu_cpu() - c0;
    if (!lop_reflector_has_synced(r)) {
        fprintf(stderr, "luaop: not synced after 600 s\n");
        return 1;
    }
    lop_store_stats_t st;
    size_t recv = atomic_load(&recv_bytes);
    lop_store_stats(store, &st);
    long hwm = bu_status_kb("VmHWM");
    malloc_trim(0);
    long rss1 = bu_status_kb("VmRSS");
    lop_reflector_stats_t rs;
    lop_reflector_stats(r, &rs);
    printf("objects=%zu seconds=%.4f cpu_s=%.4f rate=%.1f cache_bytes=%zu rss_delta_kb=%ld hwm_kb=%ld "
           "rss_kb=%ld list_pages=%llu watch_lists=%llu recv_bytes=%zu heap_inuse_kb=%zu\n",
           st.count, dt, cpu, st.count / dt, st.bytes, rss1 - rss0, hwm, rss1, (unsigned long long)rs.list_pages,
           (unsigned long long)rs.watch_lists, recv, mallinfo2().uordblks / 1024);
    return 0;
}

/* watch: rate and latency of want events after the watch started (w->t_watch). */
static int watch_report(const wrap_t *w, long want, double c0)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 600;
    while (sem_timedwait(&all_events, &until) != 0 && errno == EINTR) {}
    double dt = bu_now() - w->t_watch, cpu = bu_cpu() - c0;
    long got = atomic_load(&updates);
    if (got < want) {
        fprintf(stderr, "luaop: %ld of %ld events after 600 s\n", got, want);
        return 1;
    }
    qsort(lat_ms, (size_t)want, sizeof *lat_ms, cmp_f);
    printf("events=%ld seconds=%.4f cpu_s=%.4f rate=%.1f p50_ms=%.3f p99_ms=%.3f\n", want, dt, cpu, want / dt,
           lat_ms[want / 2], lat_ms[(long)(want * 0.99)]);
    return 0;
}

/* Handler bursts are workqueue batches, as the runtime binds them. */
static const lop_handler_batch_t queue_batch = {lop_workqueue_batch_begin, lop_workqueue_batch_flush,
                                                lop_workqueue_batch_end};

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "build")) return build_only(argv[2], atol(argv[3]));
    bool watch_mode = argc == 7 && !strcmp(argv[1], "watch");
    bool relist_mode = argc == 6 && !strcmp(argv[1], "relist");
    bool burst_mode = argc == 8 && !strcmp(argv[1], "burst");
    if (!(argc == 6 && !strcmp(argv[1], "sync")) && !watch_mode && !relist_mode && !burst_mode) {
        fprintf(stderr, "usage: lopbench-luaop sync KUBECONFIG API_VERSION KIND strip|keep|meta|meta-client\n"
                        "       lopbench-luaop watch KUBECONFIG API_VERSION KIND FROM_RV M\n"
                        "       lopbench-luaop burst KUBECONFIG API_VERSION KIND FROM_RV M DELAY_US\n"
                        "       lopbench-luaop relist KUBECONFIG API_VERSION KIND SERVER_URL\n"
                        "       lopbench-luaop build FIXTURE_JSON N\n");
        return 2;
    }
    lop_malloc_tune(); /* as luaop's main does */
    no_queue = getenv("LOPBENCH_NO_QUEUE") && !strcmp(getenv("LOPBENCH_NO_QUEUE"), "1");
    lop_err_t err = {0};
    lop_kubeconfig_opts_t ko = {.path = argv[2], .no_incluster = true};
    lop_rest_config_t cfg = {0};
    lop_rest_client_t *client = NULL;
    if (lop_kubeconfig_load(&ko, &cfg, &err) != LOP_OK) goto fail;
    cfg.qps = -1;
    if (lop_rest_client_new(&cfg, &client, &err) != LOP_OK) goto fail;
    lop_rest_config_cleanup(&cfg);
    lop_restmapper_t *rm = lop_restmapper_new(client);
    lop_rest_mapping_t mp;
    if (lop_restmapper_resolve(rm, argv[3], argv[4], &mp, &err) != LOP_OK) goto fail;

    const char *cache = argc == 6 && !strcmp(argv[1], "sync") ? argv[5] : "strip";
    bool meta = !strcmp(cache, "meta"), meta_client = !strcmp(cache, "meta-client");
    /* meta: what a metadata_only watch runs (the server sends metadata only) */
    wrap_t w = {.inner = meta ? lop_rest_listwatch_new_metadata(client, &mp, NULL, NULL, NULL)
                              : lop_rest_listwatch_new(client, &mp, NULL, NULL, NULL)};
    char api_version[200];
    snprintf(api_version, sizeof api_version, "%s%s%s", mp.group, *mp.group ? "/" : "", mp.version);
    long want = 0;
    if (watch_mode || burst_mode) {
        w.from_rv = argv[5];
        want = atol(argv[6]);
    }
    if (watch_mode) {
        sem_init(&all_events, 0, 0);
        want_events = want;
        lat_cap = want;
        lat_ms = calloc((size_t)want, sizeof *lat_ms);
    }
    bool no_stream = getenv("LOPBENCH_NO_STREAM") && !strcmp(getenv("LOPBENCH_NO_STREAM"), "1");
    /* sync modes (sync-paged): list (default: RV=0, one page), paged (consistent read, limit 500
     * with continue tokens), watch-list (sendInitialEvents, no LIST) */
    const char *mode = getenv("LOPBENCH_SYNC_MODE") ? getenv("LOPBENCH_SYNC_MODE") : "list";
    w.consistent = !strcmp(mode, "paged");
    lop_listwatch_t lw = {.ud = &w,
                          .list = w_list,
                          .watch = w_watch,
                          .cancel = w_cancel,
                          .free = w_free,
                          .list_stream = w.from_rv || no_stream ? NULL : w_list_stream};
    lop_store_t *store = lop_store_new();
    if (burst_mode) {
        burst_store = store;
        burst_want = want;
        delay_us = atol(argv[7]);
    }
    queue = lop_workqueue_new("bench", NULL, NULL);
    pthread_create(&worker_thread, NULL, worker, NULL);
    lop_reflector_config_t rc = {
        .name = "bench",
        .lw = &lw,
        .store = store,
        .handlers = {on_add, on_update, NULL, NULL, on_synced},
        .batch = &queue_batch, /* as the runtime binds it (host/runtime/manager.c) */
        .obj_flags = !strcmp(cache, "keep") ? LOP_OBJ_KEEP_MANAGED_FIELDS
                     : meta || meta_client  ? LOP_OBJ_METADATA_ONLY
                                            : 0,
        .api_version = api_version,
        .kind = mp.kind,
        .idle_timeout_ms = -1,
        .watch_list = !strcmp(mode, "watch-list"),
        /* LOPBENCH_PAGE_SIZE: the list limit (0/unset = the reflector's 500) */
        .page_size = getenv("LOPBENCH_PAGE_SIZE") ? atol(getenv("LOPBENCH_PAGE_SIZE")) : 0,
    };
    malloc_trim(0);
    long rss0 = bu_status_kb("VmRSS");
    sem_init(&synced_sem, 0, 0);
    lop_reflector_t *r = lop_reflector_new(&rc, &err);
    if (!r) goto fail;
    double t0 = bu_now(), c0 = bu_cpu();
    if (lop_reflector_start(r, &err) != LOP_OK) goto fail;
    double deadline = t0 + 600;
    if (burst_mode) {
        int rc_b = burst(r, &w, want, c0, deadline);
        lop_strmap_clear(&seen);
        lop_reflector_free(r);
        lop_workqueue_free(queue);
        lop_store_free(store);
        lop_restmapper_free(rm);
        lop_rest_client_free(client);
        return rc_b;
    }
    int rc_report = relist_mode  ? relist_report(r, store, argv[5], deadline)
                    : watch_mode ? watch_report(&w, want, c0)
                                 : sync_report(r, store, t0, c0, rss0);
    if (rc_report) return rc_report;
    lop_reflector_stop(r);
    lop_reflector_free(r);
    lop_workqueue_shutdown(queue);
    pthread_join(worker_thread, NULL);
    lop_workqueue_free(queue);
    lop_store_free(store);
    lop_restmapper_free(rm);
    lop_rest_client_free(client);
    free(lat_ms);
    return 0;
fail:
    fprintf(stderr, "luaop: %s (%s)\n", err.message, err.reason);
    return 1;
}
