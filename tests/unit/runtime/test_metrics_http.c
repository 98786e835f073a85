/* SPDX-License-Identifier: Apache-2.0 */
/* In-process HTTP test of host/runtime/httpserver: /metrics, /healthz, /readyz over loopback,
 * fetched with libcurl from a server bound to 127.0.0.1:0. */
#include "host/runtime/health.h"
#include "host/runtime/httpserver.h"
#include "host/runtime/metrics/metrics.h"
#include "host/runtime/metrics/metrics_std.h"
#include "t.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>

typedef struct resp {
    long status;
    lop_buf_t body;
    char ctype[128];
} resp_t;

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    lop_buf_append(&((resp_t *)ud)->body, p, sz * n);
    return sz * n;
}

/* method NULL = GET. Returns the status (0 on transport failure); caller frees r->body. */
static long fetch(int port, const char *method, const char *path, resp_t *r)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    memset(r, 0, sizeof *r);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    if (method && strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (method)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (curl_easy_perform(c) == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        char *ct = NULL;
        curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
        snprintf(r->ctype, sizeof r->ctype, "%s", ct ? ct : "");
    }
    curl_easy_cleanup(c);
    if (!r->body.data) lop_buf_puts(&r->body, "");
    return r->status;
}

#include <stdatomic.h>
static _Atomic bool synced_flag;
static bool synced(void *ud, char *reason, size_t len)
{
    (void)ud;
    if (!synced_flag) snprintf(reason, len, "informer for apps/v1/deployments not synced");
    return synced_flag;
}

static bool scripts_ok(void *ud, char *reason, size_t len)
{
    (void)ud, (void)reason, (void)len;
    return true;
}

static void test_serves_metrics_and_probes(void)
{
    lop_metrics_t *m = lop_metrics_new();
    lop_metrics_std_t std;
    T_EQ_INT(lop_metrics_std_init(&std, m, NULL), LOP_OK);
    lop_metric_counter_add(std.reconcile_total, (const char *[]){"memcached", "success"}, 3, NULL);
    lop_health_t *h = lop_health_new();
    T_EQ_INT(lop_health_add(h, LOP_READYZ, "scripts", scripts_ok, NULL, NULL), LOP_OK);
    T_EQ_INT(lop_health_add(h, LOP_READYZ, "informers-synced", synced, NULL, NULL), LOP_OK);
    synced_flag = false;

    lop_httpserver_t *s = NULL;
    lop_err_t err;
    T_EQ_INT(lop_httpserver_start("127.0.0.1:0", m, h, &s, &err), LOP_OK);
    T_CHECK(s != NULL);
    int port = lop_httpserver_port(s);
    T_CHECK(port > 0);

    resp_t r;
    T_EQ_INT(fetch(port, NULL, "/metrics", &r), 200);
    T_CHECK(strstr(r.ctype, "text/plain") && strstr(r.ctype, "version=0.0.4"));
    T_CHECK(strstr(r.body.data, "# TYPE controller_runtime_reconcile_total counter\n") != NULL);
    T_CHECK(strstr(r.body.data, "controller_runtime_reconcile_total{controller=\"memcached\",result=\"success\"} 3\n"));
    lop_buf_free(&r.body);

    /* The counter moves between scrapes. */
    lop_metric_counter_add(std.reconcile_total, (const char *[]){"memcached", "success"}, 1, NULL);
    T_EQ_INT(fetch(port, NULL, "/metrics", &r), 200);
    T_CHECK(strstr(r.body.data, "controller_runtime_reconcile_total{controller=\"memcached\",result=\"success\"} 4\n"));
    lop_buf_free(&r.body);

    T_EQ_INT(fetch(port, NULL, "/healthz", &r), 200);
    T_EQ_STR(r.body.data, "ok");
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(port, NULL, "/healthz?verbose", &r), 200);
    T_EQ_STR(r.body.data, "[+]ping ok\nhealthz check passed\n");
    lop_buf_free(&r.body);

    /* Not ready before the caches sync... */
    T_EQ_INT(fetch(port, NULL, "/readyz?verbose", &r), 500);
    T_EQ_STR(r.body.data, "[+]scripts ok\n"
                          "[-]informers-synced failed: informer for apps/v1/deployments not synced\n"
                          "readyz check failed\n");
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(port, NULL, "/readyz", &r), 500);
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(port, NULL, "/readyz/informers-synced", &r), 500);
    T_EQ_STR(r.body.data, "internal server error: informer for apps/v1/deployments not synced\n");
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(port, NULL, "/readyz?verbose&exclude=informers-synced", &r), 200);
    T_EQ_STR(r.body.data, "[+]scripts ok\n[+]informers-synced excluded: ok\nreadyz check passed\n");
    lop_buf_free(&r.body);

    /* ...ready after. */
    synced_flag = true;
    T_EQ_INT(fetch(port, NULL, "/readyz?verbose", &r), 200);
    T_EQ_STR(r.body.data, "[+]scripts ok\n[+]informers-synced ok\nreadyz check passed\n");
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(port, NULL, "/readyz", &r), 200);
    T_EQ_STR(r.body.data, "ok");
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(port, NULL, "/readyz/scripts", &r), 200);
    T_EQ_STR(r.body.data, "ok");
    lop_buf_free(&r.body);

    T_EQ_INT(fetch(port, NULL, "/readyz/unknown", &r), 404);
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(port, NULL, "/nope", &r), 404);
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(port, NULL, "/healthzzz", &r), 404);
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(port, "POST", "/metrics", &r), 405);
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(port, "HEAD", "/metrics", &r), 200);
    T_EQ_INT(r.body.len, 0);
    lop_buf_free(&r.body);

    /* The port is taken: a second server on it fails with a reason naming the address. */
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    lop_httpserver_t *s2 = NULL;
    T_EQ_INT(lop_httpserver_start(addr, m, h, &s2, &err), LOP_ERR);
    T_CHECK(s2 == NULL);
    T_CHECK(strstr(err.message, addr) != NULL);

    lop_httpserver_stop(s);
    lop_httpserver_stop(s);                         /* idempotent */
    T_EQ_INT(fetch(port, NULL, "/healthz", &r), 0); /* nobody listens any more */
    lop_buf_free(&r.body);
    lop_httpserver_free(s);
    lop_health_free(h);
    lop_metrics_free(m);
}

static void test_routes_absent_without_registry(void)
{
    lop_metrics_t *m = lop_metrics_new();
    lop_health_t *h = lop_health_new();
    lop_httpserver_t *ms = NULL, *hs = NULL;
    T_EQ_INT(lop_httpserver_start("127.0.0.1:0", m, NULL, &ms, NULL), LOP_OK);
    T_EQ_INT(lop_httpserver_start("127.0.0.1:0", NULL, h, &hs, NULL), LOP_OK);
    T_CHECK(lop_httpserver_port(ms) != lop_httpserver_port(hs));
    resp_t r;
    T_EQ_INT(fetch(lop_httpserver_port(ms), NULL, "/healthz", &r), 404);
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(lop_httpserver_port(ms), NULL, "/metrics", &r), 200);
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(lop_httpserver_port(hs), NULL, "/metrics", &r), 404);
    lop_buf_free(&r.body);
    T_EQ_INT(fetch(lop_httpserver_port(hs), NULL, "/healthz", &r), 200);
    lop_buf_free(&r.body);
    lop_httpserver_free(ms);
    lop_httpserver_free(hs);
    lop_health_free(h);
    lop_metrics_free(m);
}

static void *stopper(void *p)
{
    lop_httpserver_stop(p);
    return NULL;
}

static void test_concurrent_stop(void)
{
    lop_httpserver_t *s = NULL;
    lop_health_t *h = lop_health_new();
    T_EQ_INT(lop_httpserver_start("127.0.0.1:0", NULL, h, &s, NULL), LOP_OK);
    pthread_t a, b;
    pthread_create(&a, NULL, stopper, s);
    pthread_create(&b, NULL, stopper, s);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    lop_httpserver_free(s);
    lop_health_free(h);
}

static void test_bind_addresses(void)
{
    char host[64];
    int port = 123;
    lop_err_t err;
    lop_httpserver_t *s = (lop_httpserver_t *)&port;
    T_EQ_INT(lop_httpserver_start("0", NULL, NULL, &s, &err), LOP_OK); /* disabled */
    T_CHECK(s == NULL);
    T_EQ_INT(lop_httpserver_parse_addr(":8080", host, sizeof host, &port, &err), LOP_OK);
    T_EQ_STR(host, "0.0.0.0");
    T_EQ_INT(port, 8080);
    T_EQ_INT(lop_httpserver_parse_addr("127.0.0.1:0", host, sizeof host, &port, &err), LOP_OK);
    T_EQ_STR(host, "127.0.0.1");
    T_EQ_INT(port, 0);
    T_EQ_INT(lop_httpserver_parse_addr("[::1]:8081", host, sizeof host, &port, &err), LOP_OK);
    T_EQ_STR(host, "::1");
    T_EQ_INT(port, 8081);
    T_EQ_INT(lop_httpserver_parse_addr("0", host, sizeof host, &port, &err), LOP_OK);
    T_EQ_INT(port, -1);

    static const char *const bad[] = {"",       "8080",    "host:",      "host:http", "h:99999",
                                      "::1:80", "[::1:80", "1.2.3.4:-1", "h:123456"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.message[0] = '\0';
        T_EQ_INT(lop_httpserver_parse_addr(bad[i], host, sizeof host, &port, &err), LOP_EINVAL);
        T_CHECK(err.message[0] != '\0');
        s = NULL;
        T_EQ_INT(lop_httpserver_start(bad[i], NULL, NULL, &s, &err), LOP_EINVAL);
        T_CHECK(s == NULL);
    }
    T_EQ_INT(lop_httpserver_start(NULL, NULL, NULL, &s, &err), LOP_EINVAL);
    T_EQ_INT(lop_httpserver_port(NULL), -1);
    lop_httpserver_stop(NULL);
    lop_httpserver_free(NULL);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    T_RUN(test_serves_metrics_and_probes);
    T_RUN(test_routes_absent_without_registry);
    T_RUN(test_concurrent_stop);
    T_RUN(test_bind_addresses);
    curl_global_cleanup();
    return T_DONE();
}
