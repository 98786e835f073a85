/* SPDX-License-Identifier: Apache-2.0 */
/* as_registry.c — the table of servable resources (built-ins + CRD-made), their storage
 * collections, and the discovery documents derived from the table (apiserver
 * pkg/endpoints/discovery; the OpenAPI documents are as_openapi.c's). */
#include "apiserver/as_registry.h"

#include "apiserver/as_schema.h"
#include "apiserver/as_status.h"
#include "apiserver/as_util.h"
#include "apiserver/as_watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const pod_fields[] = {"spec.nodeName",
                                         "spec.restartPolicy",
                                         "spec.schedulerName",
                                         "spec.serviceAccountName",
                                         "spec.hostNetwork",
                                         "status.phase",
                                         "status.podIP",
                                         "status.nominatedNodeName",
                                         NULL};
static const char *const event_fields[] = {"involvedObject.kind",
                                           "involvedObject.namespace",
                                           "involvedObject.name",
                                           "involvedObject.uid",
                                           "involvedObject.apiVersion",
                                           "involvedObject.resourceVersion",
                                           "involvedObject.fieldPath",
                                           "reason",
                                           "reportingComponent",
                                           "source",
                                           "type",
                                           NULL};
static const char *const ev2_fields[] = {"regarding.kind",
                                         "regarding.namespace",
                                         "regarding.name",
                                         "regarding.uid",
                                         "reason",
                                         "type",
                                         "reportingController",
                                         NULL};
static const char *const secret_fields[] = {"type", NULL};
static const char *const ns_fields[] = {"status.phase", NULL};
static const char *const job_fields[] = {"status.successful", NULL};
static const char *const rs_fields[] = {"status.replicas", NULL};

typedef struct builtin {
    const char *group, *version, *plural, *singular, *kind, *shortname;
    bool namespaced, has_status, track_gen, create_on_update, require_rv, del_obj, microtime, dns_label;
    const char *const *fields;
} builtin_t;

static const builtin_t builtins[] = {
    {"", "v1", "namespaces", "namespace", "Namespace", "ns", false, true, false, false, false, true, false, true,
     ns_fields},
    {"", "v1", "configmaps", "configmap", "ConfigMap", "cm", true, false, false, false, false, false, false, false,
     NULL},
    {"", "v1", "secrets", "secret", "Secret", NULL, true, false, false, false, false, false, false, false,
     secret_fields},
    {"", "v1", "services", "service", "Service", "svc", true, true, false, false, false, false, false, true, NULL},
    {"", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", "sa", true, false, false, false, false, false,
     false, false, NULL},
    {"", "v1", "events", "event", "Event", "ev", true, false, false, false, false, false, false, false, event_fields},
    {"", "v1", "pods", "pod", "Pod", "po", true, true, false, false, false, true, false, false, pod_fields},
    {"apps", "v1", "deployments", "deployment", "Deployment", "deploy", true, true, true, false, false, false, false,
     false, NULL},
    {"apps", "v1", "statefulsets", "statefulset", "StatefulSet", "sts", true, true, true, false, false, false, false,
     false, NULL},
    {"apps", "v1", "daemonsets", "daemonset", "DaemonSet", "ds", true, true, true, false, false, false, false, false,
     NULL},
    {"apps", "v1", "replicasets", "replicaset", "ReplicaSet", "rs", true, true, true, false, false, false, false, false,
     rs_fields},
    {"batch", "v1", "jobs", "job", "Job", NULL, true, true, true, false, false, false, false, false, job_fields},
    {"coordination.k8s.io", "v1", "leases", "lease", "Lease", NULL, true, false, false, true, true, false, true, false,
     NULL},
    {"events.k8s.io", "v1", "events", "event", "Event", "ev", true, false, false, false, false, false, true, false,
     ev2_fields},
    /* RBAC objects: enforced with --authorization-mode=RBAC (as_authz.c). */
    {"rbac.authorization.k8s.io", "v1", "roles", "role", "Role", NULL, true, false, false, false, false, false, false,
     false, NULL},
    {"rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", NULL, true, false, false, false,
     false, false, false, false, NULL},
    {"rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", NULL, false, false, false, false,
     false, false, false, false, NULL},
    {"rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", NULL, false,
     false, false, false, false, false, false, false, NULL},
    /* Called by the admission chain (as_admission.c) on every write. */
    {"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "mutatingwebhookconfiguration",
     "MutatingWebhookConfiguration", NULL, false, false, true, false, false, false, false, false, NULL},
    {"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "validatingwebhookconfiguration",
     "ValidatingWebhookConfiguration", NULL, false, false, true, false, false, false, false, false, NULL},
    {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition", "CustomResourceDefinition",
     "crd", false, true, true, false, false, false, false, false, NULL},
};

as_coll_t *as_coll_get(lop_apiserver_t *srv, const char *group, const char *plural, bool create)
{
    char name[512];
    snprintf(name, sizeof name, "%s/%s", group, plural);
    for (size_t i = 0; i < srv->ncolls; i++)
        if (!strcmp(srv->colls[i]->name, name)) return srv->colls[i];
    if (!create) return NULL;
    as_coll_t *c = lop_xcalloc(1, sizeof *c);
    c->name = lop_xstrdup(name);
    if (srv->ncolls == srv->capcolls) {
        srv->capcolls = srv->capcolls ? srv->capcolls * 2 : 32;
        srv->colls = lop_xrealloc(srv->colls, srv->capcolls * sizeof *srv->colls);
    }
    srv->colls[srv->ncolls++] = c;
    return c;
}

as_res_t *as_res_find(lop_apiserver_t *srv, const char *group, const char *version, const char *plural)
{
    for (size_t i = 0; i < srv->nres; i++) {
        as_res_t *r = srv->res[i];
        if (!strcmp(r->group, group) && !strcmp(r->version, version) && !strcmp(r->plural, plural)) return r;
    }
    return NULL;
}

as_res_t *as_res_add(lop_apiserver_t *srv, const as_res_t *t)
{
    as_res_t *r = lop_xcalloc(1, sizeof *r);
    *r = *t;
    r->group = lop_xstrdup(t->group);
    r->version = lop_xstrdup(t->version);
    r->plural = lop_xstrdup(t->plural);
    r->singular = lop_xstrdup(t->singular ? t->singular : "");
    r->kind = lop_xstrdup(t->kind);
    if (t->list_kind)
        r->list_kind = lop_xstrdup(t->list_kind);
    else {
        size_t n = strlen(t->kind) + 5;
        r->list_kind = lop_xmalloc(n);
        snprintf(r->list_kind, n, "%sList", t->kind);
    }
    r->scale_spec = t->scale_spec ? lop_xstrdup(t->scale_spec) : NULL;
    r->scale_status = t->scale_status ? lop_xstrdup(t->scale_status) : NULL;
    r->scale_selector = t->scale_selector ? lop_xstrdup(t->scale_selector) : NULL;
    r->crd_name = t->crd_name ? lop_xstrdup(t->crd_name) : NULL;
    r->deprecation_warning = t->deprecation_warning ? lop_xstrdup(t->deprecation_warning) : NULL;
    if (r->short_names) json_incref(r->short_names);
    if (r->categories) json_incref(r->categories);
    if (r->schema) json_incref(r->schema);
    if (r->selectable) json_incref(r->selectable);
    if (r->conv_client) json_incref(r->conv_client);
    if (r->group[0])
        snprintf(r->api_version, sizeof r->api_version, "%s/%s", r->group, r->version);
    else
        snprintf(r->api_version, sizeof r->api_version, "%s", r->version);
    r->coll = as_coll_get(srv, r->group, r->plural, true);
    if (r->is_cr) r->coll->sort_keys = true;
    if (srv->nres == srv->capres) {
        srv->capres = srv->capres ? srv->capres * 2 : 32;
        srv->res = lop_xrealloc(srv->res, srv->capres * sizeof *srv->res);
    }
    srv->res[srv->nres++] = r;
    return r;
}

static void res_free(as_res_t *r)
{
    free(r->group);
    free(r->version);
    free(r->plural);
    free(r->singular);
    free(r->kind);
    free(r->list_kind);
    free(r->scale_spec);
    free(r->scale_status);
    free(r->scale_selector);
    free(r->crd_name);
    json_decref(r->short_names);
    json_decref(r->categories);
    json_decref(r->schema);
    as_schema_free(r->cschema);
    free(r->deprecation_warning);
    json_decref(r->selectable);
    json_decref(r->conv_client);
    free(r);
}

void as_res_remove_crd(lop_apiserver_t *srv, const char *crd_name)
{
    size_t o = 0;
    for (size_t i = 0; i < srv->nres; i++) {
        as_res_t *r = srv->res[i];
        if (r->crd_name && !strcmp(r->crd_name, crd_name)) {
            as_watch_close_res(srv, r);
            res_free(r);
        } else
            srv->res[o++] = r;
    }
    srv->nres = o;
}

static void res_remove_at(lop_apiserver_t *srv, size_t i)
{
    memmove(&srv->res[i], &srv->res[i + 1], (srv->nres - i - 1) * sizeof *srv->res);
    srv->nres--;
}

void as_res_merge_crd(lop_apiserver_t *srv, const char *crd_name, size_t first_new)
{
    /* rows [first_new, nres) are the CRD's fresh rows; older rows of the same CRD either take a
     * fresh row's contents (same version: pointer identity and watches survive) or go away */
    size_t i = 0;
    while (i < first_new) {
        as_res_t *old = srv->res[i];
        if (!old->crd_name || strcmp(old->crd_name, crd_name)) {
            i++;
            continue;
        }
        size_t j = first_new;
        while (j < srv->nres && strcmp(srv->res[j]->version, old->version)) j++;
        if (j < srv->nres) {
            as_res_t *fresh = srv->res[j];
            as_res_t tmp = *old;
            *old = *fresh;
            *fresh = tmp;
            res_free(fresh);
            res_remove_at(srv, j);
            i++;
        } else { /* version no longer served */
            as_watch_close_res(srv, old);
            res_free(old);
            res_remove_at(srv, i);
            first_new--;
        }
    }
}

void as_registry_init(lop_apiserver_t *srv)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
        const builtin_t *b = &builtins[i];
        as_res_t t = {0};
        t.group = (char *)b->group;
        t.version = (char *)b->version;
        t.plural = (char *)b->plural;
        t.singular = (char *)b->singular;
        t.kind = (char *)b->kind;
        t.namespaced = b->namespaced;
        t.has_status = b->has_status;
        t.track_generation = b->track_gen;
        t.create_on_update = b->create_on_update;
        t.require_rv = b->require_rv;
        t.delete_returns_obj = b->del_obj;
        t.microtime_check = b->microtime;
        t.dns_label_name = b->dns_label;
        t.extra_fields = b->fields;
        if (!strcmp(b->plural, "deployments") || !strcmp(b->plural, "statefulsets") ||
            !strcmp(b->plural, "replicasets")) {
            t.has_scale = true;
            t.scale_spec = (char *)".spec.replicas";
            t.scale_status = (char *)".status.replicas";
        }
        static const char *const all_cat[] = {"pods",       "services",    "deployments", "statefulsets",
                                              "daemonsets", "replicasets", "jobs",        NULL};
        for (int k = 0; all_cat[k]; k++) /* `kubectl get all` */
            if (!strcmp(b->plural, all_cat[k])) t.categories = json_pack("[s]", "all");
        if (b->shortname) {
            t.short_names = json_array();
            json_array_append_new(t.short_names, json_string(b->shortname));
        }
        as_res_t *r = as_res_add(srv, &t);
        if (!strcmp(b->group, "events.k8s.io")) /* one store, two views */
            r->coll = as_coll_get(srv, "", "events", true);
        json_decref(t.short_names);
        json_decref(t.categories);
    }
}

void as_registry_free(lop_apiserver_t *srv)
{
    for (size_t i = 0; i < srv->nres; i++) res_free(srv->res[i]);
    free(srv->res);
    srv->res = NULL;
    srv->nres = srv->capres = 0;
}

/* ---- discovery ---- */

static json_t *verbs_json(const char *const *v)
{
    json_t *a = json_array();
    for (; *v; v++) json_array_append_new(a, json_string(*v));
    return a;
}

static const char *const crud_verbs[] = {"create", "delete", "deletecollection", "get", "list", "patch", "update",
                                         "watch",  NULL};
static const char *const cr_verbs[] = {"delete", "deletecollection", "get",   "list", "patch",
                                       "create", "update",           "watch", NULL};
static const char *const sub_verbs[] = {"get", "patch", "update", NULL};
static const char *const create_verbs[] = {"create", NULL};

static json_t *resource_list(lop_apiserver_t *srv, const char *group, const char *version)
{
    json_t *list = json_array();
    for (size_t i = 0; i < srv->nres; i++) {
        as_res_t *r = srv->res[i];
        if (strcmp(r->group, group) || strcmp(r->version, version)) continue;
        json_t *e = json_object();
        json_object_set_new(e, "name", json_string(r->plural));
        json_object_set_new(e, "singularName", json_string(r->singular));
        json_object_set_new(e, "namespaced", json_boolean(r->namespaced));
        json_object_set_new(e, "kind", json_string(r->kind));
        json_object_set_new(e, "verbs", verbs_json(r->create_only ? create_verbs : r->is_cr ? cr_verbs : crud_verbs));
        if (r->short_names && json_array_size(r->short_names)) json_object_set(e, "shortNames", r->short_names);
        if (r->categories && json_array_size(r->categories)) json_object_set(e, "categories", r->categories);
        json_array_append_new(list, e);
        if (r->has_status) {
            char n[300];
            snprintf(n, sizeof n, "%s/status", r->plural);
            e = json_object();
            json_object_set_new(e, "name", json_string(n));
            json_object_set_new(e, "singularName", json_string(""));
            json_object_set_new(e, "namespaced", json_boolean(r->namespaced));
            json_object_set_new(e, "kind", json_string(r->kind));
            json_object_set_new(e, "verbs", verbs_json(sub_verbs));
            json_array_append_new(list, e);
        }
        if (r->has_token) { /* TokenRequest (as_review.h) */
            char n[300];
            snprintf(n, sizeof n, "%s/token", r->plural);
            json_array_append_new(list,
                                  json_pack("{s:s,s:s,s:b,s:s,s:s,s:s,s:o}", "name", n, "singularName", "",
                                            "namespaced", r->namespaced, "group", "authentication.k8s.io", "version",
                                            "v1", "kind", "TokenRequest", "verbs", verbs_json(create_verbs)));
        }
        if (r->has_scale) {
            char n[300];
            snprintf(n, sizeof n, "%s/scale", r->plural);
            e = json_object();
            json_object_set_new(e, "name", json_string(n));
            json_object_set_new(e, "singularName", json_string(""));
            json_object_set_new(e, "namespaced", json_boolean(r->namespaced));
            json_object_set_new(e, "group", json_string("autoscaling"));
            json_object_set_new(e, "version", json_string("v1"));
            json_object_set_new(e, "kind", json_string("Scale"));
            json_object_set_new(e, "verbs", verbs_json(sub_verbs));
            json_array_append_new(list, e);
        }
    }
    return list;
}

static json_t *group_json(lop_apiserver_t *srv, const char *group)
{
    json_t *versions = json_array();
    json_t *pref = NULL;
    for (size_t i = 0; i < srv->nres; i++) {
        as_res_t *r = srv->res[i];
        if (strcmp(r->group, group)) continue;
        bool seen = false;
        size_t j;
        json_t *v;
        json_array_foreach(versions, j, v)
        {
            if (!strcmp(json_string_value(json_object_get(v, "version")), r->version)) seen = true;
        }
        if (seen) continue;
        v = json_object();
        json_object_set_new(v, "groupVersion", json_string(r->api_version));
        json_object_set_new(v, "version", json_string(r->version));
        json_array_append_new(versions, v);
        if (!pref) pref = json_deep_copy(v);
    }
    if (!pref) {
        json_decref(versions);
        return NULL;
    }
    /* highest version priority first; the preferred version is the first (v1 > v1beta1 > ...) */
    size_t nv = json_array_size(versions);
    for (size_t a = 1; a < nv; a++) {
        for (size_t b = a; b > 0; b--) {
            const char *x = json_string_value(json_object_get(json_array_get(versions, b - 1), "version"));
            const char *y = json_string_value(json_object_get(json_array_get(versions, b), "version"));
            if (as_version_priority_cmp(x, y) >= 0) break;
            json_t *tmp = json_incref(json_array_get(versions, b - 1));
            json_array_set(versions, b - 1, json_array_get(versions, b));
            json_array_set_new(versions, b, tmp);
        }
    }
    json_decref(pref);
    pref = json_deep_copy(json_array_get(versions, 0));
    json_t *g = json_object();
    json_object_set_new(g, "name", json_string(group));
    json_object_set_new(g, "versions", versions);
    json_object_set_new(g, "preferredVersion", pref);
    return g;
}

/* depth: 0 = /api or /apis, 1 = /apis/{g}, 2 = /api/v1 or /apis/{g}/{v} */
void as_serve_discovery(as_req_t *q, const char *group, const char *version, int depth)
{
    lop_apiserver_t *srv = q->srv;
    json_t *out = json_object();
    if (depth == 0 && group == NULL) { /* /api */
        json_object_set_new(out, "kind", json_string("APIVersions"));
        json_t *vs = json_array();
        json_array_append_new(vs, json_string("v1"));
        json_object_set_new(out, "versions", vs);
        json_t *addr = json_object();
        json_object_set_new(addr, "clientCIDR", json_string("0.0.0.0/0"));
        char hp[128];
        snprintf(hp, sizeof hp, "%s:%d", srv->host, srv->port);
        json_object_set_new(addr, "serverAddress", json_string(hp));
        json_t *arr = json_array();
        json_array_append_new(arr, addr);
        json_object_set_new(out, "serverAddressByClientCIDRs", arr);
    } else if (depth == 0) { /* /apis */
        json_object_set_new(out, "kind", json_string("APIGroupList"));
        json_object_set_new(out, "apiVersion", json_string("v1"));
        json_t *groups = json_array();
        for (size_t i = 0; i < srv->nres; i++) {
            const char *g = srv->res[i]->group;
            if (!g[0]) continue;
            bool seen = false;
            for (size_t j = 0; j < i; j++)
                if (!strcmp(srv->res[j]->group, g)) seen = true;
            if (!seen) json_array_append_new(groups, group_json(srv, g));
        }
        json_object_set_new(out, "groups", groups);
    } else if (depth == 1) {
        json_decref(out);
        out = group_json(srv, group);
        if (!out) {
            as_reply_status(q, 404, "NotFound", NULL, "the server could not find the requested resource");
            return;
        }
        json_t *o2 = json_object();
        json_object_set_new(o2, "kind", json_string("APIGroup"));
        json_object_set_new(o2, "apiVersion", json_string("v1"));
        json_object_update(o2, out);
        json_decref(out);
        out = o2;
    } else {
        json_t *list = resource_list(srv, group ? group : "", version);
        if (json_array_size(list) == 0) {
            json_decref(list);
            json_decref(out);
            as_reply_status(q, 404, "NotFound", NULL, "the server could not find the requested resource");
            return;
        }
        json_object_set_new(out, "kind", json_string("APIResourceList"));
        if (group && group[0]) {
            json_object_set_new(out, "apiVersion", json_string("v1"));
            char gv[300];
            snprintf(gv, sizeof gv, "%s/%s", group, version);
            json_object_set_new(out, "groupVersion", json_string(gv));
        } else {
            json_object_set_new(out, "groupVersion", json_string(version));
        }
        json_object_set_new(out, "resources", list);
    }
    as_reply_json(q, 200, out, false);
}
