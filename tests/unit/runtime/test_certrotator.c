/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/runtime/webhook/certrotator against the local API server (in-process,
 * loopback), on a fake clock: the Secret is created once and then left alone, an existing Secret
 * keeps its type and other keys, a serving renewal is written when the clock says so, and the
 * caBundle injection writes only objects whose bundle differs and skips missing ones. */
#include "apiserver/apiserver.h"
#include "host/codec/certgen.h"
#include "host/kube/client/rest.h"
#include "host/runtime/webhook/certrotator.h"
#include "host/util/base64.h"
#include "host/util/buf.h"
#include "t.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static lop_apiserver_t *srv;
static lop_rest_client_t *rest;

static json_t *get(const char *path)
{
    lop_rest_resp_t r = LOP_REST_RESP_INIT;
    lop_err_t err;
    json_t *o = NULL;
    if (lop_rest_do(rest, "GET", path, NULL, NULL, 0, &r, &err) == LOP_OK)
        o = json_loadb(r.body.data, r.body.len, 0, NULL);
    lop_rest_resp_cleanup(&r);
    return o;
}

static lop_rc_t post(const char *path, const char *body)
{
    lop_rest_resp_t r = LOP_REST_RESP_INIT;
    lop_err_t err;
    lop_rc_t rc = lop_rest_do(rest, "POST", path, "application/json", body, strlen(body), &r, &err);
    if (rc != LOP_OK) fprintf(stderr, "POST %s: %s\n", path, err.message);
    lop_rest_resp_cleanup(&r);
    return rc;
}

static lop_certrotator_config_t config(const char *name, lop_fake_clock_t *fc)
{
    return (lop_certrotator_config_t){
        .rest = rest,
        .secret_namespace = "default",
        .secret_name = name,
        .certs = {.sans = "DNS:svc.default.svc", .ca_validity_s = 100000, .cert_validity_s = 1000},
        .mutating_config = "no-such-mutating-configuration",
        .validating_config = "vcfg",
        .clock = &fc->base,
    };
}

static void test_creates_once_then_renews_on_the_clock(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, (int64_t)time(NULL) * LOP_NS_PER_S);
    lop_certrotator_config_t cfg = config("certs", &fc);
    lop_certrotator_t *r = lop_certrotator_new(&cfg);
    lop_cert_secret_t s1, s2, s3;
    lop_err_t err;
    int64_t next = 0;
    bool wrote = false;
    T_EQ_INT(lop_certrotator_rotate(r, &s1, &next, &wrote, &err), LOP_OK);
    T_CHECK(wrote);
    T_EQ_INT(next, lop_clock_mono(&fc.base) + 800 * LOP_NS_PER_S); /* the serving certificate's 4/5 */
    json_t *sec = get("/api/v1/namespaces/default/secrets/certs");
    T_EQ_STR(json_string_value(json_object_get(sec, "type")), "kubernetes.io/tls");
    lop_cert_secret_t stored;
    lop_cert_secret_from_json(sec, &stored);
    T_CHECK(stored.ca_crt && stored.ca_key && stored.tls_crt && stored.tls_key);
    T_CHECK(stored.tls_crt && s1.tls_crt && strcmp(stored.tls_crt, s1.tls_crt) == 0);
    lop_cert_secret_free(&stored);
    json_decref(sec);

    lop_fake_clock_step(&fc, 799 * LOP_NS_PER_S);
    T_EQ_INT(lop_certrotator_rotate(r, &s2, &next, &wrote, &err), LOP_OK);
    T_CHECK(!wrote);
    T_EQ_STR(s2.tls_crt, s1.tls_crt);
    lop_fake_clock_step(&fc, 1 * LOP_NS_PER_S);
    T_EQ_INT(lop_certrotator_rotate(r, &s3, &next, &wrote, &err), LOP_OK);
    T_CHECK(wrote);
    T_CHECK(strcmp(s3.tls_crt, s1.tls_crt) != 0);
    T_EQ_STR(s3.ca_crt, s1.ca_crt);
    lop_cert_secret_free(&s1);
    lop_cert_secret_free(&s2);
    lop_cert_secret_free(&s3);
    lop_certrotator_free(r);
}

static void test_existing_secret_keeps_its_type_and_keys(void)
{
    T_EQ_INT(post("/api/v1/namespaces/default/secrets",
                  "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"mine\"},\"type\":\"Opaque\","
                  "\"data\":{\"other\":\"a2VlcA==\"}}"),
             LOP_OK);
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, (int64_t)time(NULL) * LOP_NS_PER_S);
    lop_certrotator_config_t cfg = config("mine", &fc);
    lop_certrotator_t *r = lop_certrotator_new(&cfg);
    lop_cert_secret_t s;
    lop_err_t err;
    int64_t next;
    bool wrote;
    T_EQ_INT(lop_certrotator_rotate(r, &s, &next, &wrote, &err), LOP_OK);
    T_CHECK(wrote);
    json_t *sec = get("/api/v1/namespaces/default/secrets/mine");
    T_EQ_STR(json_string_value(json_object_get(sec, "type")), "Opaque");
    T_EQ_STR(json_string_value(json_object_get(json_object_get(sec, "data"), "other")), "a2VlcA==");
    T_CHECK(json_object_get(json_object_get(sec, "data"), "tls.crt") != NULL);
    json_decref(sec);
    lop_cert_secret_free(&s);
    lop_certrotator_free(r);
}

static const char VCFG[] =
    "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":\"ValidatingWebhookConfiguration\","
    "\"metadata\":{\"name\":\"vcfg\"},\"webhooks\":["
    "{\"name\":\"a.test\",\"admissionReviewVersions\":[\"v1\"],\"sideEffects\":\"None\","
    "\"clientConfig\":{\"url\":\"https://127.0.0.1:1/a\"}},"
    "{\"name\":\"b.test\",\"admissionReviewVersions\":[\"v1\"],\"sideEffects\":\"None\","
    "\"clientConfig\":{\"service\":{\"namespace\":\"ns\",\"name\":\"svc\",\"path\":\"/b\"}}}]}";

static const char CRD[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\","
    "\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\",\"listKind\":\"WidgetList\"},"
    "\"conversion\":{\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"],"
    "\"clientConfig\":{\"url\":\"https://127.0.0.1:1/convert\"}}},"
    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":"
    "{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}]}}";

static void test_injection_writes_only_what_differs(void)
{
    T_EQ_INT(post("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", VCFG), LOP_OK);
    T_EQ_INT(post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD), LOP_OK);
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_certrotator_config_t cfg = config("unused", &fc);
    lop_certrotator_t *r = lop_certrotator_new(&cfg);
    const char *groups[] = {"example.com", "other.example.com"}, *kinds[] = {"Widget", "Gadget"};
    lop_certrotator_set_crds(r, groups, kinds, 2);
    lop_err_t err;
    int updated = -1;
    lop_cert_pair_t ca = {0};
    T_EQ_INT(lop_certgen_ca("test-ca", 3600, &ca, &err), LOP_OK);
    const char *bundle = ca.cert_pem;
    /* the missing mutating configuration and the CRD nobody made are skipped */
    T_EQ_INT(lop_certrotator_inject(r, bundle, &updated, &err), LOP_OK);
    T_EQ_INT(updated, 2);
    char *b64 = lop_base64_encode(bundle, strlen(bundle), false);
    json_t *v = get("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/vcfg");
    for (size_t i = 0; i < 2; i++)
        T_EQ_STR(json_string_value(json_object_get(
                     json_object_get(json_array_get(json_object_get(v, "webhooks"), i), "clientConfig"), "caBundle")),
                 b64);
    json_decref(v);
    json_t *c = get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com");
    json_t *cc = json_object_get(json_object_get(json_object_get(json_object_get(c, "spec"), "conversion"), "webhook"),
                                 "clientConfig");
    T_EQ_STR(json_string_value(json_object_get(cc, "caBundle")), b64);
    T_EQ_STR(json_string_value(json_object_get(cc, "url")), "https://127.0.0.1:1/convert");
    json_decref(c);
    T_EQ_INT(lop_certrotator_inject(r, bundle, &updated, &err), LOP_OK);
    T_EQ_INT(updated, 0);
    free(b64);
    lop_cert_pair_free(&ca);
    lop_certrotator_free(r);
}

int main(void)
{
    lop_apiserver_opts_t ao = {.listen = "127.0.0.1:0"};
    lop_err_t err;
    if (lop_apiserver_start(&ao, &srv, &err) != LOP_OK) {
        fprintf(stderr, "apiserver: %s\n", err.message);
        return 1;
    }
    lop_rest_config_t cfg = {0};
    cfg.server = lop_xstrdup(lop_apiserver_url(srv));
    cfg.qps = -1;
    if (lop_rest_client_new(&cfg, &rest, &err) != LOP_OK) return 1;
    lop_rest_config_cleanup(&cfg);
    T_RUN(test_creates_once_then_renews_on_the_clock);
    T_RUN(test_existing_secret_keeps_its_type_and_keys);
    T_RUN(test_injection_writes_only_what_differs);
    lop_rest_client_free(rest);
    lop_apiserver_stop(srv);
    return T_DONE();
}
