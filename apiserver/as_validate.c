/* SPDX-License-Identifier: Apache-2.0 */
/* as_validate.c — write validation: MicroTime fields, ownerReferences, events.k8s.io rules, and
 * structural-schema type checks + pruning for custom resources. */
#include "apiserver/as_validate.h"

#include "apiserver/as_goval.h"
#include "apiserver/as_meta_rules.h"
#include "apiserver/as_schema.h"
#include "apiserver/as_status.h"
#include "apiserver/as_util.h"
#include "apiserver/as_whconfig.h"
#include "apiserver/as_write_checks.h"
#include "host/util/base64.h"

#include "host/util/clock.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Defaults the server applies to built-ins on every write (a small subset): Secret.type Opaque,
 * Secret.stringData merged into data (base64) and dropped. */
void as_default_builtin(as_res_t *res, json_t *obj)
{
    if (as_whconfig_is(res)) as_whconfig_default(res, obj);
    if (strcmp(res->plural, "secrets") || res->group[0]) return;
    if (!json_is_string(json_object_get(obj, "type"))) json_object_set_new(obj, "type", json_string("Opaque"));
    json_t *sd = json_object_get(obj, "stringData");
    if (json_is_object(sd)) {
        json_t *data = json_object_get(obj, "data");
        if (!json_is_object(data)) {
            data = json_object();
            json_object_set_new(obj, "data", data);
        }
        const char *k;
        json_t *v;
        json_object_foreach(sd, k, v)
        {
            if (!json_is_string(v)) continue;
            char *e = lop_base64_encode(json_string_value(v), json_string_length(v), false);
            json_object_set_new(data, k, json_string(e));
            free(e);
        }
    }
    json_object_del(obj, "stringData");
}

static int check_microtime(as_req_t *q, const json_t *obj, const char *path)
{
    json_t *v = as_path_get(obj, path);
    if (!v || json_is_null(v)) return 0;
    int64_t ns;
    if (!json_is_string(v) || lop_microtime_parse_strict(json_string_value(v), &ns) != 0) {
        const char *s = json_is_string(v) ? json_string_value(v) : "?";
        as_reply_status(q, 400, "BadRequest", NULL,
                        "%s in version \"%s\" cannot be handled as a %s: parsing time \"%s\" as "
                        "\"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"%s\" as \".000000\"",
                        q->res->kind, q->res->version, q->res->kind, s, s);
        return -1;
    }
    return 0;
}

static void invalid1(as_req_t *q, const json_t *obj, const char *reason, const char *field, const char *detail)
{
    char qk[300];
    as_qualified_kind(q->res, qk, sizeof qk);
    const char *name = as_meta_str(obj, "name");
    as_reply_invalid(q, qk, q->res->kind, q->res->group, name ? name : "", reason, field, detail);
}

int as_validate_builtin(as_req_t *q, json_t *obj)
{
    as_res_t *res = q->res;
    if (as_whconfig_is(res)) return as_whconfig_validate(q, obj);
    if (!strcmp(res->plural, "leases")) {
        if (check_microtime(q, obj, "spec.acquireTime") < 0 || check_microtime(q, obj, "spec.renewTime") < 0) return -1;
        json_t *d = as_path_get(obj, "spec.leaseDurationSeconds");
        if (json_is_integer(d) && json_integer_value(d) <= 0) {
            char m[200];
            snprintf(m, sizeof m, "Invalid value: %" JSON_INTEGER_FORMAT ": must be greater than 0",
                     json_integer_value(d));
            invalid1(q, obj, "FieldValueInvalid", "spec.leaseDurationSeconds", m);
            return -1;
        }
        json_t *t = as_path_get(obj, "spec.leaseTransitions");
        if (json_is_integer(t) && json_integer_value(t) < 0) {
            char m[200];
            snprintf(m, sizeof m, "Invalid value: %" JSON_INTEGER_FORMAT ": must be greater than or equal to 0",
                     json_integer_value(t));
            invalid1(q, obj, "FieldValueInvalid", "spec.leaseTransitions", m);
            return -1;
        }
    }
    if (!strcmp(res->plural, "events") && !strcmp(res->group, "events.k8s.io")) {
        if (check_microtime(q, obj, "eventTime") < 0 || check_microtime(q, obj, "series.lastObservedTime") < 0)
            return -1;
        json_t *et = json_object_get(obj, "eventTime");
        if (!et || json_is_null(et)) {
            invalid1(q, obj, "FieldValueRequired", "eventTime", "Required value");
            return -1;
        }
        const char *legacy[] = {"deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp",
                                "deprecatedCount", NULL};
        for (int i = 0; legacy[i]; i++) {
            json_t *v = json_object_get(obj, legacy[i]);
            if (v && !json_is_null(v) && !(json_is_object(v) && json_object_size(v) == 0) &&
                !(json_is_integer(v) && json_integer_value(v) == 0)) {
                invalid1(q, obj, "FieldValueInvalid", legacy[i], "Invalid value: \"\": needs to be unset");
                return -1;
            }
        }
        json_t *t = json_object_get(obj, "type");
        const char *ts = json_string_value(t);
        if (!ts || (strcmp(ts, "Normal") && strcmp(ts, "Warning"))) {
            char d[200];
            snprintf(d, sizeof d, "Unsupported value: \"%s\": supported values: \"Normal\", \"Warning\"", ts ? ts : "");
            invalid1(q, obj, "FieldValueNotSupported", "type", d);
            return -1;
        }
    }
    if (!strcmp(res->plural, "events") && !res->group[0]) {
        /* legacy core/v1 Event: the event lives in its involved object's namespace */
        const char *ins = json_string_value(as_path_get(obj, "involvedObject.namespace"));
        const char *ns = as_meta_str(obj, "namespace");
        bool bad = ins && *ins ? (!ns || strcmp(ins, ns)) : (ns && *ns && strcmp(ns, "default"));
        if (bad) {
            char d[600];
            snprintf(d, sizeof d, "Invalid value: \"%s\": does not match event.namespace", ins ? ins : "");
            invalid1(q, obj, "FieldValueInvalid", "involvedObject.namespace", d);
            return -1;
        }
    }
    json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
    if (json_is_array(refs)) {
        size_t i;
        json_t *r;
        int controllers = 0;
        json_array_foreach(refs, i, r)
        {
            const char *req[] = {"apiVersion", "kind", "name", "uid", NULL};
            for (int k = 0; req[k]; k++) {
                json_t *v = json_object_get(r, req[k]);
                if (!json_is_string(v) || !*json_string_value(v)) {
                    char field[100];
                    snprintf(field, sizeof field, "metadata.ownerReferences.%s", req[k]);
                    invalid1(q, obj, "FieldValueInvalid", field, "Invalid value: \"\": must not be empty");
                    return -1;
                }
            }
            if (json_is_true(json_object_get(r, "controller"))) controllers++;
        }
        if (controllers > 1) {
            invalid1(q, obj, "FieldValueInvalid", "metadata.ownerReferences",
                     "Invalid value: []v1.OwnerReference{...}: Only one reference can have "
                     "Controller set to true");
            return -1;
        }
    }
    return 0;
}

/* ---- custom resources: structural schema (as_schema.c) ---- */

int as_validate_cr(as_res_t *res, json_t *obj, const json_t *old, json_t **causes_out, json_t *pruned, json_t *warnings)
{
    json_t *m = json_object_get(obj, "metadata");
    if (json_is_object(m)) { /* metadata keeps ObjectMeta's fields only */
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(m, tmp, k, v)
        {
            if (as_schema_objectmeta_field(k)) continue;
            char p[300];
            snprintf(p, sizeof p, "metadata.%s", k);
            json_array_append_new(pruned, json_string(p));
            json_object_del(m, k);
        }
    }
    if (!res->cschema) return 0;
    json_t *causes = json_array();
    as_schema_result_t r = {.causes = causes, .pruned = pruned, .warnings = warnings};
    as_schema_validate(res->cschema, obj, old, &r);
    if (json_array_size(causes) == 0) {
        json_decref(causes);
        return 0;
    }
    *causes_out = causes;
    return -1;
}

/* ---- the validation step of a write: every field error in one 422 ---- */

#define DNS_LABEL_MSG                                                                                               \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end " \
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "                  \
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define DNS_SUBDOMAIN_MSG                                                                                      \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must " \
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "          \
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

/* A new object's name: a DNS label (Namespaces, Services) or subdomain, as the resource requires. */
static void check_name(const as_res_t *res, const char *name, json_t *causes)
{
    bool ok = res->dns_label_name ? as_valid_dns_label(name) : as_valid_dns_subdomain(name);
    if (ok) return;
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, "Invalid value: ");
    as_goval_quote(&b, name, strlen(name));
    lop_buf_printf(&b, ": %s", res->dns_label_name ? DNS_LABEL_MSG : DNS_SUBDOMAIN_MSG);
    as_cause_add(causes, "FieldValueInvalid", "metadata.name", b.data);
    lop_buf_free(&b);
}

/* 422 Invalid listing every cause: `<Kind>[.<group>] "<name>" is invalid: [f: msg, ...]` (one cause
 * without the brackets), details.kind the Kind. causes is stolen. */
static void reply_causes(as_req_t *q, const char *name, json_t *causes)
{
    as_res_t *res = q->res;
    char qual_kind[300];
    as_qualified_kind(res, qual_kind, sizeof qual_kind);
    lop_buf_t b = LOP_BUF_INIT;
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c)
    {
        lop_buf_printf(&b, "%s%s: %s", i ? ", " : "", json_string_value(json_object_get(c, "field")),
                       json_string_value(json_object_get(c, "message")));
    }
    json_t *d = as_details(name, res->group, res->kind);
    bool many = json_array_size(causes) > 1;
    json_object_set_new(d, "causes", causes);
    as_reply_status(q, 422, "Invalid", d, "%s \"%s\" is invalid: %s%s%s", qual_kind, name, many ? "[" : "", b.data,
                    many ? "]" : "");
    lop_buf_free(&b);
}

bool as_validate_write(as_req_t *q, json_t *obj, const json_t *old, const char *name, json_t **pruned)
{
    as_res_t *res = q->res;
    json_t *causes = json_array();
    if (!old) check_name(res, name, causes);
    as_meta_rules_check(obj, causes);
    as_data_rules_check(res, obj, old, causes);
    if (res->is_cr) {
        json_t *cr_causes = NULL, *warnings = json_array();
        *pruned = json_array();
        if (as_validate_cr(res, obj, old, &cr_causes, *pruned, warnings) < 0) {
            json_array_extend(causes, cr_causes);
            json_decref(cr_causes);
        }
        size_t i;
        json_t *w;
        json_array_foreach(warnings, i, w) as_add_warning(q, json_string_value(w)); /* rules not evaluated */
        json_decref(warnings);
        if (as_report_unknown_fields(q, *pruned) < 0) { /* Strict: a decode error, before validation */
            json_decref(causes);
            return false;
        }
    }
    if (json_array_size(causes) == 0) {
        json_decref(causes);
        return true;
    }
    reply_causes(q, name, causes);
    return false;
}
