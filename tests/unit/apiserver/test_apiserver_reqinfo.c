/* SPDX-License-Identifier: Apache-2.0 */
/* test_apiserver_reqinfo.c — request attributes as kube-apiserver's RequestInfoFactory resolves
 * them (as_reqinfo.h), table-driven. */
#include "apiserver/as_reqinfo.h"

#include "t.h"

typedef struct reqinfo_case {
    const char *method, *path, *watch, *fs;
    bool resource;
    const char *verb, *group, *version, *resource_name, *sub, *name, *ns;
} reqinfo_case_t;

static const reqinfo_case_t cases[] = {
    /* non-resource paths: the method in lower case */
    {"GET", "/version", NULL, NULL, false, "get", "", "", "", "", "", ""},
    {"GET", "/api", NULL, NULL, false, "get", "", "", "", "", "", ""},
    {"GET", "/api/v1", NULL, NULL, false, "get", "", "", "", "", "", ""},
    {"GET", "/apis/apps/v1", NULL, NULL, false, "get", "", "", "", "", "", ""},
    {"POST", "/luaop-fault/reset", NULL, NULL, false, "post", "", "", "", "", "", ""},
    {"GET", "/metrics", NULL, NULL, false, "get", "", "", "", "", "", ""},
    /* collections: list, watch, create, deletecollection */
    {"GET", "/api/v1/namespaces/ns/configmaps", NULL, NULL, true, "list", "", "v1", "configmaps", "", "", "ns"},
    {"GET", "/api/v1/namespaces/ns/configmaps", "true", NULL, true, "watch", "", "v1", "configmaps", "", "", "ns"},
    {"GET", "/api/v1/namespaces/ns/configmaps", "1", NULL, true, "watch", "", "v1", "configmaps", "", "", "ns"},
    {"GET", "/api/v1/namespaces/ns/configmaps", "false", NULL, true, "list", "", "v1", "configmaps", "", "", "ns"},
    {"GET", "/api/v1/watch/namespaces/ns/configmaps", NULL, NULL, true, "watch", "", "v1", "configmaps", "", "", "ns"},
    {"POST", "/apis/apps/v1/namespaces/ns/deployments", NULL, NULL, true, "create", "apps", "v1", "deployments", "", "",
     "ns"},
    {"DELETE", "/api/v1/namespaces/ns/pods", NULL, NULL, true, "deletecollection", "", "v1", "pods", "", "", "ns"},
    {"GET", "/apis/apps/v1/deployments", NULL, NULL, true, "list", "apps", "v1", "deployments", "", "", ""},
    /* a list or watch of one name by field selector is named */
    {"GET", "/api/v1/namespaces/ns/secrets", "true", "metadata.name=only", true, "watch", "", "v1", "secrets", "",
     "only", "ns"},
    {"GET", "/api/v1/namespaces/ns/secrets", NULL, "metadata.name==only", true, "list", "", "v1", "secrets", "", "only",
     "ns"},
    {"GET", "/api/v1/namespaces/ns/secrets", NULL, "metadata.name=a,type=x", true, "list", "", "v1", "secrets", "", "",
     "ns"},
    /* named objects and subresources */
    {"GET", "/api/v1/namespaces/ns/configmaps/x", NULL, NULL, true, "get", "", "v1", "configmaps", "", "x", "ns"},
    {"PUT", "/apis/apps/v1/namespaces/ns/deployments/d/scale", NULL, NULL, true, "update", "apps", "v1", "deployments",
     "scale", "d", "ns"},
    {"PATCH", "/api/v1/namespaces/ns/pods/p/status", NULL, NULL, true, "patch", "", "v1", "pods", "status", "p", "ns"},
    {"POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", NULL, NULL, true, "create", "", "v1", "serviceaccounts",
     "token", "sa", "ns"},
    {"DELETE", "/api/v1/namespaces/ns/pods/p", NULL, NULL, true, "delete", "", "v1", "pods", "", "p", "ns"},
    /* namespaces name themselves; their status and finalize are subresources */
    {"GET", "/api/v1/namespaces", NULL, NULL, true, "list", "", "v1", "namespaces", "", "", ""},
    {"GET", "/api/v1/namespaces/ns", NULL, NULL, true, "get", "", "v1", "namespaces", "", "ns", "ns"},
    {"PUT", "/api/v1/namespaces/ns/finalize", NULL, NULL, true, "update", "", "v1", "namespaces", "finalize", "ns",
     "ns"},
    {"DELETE", "/api/v1/namespaces/ns", NULL, NULL, true, "delete", "", "v1", "namespaces", "", "ns", "ns"},
    /* cluster-scoped */
    {"GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin", NULL, NULL, true, "get",
     "rbac.authorization.k8s.io", "v1", "clusterroles", "", "admin", ""},
};

static void test_cases(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const reqinfo_case_t *c = &cases[i];
        as_attrs_t a;
        as_reqinfo_parse(c->method, c->path, c->watch, c->fs, &a);
        if (a.resource_request != c->resource) fprintf(stderr, "case %zu: %s %s\n", i, c->method, c->path);
        T_EQ_INT(a.resource_request, c->resource);
        T_EQ_STR(a.verb, c->verb);
        T_EQ_STR(a.group, c->group);
        T_EQ_STR(a.version, c->version);
        T_EQ_STR(a.resource, c->resource_name);
        T_EQ_STR(a.subresource, c->sub);
        T_EQ_STR(a.name, c->name);
        T_EQ_STR(a.ns, c->ns);
        T_EQ_STR(a.path, c->path);
    }
}

int main(void)
{
    T_RUN(test_cases);
    return T_DONE();
}
