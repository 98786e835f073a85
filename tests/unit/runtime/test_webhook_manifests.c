/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/runtime/webhook/webhook_manifests: kubebuilder's shapes and names for the
 * WebhookConfigurations (service or url clientConfig, caBundle, cert-manager annotation) and the
 * CRD conversion patch (plural from a CRD given, else kubebuilder's guess). */
#include "host/runtime/webhook/webhook_manifests.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *ops[] = {"CREATE", "UPDATE", NULL}, *groups[] = {"cache.example.com", NULL}, *versions[] = {"v1", NULL},
            *res[] = {"memcacheds", NULL};
static lop_webhook_rule_t rule = {ops, groups, versions, res, NULL};

static lop_webhook_decl_t decls[] = {
    {.type = LOP_WEBHOOK_VALIDATING,
     .name = "vmemcached.cache.example.com",
     .path = "/validate-cache-example-com-v1-memcached",
     .gvk = {"cache.example.com/v1", "Memcached"},
     .rules = &rule,
     .nrules = 1,
     .failure_policy = "Ignore",
     .timeout_seconds = 5,
     .validator = true},
    {.type = LOP_WEBHOOK_CONVERSION,
     .name = "conversion.policy.example.com",
     .path = "/convert",
     .gvk = {"example.com", "Policy"}},
};

static const char *str_at(json_t *root, const char *path)
{
    json_t *v = root;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
        v = (*tok >= '0' && *tok <= '9') ? json_array_get(v, (size_t)atoi(tok)) : json_object_get(v, tok);
    return json_string_value(v);
}

static void test_service_reference(void)
{
    lop_webhook_manifest_opts_t o = {.cert_manager = "luaop-system/luaop-serving-cert"};
    json_t *docs = lop_webhook_manifests(decls, 2, &o);
    T_EQ_INT(json_array_size(docs), 2); /* no mutating webhook: no MutatingWebhookConfiguration */
    json_t *v = json_array_get(docs, 0);
    T_EQ_STR(str_at(v, "kind"), "ValidatingWebhookConfiguration");
    T_EQ_STR(str_at(v, "metadata.name"), "luaop-validating-webhook-configuration");
    T_EQ_STR(json_string_value(json_object_get(json_object_get(json_object_get(v, "metadata"), "annotations"),
                                               "cert-manager.io/inject-ca-from")),
             "luaop-system/luaop-serving-cert");
    T_EQ_STR(str_at(v, "webhooks.0.name"), "vmemcached.cache.example.com");
    T_EQ_STR(str_at(v, "webhooks.0.failurePolicy"), "Ignore");
    T_EQ_STR(str_at(v, "webhooks.0.sideEffects"), "None");
    T_EQ_STR(str_at(v, "webhooks.0.admissionReviewVersions.0"), "v1");
    T_EQ_STR(str_at(v, "webhooks.0.clientConfig.service.namespace"), "luaop-system");
    T_EQ_STR(str_at(v, "webhooks.0.clientConfig.service.name"), "luaop-webhook-service");
    T_EQ_STR(str_at(v, "webhooks.0.clientConfig.service.path"), "/validate-cache-example-com-v1-memcached");
    T_EQ_STR(str_at(v, "webhooks.0.rules.0.resources.0"), "memcacheds");
    T_EQ_STR(str_at(v, "webhooks.0.rules.0.scope"), "*");
    T_EQ_INT(json_integer_value(json_object_get(json_array_get(json_object_get(v, "webhooks"), 0), "timeoutSeconds")),
             5);
    json_t *crd = json_array_get(docs, 1);
    T_EQ_STR(str_at(crd, "kind"), "CustomResourceDefinition");
    T_EQ_STR(str_at(crd, "metadata.name"), "policies.example.com"); /* kubebuilder's plural */
    T_EQ_STR(str_at(crd, "spec.conversion.strategy"), "Webhook");
    T_EQ_STR(str_at(crd, "spec.conversion.webhook.clientConfig.service.path"), "/convert");
    T_EQ_STR(str_at(crd, "spec.conversion.webhook.conversionReviewVersions.0"), "v1");
    json_decref(docs);
}

static void test_url_ca_bundle_and_crd_plural(void)
{
    json_t *crds = json_loads("[{\"kind\":\"CustomResourceDefinition\",\"spec\":{\"group\":\"example.com\","
                              "\"names\":{\"kind\":\"Policy\",\"plural\":\"policys\"}}},"
                              "{\"kind\":\"CustomResourceDefinition\",\"spec\":{\"group\":\"cache.example.com\","
                              "\"names\":{\"kind\":\"Memcached\",\"plural\":\"mcs\"}}}]",
                              0, NULL);
    lop_webhook_manifest_opts_t o = {.url = "https://127.0.0.1:9443", .ca_bundle_pem = "PEM", .crds = crds};
    json_t *docs = lop_webhook_manifests(decls, 2, &o);
    json_t *v = json_array_get(docs, 0);
    T_EQ_STR(str_at(v, "webhooks.0.clientConfig.url"),
             "https://127.0.0.1:9443/validate-cache-example-com-v1-memcached");
    T_EQ_STR(str_at(v, "webhooks.0.clientConfig.caBundle"), "UEVN"); /* base64("PEM") */
    T_CHECK(json_object_get(json_object_get(json_array_get(json_object_get(v, "webhooks"), 0), "clientConfig"),
                            "service") == NULL);
    T_EQ_STR(str_at(v, "webhooks.0.rules.0.resources.0"), "mcs"); /* the CRD's plural wins */
    T_EQ_STR(str_at(json_array_get(docs, 1), "metadata.name"), "policys.example.com");
    json_decref(docs);
    json_decref(crds);
    json_t *none = lop_webhook_manifests(decls, 0, NULL);
    T_EQ_INT(json_array_size(none), 0);
    json_decref(none);
}

int main(void)
{
    T_RUN(test_service_reference);
    T_RUN(test_url_ca_bundle_and_crd_plural);
    return T_DONE();
}
