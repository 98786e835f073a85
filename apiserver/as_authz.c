/* SPDX-License-Identifier: Apache-2.0 */
/* as_authz.c — AlwaysAllow and RBAC (see as_authz.h). */
#include "apiserver/as_authz.h"

#include "apiserver/as_decode.h"
#include "apiserver/as_registry.h"
#include "apiserver/as_status.h"
#include "apiserver/as_store.h"
#include "apiserver/as_util.h"

#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define RBAC_GROUP "rbac.authorization.k8s.io"

/* The walk over the bindings: what is asked, and what was found. */
typedef struct visit {
    const as_user_t *u;
    const as_attrs_t *a;
    as_decision_t *d;
    char errors[768]; /* missing roles, ", "-separated */
    int nerrors;
} visit_t;

static bool str_in(const json_t *arr, const char *s, bool star)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *x = json_string_value(v);
        if (x && ((star && !strcmp(x, "*")) || !strcmp(x, s))) return true;
    }
    return false;
}

static bool resource_matches(const json_t *rule_res, const as_attrs_t *a)
{
    char combined[2 * AS_ATTR_MAX + 2], star_sub[AS_ATTR_MAX + 3];
    if (a->subresource[0])
        snprintf(combined, sizeof combined, "%s/%s", a->resource, a->subresource);
    else
        snprintf(combined, sizeof combined, "%s", a->resource);
    snprintf(star_sub, sizeof star_sub, "*/%s", a->subresource);
    size_t i;
    json_t *v;
    json_array_foreach(rule_res, i, v)
    {
        const char *r = json_string_value(v);
        if (!r) continue;
        if (!strcmp(r, "*") || !strcmp(r, combined)) return true;
        if (a->subresource[0] && !strcmp(r, star_sub)) return true;
    }
    return false;
}

static bool url_matches(const json_t *urls, const char *path)
{
    size_t i;
    json_t *v;
    json_array_foreach(urls, i, v)
    {
        const char *u = json_string_value(v);
        if (!u) continue;
        size_t n = strlen(u);
        if (!strcmp(u, "*") || !strcmp(u, path)) return true;
        if (n && u[n - 1] == '*' && !strncmp(path, u, n - 1)) return true;
    }
    return false;
}

/* rbac.RuleAllows */
static bool rule_allows(const json_t *rule, const as_attrs_t *a)
{
    if (!str_in(json_object_get(rule, "verbs"), a->verb, true)) return false;
    if (!a->resource_request) return url_matches(json_object_get(rule, "nonResourceURLs"), a->path);
    if (!str_in(json_object_get(rule, "apiGroups"), a->group, true)) return false;
    if (!resource_matches(json_object_get(rule, "resources"), a)) return false;
    const json_t *names = json_object_get(rule, "resourceNames");
    return !json_array_size(names) || str_in(names, a->name, false);
}

/* `Kind "name"` of a subject as the RBAC authorizer's reasons describe it. */
static void describe_subject(const json_t *s, const char *binding_ns, char *buf, size_t n)
{
    const char *kind = json_string_value(json_object_get(s, "kind"));
    const char *name = json_string_value(json_object_get(s, "name"));
    const char *ns = json_string_value(json_object_get(s, "namespace"));
    if (kind && !strcmp(kind, "ServiceAccount"))
        snprintf(buf, n, "%s \"%s/%s\"", kind, name ? name : "", ns && *ns ? ns : binding_ns);
    else
        snprintf(buf, n, "%s \"%s\"", kind ? kind : "", name ? name : "");
}

/* rbac appliesToUser: binding_ns is "" for a ClusterRoleBinding. */
static bool subject_applies(const json_t *s, const as_user_t *u, const char *binding_ns)
{
    const char *kind = json_string_value(json_object_get(s, "kind"));
    const char *name = json_string_value(json_object_get(s, "name"));
    if (!kind || !name) return false;
    if (!strcmp(kind, "User")) return !strcmp(u->name, name);
    if (!strcmp(kind, "Group")) return as_user_in_group(u, name);
    if (strcmp(kind, "ServiceAccount")) return false;
    const char *ns = json_string_value(json_object_get(s, "namespace"));
    if (!ns || !*ns) ns = binding_ns;
    if (!*ns) return false;
    char full[600];
    snprintf(full, sizeof full, "system:serviceaccount:%s:%s", ns, name);
    return !strcmp(u->name, full);
}

/* The rules of the role a binding in binding_ns ("" for cluster) refers to, or NULL (the missing
 * role noted in v). */
static const json_t *role_rules(lop_apiserver_t *srv, visit_t *v, const json_t *ref, const char *binding_ns)
{
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    const char *name = json_string_value(json_object_get(ref, "name"));
    if (!kind || !name) return NULL;
    bool cluster = !strcmp(kind, "ClusterRole");
    if (!cluster && (strcmp(kind, "Role") || !*binding_ns)) return NULL;
    as_coll_t *c = as_coll_get(srv, RBAC_GROUP, cluster ? "clusterroles" : "roles", false);
    char key[600];
    if (cluster)
        snprintf(key, sizeof key, "%s", name);
    else
        snprintf(key, sizeof key, "%s/%s", binding_ns, name);
    as_entry_t *e = c ? as_store_find(c, key) : NULL;
    if (e) return json_object_get(as_entry_obj(srv, e), "rules");
    size_t used = strlen(v->errors);
    snprintf(v->errors + used, sizeof v->errors - used, "%s%s.%s \"%s\" not found", v->nerrors ? ", " : "",
             cluster ? "clusterrole" : "role", RBAC_GROUP, name);
    v->nerrors++;
    return NULL;
}

/* Visit one binding object; true when it allowed the request (reason set). */
static bool visit_binding(lop_apiserver_t *srv, visit_t *v, const json_t *b, const char *binding_ns)
{
    const json_t *subjects = json_object_get(b, "subjects");
    size_t i;
    json_t *s;
    json_array_foreach(subjects, i, s)
    {
        if (!subject_applies(s, v->u, binding_ns)) continue;
        const json_t *ref = json_object_get(b, "roleRef");
        const json_t *rules = role_rules(srv, v, ref, binding_ns);
        size_t j;
        json_t *rule;
        json_array_foreach(rules, j, rule)
        {
            if (!rule_allows(rule, v->a)) continue;
            char subj[600];
            describe_subject(s, binding_ns, subj, sizeof subj);
            const char *bname = as_meta_str(b, "name");
            snprintf(v->d->reason, sizeof v->d->reason, "RBAC: allowed by %s \"%s%s%s\" of %s \"%s\" to %s",
                     *binding_ns ? "RoleBinding" : "ClusterRoleBinding", bname ? bname : "", *binding_ns ? "/" : "",
                     binding_ns, json_string_value(json_object_get(ref, "kind")),
                     json_string_value(json_object_get(ref, "name")), subj);
            return true;
        }
        return false; /* the other subjects refer to the same role */
    }
    return false;
}

/* The built-in bootstrap policy (system:discovery, system:public-info-viewer, system:basic-user
 * bound to system:authenticated). */
static bool bootstrap_allows(const as_user_t *u, as_decision_t *d, const as_attrs_t *a)
{
    static const struct {
        const char *url, *role;
    } urls[] = {
        {"/api", "system:discovery"},
        {"/api/*", "system:discovery"},
        {"/apis", "system:discovery"},
        {"/apis/*", "system:discovery"},
        {"/openapi", "system:discovery"},
        {"/openapi/*", "system:discovery"},
        {"/healthz", "system:public-info-viewer"},
        {"/livez", "system:public-info-viewer"},
        {"/readyz", "system:public-info-viewer"},
        {"/version", "system:public-info-viewer"},
        {"/version/", "system:public-info-viewer"},
    };
    if (!as_user_in_group(u, "system:authenticated")) return false;
    const char *role = NULL;
    if (!a->resource_request && !strcmp(a->verb, "get")) {
        for (size_t i = 0; i < sizeof urls / sizeof urls[0] && !role; i++) {
            json_t *one = json_pack("[s]", urls[i].url);
            if (url_matches(one, a->path)) role = urls[i].role;
            json_decref(one);
        }
    } else if (a->resource_request && !strcmp(a->verb, "create") &&
               ((!strcmp(a->group, "authorization.k8s.io") && (!strcmp(a->resource, "selfsubjectaccessreviews") ||
                                                               !strcmp(a->resource, "selfsubjectrulesreviews"))) ||
                (!strcmp(a->group, "authentication.k8s.io") && !strcmp(a->resource, "selfsubjectreviews")))) {
        role = "system:basic-user";
    }
    if (!role) return false;
    snprintf(d->reason, sizeof d->reason,
             "RBAC: allowed by ClusterRoleBinding \"%s\" of ClusterRole \"%s\" to Group \"system:authenticated\"", role,
             role);
    return true;
}

static bool walk(lop_apiserver_t *srv, visit_t *v, const char *plural, const char *ns)
{
    as_coll_t *c = as_coll_get(srv, RBAC_GROUP, plural, false);
    for (size_t i = 0; c && i < c->n; i++) {
        const json_t *b = as_entry_obj(srv, &c->items[i]);
        const char *bns = as_meta_str(b, "namespace");
        if (ns && (!bns || strcmp(bns, ns))) continue;
        if (visit_binding(srv, v, b, ns ? ns : "")) return true;
    }
    return false;
}

void as_authorize(lop_apiserver_t *srv, const as_user_t *u, const as_attrs_t *a, as_decision_t *d)
{
    memset(d, 0, sizeof *d);
    if (!srv->authz_rbac || as_user_in_group(u, "system:masters")) {
        d->allowed = true;
        return;
    }
    visit_t v = {.u = u, .a = a, .d = d};
    if (bootstrap_allows(u, d, a) || walk(srv, &v, "clusterrolebindings", NULL) ||
        (a->ns[0] && walk(srv, &v, "rolebindings", a->ns))) {
        d->allowed = true;
        return;
    }
    if (v.nerrors == 1)
        snprintf(d->reason, sizeof d->reason, "RBAC: %s", v.errors);
    else if (v.nerrors > 1)
        snprintf(d->reason, sizeof d->reason, "RBAC: [%s]", v.errors);
}

void as_reply_forbidden(as_req_t *q, const as_user_t *u, const as_attrs_t *a, const char *reason)
{
    char msg[1800], what[2 * AS_ATTR_MAX + 2];
    const char *sep = reason && *reason ? ": " : "";
    if (!reason) reason = "";
    if (!a->resource_request) {
        snprintf(msg, sizeof msg, "forbidden: User \"%s\" cannot %s path \"%s\"%s%s", u->name, a->verb, a->path, sep,
                 reason);
        as_reply_status(q, 403, "Forbidden", NULL, "%s", msg);
        return;
    }
    snprintf(what, sizeof what, "%s%s%s", a->resource, a->subresource[0] ? "/" : "", a->subresource);
    char qual[2 * AS_ATTR_MAX + 2], scope[AS_ATTR_MAX + 32], named[AS_ATTR_MAX + 4] = "";
    snprintf(qual, sizeof qual, "%s%s%s", a->resource, a->group[0] ? "." : "", a->group);
    if (a->name[0]) snprintf(named, sizeof named, " \"%s\"", a->name);
    if (a->ns[0])
        snprintf(scope, sizeof scope, "in the namespace \"%s\"", a->ns);
    else
        snprintf(scope, sizeof scope, "at the cluster scope");
    snprintf(msg, sizeof msg, "%s%s is forbidden: User \"%s\" cannot %s resource \"%s\" in API group \"%s\" %s%s%s",
             qual, named, u->name, a->verb, what, a->group, scope, sep, reason);
    as_reply_status(q, 403, "Forbidden", as_details(a->name, a->group, a->resource), "%s", msg);
}

/* Append a bound role's rules to the resource / non-resource lists (the rule resolver's
 * RulesFor). */
static void collect_rules(const json_t *rules, json_t *res_rules, json_t *nonres_rules)
{
    size_t i;
    json_t *rule;
    json_array_foreach(rules, i, rule)
    {
        const json_t *verbs = json_object_get(rule, "verbs");
        if (json_array_size(json_object_get(rule, "nonResourceURLs"))) {
            json_array_append_new(nonres_rules, json_pack("{s:O,s:O}", "verbs", verbs, "nonResourceURLs",
                                                          json_object_get(rule, "nonResourceURLs")));
            continue;
        }
        json_t *r = json_pack("{s:O}", "verbs", verbs);
        static const char *const keys[] = {"apiGroups", "resources", "resourceNames", NULL};
        for (int k = 0; keys[k]; k++)
            if (json_array_size(json_object_get(rule, keys[k])))
                json_object_set(r, keys[k], json_object_get(rule, keys[k]));
        json_array_append_new(res_rules, r);
    }
}

static void collect_bindings(lop_apiserver_t *srv, visit_t *v, const char *plural, const char *ns, json_t *res_rules,
                             json_t *nonres_rules)
{
    as_coll_t *c = as_coll_get(srv, RBAC_GROUP, plural, false);
    for (size_t i = 0; c && i < c->n; i++) {
        const json_t *b = as_entry_obj(srv, &c->items[i]);
        const char *bns = as_meta_str(b, "namespace");
        if (ns && (!bns || strcmp(bns, ns))) continue;
        size_t j;
        json_t *s;
        json_array_foreach(json_object_get(b, "subjects"), j, s)
        {
            if (!subject_applies(s, v->u, ns ? ns : "")) continue;
            collect_rules(role_rules(srv, v, json_object_get(b, "roleRef"), ns ? ns : ""), res_rules, nonres_rules);
            break;
        }
    }
}

json_t *as_authz_rules(lop_apiserver_t *srv, const as_user_t *u, const char *ns)
{
    json_t *res_rules = json_array(), *nonres_rules = json_array();
    as_decision_t d;
    visit_t v = {.u = u, .d = &d};
    if (!srv->authz_rbac || as_user_in_group(u, "system:masters")) {
        json_array_append_new(res_rules,
                              json_pack("{s:[s],s:[s],s:[s]}", "verbs", "*", "apiGroups", "*", "resources", "*"));
        json_array_append_new(nonres_rules, json_pack("{s:[s],s:[s]}", "verbs", "*", "nonResourceURLs", "*"));
    } else {
        if (as_user_in_group(u, "system:authenticated")) {
            json_array_append_new(res_rules,
                                  json_pack("{s:[s],s:[s],s:[s]}", "verbs", "create", "apiGroups",
                                            "authorization.k8s.io", "resources", "selfsubjectaccessreviews"));
            json_array_append_new(res_rules, json_pack("{s:[s],s:[s],s:[s]}", "verbs", "create", "apiGroups",
                                                       "authorization.k8s.io", "resources", "selfsubjectrulesreviews"));
            json_array_append_new(res_rules, json_pack("{s:[s],s:[s],s:[s]}", "verbs", "create", "apiGroups",
                                                       "authentication.k8s.io", "resources", "selfsubjectreviews"));
            json_array_append_new(nonres_rules,
                                  json_pack("{s:[s],s:[s,s,s,s,s,s,s,s,s,s,s]}", "verbs", "get", "nonResourceURLs",
                                            "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                                            "/openapi/*", "/readyz", "/version", "/version/"));
        }
        collect_bindings(srv, &v, "clusterrolebindings", NULL, res_rules, nonres_rules);
        if (ns && *ns) collect_bindings(srv, &v, "rolebindings", ns, res_rules, nonres_rules);
    }
    json_t *out =
        json_pack("{s:o,s:o,s:b}", "resourceRules", res_rules, "nonResourceRules", nonres_rules, "incomplete", false);
    if (v.nerrors) json_object_set_new(out, "evaluationError", json_string(v.errors));
    return out;
}

/* Authorize one impersonation step (verb impersonate on resource[.group]/name in ns); false after
 * answering 403. */
static bool may_impersonate(as_req_t *q, const char *group, const char *resource, const char *ns, const char *name)
{
    as_attrs_t a;
    memset(&a, 0, sizeof a);
    a.resource_request = true;
    snprintf(a.verb, sizeof a.verb, "impersonate");
    snprintf(a.group, sizeof a.group, "%s", group);
    snprintf(a.resource, sizeof a.resource, "%s", resource);
    snprintf(a.ns, sizeof a.ns, "%s", ns);
    snprintf(a.name, sizeof a.name, "%s", name);
    as_decision_t d;
    as_authorize(q->srv, q->user, &a, &d);
    if (!d.allowed) as_reply_forbidden(q, q->user, &a, d.reason);
    return d.allowed;
}

/* "system:serviceaccount:NS:NAME" into ns and name. */
static bool split_sa(const char *user, char *ns, char *name, size_t n)
{
    const char *p = "system:serviceaccount:";
    if (strncmp(user, p, strlen(p))) return false;
    const char *rest = user + strlen(p), *colon = strchr(rest, ':');
    if (!colon || colon == rest || !colon[1] || strchr(colon + 1, ':') || (size_t)(colon - rest) >= n) return false;
    snprintf(ns, n, "%.*s", (int)(colon - rest), rest);
    snprintf(name, n, "%s", colon + 1);
    return true;
}

bool as_impersonate(as_req_t *q)
{
    struct evkeyvalq *h = evhttp_request_get_input_headers(q->r);
    const char *name = evhttp_find_header(h, "Impersonate-User");
    const char *uid = evhttp_find_header(h, "Impersonate-Uid");
    if (!name || !*name) return true; /* groups or a uid alone are refused by kube-apiserver too */
    char ns[AS_ATTR_MAX], sa[AS_ATTR_MAX];
    bool is_sa = split_sa(name, ns, sa, sizeof ns);
    if (is_sa ? !may_impersonate(q, "", "serviceaccounts", ns, sa) : !may_impersonate(q, "", "users", "", name))
        return false;
    as_user_t *u = as_user_new(name, uid);
    bool groups_given = false;
    for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next) {
        if (strcasecmp(kv->key, "Impersonate-Group")) continue;
        if (!may_impersonate(q, "", "groups", "", kv->value)) {
            as_user_free(u);
            return false;
        }
        as_user_add_group(u, kv->value);
        groups_given = true;
    }
    if (uid && *uid && !may_impersonate(q, "authentication.k8s.io", "uids", "", uid)) {
        as_user_free(u);
        return false;
    }
    if (is_sa && !groups_given) {
        char g[AS_ATTR_MAX + 32];
        snprintf(g, sizeof g, "system:serviceaccounts:%s", ns);
        as_user_add_group(u, "system:serviceaccounts");
        as_user_add_group(u, g);
    }
    if (strcmp(name, "system:anonymous")) as_user_add_group(u, "system:authenticated");
    as_user_free(q->user);
    q->user = u;
    return true;
}
