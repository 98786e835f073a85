/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the observability hooks: the workqueue's per-item observer and bounded drain,
 * the controller's bounded stop (abandoned reconciles) and VM memory observer, the REST client's
 * per-attempt observer feeding rest_client_* metrics. Fake clocks; no sleeps. */
#include "host/kube/client/rest.h"
#include "host/kube/workqueue/workqueue.h"
#include "host/runtime/controller.h"
#include "host/runtime/metrics/metrics_bind.h"
#include "host/runtime/scripts.h"
#include "host/util/log.h"
#include "t.h"
#include "test_rest_fakesrv.h"

#include <sched.h>
#include <stdlib.h>

#define S LOP_NS_PER_S

#include "stepper.h"

static void stepper_start(stepper_t *s, lop_fake_clock_t *fc) { stepper_start_by(s, fc, 10 * LOP_NS_PER_MS); }

/* ---- workqueue observer ---- */

typedef struct wq_obs {
    int64_t latency[4], work[4];
    int nlat, nwork;
} wq_obs_t;

static void on_wq(void *ud, lop_wq_observe_kind_t kind, int64_t ns)
{
    wq_obs_t *o = ud;
    if (kind == LOP_WQ_OBSERVE_QUEUE_LATENCY && o->nlat < 4) o->latency[o->nlat++] = ns;
    if (kind == LOP_WQ_OBSERVE_WORK_DURATION && o->nwork < 4) o->work[o->nwork++] = ns;
}

static void test_workqueue_observer_reports_latency_and_work(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_workqueue_t *q = lop_workqueue_new("q", &fc.base, NULL);
    wq_obs_t o = {0};
    lop_workqueue_set_observer(q, on_wq, &o);
    lop_workqueue_add(q, "ns/a");
    lop_fake_clock_step(&fc, 2 * S);
    char *it = NULL;
    T_EQ_INT(lop_workqueue_try_get(q, &it), LOP_OK);
    T_EQ_INT(o.nlat, 1);
    T_EQ_INT(o.latency[0], 2 * S);
    lop_fake_clock_step(&fc, 3 * S);
    lop_workqueue_done(q, it);
    T_EQ_INT(o.nwork, 1);
    T_EQ_INT(o.work[0], 3 * S);
    lop_workqueue_done(q, it); /* not processing any more: nothing reported */
    T_EQ_INT(o.nwork, 1);
    free(it);
    T_EQ_INT(lop_workqueue_try_get(q, &it) == LOP_EAGAIN ? 0 : 1, 0);
    T_EQ_INT(o.nlat, 1); /* an empty get reports nothing */
    lop_workqueue_set_observer(q, NULL, NULL);
    lop_workqueue_add(q, "ns/b");
    T_EQ_INT(lop_workqueue_try_get(q, &it), LOP_OK);
    T_EQ_INT(o.nlat, 1);
    lop_workqueue_done(q, it);
    free(it);
    lop_workqueue_free(q);
}

static void test_workqueue_bounded_drain(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_workqueue_t *q = lop_workqueue_new("q", &fc.base, NULL);
    lop_workqueue_add(q, "ns/slow");
    char *it = NULL;
    T_EQ_INT(lop_workqueue_try_get(q, &it), LOP_OK);
    lop_fake_clock_step(&fc, 5 * S);
    stepper_t st;
    stepper_start(&st, &fc);
    int64_t deadline = lop_clock_mono(&fc.base) + 1 * S;
    T_CHECK(!lop_workqueue_shutdown_with_drain_until(q, deadline));
    stepper_stop(&st);
    T_CHECK(lop_clock_mono(&fc.base) >= deadline);
    char *items[2];
    int64_t ns[2];
    T_EQ_INT(lop_workqueue_processing_items(q, items, ns, 2), 1);
    T_EQ_STR(items[0], "ns/slow");
    T_CHECK(ns[0] >= 6 * S);
    free(items[0]);
    lop_workqueue_done(q, it);
    free(it);
    T_CHECK(lop_workqueue_shutdown_with_drain_until(q, lop_clock_mono(&fc.base)));
    T_EQ_INT(lop_workqueue_processing_items(q, items, ns, 2), 0);
    lop_workqueue_free(q);
}

/* ---- controller: bounded stop and memory observer (a C fake engine) ---- */

static pthread_mutex_t block_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t block_cond = PTHREAD_COND_INITIALIZER;
static bool block_release;
static atomic_int in_reconcile;

static lop_vm_t *fake_vm_new(const lop_script_set_t *set, const lop_engine_opts_t *opts, const lop_host_api_t *host,
                             lop_err_t *err)
{
    (void)set, (void)opts, (void)host, (void)err;
    return (lop_vm_t *)calloc(1, 16);
}
static void fake_reconcile(lop_vm_t *v, const char *controller, const lop_reconcile_req_t *req,
                           lop_reconcile_result_t *res)
{
    (void)v, (void)controller;
    memset(res, 0, sizeof *res);
    if (strcmp(req->name, "block") == 0) {
        atomic_store(&in_reconcile, 1);
        pthread_mutex_lock(&block_mu);
        while (!block_release) pthread_cond_wait(&block_cond, &block_mu);
        pthread_mutex_unlock(&block_mu);
        atomic_store(&in_reconcile, 2);
    }
    res->kind = LOP_RESULT_DONE;
}
static void fake_vm_free(lop_vm_t *vm) { free(vm); }
static size_t fake_memory(lop_vm_t *vm)
{
    (void)vm;
    return 4321;
}
static const lop_engine_t fake_engine = {
    .name = "fake",
    .vm_new = fake_vm_new,
    .reconcile = fake_reconcile,
    .vm_free = fake_vm_free,
    .memory = fake_memory,
};

static lop_scriptrt_t *mk_rt(lop_engine_opts_t *opts, lop_host_api_t *host, lop_fake_clock_t *fc)
{
    memset(opts, 0, sizeof *opts);
    memset(host, 0, sizeof *host);
    opts->clock = &fc->base;
    lop_scriptrt_t *rt = lop_scriptrt_new(&fake_engine, opts, host);
    lop_script_file_t f = {"main.lua", (char *)"1", 1};
    lop_err_t err;
    T_EQ_INT(lop_scriptrt_install(rt, lop_scripts_from_files(&f, 1, "t"), NULL, NULL, &err), LOP_OK);
    return rt;
}

static char mem_vm[64];
static size_t mem_bytes;
static void on_mem(void *ud, const char *controller, int worker, size_t bytes)
{
    (void)ud;
    snprintf(mem_vm, sizeof mem_vm, "%s/%d", controller, worker);
    mem_bytes = bytes;
}

static void test_controller_reports_vm_memory(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_engine_opts_t opts;
    lop_host_api_t host;
    lop_scriptrt_t *rt = mk_rt(&opts, &host, &fc);
    lop_controller_opts_t co = {.name = "memc", .workers = 1, .clock = &fc.base, .rt = rt, .memory_observer = on_mem};
    lop_controller_t *c = lop_controller_new(&co);
    lop_vm_slot_t slot = {NULL, 0};
    lop_controller_enqueue(c, "ns", "a");
    T_EQ_INT(lop_controller_process_one(c, &slot), LOP_OK);
    T_EQ_STR(mem_vm, "memc/0");
    T_EQ_INT(mem_bytes, 4321);
    lop_vm_slot_release(rt, &slot);
    lop_controller_free(c);
    lop_scriptrt_free(rt);
}

/* The abandoned controller and its runtime: never freed (its stop gave up on a worker), kept
 * reachable here as a process exiting after an abandoning stop keeps them, so that a leak
 * checker (make asan) reports only real leaks. */
/* volatile: these are only written, and the optimizer drops stores to a static nobody reads,
 * which left the objects unreachable and made LeakSanitizer report them (make asan) */
static lop_controller_t *volatile abandoned_controller;
static lop_scriptrt_t *volatile abandoned_rt;

static void test_controller_stop_abandons_after_grace(void)
{
    /* static: the abandoned worker outlives this function and still reads them */
    static lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    static lop_engine_opts_t opts;
    static lop_host_api_t host;
    lop_scriptrt_t *rt = mk_rt(&opts, &host, &fc);
    lop_controller_opts_t co = {.name = "slow", .workers = 1, .clock = &fc.base, .rt = rt};
    lop_controller_t *c = lop_controller_new(&co);
    lop_err_t err;
    T_EQ_INT(lop_controller_start(c, &err), LOP_OK);
    lop_controller_enqueue(c, "ns", "block");
    while (atomic_load(&in_reconcile) != 1) sched_yield(); /* the worker is inside reconcile */
    stepper_t st;
    stepper_start(&st, &fc);
    int64_t t0 = lop_clock_mono(&fc.base);
    T_EQ_INT(lop_controller_stop(c, 2 * S), 1);
    stepper_stop(&st);
    T_CHECK(lop_clock_mono(&fc.base) - t0 >= 2 * S);
    T_EQ_INT(lop_controller_stop(c, 2 * S), 1); /* sticky */
    lop_controller_free(c);                     /* a no-op: its worker still runs */
    /* Let the abandoned worker finish: it sees the shut-down queue and exits on its own. */
    pthread_mutex_lock(&block_mu);
    block_release = true;
    pthread_cond_broadcast(&block_cond);
    pthread_mutex_unlock(&block_mu);
    while (atomic_load(&in_reconcile) != 2) sched_yield();
    abandoned_controller = c;
    abandoned_rt = rt;
}

static void test_controller_stop_drains_within_grace(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_engine_opts_t opts;
    lop_host_api_t host;
    lop_scriptrt_t *rt = mk_rt(&opts, &host, &fc);
    lop_controller_opts_t co = {.name = "quick", .workers = 2, .clock = &fc.base, .rt = rt};
    lop_controller_t *c = lop_controller_new(&co);
    lop_err_t err;
    T_EQ_INT(lop_controller_start(c, &err), LOP_OK);
    for (int i = 0; i < 5; i++) {
        char n[8];
        snprintf(n, sizeof n, "k%d", i);
        lop_controller_enqueue(c, "ns", n);
    }
    stepper_t st;
    stepper_start(&st, &fc);
    T_EQ_INT(lop_controller_stop(c, 30 * S), 0);
    stepper_stop(&st);
    lop_controller_stats_t cs;
    lop_controller_stats(c, &cs);
    /* stop = stop intake: in-flight reconciles finished (nothing abandoned: 0 above), keys still
     * queued are not taken, and nothing runs after stop returned */
    T_CHECK(cs.reconciles <= 5);
    T_EQ_INT(cs.active_workers, 0);
    lop_controller_enqueue(c, "ns", "late");
    lop_controller_stats_t after;
    lop_controller_stats(c, &after);
    T_EQ_INT(after.reconciles, cs.reconciles);
    lop_controller_free(c);
    lop_scriptrt_free(rt);
}

/* ---- REST client observer -> rest_client_* metrics ---- */

static void h_ok_then_404(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b,
                          fs_reply_t *out)
{
    (void)s, (void)m, (void)p, (void)h, (void)b;
    if (n == 0)
        out->owned = fs_resp(200, "OK", "", "application/json", "{}");
    else
        out->owned = fs_resp(404, "Not Found", "", "application/json",
                             "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\",\"message\":\"x\"}");
}

typedef struct rest_obs {
    int n;
    char method[8];
    int codes[4];
    char host[64];
    lop_metrics_std_t *std;
} rest_obs_t;

static void on_rest(void *ud, const char *method, int code, const char *host, int64_t ns)
{
    rest_obs_t *o = ud;
    if (o->n < 4) o->codes[o->n] = code;
    o->n++;
    snprintf(o->method, sizeof o->method, "%s", method);
    snprintf(o->host, sizeof o->host, "%s", host);
    T_CHECK(ns >= 0);
    lop_metrics_observe_rest(o->std, method, code, host, ns);
}

static void test_rest_observer_feeds_client_go_metrics(void)
{
    fs_server_t *s = fs_start(h_ok_then_404, NULL);
    lop_rest_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    char url[64], host[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s->port);
    snprintf(host, sizeof host, "127.0.0.1:%d", s->port);
    cfg.server = strdup(url);
    cfg.qps = -1;
    lop_rest_client_t *c = NULL;
    lop_err_t err;
    T_EQ_INT(lop_rest_client_new(&cfg, &c, &err), LOP_OK);
    lop_rest_config_cleanup(&cfg);
    T_EQ_STR(lop_rest_client_host(c), host);
    lop_metrics_t *reg = lop_metrics_new();
    lop_metrics_std_t std;
    T_EQ_INT(lop_metrics_std_init(&std, reg, &err), LOP_OK);
    rest_obs_t o = {.std = &std};
    lop_rest_client_set_observer(c, on_rest, &o);
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces/d/configmaps/a", NULL, NULL, 0, NULL, &err), LOP_OK);
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces/d/configmaps/b", NULL, NULL, 0, NULL, &err), LOP_ENOTFOUND);
    T_EQ_INT(o.n, 2);
    T_EQ_INT(fs_nreqs(s), 2);
    char *r0 = fs_req(s, 0);
    T_CHECK(strncmp(r0, "GET /api/v1/namespaces/d/configmaps/a", 37) == 0);
    free(r0);
    T_EQ_INT(o.codes[0], 200);
    T_EQ_INT(o.codes[1], 404);
    T_EQ_STR(o.method, "GET");
    T_EQ_STR(o.host, host);
    lop_buf_t out = LOP_BUF_INIT;
    lop_metrics_render(reg, &out);
    char want[256];
    snprintf(want, sizeof want, "rest_client_requests_total{code=\"200\",method=\"GET\",host=\"%s\"} 1\n", host);
    T_CHECK(strstr(out.data, want) != NULL);
    snprintf(want, sizeof want, "rest_client_requests_total{code=\"404\",method=\"GET\",host=\"%s\"} 1\n", host);
    T_CHECK(strstr(out.data, want) != NULL);
    snprintf(want, sizeof want, "rest_client_request_duration_seconds_count{verb=\"GET\",host=\"%s\"} 2\n", host);
    T_CHECK(strstr(out.data, want) != NULL);
    if (!strstr(out.data, want)) fprintf(stderr, "%s\n", out.data);
    lop_buf_free(&out);
    lop_rest_client_set_observer(c, NULL, NULL);
    T_EQ_INT(lop_rest_do(c, "GET", "/x", NULL, NULL, 0, NULL, &err), LOP_ENOTFOUND);
    T_EQ_INT(o.n, 2);
    lop_rest_client_free(c);
    lop_metrics_free(reg);
    fs_stop(s);
}

int main(void)
{
    lop_log_setup(LOP_LOG_ERROR, LOP_LOG_TEXT);
    T_RUN(test_workqueue_observer_reports_latency_and_work);
    T_RUN(test_workqueue_bounded_drain);
    T_RUN(test_controller_reports_vm_memory);
    T_RUN(test_controller_stop_drains_within_grace);
    T_RUN(test_controller_stop_abandons_after_grace);
    T_RUN(test_rest_observer_feeds_client_go_metrics);
    return T_DONE();
}
