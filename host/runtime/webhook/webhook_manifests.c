/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_manifests.c — WebhookConfigurations and CRD conversion stanzas (webhook_manifests.h).
 */
#include "host/runtime/webhook/webhook_manifests.h"

#include "host/meta/plural.h"
#include "host/util/base64.h"
#include "host/util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mopts {
    const lop_webhook_manifest_opts_t *o;
    char service_name[256];
} mopts_t;

static json_t *strv(char *const *v)
{
    json_t *a = json_array();
    for (size_t i = 0; v && v[i]; i++) json_array_append_new(a, json_string(v[i]));
    return a;
}

/* clientConfig: {url} or {service: {namespace, name, path, port}}, plus caBundle. */
static json_t *client_config(const mopts_t *m, const char *path)
{
    const lop_webhook_manifest_opts_t *o = m->o;
    json_t *cc = json_object();
    if (o->url) {
        lop_buf_t u = {0};
        lop_buf_printf(&u, "%s%s", o->url, path);
        json_object_set_new(cc, "url", json_string(u.data));
        lop_buf_free(&u);
    } else {
        json_object_set_new(
            cc, "service",
            json_pack("{s:s, s:s, s:s, s:i}", "namespace", o->service_namespace ? o->service_namespace : "luaop-system",
                      "name", m->service_name, "path", path, "port", o->service_port > 0 ? o->service_port : 443));
    }
    if (o->ca_bundle_pem) {
        char *b64 = lop_base64_encode(o->ca_bundle_pem, strlen(o->ca_bundle_pem), false);
        json_object_set_new(cc, "caBundle", json_string(b64));
        free(b64);
    }
    return cc;
}

static const char *crd_plural(const mopts_t *m, const char *group, const char *kind);

/* The declaration's rules; a defaulter's or validator's resource is the CRD's plural when one
 * was given (the script's guess otherwise, unless it named for_.resource). */
static json_t *rules(const mopts_t *m, const lop_webhook_decl_t *d)
{
    json_t *a = json_array();
    const char *plural = NULL;
    if ((d->defaulter || d->validator) && d->gvk.api_version && d->gvk.kind) {
        char group[256];
        const char *slash = strchr(d->gvk.api_version, '/');
        snprintf(group, sizeof group, "%.*s", slash ? (int)(slash - d->gvk.api_version) : 0, d->gvk.api_version);
        plural = crd_plural(m, group, d->gvk.kind);
    }
    for (size_t i = 0; i < d->nrules; i++) {
        const lop_webhook_rule_t *r = &d->rules[i];
        json_t *res = plural ? json_pack("[s]", plural) : strv(r->resources);
        json_array_append_new(a, json_pack("{s:o, s:o, s:o, s:o, s:s}", "apiGroups", strv(r->api_groups), "apiVersions",
                                           strv(r->api_versions), "operations", strv(r->operations), "resources", res,
                                           "scope", r->scope ? r->scope : "*"));
    }
    return a;
}

static json_t *webhook(const mopts_t *m, const lop_webhook_decl_t *d)
{
    json_t *w =
        json_pack("{s:[s], s:o, s:s, s:s, s:o, s:s, s:i}", "admissionReviewVersions", "v1", "clientConfig",
                  client_config(m, d->path), "failurePolicy", d->failure_policy ? d->failure_policy : "Fail", "name",
                  d->name, "rules", rules(m, d), "sideEffects", d->side_effects ? d->side_effects : "None",
                  "timeoutSeconds", d->timeout_seconds > 0 ? d->timeout_seconds : 10);
    if (d->type == LOP_WEBHOOK_MUTATING) json_object_set_new(w, "reinvocationPolicy", json_string("Never"));
    json_object_set_new(w, "matchPolicy", json_string("Equivalent"));
    return w;
}

static json_t *metadata(const mopts_t *m, const char *name)
{
    json_t *md = json_pack("{s:s}", "name", name);
    if (m->o->cert_manager)
        json_object_set_new(md, "annotations",
                            json_pack("{s:s}", "cert-manager.io/inject-ca-from", m->o->cert_manager));
    return md;
}

static json_t *configuration(const mopts_t *m, const lop_webhook_decl_t *decls, size_t n, lop_webhook_type_t type)
{
    json_t *hooks = json_array();
    for (size_t i = 0; i < n; i++)
        if (decls[i].type == type) json_array_append_new(hooks, webhook(m, &decls[i]));
    if (json_array_size(hooks) == 0) {
        json_decref(hooks);
        return NULL;
    }
    bool mut = type == LOP_WEBHOOK_MUTATING;
    char name[300];
    snprintf(name, sizeof name, "%s-%s-webhook-configuration", m->o->prefix ? m->o->prefix : "luaop",
             mut ? "mutating" : "validating");
    return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "admissionregistration.k8s.io/v1", "kind",
                     mut ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration", "metadata",
                     metadata(m, name), "webhooks", hooks);
}

/* names.plural of the CRD given for group/kind, or NULL. */
static const char *crd_plural(const mopts_t *m, const char *group, const char *kind)
{
    size_t i;
    json_t *c;
    json_array_foreach((json_t *)m->o->crds, i, c)
    {
        json_t *spec = json_object_get(c, "spec");
        const char *g = json_string_value(json_object_get(spec, "group"));
        json_t *names = json_object_get(spec, "names");
        const char *k = json_string_value(json_object_get(names, "kind"));
        const char *p = json_string_value(json_object_get(names, "plural"));
        if (g && k && p && strcmp(g, group) == 0 && strcmp(k, kind) == 0) return p;
    }
    return NULL;
}

/* "<plural>.<group>": the CRD's plural, else kubebuilder's guess. */
static void crd_name(const mopts_t *m, const lop_webhook_decl_t *d, char *out, size_t len)
{
    const char *p = crd_plural(m, d->gvk.api_version, d->gvk.kind);
    char plural[160];
    if (!p) {
        lop_meta_guess_plural(d->gvk.kind, plural, sizeof plural);
        p = plural;
    }
    snprintf(out, len, "%s.%s", p, d->gvk.api_version);
}

static json_t *crd_patch(const mopts_t *m, const lop_webhook_decl_t *d)
{
    char name[512];
    crd_name(m, d, name, sizeof name);
    json_t *conv = json_pack("{s:s, s:{s:o, s:[s]}}", "strategy", "Webhook", "webhook", "clientConfig",
                             client_config(m, d->path), "conversionReviewVersions", "v1");
    return json_pack("{s:s, s:s, s:o, s:{s:o}}", "apiVersion", "apiextensions.k8s.io/v1", "kind",
                     "CustomResourceDefinition", "metadata", metadata(m, name), "spec", "conversion", conv);
}

json_t *lop_webhook_manifests(const lop_webhook_decl_t *decls, size_t n, const lop_webhook_manifest_opts_t *opts)
{
    lop_webhook_manifest_opts_t none = {0};
    mopts_t m = {.o = opts ? opts : &none};
    if (m.o->service_name)
        snprintf(m.service_name, sizeof m.service_name, "%s", m.o->service_name);
    else
        snprintf(m.service_name, sizeof m.service_name, "%s-webhook-service", m.o->prefix ? m.o->prefix : "luaop");
    json_t *out = json_array();
    json_t *mut = configuration(&m, decls, n, LOP_WEBHOOK_MUTATING);
    json_t *val = configuration(&m, decls, n, LOP_WEBHOOK_VALIDATING);
    if (mut) json_array_append_new(out, mut);
    if (val) json_array_append_new(out, val);
    for (size_t i = 0; i < n; i++)
        if (decls[i].type == LOP_WEBHOOK_CONVERSION) json_array_append_new(out, crd_patch(&m, &decls[i]));
    return out;
}
