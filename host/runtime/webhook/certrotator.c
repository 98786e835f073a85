/* SPDX-License-Identifier: Apache-2.0 */
/* certrotator.c — the self-managed certificate Secret and the caBundle injection (certrotator.h). */
#include "host/runtime/webhook/certrotator.h"

#include "host/util/base64.h"
#include "host/util/buf.h"
#include "host/util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECRET_KEYS 4
static const char *const secret_keys[SECRET_KEYS] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};

struct lop_certrotator {
    lop_rest_client_t *rest;
    char *ns, *name, *ca_name, *cn, *sans, *mutating, *validating;
    lop_certrotate_config_t certs;
    const lop_clock_t *clock;
    char **groups, **kinds, **crd_names; /* ncrds each; crd_names[i] NULL until found */
    size_t ncrds;
};

static char **secret_slot(lop_cert_secret_t *s, int i)
{
    char **slots[SECRET_KEYS] = {&s->ca_crt, &s->ca_key, &s->tls_crt, &s->tls_key};
    return slots[i];
}

/* ------------------------------------------------------------------ injection (pure) */

static bool set_bundle(json_t *client_config, const char *ca_b64)
{
    const char *cur = json_string_value(json_object_get(client_config, "caBundle"));
    if (cur && strcmp(cur, ca_b64) == 0) return false;
    json_object_set_new(client_config, "caBundle", json_string(ca_b64));
    return true;
}

bool lop_cainject_webhook_config(json_t *config, const char *ca_b64)
{
    bool changed = false;
    size_t i;
    json_t *wh;
    json_array_foreach(json_object_get(config, "webhooks"), i, wh)
    {
        json_t *cc = json_object_get(wh, "clientConfig");
        if (!json_is_object(cc)) {
            cc = json_object();
            json_object_set_new(wh, "clientConfig", cc);
        }
        changed |= set_bundle(cc, ca_b64);
    }
    return changed;
}

bool lop_cainject_crd(json_t *crd, const char *ca_b64)
{
    json_t *conv = json_object_get(json_object_get(crd, "spec"), "conversion");
    const char *strategy = json_string_value(json_object_get(conv, "strategy"));
    if (!strategy || strcmp(strategy, "Webhook") != 0) return false;
    json_t *wh = json_object_get(conv, "webhook");
    if (!json_is_object(wh)) {
        wh = json_object();
        json_object_set_new(conv, "webhook", wh);
    }
    json_t *cc = json_object_get(wh, "clientConfig");
    if (!json_is_object(cc)) {
        cc = json_object();
        json_object_set_new(wh, "clientConfig", cc);
    }
    return set_bundle(cc, ca_b64);
}

void lop_cert_secret_from_json(const json_t *secret, lop_cert_secret_t *out)
{
    memset(out, 0, sizeof *out);
    const json_t *data = json_object_get(secret, "data");
    for (int i = 0; i < SECRET_KEYS; i++) {
        const char *v = json_string_value(json_object_get(data, secret_keys[i]));
        size_t n = 0;
        char *dec = v ? lop_base64_decode(v, &n) : NULL;
        if (dec && n == 0) {
            free(dec);
            dec = NULL;
        }
        *secret_slot(out, i) = dec;
    }
}

/* ------------------------------------------------------------------ life cycle */

static char *dup_or_null(const char *s) { return s ? lop_xstrdup(s) : NULL; }

lop_certrotator_t *lop_certrotator_new(const lop_certrotator_config_t *cfg)
{
    lop_certrotator_t *r = lop_xcalloc(1, sizeof *r);
    r->rest = cfg->rest;
    r->ns = lop_xstrdup(cfg->secret_namespace);
    r->name = lop_xstrdup(cfg->secret_name);
    r->ca_name = dup_or_null(cfg->certs.ca_name);
    r->cn = dup_or_null(cfg->certs.cn);
    r->sans = lop_xstrdup(cfg->certs.sans ? cfg->certs.sans : "");
    r->mutating = dup_or_null(cfg->mutating_config);
    r->validating = dup_or_null(cfg->validating_config);
    r->certs =
        (lop_certrotate_config_t){r->ca_name, r->cn, r->sans, cfg->certs.ca_validity_s, cfg->certs.cert_validity_s};
    r->clock = cfg->clock ? cfg->clock : &lop_clock_system;
    return r;
}

static void free_crds(lop_certrotator_t *r)
{
    for (size_t i = 0; i < r->ncrds; i++) {
        free(r->groups[i]);
        free(r->kinds[i]);
        free(r->crd_names[i]);
    }
    free(r->groups);
    free(r->kinds);
    free(r->crd_names);
    r->groups = r->kinds = r->crd_names = NULL;
    r->ncrds = 0;
}

void lop_certrotator_free(lop_certrotator_t *r)
{
    if (!r) return;
    free_crds(r);
    free(r->ns);
    free(r->name);
    free(r->ca_name);
    free(r->cn);
    free(r->sans);
    free(r->mutating);
    free(r->validating);
    free(r);
}

void lop_certrotator_set_crds(lop_certrotator_t *r, const char *const *groups, const char *const *kinds, size_t n)
{
    free_crds(r);
    r->groups = lop_xcalloc(n ? n : 1, sizeof *r->groups);
    r->kinds = lop_xcalloc(n ? n : 1, sizeof *r->kinds);
    r->crd_names = lop_xcalloc(n ? n : 1, sizeof *r->crd_names);
    for (size_t i = 0; i < n; i++) {
        r->groups[i] = lop_xstrdup(groups[i]);
        r->kinds[i] = lop_xstrdup(kinds[i]);
    }
    r->ncrds = n;
}

/* ------------------------------------------------------------------ REST helpers */

/* method path (body) -> *out the decoded 2xx answer (may be NULL). */
static lop_rc_t call(lop_certrotator_t *r, const char *method, const char *path, const json_t *body, json_t **out,
                     lop_err_t *err)
{
    if (out) *out = NULL;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    /* bounded: the operator's main loop makes these calls (its heartbeat allows 30 s) */
    lop_rest_req_t req = {.method = method,
                          .path = path,
                          .content_type = text ? "application/json" : NULL,
                          .body = text,
                          .len = text ? strlen(text) : 0,
                          .timeout_ms = LOP_CERTROTATOR_TIMEOUT_MS};
    lop_rc_t rc = lop_rest_request(r->rest, &req, &resp, err);
    if (rc == LOP_OK && out) {
        *out = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, NULL);
        if (!*out) rc = lop_err_set(err, LOP_ERR, 0, NULL, "%s %s: the answer is not JSON", method, path);
    }
    lop_rest_resp_cleanup(&resp);
    free(text);
    return rc;
}

/* ------------------------------------------------------------------ the Secret */

static void secret_put_data(json_t *secret, const lop_cert_secret_t *s)
{
    json_t *data = json_object_get(secret, "data");
    if (!json_is_object(data)) {
        data = json_object();
        json_object_set_new(secret, "data", data);
    }
    lop_cert_secret_t *m = (lop_cert_secret_t *)s;
    for (int i = 0; i < SECRET_KEYS; i++) {
        const char *v = *secret_slot(m, i);
        char *b64 = lop_base64_encode(v ? v : "", v ? strlen(v) : 0, false);
        json_object_set_new(data, secret_keys[i], json_string(b64));
        free(b64);
    }
}

static json_t *new_secret(const lop_certrotator_t *r)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:s}", "apiVersion", "v1", "kind", "Secret", "metadata", "name",
                     r->name, "namespace", r->ns, "labels", "app.kubernetes.io/managed-by", "luaop", "type",
                     "kubernetes.io/tls");
}

static void copy_secret(lop_cert_secret_t *dst, const lop_cert_secret_t *src)
{
    memset(dst, 0, sizeof *dst);
    lop_cert_secret_t *m = (lop_cert_secret_t *)src;
    for (int i = 0; i < SECRET_KEYS; i++) *secret_slot(dst, i) = dup_or_null(*secret_slot(m, i));
}

lop_rc_t lop_certrotator_rotate(lop_certrotator_t *r, lop_cert_secret_t *out, int64_t *next_ns, bool *wrote,
                                lop_err_t *err)
{
    memset(out, 0, sizeof *out);
    *wrote = false;
    char path[600];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/secrets/%s", r->ns, r->name);
    json_t *secret = NULL;
    lop_rc_t rc = call(r, "GET", path, NULL, &secret, err);
    if (rc != LOP_OK && rc != LOP_ENOTFOUND) return rc;
    bool exists = rc == LOP_OK;
    lop_cert_secret_t cur = {0};
    if (exists) lop_cert_secret_from_json(secret, &cur);
    int64_t now_s = lop_clock_wall(r->clock) / LOP_NS_PER_S, next_s = now_s;
    bool changed = false;
    char what[128];
    rc = lop_certrotate_apply(&r->certs, &cur, now_s, &changed, &next_s, what, sizeof what, err);
    if (rc == LOP_OK && changed) {
        if (!exists) secret = new_secret(r);
        secret_put_data(secret, &cur);
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/secrets%s%s", r->ns, exists ? "/" : "",
                 exists ? r->name : "");
        rc = call(r, exists ? "PUT" : "POST", path, secret, NULL, err);
        if (rc == LOP_OK) {
            *wrote = true;
            char where[520];
            snprintf(where, sizeof where, "%s/%s", r->ns, r->name);
            lop_log(LOP_LOG_INFO, "webhook certificates written", "secret", where, "actions", what, NULL);
        }
    }
    json_decref(secret);
    if (rc != LOP_OK) {
        lop_cert_secret_free(&cur);
        return rc;
    }
    copy_secret(out, &cur);
    lop_cert_secret_free(&cur);
    int64_t wait_s = next_s - now_s;
    if (wait_s < 1) wait_s = 1;
    *next_ns = lop_clock_mono(r->clock) + wait_s * LOP_NS_PER_S;
    return LOP_OK;
}

/* ------------------------------------------------------------------ injection (REST) */

/* GET path, inject with fn, PUT when changed. A missing object is skipped. */
static lop_rc_t inject_one(lop_certrotator_t *r, const char *path, bool (*fn)(json_t *, const char *), const char *b64,
                           int *updated, lop_err_t *err)
{
    json_t *obj = NULL;
    lop_rc_t rc = call(r, "GET", path, NULL, &obj, err);
    if (rc == LOP_ENOTFOUND) return LOP_OK;
    if (rc == LOP_OK && fn(obj, b64)) {
        rc = call(r, "PUT", path, obj, NULL, err);
        if (rc == LOP_OK) {
            (*updated)++;
            lop_log(LOP_LOG_INFO, "caBundle injected", "object", path, NULL);
        }
    }
    json_decref(obj);
    return rc;
}

/* Find the CRD names of the group/kind pairs not found yet (one LIST). */
static lop_rc_t find_crds(lop_certrotator_t *r, lop_err_t *err)
{
    bool missing = false;
    for (size_t i = 0; i < r->ncrds; i++) missing |= r->crd_names[i] == NULL;
    if (!missing) return LOP_OK;
    json_t *list = NULL;
    lop_rc_t rc = call(r, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NULL, &list, err);
    if (rc != LOP_OK) return rc;
    size_t k;
    json_t *crd;
    json_array_foreach(json_object_get(list, "items"), k, crd)
    {
        json_t *spec = json_object_get(crd, "spec");
        const char *g = json_string_value(json_object_get(spec, "group"));
        const char *kind = json_string_value(json_object_get(json_object_get(spec, "names"), "kind"));
        const char *name = json_string_value(json_object_get(json_object_get(crd, "metadata"), "name"));
        for (size_t i = 0; g && kind && name && i < r->ncrds; i++) {
            if (!r->crd_names[i] && strcmp(r->groups[i], g) == 0 && strcmp(r->kinds[i], kind) == 0)
                r->crd_names[i] = lop_xstrdup(name);
        }
    }
    json_decref(list);
    return LOP_OK;
}

lop_rc_t lop_certrotator_inject(lop_certrotator_t *r, const char *ca_bundle_pem, int *updated, lop_err_t *err)
{
    *updated = 0;
    char *b64 = lop_base64_encode(ca_bundle_pem, strlen(ca_bundle_pem), false);
    lop_rc_t first = LOP_OK;
    char path[600];
    const char *names[2] = {r->mutating, r->validating};
    const char *plural[2] = {"mutatingwebhookconfigurations", "validatingwebhookconfigurations"};
    for (int i = 0; i < 2; i++) {
        if (!names[i]) continue;
        snprintf(path, sizeof path, "/apis/admissionregistration.k8s.io/v1/%s/%s", plural[i], names[i]);
        lop_rc_t rc = inject_one(r, path, lop_cainject_webhook_config, b64, updated, err);
        if (first == LOP_OK) first = rc;
    }
    lop_rc_t rc = find_crds(r, err);
    if (first == LOP_OK) first = rc;
    for (size_t i = 0; i < r->ncrds; i++) {
        if (!r->crd_names[i]) continue;
        snprintf(path, sizeof path, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/%s", r->crd_names[i]);
        rc = inject_one(r, path, lop_cainject_crd, b64, updated, err);
        if (rc == LOP_OK) continue;
        free(r->crd_names[i]); /* deleted and made again under another name? look it up again */
        r->crd_names[i] = NULL;
        if (first == LOP_OK) first = rc;
    }
    free(b64);
    return first;
}
