/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/runtime/metrics_bind: standard families read from real components
 * (workqueue, store, elector) at scrape time, the reconcile observer and REST observations. */
#include "host/kube/leaderelection/lease.h"
#include "host/kube/leaderelection/leaderelection.h"
#include "host/kube/cache/object.h"
#include "host/kube/cache/store.h"
#include "host/kube/workqueue/workqueue.h"
#include "host/runtime/metrics/metrics_bind.h"
#include "t.h"

#include <math.h>
#include <stdlib.h>

/* Value of the child of family `name` with the given label values (NAN when absent). */
static double val(lop_metrics_t *r, const char *name, const char *const *values)
{
    lop_metric_family_t *f = lop_metrics_find(r, name);
    if (!f) return NAN;
    lop_metric_t *m = lop_metric_child(f, values, NULL);
    if (!m) return NAN;
    return lop_metric_family_type(f) == LOP_METRIC_HISTOGRAM ? (double)lop_metric_count(m) : lop_metric_value(m);
}

#define Q(name) ((const char *[]){name})
/* A controller's queue: the controller and name labels both carry the controller's name. */
#define QQ(name) ((const char *[]){name, name})

static void test_queue_values_read_at_scrape(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_metrics_t *r = lop_metrics_new();
    lop_metrics_std_t std;
    T_EQ_INT(lop_metrics_std_init(&std, r, NULL), LOP_OK);
    lop_workqueue_t *q = lop_workqueue_new("memcached", &fc.base, NULL);
    lop_metrics_queue_t qm;
    T_EQ_INT(lop_metrics_bind_queue(&std, "memcached", q, &qm, NULL), LOP_OK);

    lop_workqueue_add(q, "ns/a");
    lop_workqueue_add(q, "ns/b");
    lop_workqueue_add(q, "ns/a"); /* deduplicated: not an add */
    T_CHECK(val(r, "workqueue_depth", QQ("memcached")) == 2);
    T_CHECK(val(r, "workqueue_adds_total", QQ("memcached")) == 2);

    char *item = NULL;
    T_EQ_INT(lop_workqueue_try_get(q, &item), LOP_OK);
    T_CHECK(val(r, "workqueue_depth", QQ("memcached")) == 1);
    lop_fake_clock_step(&fc, 3 * LOP_NS_PER_S);
    T_CHECK(val(r, "workqueue_unfinished_work_seconds", QQ("memcached")) == 3);
    T_CHECK(val(r, "workqueue_longest_running_processor_seconds", QQ("memcached")) == 3);
    lop_workqueue_add_after(q, "ns/c", 5 * LOP_NS_PER_S);
    T_CHECK(val(r, "workqueue_retries_total", QQ("memcached")) == 1);

    /* The rendered text carries the same numbers. */
    lop_buf_t b = LOP_BUF_INIT;
    lop_metrics_render(r, &b);
    T_CHECK(strstr(b.data, "workqueue_depth{controller=\"memcached\",name=\"memcached\"} 1\n") != NULL);
    T_CHECK(strstr(b.data, "workqueue_unfinished_work_seconds{controller=\"memcached\",name=\"memcached\"} 3\n") !=
            NULL);
    lop_buf_free(&b);

    lop_metrics_observe_queue_latency(&qm, 2 * LOP_NS_PER_MS);
    lop_metrics_observe_work_duration(&qm, 40 * LOP_NS_PER_MS);
    T_CHECK(val(r, "workqueue_queue_duration_seconds", QQ("memcached")) == 1);
    T_CHECK(val(r, "workqueue_work_duration_seconds", QQ("memcached")) == 1);

    lop_workqueue_done(q, item);
    free(item);
    lop_metrics_unbind_queue(&qm, q);
    lop_workqueue_free(q); /* no scrape may touch it any more */
    T_CHECK(val(r, "workqueue_depth", QQ("memcached")) == 0);
    lop_metrics_free(r);
}

static void test_rebind_then_unbind_old_keeps_new(void)
{
    lop_metrics_t *r = lop_metrics_new();
    lop_metrics_std_t std;
    T_EQ_INT(lop_metrics_std_init(&std, r, NULL), LOP_OK);
    lop_workqueue_t *oldq = lop_workqueue_new("c", NULL, NULL), *newq = lop_workqueue_new("c", NULL, NULL);
    lop_metrics_queue_t om, nm;
    lop_workqueue_add(newq, "x");
    T_EQ_INT(lop_metrics_bind_queue(&std, "c", oldq, &om, NULL), LOP_OK);
    T_EQ_INT(lop_metrics_bind_queue(&std, "c", newq, &nm, NULL), LOP_OK); /* script reload */
    lop_metrics_unbind_queue(&om, oldq);
    lop_workqueue_free(oldq);
    T_CHECK(val(r, "workqueue_depth", QQ("c")) == 1);
    lop_metrics_unbind_queue(&nm, newq);
    lop_workqueue_free(newq);
    T_CHECK(val(r, "workqueue_depth", QQ("c")) == 0);
    T_EQ_INT(lop_metrics_bind_queue(&std, "c", NULL, &nm, NULL), LOP_EINVAL);
    lop_metrics_free(r);
}

static void test_reconcile_observer_counts_like_controller_runtime(void)
{
    lop_metrics_t *r = lop_metrics_new();
    lop_metrics_std_t std;
    T_EQ_INT(lop_metrics_std_init(&std, r, NULL), LOP_OK);
    static const struct {
        lop_result_kind_t kind;
        int64_t ns;
    } seq[] = {{LOP_RESULT_DONE, 5 * LOP_NS_PER_MS},    {LOP_RESULT_DONE, 7 * LOP_NS_PER_MS},
               {LOP_RESULT_REQUEUE, 1 * LOP_NS_PER_MS}, {LOP_RESULT_REQUEUE_AFTER, 2 * LOP_NS_PER_S},
               {LOP_RESULT_ERROR, 300 * LOP_NS_PER_MS}, {LOP_RESULT_TERMINAL, 90 * LOP_NS_PER_S}};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
        lop_metrics_reconcile_observer(&std, "memcached", seq[i].kind, seq[i].ns);
    T_CHECK(val(r, "controller_runtime_reconcile_total", ((const char *[]){"memcached", "success"})) == 2);
    T_CHECK(val(r, "controller_runtime_reconcile_total", ((const char *[]){"memcached", "requeue"})) == 1);
    T_CHECK(val(r, "controller_runtime_reconcile_total", ((const char *[]){"memcached", "requeue_after"})) == 1);
    T_CHECK(val(r, "controller_runtime_reconcile_total", ((const char *[]){"memcached", "error"})) == 2);
    T_CHECK(val(r, "controller_runtime_reconcile_errors_total", Q("memcached")) == 2);
    T_CHECK(val(r, "controller_runtime_terminal_reconcile_errors_total", Q("memcached")) == 1);
    T_CHECK(val(r, "controller_runtime_reconcile_time_seconds", Q("memcached")) == 6);

    lop_buf_t b = LOP_BUF_INIT;
    lop_metrics_render(r, &b);
    /* 5 ms sits exactly on the first bound; 90 s only in +Inf. */
    T_CHECK(strstr(b.data, "controller_runtime_reconcile_time_seconds_bucket{controller="
                           "\"memcached\",le=\"0.005\"} 2\n"));
    T_CHECK(strstr(b.data, "controller_runtime_reconcile_time_seconds_bucket{controller="
                           "\"memcached\",le=\"60\"} 5\n"));
    T_CHECK(strstr(b.data, "controller_runtime_reconcile_time_seconds_bucket{controller="
                           "\"memcached\",le=\"+Inf\"} 6\n"));
    lop_buf_free(&b);
    lop_metrics_reconcile_observer(NULL, "x", LOP_RESULT_DONE, 1); /* ignored, no crash */
    lop_metrics_free(r);
}

static void test_store_objects_and_bytes(void)
{
    lop_metrics_t *r = lop_metrics_new();
    lop_metrics_std_t std;
    T_EQ_INT(lop_metrics_std_init(&std, r, NULL), LOP_OK);
    lop_store_t *s = lop_store_new();
    lop_metric_t *bound[2];
    T_EQ_INT(lop_metrics_bind_store(&std, "apps/v1/deployments", s, bound, NULL), LOP_OK);
    static const char *const objs[] = {
        "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"1\"}}",
        "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"resourceVersion\":\"2\"},\"spec\":{}"
        "}"};
    for (int i = 0; i < 2; i++) {
        lop_obj_t *o = NULL;
        T_EQ_INT(lop_obj_new(objs[i], strlen(objs[i]), 0, &o, NULL), LOP_OK);
        lop_store_put(s, o, NULL);
        lop_obj_unref(o);
    }
    lop_store_stats_t st;
    lop_store_stats(s, &st);
    T_CHECK(val(r, "luaop_informer_objects", Q("apps/v1/deployments")) == 2);
    T_CHECK(val(r, "luaop_informer_bytes", Q("apps/v1/deployments")) == (double)st.bytes);
    T_CHECK(st.bytes > 0);
    lop_metrics_unbind(bound, 2, s);
    lop_store_free(s);
    T_CHECK(val(r, "luaop_informer_objects", Q("apps/v1/deployments")) == 0);
    T_EQ_INT(lop_metrics_bind_store(&std, NULL, s, bound, NULL), LOP_EINVAL);
    lop_metrics_free(r);
}

static void put_obj(lop_store_t *s, const char *json)
{
    lop_obj_t *o = NULL;
    T_EQ_INT(lop_obj_new(json, strlen(json), 0, &o, NULL), LOP_OK);
    lop_store_put(s, o, NULL);
    lop_obj_unref(o);
}

static bool rendered(lop_metrics_t *r, const char *needle)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_metrics_render(r, &b);
    bool found = b.data && strstr(b.data, needle) != NULL;
    lop_buf_free(&b);
    return found;
}

/* The {gvr} series of a lop_metrics_gvr_t sum over its members, follow removals, and are gone
 * (not rendered) once the record is freed. */
static void test_gvr_series_sum_their_stores(void)
{
    lop_metrics_t *r = lop_metrics_new();
    lop_metrics_std_t std;
    T_EQ_INT(lop_metrics_std_init(&std, r, NULL), LOP_OK);
    lop_store_t *a = lop_store_new(), *b = lop_store_new();
    put_obj(a, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"x\",\"resourceVersion\":\"1\"}}");
    put_obj(b, "{\"metadata\":{\"name\":\"b\",\"namespace\":\"y\",\"resourceVersion\":\"2\"}}");
    put_obj(b, "{\"metadata\":{\"name\":\"c\",\"namespace\":\"y\",\"resourceVersion\":\"3\"}}");
    lop_store_stats_t sa, sb;
    lop_store_stats(a, &sa);
    lop_store_stats(b, &sb);
    lop_metrics_gvr_t *g = lop_metrics_gvr_new(&std, "v1/configmaps", NULL);
    T_CHECK(g != NULL);
    if (!g) {
        lop_metrics_free(r);
        return;
    }
    T_EQ_STR(lop_metrics_gvr_name(g), "v1/configmaps");
    T_CHECK(val(r, "luaop_informer_objects", Q("v1/configmaps")) == 0); /* no member yet */
    lop_metrics_gvr_add(g, a, NULL);
    lop_metrics_gvr_add(g, b, NULL);
    T_CHECK(val(r, "luaop_informer_objects", Q("v1/configmaps")) == 3);
    T_CHECK(val(r, "luaop_informer_bytes", Q("v1/configmaps")) == (double)(sa.bytes + sb.bytes));
    T_CHECK(val(r, "luaop_watch_restarts_total", Q("v1/configmaps")) == 0);
    T_CHECK(val(r, "luaop_relists_total", Q("v1/configmaps")) == 0);
    T_EQ_INT(lop_metrics_gvr_remove(g, a), 1);
    lop_store_free(a);
    T_CHECK(val(r, "luaop_informer_objects", Q("v1/configmaps")) == 2);
    T_CHECK(val(r, "luaop_informer_bytes", Q("v1/configmaps")) == (double)sb.bytes);
    T_CHECK(rendered(r, "luaop_informer_objects{gvr=\"v1/configmaps\"} 2\n"));
    T_EQ_INT(lop_metrics_gvr_remove(g, b), 0);
    lop_metrics_gvr_free(g);
    lop_store_free(b);
    T_CHECK(!rendered(r, "gvr=\"v1/configmaps\""));
    T_CHECK(lop_metrics_gvr_new(&std, NULL, NULL) == NULL);
    lop_metrics_free(r);
}

static void test_elector_master_status(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_metrics_t *r = lop_metrics_new();
    lop_metrics_std_t std;
    T_EQ_INT(lop_metrics_std_init(&std, r, NULL), LOP_OK);
    lop_lease_store_t *ls = lop_lease_store_new();
    lop_lease_client_t *lc = lop_lease_client_memory_new(ls, "test");
    lop_elector_config_t cfg;
    lop_elector_config_defaults(&cfg);
    cfg.identity = "replica-a";
    cfg.name = "luaop-system/luaop";
    cfg.client = lc;
    cfg.clock = &fc.base;
    cfg.jitter_seed = 1;
    lop_err_t err;
    lop_elector_t *e = lop_elector_new(&cfg, &err);
    T_CHECK(e != NULL);
    lop_metric_t *m = NULL;
    T_EQ_INT(lop_metrics_bind_elector(&std, "luaop", e, &m, NULL), LOP_OK);
    T_CHECK(val(r, "leader_election_master_status", Q("luaop")) == 0);
    lop_elector_tick(e); /* the Lease is free: this replica takes it */
    T_CHECK(lop_elector_is_leader(e));
    T_CHECK(val(r, "leader_election_master_status", Q("luaop")) == 1);
    lop_metrics_unbind(&m, 1, e);
    lop_elector_free(e);
    lop_lease_client_free(lc);
    lop_lease_store_free(ls);
    lop_metrics_free(r);
}

static void test_rest_observations(void)
{
    lop_metrics_t *r = lop_metrics_new();
    lop_metrics_std_t std;
    T_EQ_INT(lop_metrics_std_init(&std, r, NULL), LOP_OK);
    lop_metrics_observe_rest(&std, "GET", 200, "127.0.0.1:6443", 12 * LOP_NS_PER_MS);
    lop_metrics_observe_rest(&std, "GET", 200, "127.0.0.1:6443", 30 * LOP_NS_PER_MS);
    lop_metrics_observe_rest(&std, "PUT", 409, "127.0.0.1:6443", 5 * LOP_NS_PER_MS);
    lop_metrics_observe_rest(&std, "GET", 0, "127.0.0.1:6443", 1 * LOP_NS_PER_S);
    T_CHECK(val(r, "rest_client_requests_total", ((const char *[]){"200", "GET", "127.0.0.1:6443"})) == 2);
    T_CHECK(val(r, "rest_client_requests_total", ((const char *[]){"409", "PUT", "127.0.0.1:6443"})) == 1);
    T_CHECK(val(r, "rest_client_requests_total", ((const char *[]){"<error>", "GET", "127.0.0.1:6443"})) == 1);
    T_CHECK(val(r, "rest_client_request_duration_seconds", ((const char *[]){"GET", "127.0.0.1:6443"})) == 3);
    lop_buf_t b = LOP_BUF_INIT;
    lop_metrics_render(r, &b);
    T_CHECK(strstr(b.data, "rest_client_requests_total{code=\"<error>\",method=\"GET\",host=\"127.0.0.1:6443\"} 1\n"));
    lop_buf_free(&b);
    lop_metrics_free(r);
}

int main(void)
{
    T_RUN(test_queue_values_read_at_scrape);
    T_RUN(test_rebind_then_unbind_old_keeps_new);
    T_RUN(test_reconcile_observer_counts_like_controller_runtime);
    T_RUN(test_store_objects_and_bytes);
    T_RUN(test_gvr_series_sum_their_stores);
    T_RUN(test_elector_master_status);
    T_RUN(test_rest_observations);
    return T_DONE();
}
