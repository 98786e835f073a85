/* SPDX-License-Identifier: Apache-2.0 */
/* rbac.c — least-privilege Roles/ClusterRoles from a script set's declarations and markers (see
 * rbac.h). */
#include "cmd/rbac.h"

#include "host/meta/plural.h"

#include "host/util/buf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* The verbs, in the order kubectl and controller-gen print them. */
static const char *const VERBS[] = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"};
#define NVERBS (sizeof VERBS / sizeof VERBS[0])
enum {
    V_GET = 1 << 0,
    V_LIST = 1 << 1,
    V_WATCH = 1 << 2,
    V_CREATE = 1 << 3,
    V_UPDATE = 1 << 4,
    V_PATCH = 1 << 5,
    V_DELETE = 1 << 6,
    V_READ = V_GET | V_LIST | V_WATCH,
    V_WRITE = V_CREATE | V_UPDATE | V_PATCH | V_DELETE,
};

/* One (scope, group, resource) with the verbs granted on it. scope: "" for the manager role,
 * "*cluster" for cluster-scoped kinds under --namespace, else a marker's namespace. */
typedef struct grant {
    char scope[256];
    char group[256];
    char resource[256];
    unsigned verbs;
} grant_t;

typedef struct grants {
    grant_t *v;
    size_t n, cap;
} grants_t;

static void grant(grants_t *g, const char *scope, const char *group, const char *resource, unsigned verbs)
{
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(g->v[i].scope, scope) == 0 && strcmp(g->v[i].group, group) == 0 &&
            strcmp(g->v[i].resource, resource) == 0) {
            g->v[i].verbs |= verbs;
            return;
        }
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 16;
        g->v = realloc(g->v, g->cap * sizeof *g->v);
        if (!g->v) abort();
    }
    grant_t *e = &g->v[g->n++];
    snprintf(e->scope, sizeof e->scope, "%s", scope);
    snprintf(e->group, sizeof e->group, "%s", group);
    snprintf(e->resource, sizeof e->resource, "%s", resource);
    e->verbs = verbs;
}

/* ---------------------------------------------------------------- kinds to resources */

typedef struct builtin {
    const char *kind, *plural;
    bool cluster;
} builtin_t;

/* Built-in kinds whose plural or scope the English rule would get wrong or cannot know. */
static const builtin_t BUILTINS[] = {
    {"Endpoints", "endpoints", false},
    {"Ingress", "ingresses", false},
    {"NetworkPolicy", "networkpolicies", false},
    {"PodSecurityPolicy", "podsecuritypolicies", true},
    {"Namespace", "namespaces", true},
    {"Node", "nodes", true},
    {"PersistentVolume", "persistentvolumes", true},
    {"ClusterRole", "clusterroles", true},
    {"ClusterRoleBinding", "clusterrolebindings", true},
    {"CustomResourceDefinition", "customresourcedefinitions", true},
    {"StorageClass", "storageclasses", true},
    {"PriorityClass", "priorityclasses", true},
    {"IngressClass", "ingressclasses", true},
    {"RuntimeClass", "runtimeclasses", true},
    {"ValidatingWebhookConfiguration", "validatingwebhookconfigurations", true},
    {"MutatingWebhookConfiguration", "mutatingwebhookconfigurations", true},
    {"APIService", "apiservices", true},
    {"CSIDriver", "csidrivers", true},
    {"VolumeAttachment", "volumeattachments", true},
};

/* Kinds the English rule handles and that are known (no warning). */
static const char *const KNOWN[] = {"Pod",
                                    "Service",
                                    "ConfigMap",
                                    "Secret",
                                    "ServiceAccount",
                                    "Event",
                                    "Deployment",
                                    "StatefulSet",
                                    "DaemonSet",
                                    "ReplicaSet",
                                    "Job",
                                    "CronJob",
                                    "PersistentVolumeClaim",
                                    "Role",
                                    "RoleBinding",
                                    "HorizontalPodAutoscaler",
                                    "PodDisruptionBudget",
                                    "Lease",
                                    "EndpointSlice",
                                    "LimitRange",
                                    "ResourceQuota",
                                    "ControllerRevision",
                                    "ReplicationController"};

static void group_of(const char *api_version, char *out, size_t len)
{
    const char *slash = strchr(api_version, '/');
    snprintf(out, len, "%.*s", slash ? (int)(slash - api_version) : 0, api_version);
}

/* The plural and scope of group/kind: CRDs first, then the tables, then the English rule. */
static void resolve(const lop_rbac_opts_t *o, const char *group, const char *kind, char *plural, size_t len,
                    bool *cluster)
{
    size_t i;
    json_t *d;
    *cluster = false;
    if (o->crds) json_array_foreach(o->crds, i, d)
        {
            if (!json_is_object(d) ||
                strcmp(json_string_value(json_object_get(d, "kind")) ?: "", "CustomResourceDefinition") != 0)
                continue;
            json_t *spec = json_object_get(d, "spec"), *names = json_object_get(spec, "names");
            const char *g = json_string_value(json_object_get(spec, "group"));
            const char *k = json_string_value(json_object_get(names, "kind"));
            const char *p = json_string_value(json_object_get(names, "plural"));
            if (g && k && p && strcmp(g, group) == 0 && strcmp(k, kind) == 0) {
                snprintf(plural, len, "%s", p);
                const char *scope = json_string_value(json_object_get(spec, "scope"));
                *cluster = scope && strcmp(scope, "Cluster") == 0;
                return;
            }
        }
    for (i = 0; i < sizeof BUILTINS / sizeof BUILTINS[0]; i++)
        if (strcmp(BUILTINS[i].kind, kind) == 0) {
            snprintf(plural, len, "%s", BUILTINS[i].plural);
            *cluster = BUILTINS[i].cluster;
            return;
        }
    lop_meta_guess_plural(kind, plural, len);
    bool known = false;
    for (i = 0; i < sizeof KNOWN / sizeof KNOWN[0] && !known; i++) known = strcmp(KNOWN[i], kind) == 0;
    if (!known)
        fprintf(stderr,
                "luaop check --rbac: warning: %s%s%s: no CustomResourceDefinition given, plural guessed as \"%s\" "
                "(pass --crd FILE for its names.plural and scope)\n",
                group, *group ? "/" : "", kind, plural);
}

/* Whether group/resource (a subresource counts as its resource) names a cluster-scoped kind. */
static bool cluster_resource(const lop_rbac_opts_t *o, const char *group, const char *resource)
{
    char res[256];
    snprintf(res, sizeof res, "%s", resource);
    char *slash = strchr(res, '/');
    if (slash) *slash = '\0';
    size_t i;
    json_t *d;
    if (o->crds) json_array_foreach(o->crds, i, d)
        {
            json_t *spec = json_object_get(d, "spec");
            const char *g = json_string_value(json_object_get(spec, "group"));
            const char *p = json_string_value(json_object_get(json_object_get(spec, "names"), "plural"));
            const char *scope = json_string_value(json_object_get(spec, "scope"));
            if (g && p && strcmp(g, group) == 0 && strcmp(p, res) == 0) return scope && strcmp(scope, "Cluster") == 0;
        }
    for (i = 0; i < sizeof BUILTINS / sizeof BUILTINS[0]; i++)
        if (BUILTINS[i].cluster && strcmp(BUILTINS[i].plural, res) == 0) return true;
    return false;
}

static void grant_kind(grants_t *g, const lop_rbac_opts_t *o, const lop_gvk_t *gvk, unsigned verbs,
                       bool status_and_finalizers)
{
    char group[256], plural[256], sub[300];
    bool cluster;
    group_of(gvk->api_version, group, sizeof group);
    resolve(o, group, gvk->kind, plural, sizeof plural, &cluster);
    const char *scope = o->namespace_ && cluster ? "*cluster" : "";
    grant(g, scope, group, plural, verbs);
    if (status_and_finalizers) {
        snprintf(sub, sizeof sub, "%s/status", plural);
        grant(g, scope, group, sub, V_GET | V_UPDATE | V_PATCH);
        snprintf(sub, sizeof sub, "%s/finalizers", plural);
        grant(g, scope, group, sub, V_UPDATE);
    }
}

/* ---------------------------------------------------------------- markers */

static lop_rc_t split_list(const char *v, size_t vlen, char items[][256], size_t *n, size_t cap)
{
    *n = 0;
    size_t i = 0;
    while (i <= vlen) {
        size_t j = i;
        while (j < vlen && v[j] != ';') j++;
        const char *s = v + i;
        size_t l = j - i;
        if (l >= 2 && s[0] == '"' && s[l - 1] == '"') s++, l -= 2; /* groups="" is the core group */
        if (*n == cap || l >= 256) return LOP_EINVAL;
        snprintf(items[(*n)++], 256, "%.*s", (int)l, s);
        i = j + 1;
    }
    return LOP_OK;
}

/* One marker line (after the "+...:rbac:" prefix, up to the end of the line). */
static lop_rc_t parse_marker(grants_t *g, const char *p, size_t len, const char *where, lop_err_t *err)
{
    char groups[16][256], resources[32][256], verbs[16][256], ns[256] = "";
    size_t ng = 0, nr = 0, nv = 0;
    bool have_g = false, have_r = false, have_v = false;
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && p[j] != ',' && !isspace((unsigned char)p[j])) j++;
        const char *eq = memchr(p + i, '=', j - i);
        if (j > i) {
            if (!eq)
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: rbac marker: \"%.*s\" is not key=value", where,
                                   (int)(j - i), p + i);
            size_t klen = (size_t)(eq - (p + i)), vlen = j - i - klen - 1;
            const char *key = p + i, *val = eq + 1;
            lop_rc_t rc = LOP_OK;
            if (klen == 6 && strncmp(key, "groups", 6) == 0)
                rc = split_list(val, vlen, groups, &ng, 16), have_g = true;
            else if (klen == 9 && strncmp(key, "resources", 9) == 0)
                rc = split_list(val, vlen, resources, &nr, 32), have_r = true;
            else if (klen == 5 && strncmp(key, "verbs", 5) == 0)
                rc = split_list(val, vlen, verbs, &nv, 16), have_v = true;
            else if (klen == 9 && strncmp(key, "namespace", 9) == 0)
                snprintf(ns, sizeof ns, "%.*s", (int)vlen, val);
            else
                return lop_err_set(err, LOP_EINVAL, 0, NULL,
                                   "%s: rbac marker: unknown key \"%.*s\" (groups, resources, verbs, namespace)", where,
                                   (int)klen, key);
            if (rc != LOP_OK)
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: rbac marker: too many or too long values in %.*s",
                                   where, (int)klen, key);
        }
        if (j < len && isspace((unsigned char)p[j])) break; /* a comment may follow */
        i = j + 1;
    }
    if (!have_g || !have_r || !have_v)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: rbac marker needs groups=, resources= and verbs=", where);
    unsigned mask = 0;
    for (size_t k = 0; k < nv; k++) {
        size_t v = 0;
        while (v < NVERBS && strcmp(VERBS[v], verbs[k]) != 0) v++;
        if (strcmp(verbs[k], "*") == 0)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: rbac marker: verbs=* is refused; name the verbs", where);
        if (v == NVERBS)
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: rbac marker: unknown verb \"%s\"", where, verbs[k]);
        mask |= 1u << v;
    }
    for (size_t a = 0; a < ng; a++)
        for (size_t b = 0; b < nr; b++) {
            if (strcmp(groups[a], "*") == 0 || strcmp(resources[b], "*") == 0)
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: rbac marker: wildcards are refused; name them",
                                   where);
            grant(g, ns, groups[a], resources[b], mask);
        }
    return LOP_OK;
}

static lop_rc_t scan_markers(grants_t *g, const lop_script_set_t *set, lop_err_t *err)
{
    static const char *const prefixes[] = {"+kubebuilder:rbac:", "+luaop:rbac:"};
    for (size_t f = 0; f < set->nfiles; f++) {
        const char *s = set->files[f].data, *end = s + set->files[f].len;
        int line = 1;
        for (const char *ln = s; ln < end; line++) {
            const char *nl = memchr(ln, '\n', (size_t)(end - ln));
            const char *le = nl ? nl : end;
            const char *p = ln;
            while (p < le && isspace((unsigned char)*p)) p++;
            if (le - p > 2 && p[0] == '-' && p[1] == '-') { /* a Lua comment line */
                p += 2;
                while (p < le && isspace((unsigned char)*p)) p++;
                for (size_t k = 0; k < 2; k++) {
                    size_t pl = strlen(prefixes[k]);
                    if ((size_t)(le - p) > pl && strncmp(p, prefixes[k], pl) == 0) {
                        char where[512];
                        snprintf(where, sizeof where, "%s:%d", set->files[f].name, line);
                        lop_rc_t rc = parse_marker(g, p + pl, (size_t)(le - p - (ptrdiff_t)pl), where, err);
                        if (rc != LOP_OK) return rc;
                    }
                }
            }
            ln = nl ? nl + 1 : end;
        }
    }
    return LOP_OK;
}

/* ---------------------------------------------------------------- output */

static int cmp_grant(const void *a, const void *b)
{
    const grant_t *x = a, *y = b;
    int c = strcmp(x->group, y->group);
    return c ? c : strcmp(x->resource, y->resource);
}

static void print_verbs(FILE *out, unsigned mask)
{
    fputs("  verbs: [", out);
    bool first = true;
    for (size_t v = 0; v < NVERBS; v++)
        if (mask & (1u << v)) {
            fprintf(out, "%s\"%s\"", first ? "" : ", ", VERBS[v]);
            first = false;
        }
    fputs("]\n", out);
}

static void print_rules(FILE *out, grants_t *g, const char *scope)
{
    qsort(g->v, g->n, sizeof *g->v, cmp_grant);
    fputs("rules:\n", out);
    for (size_t i = 0; i < g->n; i++) {
        if (strcmp(g->v[i].scope, scope) != 0) continue;
        fprintf(out, "- apiGroups: [\"%s\"]\n  resources: [\"%s\"]\n", g->v[i].group, g->v[i].resource);
        print_verbs(out, g->v[i].verbs);
    }
}

static void print_role(FILE *out, const lop_rbac_opts_t *o, const char *kind, const char *name, const char *ns,
                       const char *comment)
{
    fprintf(out, "---\n# %s\napiVersion: rbac.authorization.k8s.io/v1\nkind: %s\nmetadata:\n  name: %s\n", comment,
            kind, name);
    if (ns) fprintf(out, "  namespace: %s\n", ns);
    (void)o;
}

static void print_binding(FILE *out, const lop_rbac_opts_t *o, const char *role_kind, const char *name, const char *ns)
{
    fprintf(out,
            "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: %sBinding\nmetadata:\n  name: %s\n%s%s%s"
            "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: %s\n  name: %s\n"
            "subjects:\n- kind: ServiceAccount\n  name: %s\n  namespace: %s\n",
            role_kind, name, ns ? "  namespace: " : "", ns ? ns : "", ns ? "\n" : "", role_kind, name, o->sa_name,
            o->sa_namespace);
}

static bool has_scope(const grants_t *g, const char *scope)
{
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(g->v[i].scope, scope) == 0) return true;
    return false;
}

/* The next namespace of a comma-separated list into buf (blanks trimmed); the rest, or NULL at
 * the end. */
static const char *next_namespace(const char *p, char *buf, size_t len)
{
    while (p && (*p == ',' || *p == ' ')) p++;
    if (!p || !*p) return NULL;
    size_t n = strcspn(p, ",");
    snprintf(buf, len, "%.*s", (int)n, p);
    for (size_t k = strlen(buf); k > 0 && buf[k - 1] == ' ';) buf[--k] = '\0';
    return p + n;
}

static bool in_namespace_list(const char *list, const char *ns)
{
    char buf[256];
    for (const char *p = list; (p = next_namespace(p, buf, sizeof buf));)
        if (strcmp(buf, ns) == 0) return true;
    return false;
}

/* The manager's rules: a ClusterRole, or with --namespace a Role in each namespace of the list
 * (luaop run --namespace a,b caches each of them) holding the rules of every watched kind plus
 * the markers that name that namespace. */
static void print_manager_roles(FILE *out, const lop_rbac_opts_t *o, grants_t *g, const char *name)
{
    static const char what[] = "the controllers' kinds: for_, owns, watches, rbac markers";
    if (!o->namespace_) {
        print_role(out, o, "ClusterRole", name, NULL, what);
        print_rules(out, g, "");
        print_binding(out, o, "ClusterRole", name, NULL);
        return;
    }
    char ns[256];
    for (const char *p = o->namespace_; (p = next_namespace(p, ns, sizeof ns));) {
        grants_t mine = {0};
        for (size_t i = 0; i < g->n; i++)
            if (!*g->v[i].scope || strcmp(g->v[i].scope, ns) == 0)
                grant(&mine, "", g->v[i].group, g->v[i].resource, g->v[i].verbs);
        print_role(out, o, "Role", name, ns, what);
        print_rules(out, &mine, "");
        print_binding(out, o, "Role", name, ns);
        free(mine.v);
    }
}

lop_rc_t lop_rbac_generate(FILE *out, const lop_ctrl_decl_t *decls, size_t n, const lop_script_set_t *set,
                           const lop_rbac_opts_t *opts, lop_err_t *err)
{
    lop_rbac_opts_t o = *opts;
    if (!o.prefix) o.prefix = "luaop";
    if (!o.sa_namespace) o.sa_namespace = "luaop-system";
    if (!o.sa_name) o.sa_name = "luaop";
    if (!o.leader_namespace) o.leader_namespace = o.sa_namespace;
    grants_t g = {0};
    for (size_t i = 0; i < n; i++) {
        grant_kind(&g, &o, &decls[i].for_.gvk, V_READ | V_UPDATE | V_PATCH, true);
        for (size_t k = 0; k < decls[i].nowns; k++) grant_kind(&g, &o, &decls[i].owns[k].gvk, V_READ | V_WRITE, false);
        for (size_t k = 0; k < decls[i].nwatches; k++) grant_kind(&g, &o, &decls[i].watches[k].gvk, V_READ, false);
    }
    grant(&g, "", "", "events", V_CREATE | V_PATCH);
    grant(&g, "", "events.k8s.io", "events", V_CREATE | V_PATCH);
    lop_rc_t rc = set ? scan_markers(&g, set, err) : LOP_OK;
    if (rc != LOP_OK) {
        free(g.v);
        return rc;
    }
    /* Markers without namespace= (scope "") that name a cluster-scoped kind cannot sit in the
     * --namespace Roles; markers naming a namespace of the list join its manager Role. */
    grants_t moved = {0};
    for (size_t i = 0; i < g.n; i++) {
        grant_t *e = &g.v[i];
        if (o.namespace_ && !*e->scope && cluster_resource(&o, e->group, e->resource))
            grant(&moved, "*cluster", e->group, e->resource, e->verbs);
        else
            grant(&moved, e->scope, e->group, e->resource, e->verbs);
    }
    free(g.v);
    g = moved;
    char name[300];
    fprintf(out, "# Generated by `luaop check --rbac` from %s: do not edit by hand.\n", set ? set->origin : "?");
    snprintf(name, sizeof name, "%s-manager", o.prefix);
    print_manager_roles(out, &o, &g, name);
    if (has_scope(&g, "*cluster")) {
        snprintf(name, sizeof name, "%s-manager-cluster", o.prefix);
        print_role(out, &o, "ClusterRole", name, NULL, "cluster-scoped kinds (a Role cannot grant them)");
        print_rules(out, &g, "*cluster");
        print_binding(out, &o, "ClusterRole", name, NULL);
    }
    /* marker namespaces, in first-seen order */
    for (size_t i = 0; i < g.n; i++) {
        const char *s = g.v[i].scope;
        if (!*s || *s == '*' || (o.namespace_ && in_namespace_list(o.namespace_, s))) continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) seen = strcmp(g.v[j].scope, s) == 0;
        if (seen) continue;
        snprintf(name, sizeof name, "%s-manager", o.prefix);
        print_role(out, &o, "Role", name, s, "rbac markers with namespace=");
        print_rules(out, &g, s);
        print_binding(out, &o, "Role", name, s);
    }
    snprintf(name, sizeof name, "%s-leader-election", o.prefix);
    print_role(out, &o, "Role", name, o.leader_namespace, "the Lease lock (--leader-elect) and its Events");
    fputs("rules:\n- apiGroups: [\"coordination.k8s.io\"]\n  resources: [\"leases\"]\n", out);
    print_verbs(out, V_READ | V_CREATE | V_UPDATE | V_PATCH | V_DELETE);
    fputs("- apiGroups: [\"\", \"events.k8s.io\"]\n  resources: [\"events\"]\n", out);
    print_verbs(out, V_CREATE | V_PATCH);
    print_binding(out, &o, "Role", name, o.leader_namespace);
    if (o.scripts_configmap) {
        const char *slash = strchr(o.scripts_configmap, '/');
        if (!slash || slash == o.scripts_configmap || !slash[1]) {
            free(g.v);
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "--scripts-configmap \"%s\": NAMESPACE/NAME expected",
                               o.scripts_configmap);
        }
        char ns[256];
        snprintf(ns, sizeof ns, "%.*s", (int)(slash - o.scripts_configmap), o.scripts_configmap);
        snprintf(name, sizeof name, "%s-scripts", o.prefix);
        print_role(out, &o, "Role", name, ns,
                   "read the scripts ConfigMap only (watched with fieldSelector metadata.name, so "
                   "resourceNames holds for list and watch too)");
        fprintf(out, "rules:\n- apiGroups: [\"\"]\n  resources: [\"configmaps\"]\n  resourceNames: [\"%s\"]\n",
                slash + 1);
        print_verbs(out, V_READ);
        print_binding(out, &o, "Role", name, ns);
    }
    free(g.v);
    return LOP_OK;
}
