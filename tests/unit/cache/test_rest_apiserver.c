/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Integration tests of the REST client against the local API server (apiserver.h), started
 * in-process on 127.0.0.1:0: kubeconfig written by the server (TLS with CA data, bearer token),
 * discovery and the REST mapper (including a CRD installed after start), typed errors from real
 * Status bodies, Retry-After retries on injected 429s (fake clock), list/watch through the REST
 * listwatch, and watch cancellation.
 */
#include "host/kube/cache/rest_listwatch.h"
#include "apiserver/apiserver.h"
#include "host/kube/client/rest_object.h"
#include "host/kube/client/restmapper.h"
#include "host/util/log.h"
#include "t.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[256];

typedef struct env {
    lop_apiserver_t *srv;
    lop_rest_client_t *c;
    lop_restmapper_t *m;
} env_t;

static bool env_start(env_t *e, bool tls, const lop_clock_t *clock)
{
    memset(e, 0, sizeof *e);
    char tok[300], kc[300];
    snprintf(tok, sizeof tok, "%s/tokens", dir);
    snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
    FILE *f = fopen(tok, "w");
    fputs("integration-token\n", f);
    fclose(f);
    lop_apiserver_opts_t o = {.tls = tls, .token_file = tok};
    lop_err_t err;
    if (lop_apiserver_start(&o, &e->srv, &err) != LOP_OK) {
        fprintf(stderr, "apiserver: %s\n", err.message);
        return false;
    }
    if (lop_apiserver_write_kubeconfig(e->srv, kc, &err) != LOP_OK) return false;
    lop_kubeconfig_opts_t ko = {.path = kc, .clock = clock};
    lop_rest_config_t cfg;
    if (lop_kubeconfig_load(&ko, &cfg, &err) != LOP_OK) {
        fprintf(stderr, "kubeconfig: %s\n", err.message);
        return false;
    }
    cfg.qps = -1;
    if (lop_rest_client_new(&cfg, &e->c, &err) != LOP_OK) return false;
    lop_rest_config_cleanup(&cfg);
    e->m = lop_restmapper_new(e->c);
    return true;
}

static void env_stop(env_t *e)
{
    lop_restmapper_free(e->m);
    lop_rest_client_free(e->c);
    lop_apiserver_stop(e->srv);
}

static void test_tls_token_crud_and_typed_errors(void)
{
    env_t e;
    T_CHECK(env_start(&e, true, NULL));
    if (!e.m) return;
    T_CHECK(strncmp(lop_rest_client_server(e.c), "https://", 8) == 0);
    lop_rest_mapping_t cm;
    lop_err_t err;
    T_EQ_INT(lop_restmapper_resolve(e.m, "v1", "ConfigMap", &cm, &err), LOP_OK);
    T_EQ_STR(cm.resource, "configmaps");
    lop_buf_t path = LOP_BUF_INIT;
    T_EQ_INT(lop_rest_path(&path, &cm, "default", NULL, NULL, "fieldManager=luaop-test", &err), LOP_OK);
    const char *obj =
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c1\"},\"data\":{\"k\":\"v\"}}";
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    T_EQ_INT(lop_rest_do(e.c, "POST", path.data, NULL, obj, strlen(obj), &resp, &err), LOP_OK);
    T_EQ_INT(resp.code, 201);
    T_EQ_INT(lop_rest_do(e.c, "POST", path.data, NULL, obj, strlen(obj), &resp, &err), LOP_EEXIST);
    T_EQ_INT(err.code, 409);
    T_EQ_STR(err.reason, "AlreadyExists");
    lop_buf_reset(&path);
    T_EQ_INT(lop_rest_path(&path, &cm, "default", "c1", NULL, NULL, &err), LOP_OK);
    T_EQ_INT(lop_rest_do(e.c, "GET", path.data, NULL, NULL, 0, &resp, &err), LOP_OK);
    json_t *got = json_loads(resp.body.data, 0, NULL);
    T_EQ_STR(json_string_value(json_object_get(json_object_get(got, "data"), "k")), "v");
    json_decref(got);
    lop_buf_reset(&path);
    T_EQ_INT(lop_rest_path(&path, &cm, "default", "nope", NULL, NULL, &err), LOP_OK);
    T_EQ_INT(lop_rest_do(e.c, "GET", path.data, NULL, NULL, 0, &resp, &err), LOP_ENOTFOUND);
    T_EQ_STR(err.reason, "NotFound");
    T_EQ_STR(json_string_value(json_object_get(json_object_get(resp.status, "details"), "name")), "nope");
    lop_rest_resp_cleanup(&resp);
    lop_buf_free(&path);
    env_stop(&e);
}

static void test_wrong_token_is_401(void)
{
    char tok[300];
    snprintf(tok, sizeof tok, "%s/tokens", dir);
    FILE *f = fopen(tok, "w");
    fputs("right\n", f);
    fclose(f);
    lop_apiserver_opts_t o = {.token_file = tok};
    lop_apiserver_t *srv;
    lop_err_t err;
    T_EQ_INT(lop_apiserver_start(&o, &srv, &err), LOP_OK);
    lop_rest_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = strdup(lop_apiserver_url(srv));
    cfg.auth = lop_auth_new("wrong", NULL, NULL, NULL);
    lop_rest_client_t *c;
    T_EQ_INT(lop_rest_client_new(&cfg, &c, &err), LOP_OK);
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces", NULL, NULL, 0, NULL, &err), LOP_ERR);
    T_EQ_INT(err.code, 401);
    T_EQ_STR(err.reason, "Unauthorized");
    lop_rest_client_free(c);
    lop_apiserver_stop(srv);
}

/* Build a client for the TLS server with the given kubeconfig cluster/user tweaks. */
static lop_rc_t tls_client(lop_apiserver_t *srv, const char *sni, const char *cert, const char *key,
                           lop_rest_client_t **c, lop_err_t *err)
{
    char kc[300];
    snprintf(kc, sizeof kc, "%s/kc-tls", dir);
    lop_rc_t rc = lop_apiserver_write_kubeconfig(srv, kc, err);
    if (rc != LOP_OK) return rc;
    lop_kubeconfig_opts_t ko = {.path = kc};
    lop_rest_config_t cfg;
    rc = lop_kubeconfig_load(&ko, &cfg, err);
    if (rc != LOP_OK) return rc;
    if (sni) cfg.tls_server_name = strdup(sni);
    if (cert) {
        cfg.client_cert_pem = strdup(cert);
        cfg.client_key_pem = strdup(key);
    }
    rc = lop_rest_client_new(&cfg, c, err);
    lop_rest_config_cleanup(&cfg);
    return rc;
}

static void test_tls_server_name_is_verified(void)
{
    lop_apiserver_opts_t o = {.tls = true};
    lop_apiserver_t *srv;
    lop_err_t err;
    T_EQ_INT(lop_apiserver_start(&o, &srv, &err), LOP_OK);
    lop_rest_client_t *c = NULL;
    /* the certificate names localhost and 127.0.0.1: verifying as "localhost" works ... */
    T_EQ_INT(tls_client(srv, "localhost", NULL, NULL, &c, &err), LOP_OK);
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces", NULL, NULL, 0, NULL, &err), LOP_OK);
    lop_rest_client_free(c);
    /* ... and as another name fails certificate verification */
    T_EQ_INT(tls_client(srv, "not-the-server.example", NULL, NULL, &c, &err), LOP_OK);
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces", NULL, NULL, 0, NULL, &err), LOP_EAGAIN);
    T_EQ_INT(err.code, 0);
    lop_rest_client_free(c);
    lop_apiserver_stop(srv);
}

static void test_client_certificate_auth(void)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
             "-subj /CN=test-ca -keyout ca.key -out ca.crt >/dev/null 2>&1 && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=alice "
             "-keyout client.key -out client.csr >/dev/null 2>&1 && "
             "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 "
             "-out client.crt >/dev/null 2>&1",
             dir);
    T_EQ_INT(system(cmd), 0);
    char ca[300], crt[300], key[300];
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    snprintf(crt, sizeof crt, "%s/client.crt", dir);
    snprintf(key, sizeof key, "%s/client.key", dir);
    char *cert_pem = lop_file_read(crt, NULL), *key_pem = lop_file_read(key, NULL);
    T_CHECK(cert_pem && key_pem);
    if (!cert_pem || !key_pem) return;
    lop_apiserver_opts_t o = {.tls = true, .client_ca = ca};
    lop_apiserver_t *srv;
    lop_err_t err;
    T_EQ_INT(lop_apiserver_start(&o, &srv, &err), LOP_OK);
    lop_rest_client_t *c = NULL;
    T_EQ_INT(tls_client(srv, NULL, NULL, NULL, &c, &err), LOP_OK);
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces", NULL, NULL, 0, NULL, &err), LOP_ERR);
    T_EQ_INT(err.code, 401);
    lop_rest_client_free(c);
    T_EQ_INT(tls_client(srv, NULL, cert_pem, key_pem, &c, &err), LOP_OK);
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces", NULL, NULL, 0, NULL, &err), LOP_OK);
    lop_rest_client_free(c);
    lop_apiserver_stop(srv);
    free(cert_pem);
    free(key_pem);
}

#include "stepper.h"

static void test_injected_429_is_retried_after_retry_after(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    env_t e;
    T_CHECK(env_start(&e, false, &fc.base));
    if (!e.m) return;
    lop_apiserver_fail_next(e.srv, "list", "/api/v1/namespaces", 3, 429, 2);
    stepper_t st;
    stepper_start_by(&st, &fc, 100 * LOP_NS_PER_MS);
    int64_t t0 = lop_clock_mono(&fc.base);
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_do(e.c, "GET", "/api/v1/namespaces", NULL, NULL, 0, &resp, &err), LOP_OK);
    stepper_stop(&st);
    T_EQ_INT(resp.retries, 3);
    T_CHECK(lop_clock_mono(&fc.base) - t0 >= 6 * LOP_NS_PER_S);
    /* without Retry-After: no retry here, a typed error */
    lop_apiserver_fail_next(e.srv, "get", "/api/v1/namespaces/default", 1, 503, 0);
    T_EQ_INT(lop_rest_do(e.c, "GET", "/api/v1/namespaces/default", NULL, NULL, 0, &resp, &err), LOP_EAGAIN);
    T_EQ_INT(err.code, 503);
    T_EQ_INT(resp.retries, 0);
    lop_rest_resp_cleanup(&resp);
    env_stop(&e);
}

static void test_crd_installed_after_start_is_mapped(void)
{
    env_t e;
    T_CHECK(env_start(&e, false, NULL));
    if (!e.m) return;
    lop_rest_mapping_t mp;
    lop_err_t err;
    T_EQ_INT(lop_restmapper_resolve(e.m, "example.com/v1", "Gateway", &mp, &err), LOP_ENOTFOUND);
    /* a 404 for the resource itself invalidates the mapper; a 404 for an object does not */
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    T_EQ_INT(lop_rest_do(e.c, "GET", "/apis/example.com/v1/namespaces/default/gateways", NULL, NULL, 0, &resp, &err),
             LOP_ENOTFOUND);
    T_CHECK(lop_rest_resource_missing(&resp));
    int before = lop_restmapper_refreshes(e.m);
    T_CHECK(lop_restmapper_note_404(e.m, &resp));
    T_EQ_INT(lop_rest_do(e.c, "GET", "/api/v1/namespaces/default/configmaps/nope", NULL, NULL, 0, &resp, &err),
             LOP_ENOTFOUND);
    T_CHECK(!lop_rest_resource_missing(&resp));
    T_CHECK(!lop_restmapper_note_404(e.m, &resp));
    lop_rest_resp_cleanup(&resp);
    lop_rest_mapping_t cmm;
    T_EQ_INT(lop_restmapper_resolve(e.m, "v1", "ConfigMap", &cmm, &err), LOP_OK);
    T_EQ_INT(lop_restmapper_refreshes(e.m), before + 1); /* re-read after the invalidation */
    const char *crd =
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"gateways.example.com\"},\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\","
        "\"names\":{\"plural\":\"gateways\",\"singular\":\"gateway\",\"kind\":\"Gateway\",\"listKind\":\"GatewayList\"}"
        ","
        "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}},"
        "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}]}}";
    T_EQ_INT(lop_rest_do(e.c, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NULL, crd, strlen(crd),
                         NULL, &err),
             LOP_OK);
    T_EQ_INT(lop_restmapper_resolve(e.m, "example.com/v1", "Gateway", &mp, &err), LOP_OK);
    T_EQ_STR(mp.resource, "gateways");
    T_CHECK(mp.namespaced);
    env_stop(&e);
}

typedef struct watcher {
    lop_listwatch_t *lw;
    lop_buf_t got;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    lop_rc_t rc;
    const char *rv;
} watcher_t;

static int on_bytes(void *ud, const char *d, size_t n)
{
    watcher_t *w = ud;
    pthread_mutex_lock(&w->mu);
    lop_buf_append(&w->got, d, n);
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static int collect(void *ud, const char *d, size_t n)
{
    lop_buf_append(ud, d, n);
    return 0;
}

static void *watch_main(void *arg)
{
    watcher_t *w = arg;
    lop_watch_opts_t o = {.resource_version = w->rv, .allow_bookmarks = true, .timeout_seconds = 60};
    lop_err_t err;
    w->rc = w->lw->watch(w->lw->ud, &o, on_bytes, w, &err);
    return NULL;
}

static void test_listwatch_against_apiserver(void)
{
    env_t e;
    T_CHECK(env_start(&e, false, NULL));
    if (!e.m) return;
    lop_rest_mapping_t cm;
    lop_err_t err;
    T_EQ_INT(lop_restmapper_resolve(e.m, "v1", "ConfigMap", &cm, &err), LOP_OK);
    const char *o1 =
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"x\"}}}";
    const char *o2 =
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\",\"labels\":{\"app\":\"y\"}}}";
    T_EQ_INT(lop_rest_do(e.c, "POST", "/api/v1/namespaces/default/configmaps", NULL, o1, strlen(o1), NULL, &err),
             LOP_OK);
    T_EQ_INT(lop_rest_do(e.c, "POST", "/api/v1/namespaces/default/configmaps", NULL, o2, strlen(o2), NULL, &err),
             LOP_OK);
    lop_listwatch_t *lw = lop_rest_listwatch_new(e.c, &cm, "default", "app=x", NULL);
    lop_buf_t body = LOP_BUF_INIT;
    lop_list_opts_t lo = {.limit = 10};
    T_EQ_INT(lw->list(lw->ud, &lo, &body, &err), LOP_OK);
    json_t *list = json_loads(body.data, 0, NULL);
    T_EQ_INT(json_array_size(json_object_get(list, "items")), 1);
    char rv[64];
    snprintf(rv, sizeof rv, "%s",
             json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion")));
    json_decref(list);
    lop_buf_free(&body);

    watcher_t w;
    memset(&w, 0, sizeof w);
    w.lw = lw;
    w.rv = rv;
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cond, NULL);
    pthread_t t;
    pthread_create(&t, NULL, watch_main, &w);
    const char *o3 =
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\",\"labels\":{\"app\":\"x\"}}}";
    T_EQ_INT(lop_rest_do(e.c, "POST", "/api/v1/namespaces/default/configmaps", NULL, o3, strlen(o3), NULL, &err),
             LOP_OK);
    pthread_mutex_lock(&w.mu);
    while (!strstr(w.got.data ? w.got.data : "", "\n")) pthread_cond_wait(&w.cond, &w.mu);
    pthread_mutex_unlock(&w.mu);
    lw->cancel(lw->ud);
    pthread_join(t, NULL);
    T_EQ_INT(w.rc, LOP_ECLOSED);
    json_t *ev = json_loads(w.got.data, JSON_DISABLE_EOF_CHECK, NULL);
    T_EQ_STR(json_string_value(json_object_get(ev, "type")), "ADDED");
    T_EQ_STR(json_string_value(json_object_get(json_object_get(json_object_get(ev, "object"), "metadata"), "name")),
             "c");
    json_decref(ev);
    lop_buf_free(&w.got);
    lop_rest_listwatch_free(lw);

    /* a watch from a compacted RV: HTTP 200 with an ERROR event (the reflector relists) */
    lop_apiserver_compact(e.srv);
    lw = lop_rest_listwatch_new(e.c, &cm, "default", NULL, NULL);
    lop_buf_t got = LOP_BUF_INIT;
    lop_watch_opts_t wo = {.resource_version = "1"};
    T_EQ_INT(lw->watch(lw->ud, &wo, collect, &got, &err), LOP_OK);
    json_t *er = json_loads(got.data ? got.data : "", JSON_DISABLE_EOF_CHECK, NULL);
    T_EQ_STR(json_string_value(json_object_get(er, "type")), "ERROR");
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(er, "object"), "code")), 410);
    json_decref(er);
    lop_buf_free(&got);
    lop_rest_listwatch_free(lw);
    env_stop(&e);
}

static lop_rc_t obj(env_t *e, const char *verb, const char *ns, const char *name, const char *sub, const char *ptype,
                    const char *body, lop_rest_resp_t *resp, lop_err_t *err)
{
    lop_object_req_t r = {.verb = verb,
                          .api_version = "v1",
                          .kind = "ConfigMap",
                          .ns = ns,
                          .name = name,
                          .subresource = sub,
                          .patch_type = ptype,
                          .body = body,
                          .len = body ? strlen(body) : 0};
    return lop_rest_object(e->c, e->m, &r, resp, NULL, err);
}

static const char *field(lop_rest_resp_t *resp, const char *a, const char *b, char *out, size_t n)
{
    json_t *o = json_loads(resp->body.data ? resp->body.data : "", 0, NULL);
    const char *sv = json_string_value(json_object_get(json_object_get(o, a), b));
    snprintf(out, n, "%s", sv ? sv : "");
    json_decref(o);
    return out;
}

static void test_object_verbs(void)
{
    env_t e;
    T_CHECK(env_start(&e, false, NULL));
    if (!e.m) return;
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    char v[256];
    /* create strips a stale resourceVersion (a POST carrying one is a 500) */
    T_EQ_INT(
        obj(&e, "create", "default", NULL, NULL, NULL,
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"o1\",\"resourceVersion\":\"99\"},"
            "\"data\":{\"a\":\"1\"}}",
            &resp, &err),
        LOP_OK);
    T_EQ_INT(resp.code, 201);
    T_CHECK(strstr(resp.body.data, "\"manager\":\"luaop\"") != NULL); /* explicit fieldManager */
    T_EQ_INT(obj(&e, "get", "default", "o1", NULL, NULL, NULL, &resp, &err), LOP_OK);
    T_EQ_STR(field(&resp, "data", "a", v, sizeof v), "1");
    T_EQ_INT(obj(&e, "patch", "default", "o1", NULL, NULL, "{\"data\":{\"b\":\"2\"}}", &resp, &err), LOP_OK);
    T_EQ_STR(field(&resp, "data", "b", v, sizeof v), "2");
    T_EQ_INT(obj(&e, "patch", "default", "o1", NULL, "json",
                 "[{\"op\":\"replace\",\"path\":\"/data/a\",\"value\":\"3\"}]", &resp, &err),
             LOP_OK);
    T_EQ_STR(field(&resp, "data", "a", v, sizeof v), "3");
    T_EQ_INT(obj(&e, "apply", "default", "o1", NULL, NULL,
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"o1\"},\"data\":{\"c\":\"4\"}}",
                 &resp, &err),
             LOP_OK);
    T_EQ_STR(field(&resp, "data", "c", v, sizeof v), "4");
    T_EQ_INT(
        obj(&e, "update", "default", "o1", NULL, NULL,
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"o1\",\"resourceVersion\":\"1\"},"
            "\"data\":{}}",
            &resp, &err),
        LOP_ECONFLICT);
    T_EQ_STR(err.reason, "Conflict");
    T_EQ_INT(obj(&e, "list", NULL, NULL, NULL, NULL, NULL, &resp, &err), LOP_OK);
    T_CHECK(strstr(resp.body.data, "\"o1\"") != NULL);
    T_EQ_INT(obj(&e, "delete", "default", "o1", NULL, NULL, NULL, &resp, &err), LOP_OK);
    T_EQ_INT(obj(&e, "get", "default", "o1", NULL, NULL, NULL, &resp, &err), LOP_ENOTFOUND);
    /* misuse → EINVAL before any request */
    T_EQ_INT(obj(&e, "frobnicate", "default", "o1", NULL, NULL, NULL, &resp, &err), LOP_EINVAL);
    T_EQ_INT(obj(&e, "get", "default", NULL, NULL, NULL, NULL, &resp, &err), LOP_EINVAL);
    T_EQ_INT(obj(&e, "get", NULL, "o1", NULL, NULL, NULL, &resp, &err), LOP_EINVAL);
    T_EQ_INT(obj(&e, "patch", "default", "o1", NULL, "weird", "{}", &resp, &err), LOP_EINVAL);
    lop_object_req_t r = {.verb = "get", .api_version = "v1", .kind = "Gizmo", .ns = "default", .name = "x"};
    T_EQ_INT(lop_rest_object(e.c, e.m, &r, &resp, NULL, &err), LOP_ENOTFOUND);
    T_EQ_STR(err.reason, "NotFound");
    lop_rest_resp_cleanup(&resp);
    env_stop(&e);
}

int main(void)
{
    lop_log_setup(LOP_LOG_ERROR, LOP_LOG_TEXT);
    snprintf(dir, sizeof dir, "/tmp/luaop-restint-XXXXXX");
    if (!mkdtemp(dir)) return 2;
    T_RUN(test_tls_token_crud_and_typed_errors);
    T_RUN(test_wrong_token_is_401);
    T_RUN(test_tls_server_name_is_verified);
    T_RUN(test_client_certificate_auth);
    T_RUN(test_injected_429_is_retried_after_retry_after);
    T_RUN(test_crd_installed_after_start_is_mapped);
    T_RUN(test_listwatch_against_apiserver);
    T_RUN(test_object_verbs);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
    return T_DONE();
}
