/* SPDX-License-Identifier: Apache-2.0 */
/* as_review.c — TokenReview, SelfSubjectReview, the access reviews and TokenRequest (see
 * as_review.h). */
#include "apiserver/as_review.h"

#include "apiserver/as_authn.h"
#include "apiserver/as_authz.h"
#include "apiserver/as_registry.h"
#include "apiserver/as_status.h"
#include "apiserver/as_store.h"
#include "apiserver/as_util.h"
#include "apiserver/as_write.h"
#include "host/util/clock.h"

#include <stdio.h>
#include <string.h>

#define AUTHN_GROUP "authentication.k8s.io"
#define AUTHZ_GROUP "authorization.k8s.io"

void as_review_register(lop_apiserver_t *srv)
{
    static const struct {
        const char *group, *plural, *singular, *kind;
        bool namespaced;
    } rows[] = {
        {AUTHN_GROUP, "tokenreviews", "tokenreview", "TokenReview", false},
        {AUTHN_GROUP, "selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview", false},
        {AUTHZ_GROUP, "subjectaccessreviews", "subjectaccessreview", "SubjectAccessReview", false},
        {AUTHZ_GROUP, "selfsubjectaccessreviews", "selfsubjectaccessreview", "SelfSubjectAccessReview", false},
        {AUTHZ_GROUP, "selfsubjectrulesreviews", "selfsubjectrulesreview", "SelfSubjectRulesReview", false},
        {AUTHZ_GROUP, "localsubjectaccessreviews", "localsubjectaccessreview", "LocalSubjectAccessReview", true},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        as_res_t t = {0};
        t.group = (char *)rows[i].group;
        t.version = (char *)"v1";
        t.plural = (char *)rows[i].plural;
        t.singular = (char *)rows[i].singular;
        t.kind = (char *)rows[i].kind;
        t.namespaced = rows[i].namespaced;
        t.create_only = true;
        as_res_add(srv, &t);
    }
    as_res_t *sa = as_res_find(srv, "", "v1", "serviceaccounts");
    if (sa) sa->has_token = true;
}

/* The reply skeleton: kind, apiVersion, the request's metadata with creationTimestamp null (a
 * never-stored object), and its spec. New reference. */
static json_t *echo(const as_res_t *res, const json_t *body)
{
    json_t *out = json_object();
    json_object_set_new(out, "kind", json_string(res->kind));
    json_object_set_new(out, "apiVersion", json_string(res->api_version));
    json_t *meta = json_object_get(body, "metadata");
    meta = json_is_object(meta) ? json_deep_copy(meta) : json_object();
    json_object_set_new(meta, "creationTimestamp", json_null());
    json_object_set_new(out, "metadata", meta);
    json_t *spec = json_object_get(body, "spec");
    if (json_is_object(spec)) json_object_set(out, "spec", spec);
    return out;
}

static const char *str_at(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static void token_review(as_req_t *q, const json_t *body)
{
    const json_t *spec = json_object_get(body, "spec");
    const char *token = str_at(spec, "token");
    if (!*token) {
        as_reply_status(q, 400, "BadRequest", NULL, "token is required for TokenReview in authentication");
        return;
    }
    json_t *auds = NULL;
    as_user_t *u = as_authn_token(q->srv, token, json_object_get(spec, "audiences"), &auds);
    json_t *out = echo(q->res, body), *status = json_object();
    if (u) {
        json_object_set_new(status, "authenticated", json_true());
        json_object_set_new(status, "user", as_user_json(u));
        json_object_set_new(status, "audiences", auds);
    } else {
        json_object_set_new(status, "user", json_object());
    }
    json_object_set_new(out, "status", status);
    as_user_free(u);
    as_reply_json(q, 201, out, false);
}

static void self_subject_review(as_req_t *q, const json_t *body)
{
    json_t *out = echo(q->res, body);
    json_object_set_new(out, "status", json_pack("{s:o}", "userInfo", as_user_json(q->user)));
    as_reply_json(q, 201, out, false);
}

/* Attributes from spec.resourceAttributes / spec.nonResourceAttributes (one is present). */
static void spec_attrs(const json_t *spec, as_attrs_t *a)
{
    memset(a, 0, sizeof *a);
    const json_t *ra = json_object_get(spec, "resourceAttributes");
    if (json_is_object(ra)) {
        a->resource_request = true;
        snprintf(a->ns, sizeof a->ns, "%s", str_at(ra, "namespace"));
        snprintf(a->verb, sizeof a->verb, "%s", str_at(ra, "verb"));
        snprintf(a->group, sizeof a->group, "%s", str_at(ra, "group"));
        snprintf(a->version, sizeof a->version, "%s", str_at(ra, "version"));
        snprintf(a->resource, sizeof a->resource, "%s", str_at(ra, "resource"));
        snprintf(a->subresource, sizeof a->subresource, "%s", str_at(ra, "subresource"));
        snprintf(a->name, sizeof a->name, "%s", str_at(ra, "name"));
        return;
    }
    const json_t *nra = json_object_get(spec, "nonResourceAttributes");
    snprintf(a->path, sizeof a->path, "%s", str_at(nra, "path"));
    snprintf(a->verb, sizeof a->verb, "%s", str_at(nra, "verb"));
}

static void invalid(as_req_t *q, const char *field, const char *detail)
{
    char qual[300];
    snprintf(qual, sizeof qual, "%s.%s", q->res->kind, q->res->group);
    as_reply_invalid(q, qual, q->res->kind, q->res->group, "", "FieldValueInvalid", field, detail);
}

/* pkg/apis/authorization/validation: -1 after answering 422. */
static int validate_access_review(as_req_t *q, const json_t *spec, bool subject, bool local)
{
    bool ra = json_is_object(json_object_get(spec, "resourceAttributes"));
    bool nra = json_is_object(json_object_get(spec, "nonResourceAttributes"));
    if (ra && nra) {
        invalid(q, "spec.nonResourceAttributes",
                "Invalid value: \"\": cannot be specified in combination with "
                "resourceAttributes");
        return -1;
    }
    if (!ra && !nra) {
        invalid(q, "spec.resourceAttributes",
                "Invalid value: \"null\": exactly one of nonResourceAttributes or "
                "resourceAttributes must be specified");
        return -1;
    }
    if (local && nra) {
        invalid(q, "spec.nonResourceAttributes", "Invalid value: \"\": disallowed on this kind of request");
        return -1;
    }
    if (local && strcmp(str_at(json_object_get(spec, "resourceAttributes"), "namespace"), q->ns)) {
        char d[600];
        snprintf(d, sizeof d, "Invalid value: \"%s\": must match metadata.namespace",
                 str_at(json_object_get(spec, "resourceAttributes"), "namespace"));
        invalid(q, "spec.resourceAttributes.namespace", d);
        return -1;
    }
    if (subject && !*str_at(spec, "user") && !json_array_size(json_object_get(spec, "groups"))) {
        invalid(q, "spec.user", "Invalid value: \"\": at least one of user or group must be specified");
        return -1;
    }
    return 0;
}

/* The user a SubjectAccessReview asks about (spec.user, spec.uid, spec.groups). */
static as_user_t *spec_user(const json_t *spec)
{
    as_user_t *u = as_user_new(str_at(spec, "user"), str_at(spec, "uid"));
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(spec, "groups"), i, g)
    {
        if (json_is_string(g)) as_user_add_group(u, json_string_value(g));
    }
    return u;
}

static void access_review(as_req_t *q, const json_t *body, bool self, bool local)
{
    const json_t *spec = json_object_get(body, "spec");
    if (!json_is_object(spec)) spec = NULL;
    const char *mns = as_meta_str(body, "namespace");
    if (local && mns && *mns && strcmp(mns, q->ns)) {
        as_reply_status(q, 400, "BadRequest", NULL,
                        "the namespace of the provided object does not match the namespace sent on the request");
        return;
    }
    if (validate_access_review(q, spec, !self, local) < 0) return;
    as_attrs_t a;
    spec_attrs(spec, &a);
    as_user_t *u = self ? NULL : spec_user(spec);
    as_decision_t d;
    as_authorize(q->srv, self ? q->user : u, &a, &d);
    as_user_free(u);
    json_t *out = echo(q->res, body), *status = json_object();
    if (local) json_object_set_new(json_object_get(out, "metadata"), "namespace", json_string(q->ns));
    json_object_set_new(status, "allowed", json_boolean(d.allowed));
    if (d.reason[0]) json_object_set_new(status, "reason", json_string(d.reason));
    json_object_set_new(out, "status", status);
    as_reply_json(q, 201, out, false);
}

void as_review_create(as_req_t *q)
{
    json_t *body = as_parse_body(q);
    if (!body) return;
    const char *kind = json_string_value(json_object_get(body, "kind"));
    const as_res_t *res = q->res;
    if (kind && *kind && strcmp(kind, res->kind)) {
        as_reply_status(q, 400, "BadRequest", NULL, "the body of the request is a %s, not a %s", kind, res->kind);
    } else if (!strcmp(res->kind, "TokenReview")) {
        token_review(q, body);
    } else if (!strcmp(res->kind, "SelfSubjectReview")) {
        self_subject_review(q, body);
    } else if (!strcmp(res->kind, "SelfSubjectRulesReview")) {
        json_t *out = echo(q->res, body);
        const char *ns = str_at(json_object_get(body, "spec"), "namespace");
        json_object_set_new(out, "status", as_authz_rules(q->srv, q->user, ns));
        as_reply_json(q, 201, out, false);
    } else {
        bool self = !strcmp(res->kind, "SelfSubjectAccessReview");
        access_review(q, body, self, !strcmp(res->kind, "LocalSubjectAccessReview"));
    }
    json_decref(body);
}

/* ---- TokenRequest ---- */

/* spec.expirationSeconds (default 3600, at least 600, at most 2^32), or -1 after answering 422. */
static int64_t token_expiration(as_req_t *q, const json_t *spec)
{
    const json_t *e = json_object_get(spec, "expirationSeconds");
    if (!e || json_is_null(e)) return 3600;
    json_int_t v = json_is_integer(e) ? json_integer_value(e) : 0;
    const char *why = v < 600                     ? "may not specify a duration less than 10 minutes"
                      : v > ((json_int_t)1 << 32) ? "may not specify a duration larger than 2^32 seconds"
                                                  : NULL;
    if (!why) return v;
    char d[200];
    snprintf(d, sizeof d, "Invalid value: %lld: %s", (long long)v, why);
    as_reply_invalid(q, "TokenRequest.authentication.k8s.io", "TokenRequest", AUTHN_GROUP, q->name, "FieldValueInvalid",
                     "spec.expirationSeconds", d);
    return -1;
}

void as_review_token_request(as_req_t *q)
{
    char key[600];
    as_make_key(q->res, q->ns, q->name, key, sizeof key);
    as_entry_t *e = as_store_find(q->res->coll, key);
    if (!e) {
        as_reply_notfound(q, q->res, q->name);
        return;
    }
    json_t *body = as_parse_body(q);
    if (!body) return;
    json_t *spec = json_object_get(body, "spec");
    int64_t exp = token_expiration(q, spec);
    if (exp < 0) {
        json_decref(body);
        return;
    }
    json_t *auds = json_object_get(spec, "audiences");
    json_t *out_auds = json_array_size(auds) ? json_deep_copy(auds) : json_pack("[s]", AS_API_AUDIENCE);
    int64_t expires;
    const char *tok = as_authn_mint_sa(q->srv, q->ns, q->name, e->wire->facts->uid, out_auds, exp, &expires);
    char ts[40];
    lop_time_format(expires * (int64_t)1000000000, ts, sizeof ts);
    json_t *out = json_pack("{s:s,s:s,s:{s:s,s:s,s:n},s:{s:o,s:I,s:O},s:{s:s,s:s}}", "kind", "TokenRequest",
                            "apiVersion", "authentication.k8s.io/v1", "metadata", "name", q->name, "namespace", q->ns,
                            "creationTimestamp", "spec", "audiences", out_auds, "expirationSeconds", (json_int_t)exp,
                            "boundObjectRef", json_object_get(spec, "boundObjectRef") ?: json_null(), "status", "token",
                            tok, "expirationTimestamp", ts);
    json_decref(body);
    as_reply_json(q, 201, out, false);
}
