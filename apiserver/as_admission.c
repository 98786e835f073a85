/* SPDX-License-Identifier: Apache-2.0 */
/* as_admission.c — the admission webhook chain (k8s.io/apiserver pkg/admission/plugin/webhook). */
#include "apiserver/as_admission.h"

#include "apiserver/as_decode.h"
#include "apiserver/as_authn.h"

#include "apiserver/as_registry.h"
#include "apiserver/as_status.h"
#include "apiserver/as_store.h"
#include "apiserver/as_util.h"
#include "apiserver/as_webhook.h"
#include "apiserver/as_whconfig.h"

#include "apiserver/patch.h"
#include "host/codec/jsonstr.h"
#include "host/util/base64.h"
#include "host/util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a webhook is asked about. */
typedef struct admit_ctx {
    as_req_t *q;
    const char *op;
    const json_t *obj, *old; /* either may be NULL */
    bool dry;
    bool mutating;
} admit_ctx_t;

static int cmp_entry_key(const void *a, const void *b)
{
    return strcmp((*(as_entry_t *const *)a)->key, (*(as_entry_t *const *)b)->key);
}

/* The stored configurations of plural, sorted by name: a new array of n borrowed objects (each with
 * a reference the caller drops), so a webhook call cannot pull one away. */
static json_t **sorted_configs(lop_apiserver_t *srv, const char *plural, size_t *n)
{
    as_coll_t *c = as_coll_get(srv, "admissionregistration.k8s.io", plural, false);
    *n = c ? c->n : 0;
    if (!*n) return NULL;
    as_entry_t **es = lop_xmalloc(*n * sizeof *es);
    for (size_t i = 0; i < *n; i++) es[i] = &c->items[i];
    qsort(es, *n, sizeof *es, cmp_entry_key);
    json_t **out = lop_xmalloc(*n * sizeof *out);
    for (size_t i = 0; i < *n; i++) out[i] = json_incref(as_entry_obj(srv, es[i]));
    free(es);
    return out;
}

static bool str_or_star(const json_t *arr, const char *s)
{
    return lop_json_str_in(arr, "*") || lop_json_str_in(arr, s);
}

/* rules.go: resources "res[/sub]" where either part may be "*"; scope "*", "Cluster" or "Namespaced". */
static bool rule_matches(const json_t *rule, const admit_ctx_t *a)
{
    const as_res_t *res = a->q->res;
    if (!str_or_star(json_object_get(rule, "operations"), a->op)) return false;
    if (!str_or_star(json_object_get(rule, "apiGroups"), res->group)) return false;
    if (!str_or_star(json_object_get(rule, "apiVersions"), res->version)) return false;
    const char *scope = json_string_value(json_object_get(rule, "scope"));
    if (scope && !strcmp(scope, "Cluster") && res->namespaced) return false;
    if (scope && !strcmp(scope, "Namespaced") && !res->namespaced) return false;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(rule, "resources"), i, r)
    {
        const char *s = json_string_value(r);
        if (!s) continue;
        const char *slash = strchr(s, '/');
        size_t rlen = slash ? (size_t)(slash - s) : strlen(s);
        const char *sub = slash ? slash + 1 : "";
        bool res_ok = (rlen == 1 && s[0] == '*') || (rlen == strlen(res->plural) && !strncmp(s, res->plural, rlen));
        bool sub_ok = !strcmp(sub, "*") || !strcmp(sub, a->q->sub);
        if (res_ok && sub_ok) return true;
    }
    return false;
}

/* A metav1.LabelSelector {matchLabels, matchExpressions} against labels (may be NULL); an absent
 * or empty selector matches everything. */
static bool selector_matches(const json_t *sel, const json_t *labels)
{
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(sel, "matchLabels"), k, v)
    {
        json_t *have = json_object_get(labels, k);
        if (!json_is_string(have) || !json_equal(have, v)) return false;
    }
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(sel, "matchExpressions"), i, e)
    {
        const char *key = json_string_value(json_object_get(e, "key"));
        const char *op = json_string_value(json_object_get(e, "operator"));
        json_t *have = key ? json_object_get(labels, key) : NULL;
        json_t *vals = json_object_get(e, "values");
        if (!op) return false;
        if (!strcmp(op, "Exists") && !have) return false;
        if (!strcmp(op, "DoesNotExist") && have) return false;
        if (!strcmp(op, "In") && (!json_is_string(have) || !lop_json_str_in(vals, json_string_value(have))))
            return false;
        if (!strcmp(op, "NotIn") && json_is_string(have) && lop_json_str_in(vals, json_string_value(have)))
            return false;
    }
    return true;
}

static const json_t *labels_of(const json_t *o)
{
    return o ? json_object_get(json_object_get(o, "metadata"), "labels") : NULL;
}

/* predicates/namespace: the labels of the request's namespace (a Namespace: its own). */
static bool namespace_matches(const json_t *wh, const admit_ctx_t *a)
{
    const json_t *sel = json_object_get(wh, "namespaceSelector");
    const as_res_t *res = a->q->res;
    if (!res->namespaced && strcmp(res->plural, "namespaces")) return true;
    if (!res->namespaced) return selector_matches(sel, labels_of(a->obj ? a->obj : a->old));
    as_coll_t *nsc = as_coll_get(a->q->srv, "", "namespaces", false);
    as_entry_t *e = nsc ? as_store_find(nsc, a->q->ns) : NULL;
    return selector_matches(sel, e ? labels_of(as_entry_obj(a->q->srv, e)) : NULL);
}

static bool webhook_matches(const json_t *wh, const admit_ctx_t *a)
{
    bool any = false;
    size_t i;
    json_t *rule;
    json_array_foreach(json_object_get(wh, "rules"), i, rule)
    {
        if (rule_matches(rule, a)) {
            any = true;
            break;
        }
    }
    if (!any || !namespace_matches(wh, a)) return false;
    const json_t *osel = json_object_get(wh, "objectSelector");
    return (a->obj && selector_matches(osel, labels_of(a->obj))) ||
           (a->old && selector_matches(osel, labels_of(a->old)));
}

static json_t *gvk_or_gvr(const char *group, const char *version, const char *key, const char *val)
{
    json_t *o = json_object();
    json_object_set_new(o, "group", json_string(group));
    json_object_set_new(o, "version", json_string(version));
    json_object_set_new(o, key, json_string(val));
    return o;
}

/* CreateOptions / UpdateOptions / DeleteOptions as the request carried them. */
static json_t *options_of(const admit_ctx_t *a)
{
    const char *kind = !strcmp(a->op, "CREATE")   ? "CreateOptions"
                       : !strcmp(a->op, "UPDATE") ? "UpdateOptions"
                                                  : "DeleteOptions";
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(kind));
    json_object_set_new(o, "apiVersion", json_string("meta.k8s.io/v1"));
    if (a->dry) {
        json_t *d = json_array();
        json_array_append_new(d, json_string("All"));
        json_object_set_new(o, "dryRun", d);
    }
    const char *fm = as_query(a->q, "fieldManager");
    if (fm && *fm && strcmp(a->op, "DELETE")) json_object_set_new(o, "fieldManager", json_string(fm));
    return o;
}

/* An AdmissionReview v1 request (request/admissionreview.go CreateV1AdmissionReview). */
static json_t *build_review(const admit_ctx_t *a, const char *uid)
{
    const as_res_t *res = a->q->res;
    json_t *r = json_object();
    json_object_set_new(r, "uid", json_string(uid));
    json_object_set_new(r, "kind", gvk_or_gvr(res->group, res->version, "kind", res->kind));
    json_object_set_new(r, "resource", gvk_or_gvr(res->group, res->version, "resource", res->plural));
    if (a->q->sub[0]) json_object_set_new(r, "subResource", json_string(a->q->sub));
    json_object_set_new(r, "requestKind", gvk_or_gvr(res->group, res->version, "kind", res->kind));
    json_object_set_new(r, "requestResource", gvk_or_gvr(res->group, res->version, "resource", res->plural));
    if (a->q->sub[0]) json_object_set_new(r, "requestSubResource", json_string(a->q->sub));
    const char *name = a->q->name[0] ? a->q->name : as_meta_str(a->obj, "name");
    if (name && *name) json_object_set_new(r, "name", json_string(name));
    if (res->namespaced) json_object_set_new(r, "namespace", json_string(a->q->ns));
    json_object_set_new(r, "operation", json_string(a->op));
    /* the requester (as_authn.h): "admin" in system:masters when no credentials are configured */
    json_t *user = a->q->user ? as_user_json(a->q->user)
                              : json_pack("{s:s,s:[s,s]}", "username", "admin", "groups", "system:masters",
                                          "system:authenticated");
    json_object_set_new(r, "userInfo", user);
    json_object_set_new(r, "object", a->obj ? json_deep_copy(a->obj) : json_null());
    json_object_set_new(r, "oldObject", a->old ? json_deep_copy(a->old) : json_null());
    json_object_set_new(r, "dryRun", json_boolean(a->dry));
    json_object_set_new(r, "options", options_of(a));
    json_t *review = json_object();
    json_object_set_new(review, "apiVersion", json_string("admission.k8s.io/v1"));
    json_object_set_new(review, "kind", json_string("AdmissionReview"));
    json_object_set_new(review, "request", r);
    return review;
}

/* The response member of a reply, checked as the API server does; NULL with cause. */
static const json_t *check_reply(const json_t *reply, const char *uid, char *cause, size_t n)
{
    const char *av = json_string_value(json_object_get(reply, "apiVersion"));
    const char *kind = json_string_value(json_object_get(reply, "kind"));
    if (!av || !kind || strcmp(av, "admission.k8s.io/v1") || strcmp(kind, "AdmissionReview")) {
        snprintf(cause, n, "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got %s, Kind=%s",
                 av ? av : "", kind ? kind : "");
        return NULL;
    }
    const json_t *resp = json_object_get(reply, "response");
    if (!json_is_object(resp)) {
        snprintf(cause, n, "webhook response was absent");
        return NULL;
    }
    const char *ruid = json_string_value(json_object_get(resp, "uid"));
    if (!ruid || strcmp(ruid, uid)) {
        snprintf(cause, n, "expected response.uid=\"%s\", got \"%s\"", uid, ruid ? ruid : "");
        return NULL;
    }
    return resp;
}

/* Each warning as a `Warning: 299 - "<text>"` header (quotes and backslashes escaped). */
static void add_warnings(as_req_t *q, const json_t *resp)
{
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(resp, "warnings"), i, w)
    {
        const char *s = json_string_value(w);
        if (s && *s) as_add_warning(q, s);
    }
}

/* allowed:false → the denial, answered. */
static void reply_denied(as_req_t *q, const char *name, const json_t *resp)
{
    const json_t *st = json_object_get(resp, "status");
    const char *msg = json_string_value(json_object_get(st, "message"));
    const char *reason = json_string_value(json_object_get(st, "reason"));
    json_t *code = json_object_get(st, "code");
    int c = json_is_integer(code) && json_integer_value(code) >= 400 ? (int)json_integer_value(code) : 403;
    if (msg && *msg)
        as_reply_status(q, c, reason, NULL, "admission webhook \"%s\" denied the request: %s", name, msg);
    else if (reason && *reason)
        as_reply_status(q, c, reason, NULL, "admission webhook \"%s\" denied the request: %s", name, reason);
    else
        as_reply_status(q, c, NULL, NULL, "admission webhook \"%s\" denied the request", name);
}

/* A call that failed: failurePolicy Ignore goes on (true), Fail answers 500 (false). */
static bool call_failed(as_req_t *q, const json_t *wh, const char *name, const char *cause)
{
    const char *fp = json_string_value(json_object_get(wh, "failurePolicy"));
    if (fp && !strcmp(fp, "Ignore")) {
        lop_log(LOP_LOG_INFO, "admission webhook failed, ignored", "webhook", name, "cause", cause, NULL);
        return true;
    }
    as_reply_status(q, 500, "InternalError", NULL, "Internal error occurred: failed calling webhook \"%s\": %s", name,
                    cause);
    return false;
}

/* A JSONPatch response applied to *objp (replaced). 1 applied, 0 none, -1 bad (cause set). */
static int apply_patch(const json_t *resp, json_t **objp, bool *changed, char *cause, size_t n)
{
    const char *p64 = json_string_value(json_object_get(resp, "patch"));
    if (!p64 || !*p64 || !objp || !*objp) return 0;
    const char *pt = json_string_value(json_object_get(resp, "patchType"));
    if (!pt || strcmp(pt, "JSONPatch")) {
        snprintf(cause, n, "unsupported patch type \"%s\"", pt ? pt : "");
        return -1;
    }
    size_t len;
    char *raw = lop_base64_decode(p64, &len);
    json_error_t je;
    json_t *ops = raw ? json_loadb(raw, len, 0, &je) : NULL;
    free(raw);
    lop_err_t err;
    lop_err_clear(&err);
    json_t *out = ops ? as_patch_json(*objp, ops, &err) : NULL;
    json_decref(ops);
    if (!json_is_object(out)) {
        json_decref(out);
        snprintf(cause, n, "the patch of the response could not be applied: %s",
                 ops ? err.message : "not a base64 JSON array");
        return -1;
    }
    *changed = !json_equal(out, *objp);
    json_decref(*objp);
    *objp = out;
    return 1;
}

/* Call one webhook. True to go on; false once q was answered. *changed: the object was patched. */
static bool call_one(admit_ctx_t *a, const json_t *wh, json_t **objp, bool *changed)
{
    const char *name = json_string_value(json_object_get(wh, "name"));
    const char *se = json_string_value(json_object_get(wh, "sideEffects"));
    *changed = false;
    if (a->dry && (!se || (strcmp(se, "None") && strcmp(se, "NoneOnDryRun")))) {
        as_reply_status(a->q, 400, "BadRequest", NULL, "admission webhook \"%s\" does not support dry run", name);
        return false;
    }
    char uid[37], cause[2048];
    as_uuid(uid);
    json_t *review = build_review(a, uid);
    json_t *to = json_object_get(wh, "timeoutSeconds");
    long timeout = json_is_integer(to) ? (long)json_integer_value(to) : 10;
    json_t *reply =
        as_webhook_post(a->q->srv, json_object_get(wh, "clientConfig"), timeout, review, cause, sizeof cause);
    json_decref(review);
    const json_t *resp = reply ? check_reply(reply, uid, cause, sizeof cause) : NULL;
    if (!resp) {
        json_decref(reply);
        return call_failed(a->q, wh, name, cause);
    }
    add_warnings(a->q, resp);
    if (!json_is_true(json_object_get(resp, "allowed"))) {
        reply_denied(a->q, name, resp);
        json_decref(reply);
        return false;
    }
    int prc = a->mutating ? apply_patch(resp, objp, changed, cause, sizeof cause) : 0;
    json_decref(reply);
    if (prc < 0) {
        as_reply_status(a->q, 500, "InternalError", NULL, "Internal error occurred: %s", cause);
        return false;
    }
    if (objp && *objp) a->obj = *objp;
    return true;
}

/* Every matching webhook of the configurations of plural, in order; then (mutating) the IfNeeded
 * ones the object changed after, once more. */
static bool run_chain(admit_ctx_t *a, const char *plural, json_t **objp)
{
    if (as_whconfig_is(a->q->res)) return true;
    size_t n, ncalls = 0, last_change = 0, nre = 0;
    json_t **cfgs = sorted_configs(a->q->srv, plural, &n);
    const json_t **re = NULL;
    size_t *re_at = NULL;
    bool ok = true, changed;
    for (size_t i = 0; i < n && ok; i++) {
        size_t j;
        json_t *wh;
        json_array_foreach(json_object_get(cfgs[i], "webhooks"), j, wh)
        {
            if (!webhook_matches(wh, a)) continue;
            ok = call_one(a, wh, objp, &changed);
            ncalls++;
            if (changed) last_change = ncalls;
            const char *rp = json_string_value(json_object_get(wh, "reinvocationPolicy"));
            if (a->mutating && rp && !strcmp(rp, "IfNeeded")) {
                re = lop_xrealloc(re, (nre + 1) * sizeof *re);
                re_at = lop_xrealloc(re_at, (nre + 1) * sizeof *re_at);
                re[nre] = wh;
                re_at[nre++] = ncalls;
            }
            if (!ok) break;
        }
    }
    for (size_t k = 0; ok && k < nre; k++)
        if (re_at[k] < last_change && webhook_matches(re[k], a)) ok = call_one(a, re[k], objp, &changed);
    free(re);
    free(re_at);
    for (size_t i = 0; i < n; i++) json_decref(cfgs[i]);
    free(cfgs);
    return ok;
}

bool as_admit_mutate(as_req_t *q, const char *op, json_t **objp, const json_t *old, bool dry)
{
    admit_ctx_t a = {.q = q, .op = op, .obj = objp ? *objp : NULL, .old = old, .dry = dry, .mutating = true};
    return run_chain(&a, "mutatingwebhookconfigurations", objp);
}

bool as_admit_validate(as_req_t *q, const char *op, const json_t *obj, const json_t *old, bool dry)
{
    admit_ctx_t a = {.q = q, .op = op, .obj = obj, .old = old, .dry = dry, .mutating = false};
    return run_chain(&a, "validatingwebhookconfigurations", NULL);
}
