/* SPDX-License-Identifier: Apache-2.0 */
/* as_crd.c — CustomResourceDefinitions
 * (kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/):
 * validation and defaults on write, status conditions (NamesAccepted, Established set at once) and
 * installing the CR resources. */
#include "apiserver/as_crd.h"

#include "apiserver/as_registry.h"
#include "apiserver/as_schema.h"
#include "apiserver/as_store.h"
#include "apiserver/as_util.h"

#include "host/codec/jsonstr.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lop_rc_t crd_invalid(lop_err_t *err, const char *name, const char *field, const char *detail)
{
    return lop_err_set(err, LOP_EINVAL, 422, "Invalid",
                       "CustomResourceDefinition.apiextensions.k8s.io \"%s\" is invalid: %s: %s", name ? name : "",
                       field, detail);
}

static json_t *condition(const char *type, const char *reason, const char *msg, const char *now)
{
    json_t *c = json_object();
    json_object_set_new(c, "type", json_string(type));
    json_object_set_new(c, "status", json_string("True"));
    json_object_set_new(c, "lastTransitionTime", json_string(now));
    json_object_set_new(c, "reason", json_string(reason));
    json_object_set_new(c, "message", json_string(msg));
    return c;
}

/* every node states its type unless it is int-or-string or preserves unknown fields. */
static int structural_check(const json_t *s, const char *path, lop_err_t *err, const char *name, int depth)
{
    if (depth > 64) return 0;
    bool typed = json_is_string(json_object_get(s, "type"));
    bool exempt = json_is_true(json_object_get(s, "x-kubernetes-int-or-string")) ||
                  json_is_true(json_object_get(s, "x-kubernetes-preserve-unknown-fields"));
    if (!typed && !exempt) {
        char field[600];
        snprintf(field, sizeof field, "%s.type", path);
        crd_invalid(err, name, field,
                    depth == 0 ? "Required value: must not be empty at the root"
                               : "Required value: must not be empty for specified object fields");
        return -1;
    }
    if (json_is_true(json_object_get(s, "uniqueItems"))) { /* apiextensions validation.go */
        char field[600];
        snprintf(field, sizeof field, "%s.uniqueItems", path);
        crd_invalid(err, name, field,
                    "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic");
        return -1;
    }
    const char *k;
    json_t *sub;
    json_object_foreach(json_object_get(s, "properties"), k, sub)
    {
        char p[600];
        snprintf(p, sizeof p, "%s.properties[%s]", path, k);
        if (structural_check(sub, p, err, name, depth + 1) < 0) return -1;
    }
    json_t *items = json_object_get(s, "items");
    if (json_is_object(items)) {
        char p[600];
        snprintf(p, sizeof p, "%s.items", path);
        if (structural_check(items, p, err, name, depth + 1) < 0) return -1;
    }
    json_t *addl = json_object_get(s, "additionalProperties");
    if (json_is_object(addl)) {
        char p[600];
        snprintf(p, sizeof p, "%s.additionalProperties", path);
        if (structural_check(addl, p, err, name, depth + 1) < 0) return -1;
    }
    return 0;
}

/* spec.conversion: strategy None or Webhook; Webhook needs webhook.clientConfig with exactly one of
 * url / service and conversionReviewVersions including v1 (apiextensions validation.go). */
static int check_conversion(const json_t *conv, const char *name, lop_err_t *err)
{
    const char *strategy = json_string_value(json_object_get(conv, "strategy"));
    if (!conv || (strategy && !strcmp(strategy, "None"))) return 0;
    if (!strategy || strcmp(strategy, "Webhook")) {
        char d[300];
        snprintf(d, sizeof d, "Unsupported value: \"%s\": supported values: \"None\", \"Webhook\"",
                 strategy ? strategy : "");
        crd_invalid(err, name, "spec.conversion.strategy", d);
        return -1;
    }
    const json_t *wh = json_object_get(conv, "webhook");
    const json_t *cc = json_object_get(wh, "clientConfig");
    if (!json_is_object(cc)) {
        crd_invalid(err, name, "spec.conversion.webhook.clientConfig",
                    "Required value: required when strategy is set to Webhook");
        return -1;
    }
    if (!json_object_get(cc, "url") == !json_object_get(cc, "service")) {
        crd_invalid(err, name, "spec.conversion.webhook.clientConfig",
                    "Required value: exactly one of url or service is required");
        return -1;
    }
    if (!lop_json_str_in(json_object_get(wh, "conversionReviewVersions"), "v1")) {
        crd_invalid(err, name, "spec.conversion.webhook.conversionReviewVersions",
                    "Invalid value: []string{...}: must include at least one of v1");
        return -1;
    }
    return 0;
}

json_t *as_crd_finish_create(lop_apiserver_t *srv, json_t *crd, lop_err_t *err)
{
    (void)srv;
    const char *name = as_meta_str(crd, "name");
    json_t *spec = json_object_get(crd, "spec");
    json_t *names = spec ? json_object_get(spec, "names") : NULL;
    const char *group = json_string_value(json_object_get(spec, "group"));
    const char *plural = json_string_value(json_object_get(names, "plural"));
    const char *kind = json_string_value(json_object_get(names, "kind"));
    const char *scope = json_string_value(json_object_get(spec, "scope"));
    json_t *versions = json_object_get(spec, "versions");
    if (!group || !strchr(group, '.')) {
        crd_invalid(err, name, "spec.group", "Invalid value: \"\": should be a domain with at least one dot");
        goto fail;
    }
    if (!plural || !*plural) {
        crd_invalid(err, name, "spec.names.plural", "Required value");
        goto fail;
    }
    if (!kind || !*kind) {
        crd_invalid(err, name, "spec.names.kind", "Required value");
        goto fail;
    }
    char want[600];
    snprintf(want, sizeof want, "%s.%s", plural, group);
    if (!name || strcmp(name, want)) {
        char d[700];
        snprintf(d, sizeof d, "Invalid value: \"%s\": must be spec.names.plural+\".\"+spec.group", name ? name : "");
        crd_invalid(err, name, "metadata.name", d);
        goto fail;
    }
    if (!scope || (strcmp(scope, "Namespaced") && strcmp(scope, "Cluster"))) {
        crd_invalid(err, name, "spec.scope", "Unsupported value: \"\": supported values: \"Cluster\", \"Namespaced\"");
        goto fail;
    }
    if (!json_is_array(versions) || json_array_size(versions) == 0) {
        crd_invalid(err, name, "spec.versions",
                    "Invalid value: null: must have exactly one version marked as storage version");
        goto fail;
    }
    int storage = 0;
    const char *storage_name = NULL;
    size_t i;
    json_t *v;
    json_array_foreach(versions, i, v)
    {
        if (json_is_true(json_object_get(v, "storage"))) {
            storage++;
            storage_name = json_string_value(json_object_get(v, "name"));
        }
        if (!json_is_string(json_object_get(v, "name"))) {
            crd_invalid(err, name, "spec.versions[].name", "Required value");
            goto fail;
        }
    }
    json_array_foreach(versions, i, v)
    {
        json_t *schema = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
        char field[400];
        snprintf(field, sizeof field, "spec.versions[%zu].schema.openAPIV3Schema", i);
        if (!json_is_object(schema)) {
            crd_invalid(err, name, field, "Required value: schemas are required");
            goto fail;
        }
        if (structural_check(schema, field, err, name, 0) < 0) goto fail;
    }
    if (storage != 1) {
        crd_invalid(err, name, "spec.versions",
                    "Invalid value: []apiextensions.CustomResourceDefinitionVersion{...}: must have exactly one "
                    "version marked as storage version");
        goto fail;
    }
    if (check_conversion(json_object_get(spec, "conversion"), name, err) < 0) goto fail;
    if (!json_object_get(names, "singular")) {
        char low[256];
        size_t k;
        for (k = 0; kind[k] && k < sizeof low - 1; k++) low[k] = (char)tolower((unsigned char)kind[k]);
        low[k] = '\0';
        json_object_set_new(names, "singular", json_string(low));
    }
    if (!json_object_get(names, "listKind")) {
        char lk[300];
        snprintf(lk, sizeof lk, "%sList", kind);
        json_object_set_new(names, "listKind", json_string(lk));
    }
    if (!json_object_get(spec, "conversion")) {
        json_t *c = json_object();
        json_object_set_new(c, "strategy", json_string("None"));
        json_object_set_new(spec, "conversion", c);
    }
    char now[32];
    as_now_time(now, sizeof now);
    json_t *st = json_object();
    json_t *conds = json_array();
    json_array_append_new(conds, condition("NamesAccepted", "NoConflicts", "no conflicts found", now));
    json_array_append_new(
        conds, condition("Established", "InitialNamesAccepted", "the initial names have been accepted", now));
    json_object_set_new(st, "conditions", conds);
    json_object_set(st, "acceptedNames", names);
    json_t *sv = json_array();
    json_array_append_new(sv, json_string(storage_name ? storage_name : ""));
    json_object_set_new(st, "storedVersions", sv);
    json_object_set_new(crd, "status", st);
    return crd;
fail:
    json_decref(crd);
    return NULL;
}

/* spec.conversion (strategy Webhook: its clientConfig, borrowed) and the storage version. */
static void set_conversion(as_res_t *t, const json_t *spec, const char *group)
{
    const json_t *conv = json_object_get(spec, "conversion");
    const char *strategy = json_string_value(json_object_get(conv, "strategy"));
    if (strategy && !strcmp(strategy, "Webhook"))
        t->conv_client = json_object_get(json_object_get(conv, "webhook"), "clientConfig");
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(spec, "versions"), i, v)
    {
        const char *vn = json_string_value(json_object_get(v, "name"));
        if (vn && json_is_true(json_object_get(v, "storage")))
            snprintf(t->storage_av, sizeof t->storage_av, "%s/%s", group ? group : "", vn);
    }
}

/* A deprecated version's Warning text: its deprecationWarning, else kube-apiserver's default
 * "<group>/<version> <Kind> is deprecated; use <group>/<best> <Kind>" naming the highest-priority
 * served version that is newer and not deprecated (customresource_handler.go
 * defaultDeprecationWarning); NULL when the version is not deprecated. */
static char *deprecation_text(const json_t *spec, const json_t *v, char *buf, size_t n)
{
    if (!json_is_true(json_object_get(v, "deprecated"))) return NULL;
    const char *w = json_string_value(json_object_get(v, "deprecationWarning"));
    if (w) {
        snprintf(buf, n, "%s", w);
        return buf;
    }
    const char *group = json_string_value(json_object_get(spec, "group"));
    const char *kind = json_string_value(json_object_get(json_object_get(spec, "names"), "kind"));
    const char *name = json_string_value(json_object_get(v, "name"));
    const char *best = NULL;
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(spec, "versions"), i, o)
    {
        const char *on = json_string_value(json_object_get(o, "name"));
        if (!on || !json_is_true(json_object_get(o, "served")) || json_is_true(json_object_get(o, "deprecated")))
            continue;
        if (as_version_priority_cmp(name, on) < 0 && (!best || as_version_priority_cmp(on, best) > 0)) best = on;
    }
    int len = snprintf(buf, n, "%s/%s %s is deprecated", group, name, kind);
    if (best && len > 0 && (size_t)len < n) snprintf(buf + len, n - (size_t)len, "; use %s/%s %s", group, best, kind);
    return buf;
}

void as_crd_changed(lop_apiserver_t *srv, const json_t *crd, bool deleted)
{
    const char *name = as_meta_str(crd, "name");
    if (!name) return;
    json_t *spec = json_object_get(crd, "spec");
    const char *group = json_string_value(json_object_get(spec, "group"));
    json_t *names = json_object_get(spec, "names");
    const char *plural = json_string_value(json_object_get(names, "plural"));
    if (deleted) {
        /* instances go first (their watchers see DELETED), then the resources and their watches */
        as_coll_t *c = group && plural ? as_coll_get(srv, group, plural, false) : NULL;
        while (c && c->n > 0) {
            char *key = lop_xstrdup(c->items[c->n - 1].key);
            as_store_commit(srv, c, key, NULL);
            free(key);
        }
        as_res_remove_crd(srv, name);
        return;
    }
    /* install the served versions; rows that survive keep their identity (and watches) */
    size_t nold = srv->nres;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(spec, "versions"), i, v)
    {
        if (!json_is_true(json_object_get(v, "served"))) continue;
        as_res_t t = {0};
        t.group = (char *)group;
        t.version = (char *)json_string_value(json_object_get(v, "name"));
        t.plural = (char *)plural;
        t.singular = (char *)json_string_value(json_object_get(names, "singular"));
        t.kind = (char *)json_string_value(json_object_get(names, "kind"));
        t.list_kind = (char *)json_string_value(json_object_get(names, "listKind"));
        t.short_names = json_object_get(names, "shortNames");
        t.categories = json_object_get(names, "categories");
        t.namespaced = !strcmp(json_string_value(json_object_get(spec, "scope")), "Namespaced");
        t.is_cr = true;
        t.track_generation = true;
        t.require_rv = true;
        json_t *sub = json_object_get(v, "subresources");
        t.has_status = json_is_object(json_object_get(sub, "status"));
        json_t *scale = json_object_get(sub, "scale");
        if (json_is_object(scale)) {
            t.has_scale = true;
            t.scale_spec = (char *)json_string_value(json_object_get(scale, "specReplicasPath"));
            t.scale_status = (char *)json_string_value(json_object_get(scale, "statusReplicasPath"));
            t.scale_selector = (char *)json_string_value(json_object_get(scale, "labelSelectorPath"));
        }
        t.schema = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
        t.cschema = as_schema_compile(t.schema); /* once per stored CRD, not per write */
        char dep[1200];
        t.deprecation_warning = deprecation_text(spec, v, dep, sizeof dep);
        json_t *sf = json_object_get(v, "selectableFields");
        json_t *paths = NULL;
        if (json_is_array(sf)) {
            paths = json_array();
            size_t j;
            json_t *f;
            json_array_foreach(sf, j, f)
            {
                json_t *p = json_object_get(f, "jsonPath");
                if (json_is_string(p)) json_array_append(paths, p);
            }
        }
        t.selectable = paths;
        t.crd_name = (char *)name;
        set_conversion(&t, spec, group);
        if (t.group && t.version && t.plural && t.kind)
            as_res_add(srv, &t);
        else
            as_schema_free(t.cschema);
        json_decref(paths);
    }
    as_res_merge_crd(srv, name, nold);
}
