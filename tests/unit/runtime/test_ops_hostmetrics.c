/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the luaop.metrics host API (host/runtime/hostapi_metrics.c) as a manager
 * exposes it to scripts: declare/update in the shared registry, reserved names refused, misuse
 * refused with a message; and the stuck-worker check of an idle manager. No server is contacted. */
#include "host/runtime/manager_internal.h"
#include "host/runtime/metrics/metrics.h"
#include "host/util/log.h"
#include "t.h"

#include <stdlib.h>

static const lop_engine_t no_engine = {.name = "none"};

typedef struct fx {
    lop_rest_client_t *rest;
    lop_restmapper_t *mapper;
    lop_metrics_t *reg;
    lop_metrics_std_t std;
    lop_manager_t *m;
} fx_t;

static void setup(fx_t *f, bool with_metrics)
{
    memset(f, 0, sizeof *f);
    lop_rest_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = strdup("http://127.0.0.1:9");
    lop_err_t err;
    T_EQ_INT(lop_rest_client_new(&cfg, &f->rest, &err), LOP_OK);
    lop_rest_config_cleanup(&cfg);
    f->mapper = lop_restmapper_new(f->rest);
    f->reg = lop_metrics_new();
    T_EQ_INT(lop_metrics_std_init(&f->std, f->reg, &err), LOP_OK);
    lop_manager_config_t mc = {
        .rest = f->rest, .mapper = f->mapper, .engine = &no_engine, .metrics = with_metrics ? &f->std : NULL};
    T_EQ_INT(lop_manager_new(&mc, &f->m, &err), LOP_OK);
}

static void teardown(fx_t *f)
{
    lop_manager_free(f->m);
    lop_metrics_free(f->reg);
    lop_restmapper_free(f->mapper);
    lop_rest_client_free(f->rest);
}

static void test_declare_and_update_show_in_the_registry(void)
{
    fx_t f;
    setup(&f, true);
    const lop_host_api_t *h = &f.m->host;
    T_CHECK(h->metric_declare != NULL && h->metric_update != NULL);
    lop_err_t err;
    const char *labels[] = {"namespace", NULL};
    void *c = h->metric_declare(h->ud, LOP_HOST_METRIC_COUNTER, "app_things_total", "things", labels, NULL, 0, &err);
    T_CHECK(c != NULL);
    /* every worker VM declares it again: the same handle */
    T_CHECK(h->metric_declare(h->ud, LOP_HOST_METRIC_COUNTER, "app_things_total", "things", labels, NULL, 0, &err) ==
            c);
    const char *vals[] = {"ns1"};
    T_EQ_INT(h->metric_update(h->ud, c, LOP_HOST_METRIC_ADD, vals, 1, 2, &err), LOP_OK);
    double b[] = {1, 5};
    void *hist = h->metric_declare(h->ud, LOP_HOST_METRIC_HISTOGRAM, "app_seconds", "", NULL, b, 2, &err);
    T_CHECK(hist != NULL);
    T_EQ_INT(h->metric_update(h->ud, hist, LOP_HOST_METRIC_OBSERVE, NULL, 0, 3, &err), LOP_OK);
    void *g = h->metric_declare(h->ud, LOP_HOST_METRIC_GAUGE, "app_level", "", NULL, NULL, 0, &err);
    T_EQ_INT(h->metric_update(h->ud, g, LOP_HOST_METRIC_SET, NULL, 0, -4.5, &err), LOP_OK);
    lop_buf_t out = LOP_BUF_INIT;
    lop_metrics_render(f.reg, &out);
    T_CHECK(strstr(out.data, "# TYPE app_things_total counter\n") != NULL);
    T_CHECK(strstr(out.data, "app_things_total{namespace=\"ns1\"} 2\n") != NULL);
    T_CHECK(strstr(out.data, "app_seconds_bucket{le=\"5\"} 1\n") != NULL);
    T_CHECK(strstr(out.data, "app_level -4.5\n") != NULL);
    T_CHECK(strstr(out.data, "# HELP app_seconds app_seconds\n") != NULL); /* empty help -> name */
    lop_buf_free(&out);
    teardown(&f);
}

static void test_reserved_names_and_misuse_are_refused(void)
{
    fx_t f;
    setup(&f, true);
    const lop_host_api_t *h = &f.m->host;
    lop_err_t err;
    const char *reserved[] = {"controller_runtime_reconcile_total", "workqueue_depth", "rest_client_x",
                              "leader_election_master_status", "luaop_lua_memory_bytes"};
    for (size_t i = 0; i < 5; i++) {
        lop_err_clear(&err);
        T_CHECK(h->metric_declare(h->ud, LOP_HOST_METRIC_COUNTER, reserved[i], "", NULL, NULL, 0, &err) == NULL);
        T_CHECK(strstr(err.message, "reserved") != NULL);
    }
    T_CHECK(h->metric_declare(h->ud, LOP_HOST_METRIC_COUNTER, "bad name", "", NULL, NULL, 0, &err) == NULL);
    T_CHECK(h->metric_declare(h->ud, 7, "app_x", "", NULL, NULL, 0, &err) == NULL);
    const char *labels[] = {"a", NULL};
    void *c = h->metric_declare(h->ud, LOP_HOST_METRIC_COUNTER, "app_c_total", "", labels, NULL, 0, &err);
    T_CHECK(c != NULL);
    /* another shape under the same name */
    T_CHECK(h->metric_declare(h->ud, LOP_HOST_METRIC_GAUGE, "app_c_total", "", labels, NULL, 0, &err) == NULL);
    const char *two[] = {"x", "y"};
    T_EQ_INT(h->metric_update(h->ud, c, LOP_HOST_METRIC_ADD, two, 2, 1, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "2 label values given, 1 declared") != NULL);
    T_EQ_INT(h->metric_update(h->ud, c, LOP_HOST_METRIC_ADD, two, 1, -1, &err), LOP_EINVAL);
    T_EQ_INT(h->metric_update(h->ud, c, LOP_HOST_METRIC_SET, two, 1, 1, &err), LOP_EINVAL);
    T_EQ_INT(h->metric_update(h->ud, c, LOP_HOST_METRIC_OBSERVE, two, 1, 1, &err), LOP_EINVAL);
    T_EQ_INT(h->metric_update(h->ud, c, LOP_HOST_METRIC_ADD, two, 1, 0.0 / 0.0, &err), LOP_EINVAL);
    T_EQ_INT(h->metric_update(h->ud, NULL, LOP_HOST_METRIC_ADD, two, 1, 1, &err), LOP_EINVAL);
    const char bad_utf8[] = {'\xff', 0};
    const char *bad[] = {bad_utf8};
    T_EQ_INT(h->metric_update(h->ud, c, LOP_HOST_METRIC_ADD, bad, 1, 1, &err), LOP_EINVAL);
    teardown(&f);
}

static void test_no_registry_leaves_the_entries_null(void)
{
    fx_t f;
    setup(&f, false);
    T_CHECK(f.m->host.metric_declare == NULL && f.m->host.metric_update == NULL);
    char reason[128] = "";
    T_CHECK(lop_manager_check_stuck(f.m, LOP_NS_PER_S, reason, sizeof reason)); /* no controllers */
    teardown(&f);
}

int main(void)
{
    lop_log_setup(LOP_LOG_ERROR, LOP_LOG_TEXT);
    T_RUN(test_declare_and_update_show_in_the_registry);
    T_RUN(test_reserved_names_and_misuse_are_refused);
    T_RUN(test_no_registry_leaves_the_entries_null);
    return T_DONE();
}
