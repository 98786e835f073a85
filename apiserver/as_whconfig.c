/* SPDX-License-Identifier: Apache-2.0 */
/* as_whconfig.c — defaults and shape checks of the admission webhook configurations
 * (admissionregistration.k8s.io/v1 defaults.go and validation.go, a subset). */
#include "apiserver/as_whconfig.h"

#include "apiserver/as_status.h"
#include "apiserver/as_util.h"

#include "host/codec/jsonstr.h"

#include <stdio.h>
#include <string.h>

bool as_whconfig_is(const as_res_t *res)
{
    return !strcmp(res->group, "admissionregistration.k8s.io") &&
           (!strcmp(res->plural, "mutatingwebhookconfigurations") ||
            !strcmp(res->plural, "validatingwebhookconfigurations"));
}

static void default_str(json_t *o, const char *key, const char *val)
{
    if (!json_object_get(o, key)) json_object_set_new(o, key, json_string(val));
}

void as_whconfig_default(const as_res_t *res, json_t *obj)
{
    bool mutating = !strcmp(res->plural, "mutatingwebhookconfigurations");
    size_t i, j;
    json_t *wh, *rule;
    json_array_foreach(json_object_get(obj, "webhooks"), i, wh)
    {
        if (!json_is_object(wh)) continue;
        default_str(wh, "failurePolicy", "Fail");
        default_str(wh, "matchPolicy", "Equivalent");
        if (mutating) default_str(wh, "reinvocationPolicy", "Never");
        if (!json_object_get(wh, "timeoutSeconds")) json_object_set_new(wh, "timeoutSeconds", json_integer(10));
        if (!json_object_get(wh, "namespaceSelector")) json_object_set_new(wh, "namespaceSelector", json_object());
        if (!json_object_get(wh, "objectSelector")) json_object_set_new(wh, "objectSelector", json_object());
        json_array_foreach(json_object_get(wh, "rules"), j, rule)
        {
            if (json_is_object(rule)) default_str(rule, "scope", "*");
        }
        json_t *svc = json_object_get(json_object_get(wh, "clientConfig"), "service");
        if (json_is_object(svc) && !json_object_get(svc, "port")) json_object_set_new(svc, "port", json_integer(443));
    }
}

/* Reply 422 for field webhooks[i]<sub> with the detail. Returns -1. */
static int bad(as_req_t *q, const json_t *obj, const char *reason, size_t i, const char *sub, const char *detail)
{
    char qk[300], field[200];
    as_qualified_kind(q->res, qk, sizeof qk);
    snprintf(field, sizeof field, "webhooks[%zu]%s", i, sub);
    const char *name = as_meta_str(obj, "name");
    as_reply_invalid(q, qk, q->res->kind, q->res->group, name ? name : "", reason, field, detail);
    return -1;
}

/* A string member that, when present, must be one of the NULL-terminated allowed values. */
static int check_enum(as_req_t *q, const json_t *obj, const json_t *wh, size_t i, const char *key,
                      const char *const *allowed)
{
    json_t *v = json_object_get(wh, key);
    if (!v) return 0;
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    char list[200] = "", detail[400], sub[64];
    for (int k = 0; allowed[k]; k++) {
        if (!strcmp(s, allowed[k])) return 0;
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s\"%s\"", k ? ", " : "", allowed[k]);
    }
    snprintf(detail, sizeof detail, "Unsupported value: \"%s\": supported values: %s", s, list);
    snprintf(sub, sizeof sub, ".%s", key);
    return bad(q, obj, "FieldValueNotSupported", i, sub, detail);
}

static int check_client_config(as_req_t *q, const json_t *obj, const json_t *wh, size_t i)
{
    json_t *cc = json_object_get(wh, "clientConfig");
    json_t *url = json_object_get(cc, "url"), *svc = json_object_get(cc, "service");
    if (!json_is_object(cc) || (!url) == (!svc))
        return bad(q, obj, "FieldValueRequired", i, ".clientConfig",
                   "Required value: exactly one of url or service is required");
    if (url && (!json_is_string(url) || strncmp(json_string_value(url), "https://", 8))) {
        char d[600];
        snprintf(d, sizeof d, "Invalid value: \"%s\": 'https' is the only allowed URL scheme",
                 json_is_string(url) ? json_string_value(url) : "");
        return bad(q, obj, "FieldValueInvalid", i, ".clientConfig.url", d);
    }
    if (svc && (!json_is_string(json_object_get(svc, "name")) || !json_is_string(json_object_get(svc, "namespace"))))
        return bad(q, obj, "FieldValueRequired", i, ".clientConfig.service", "Required value: name and namespace");
    return 0;
}

static int check_webhook(as_req_t *q, const json_t *obj, const json_t *wh, size_t i, bool mutating)
{
    static const char *const side[] = {"None", "NoneOnDryRun", NULL};
    static const char *const fail[] = {"Fail", "Ignore", NULL};
    static const char *const match[] = {"Exact", "Equivalent", NULL};
    static const char *const reinv[] = {"Never", "IfNeeded", NULL};
    const char *name = json_string_value(json_object_get(wh, "name"));
    if (!name || !*name) return bad(q, obj, "FieldValueRequired", i, ".name", "Required value");
    json_t *arv = json_object_get(wh, "admissionReviewVersions");
    if (!json_is_array(arv) || !lop_json_str_in(arv, "v1"))
        return bad(q, obj, "FieldValueRequired", i, ".admissionReviewVersions",
                   "Required value: must specify one of v1");
    if (!json_object_get(wh, "sideEffects"))
        return bad(q, obj, "FieldValueRequired", i, ".sideEffects",
                   "Required value: must specify one of None, NoneOnDryRun");
    if (check_enum(q, obj, wh, i, "sideEffects", side) < 0 || check_enum(q, obj, wh, i, "failurePolicy", fail) < 0 ||
        check_enum(q, obj, wh, i, "matchPolicy", match) < 0 ||
        (mutating && check_enum(q, obj, wh, i, "reinvocationPolicy", reinv) < 0))
        return -1;
    json_t *to = json_object_get(wh, "timeoutSeconds");
    if (!json_is_integer(to) || json_integer_value(to) < 1 || json_integer_value(to) > 30) {
        char d[200];
        snprintf(d, sizeof d, "Invalid value: %lld: the timeout value must be between 1 and 30 seconds",
                 json_is_integer(to) ? (long long)json_integer_value(to) : 0LL);
        return bad(q, obj, "FieldValueInvalid", i, ".timeoutSeconds", d);
    }
    return check_client_config(q, obj, wh, i);
}

int as_whconfig_validate(as_req_t *q, const json_t *obj)
{
    bool mutating = !strcmp(q->res->plural, "mutatingwebhookconfigurations");
    json_t *whs = json_object_get(obj, "webhooks");
    size_t i, j;
    json_t *wh, *other;
    json_array_foreach(whs, i, wh)
    {
        if (!json_is_object(wh)) return bad(q, obj, "FieldValueInvalid", i, "", "Invalid value: must be an object");
        if (check_webhook(q, obj, wh, i, mutating) < 0) return -1;
        const char *name = json_string_value(json_object_get(wh, "name"));
        json_array_foreach(whs, j, other)
        {
            if (j >= i) break;
            const char *oname = json_string_value(json_object_get(other, "name"));
            if (oname && !strcmp(name, oname)) {
                char d[400];
                snprintf(d, sizeof d, "Duplicate value: \"%s\"", name);
                return bad(q, obj, "FieldValueDuplicate", i, ".name", d);
            }
        }
    }
    return 0;
}
