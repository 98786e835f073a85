/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the local API server's OpenAPI documents (as_openapi.h): the schema table
 * parses and every reference in it resolves; the v3 index names each group-version with the
 * SHA-512 of its document, which changes when a CRD is added and not when an object is written;
 * a group-version document carries the served kinds with their GVK, their Lists and the closure
 * of what they refer to (every $ref resolves inside the document); a CRD's schema gets
 * apiVersion, kind and a metadata reference; /openapi/v2 is JSON with #/definitions/ references
 * and 406 for a protobuf-only Accept. */
#include "apiserver/as_openapi.h"
#include "t.h"
#include "test_apiserver_util.h"

#include <openssl/evp.h>

static lop_apiserver_t *srv;

static void test_table_parses(void)
{
    char err[200] = "";
    json_t *c = as_schemas_parse(as_schemas_builtin, err, sizeof err);
    if (!c) fprintf(stderr, "%s\n", err);
    T_CHECK(c != NULL);
    const json_t *cm = json_object_get(c, "io.k8s.api.core.v1.ConfigMap");
    T_EQ_STR(jstr(cm, "type"), "object");
    T_EQ_STR(jstr(cm, "properties.data.type"), "object");
    T_EQ_STR(jstr(cm, "properties.data.additionalProperties.type"), "string");
    T_EQ_STR(jstr(cm, "properties.binaryData.additionalProperties.format"), "byte");
    T_EQ_STR(jstr(json_array_get(
                      json_object_get(json_object_get(json_object_get(cm, "properties"), "metadata"), "allOf"), 0),
                  "$ref"),
             "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    const json_t *om = json_object_get(c, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    static const char *const meta_fields[] = {"name",
                                              "generateName",
                                              "namespace",
                                              "uid",
                                              "resourceVersion",
                                              "generation",
                                              "creationTimestamp",
                                              "deletionTimestamp",
                                              "deletionGracePeriodSeconds",
                                              "labels",
                                              "annotations",
                                              "ownerReferences",
                                              "finalizers",
                                              "managedFields",
                                              NULL};
    for (int i = 0; meta_fields[i]; i++) T_CHECK(json_object_get(json_object_get(om, "properties"), meta_fields[i]));
    const json_t *containers =
        json_object_get(json_object_get(json_object_get(c, "io.k8s.api.core.v1.PodSpec"), "properties"), "containers");
    T_EQ_STR(jstr(containers, "x-kubernetes-patch-merge-key"), "name");
    T_EQ_STR(jstr(containers, "items.$ref"), "#/components/schemas/io.k8s.api.core.v1.Container");
    T_EQ_STR(json_string_value(
                 json_array_get(json_object_get(json_object_get(c, "io.k8s.api.core.v1.PodSpec"), "required"), 0)),
             "containers");
    T_EQ_STR(jstr(json_object_get(c, "io.k8s.apimachinery.pkg.apis.meta.v1.Time"), "format"), "date-time");
    json_decref(c);
    /* a table with an unknown type or a dangling reference does not parse */
    static const char *const bad[] = {"= a.B | x\nf nosuchtype | d\n", "= a.B | x\nf &Missing | d\n",
                                      "f string | a field before any definition\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        T_CHECK(as_schemas_parse(bad[i], err, sizeof err) == NULL);
        T_CHECK(strstr(err, "line") != NULL);
    }
}

/* Every "$ref" under v resolves in comps (prefix: "#/components/schemas/" or "#/definitions/"). */
static void check_refs(const json_t *v, const json_t *comps, const char *prefix)
{
    if (json_is_array(v)) {
        size_t i;
        const json_t *x;
        json_array_foreach(v, i, x) check_refs(x, comps, prefix);
        return;
    }
    if (!json_is_object(v)) return;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x)
    {
        if (!strcmp(k, "$ref")) {
            const char *r = json_string_value(x);
            bool ok = r && !strncmp(r, prefix, strlen(prefix)) && json_object_get(comps, r + strlen(prefix));
            if (!ok) fprintf(stderr, "dangling $ref %s\n", r ? r : "(not a string)");
            T_CHECK(ok);
        } else {
            check_refs(x, comps, prefix);
        }
    }
}

static const char *index_url(const json_t *index, const char *gv)
{
    return jstr(json_object_get(json_object_get(index, "paths"), gv), "serverRelativeURL");
}

static void check_hash(const resp_t *r, const char *url)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(r->body.data, r->body.len, md, &n, EVP_sha512(), NULL);
    char hex[129];
    for (unsigned int i = 0; i < n; i++) snprintf(hex + 2 * i, 3, "%02X", md[i]);
    const char *h = strstr(url, "?hash=");
    T_CHECK(h && !strcmp(h + 6, hex));
}

static void test_v3_index_and_documents(void)
{
    resp_t idx = t_http(srv, "GET", "/openapi/v3", NULL, NULL);
    T_EQ_INT(idx.code, 200);
    static const char *const gvs[] = {"api/v1",
                                      "apis/apps/v1",
                                      "apis/batch/v1",
                                      "apis/coordination.k8s.io/v1",
                                      "apis/events.k8s.io/v1",
                                      "apis/rbac.authorization.k8s.io/v1",
                                      "apis/admissionregistration.k8s.io/v1",
                                      "apis/apiextensions.k8s.io/v1"};
    for (size_t i = 0; i < sizeof gvs / sizeof gvs[0]; i++) {
        const char *url = index_url(idx.json, gvs[i]);
        T_CHECK(url != NULL);
        if (!url) continue;
        resp_t d = t_http(srv, "GET", url, NULL, NULL);
        T_EQ_INT(d.code, 200);
        check_hash(&d, url);
        json_t *comps = json_object_get(json_object_get(d.json, "components"), "schemas");
        T_CHECK(json_object_size(comps) > 3);
        check_refs(d.json, comps, "#/components/schemas/");
        resp_free(&d);
    }
    resp_t d = t_http(srv, "GET", "/openapi/v3/api/v1", NULL, NULL);
    json_t *comps = json_object_get(json_object_get(d.json, "components"), "schemas");
    json_t *cm = json_object_get(comps, "io.k8s.api.core.v1.ConfigMap");
    json_t *gvk = json_array_get(json_object_get(cm, "x-kubernetes-group-version-kind"), 0);
    T_EQ_STR(jstr(gvk, "group"), "");
    T_EQ_STR(jstr(gvk, "version"), "v1");
    T_EQ_STR(jstr(gvk, "kind"), "ConfigMap");
    T_EQ_STR(jstr(json_array_get(json_object_get(json_object_get(comps, "io.k8s.api.core.v1.ConfigMapList"),
                                                 "x-kubernetes-group-version-kind"),
                                 0),
                  "kind"),
             "ConfigMapList");
    T_CHECK(json_object_get(comps, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta") != NULL);
    T_CHECK(json_object_get(comps, "io.k8s.api.core.v1.Container") != NULL); /* through Pod */
    T_CHECK(json_object_get(comps, "io.k8s.api.apps.v1.Deployment") == NULL);
    /* the PATCH operation kubectl reads to leave field validation to the server */
    json_t *op = json_object_get(
        json_object_get(json_object_get(d.json, "paths"), "/api/v1/namespaces/{namespace}/configmaps/{name}"), "patch");
    T_EQ_STR(jstr(op, "x-kubernetes-group-version-kind.kind"), "ConfigMap");
    T_EQ_STR(jstr(json_array_get(json_object_get(op, "parameters"), 2), "name"), "fieldValidation");
    T_CHECK(strstr(d.headers.data, "ETag: \"") != NULL);
    resp_free(&d);
    d = t_http(srv, "GET", "/openapi/v3/apis/nope.example.com/v1", NULL, NULL);
    T_EQ_INT(d.code, 404);
    resp_free(&d);
    resp_free(&idx);
}

static const char crd[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"widgets.cache.example.com\"},\"spec\":{\"group\":\"cache.example.com\",\"scope\":"
    "\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\"},\"versions\":["
    "{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
    "\"description\":\"A widget.\",\"properties\":{\"metadata\":{\"type\":\"object\"},\"spec\":{\"type\":\"object\","
    "\"properties\":{\"size\":{\"type\":\"integer\",\"description\":\"How big.\"}}}}}}}]}}";

static void test_crd_documents_and_hashes(void)
{
    resp_t a = t_http(srv, "GET", "/openapi/v3", NULL, NULL);
    resp_t w = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"x\"}}", NULL);
    T_EQ_INT(w.code, 201);
    resp_free(&w);
    resp_t b = t_http(srv, "GET", "/openapi/v3", NULL, NULL);
    T_EQ_STR(index_url(a.json, "api/v1"), index_url(b.json, "api/v1")); /* a write changes no schema */
    T_CHECK(index_url(b.json, "apis/cache.example.com/v1") == NULL);
    w = t_http(srv, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, NULL);
    T_EQ_INT(w.code, 201);
    resp_free(&w);
    resp_t c = t_http(srv, "GET", "/openapi/v3", NULL, NULL);
    const char *url = index_url(c.json, "apis/cache.example.com/v1");
    T_CHECK(url != NULL);
    resp_t d = t_http(srv, "GET", url ? url : "/", NULL, NULL);
    T_EQ_INT(d.code, 200);
    json_t *comps = json_object_get(json_object_get(d.json, "components"), "schemas");
    json_t *s = json_object_get(comps, "com.example.cache.v1.Widget");
    T_CHECK(s != NULL);
    T_EQ_STR(jstr(s, "description"), "A widget.");
    T_EQ_STR(jstr(s, "properties.spec.properties.size.description"), "How big.");
    T_EQ_STR(jstr(s, "properties.apiVersion.type"), "string");
    T_EQ_STR(jstr(s, "properties.kind.type"), "string");
    T_EQ_STR(
        jstr(json_array_get(json_object_get(json_object_get(json_object_get(s, "properties"), "metadata"), "allOf"), 0),
             "$ref"),
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    T_EQ_STR(jstr(json_array_get(json_object_get(s, "x-kubernetes-group-version-kind"), 0), "kind"), "Widget");
    T_CHECK(json_object_get(comps, "com.example.cache.v1.WidgetList") != NULL);
    check_refs(d.json, comps, "#/components/schemas/");
    resp_free(&d);
    /* a schema change moves the hash */
    char patch[] = "[{\"op\":\"replace\",\"path\":\"/spec/versions/0/schema/openAPIV3Schema/description\","
                   "\"value\":\"Another widget.\"}]";
    w = t_http(srv, "PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.cache.example.com", patch,
               "application/json-patch+json");
    T_EQ_INT(w.code, 200);
    resp_free(&w);
    resp_t e = t_http(srv, "GET", "/openapi/v3", NULL, NULL);
    T_CHECK(url && index_url(e.json, "apis/cache.example.com/v1") &&
            strcmp(url, index_url(e.json, "apis/cache.example.com/v1")));
    resp_free(&e);
    resp_free(&a);
    resp_free(&b);
    resp_free(&c);
}

static void test_v2(void)
{
    resp_t r = t_http_accept(srv, "GET", "/openapi/v2", NULL, NULL,
                             "application/com.github.proto-openapi.spec.v2@v1.0+protobuf");
    T_EQ_INT(r.code, 406);
    resp_free(&r);
    r = t_http_accept(srv, "GET", "/openapi/v2", NULL, NULL,
                      "application/com.github.proto-openapi.spec.v2@v1.0+protobuf,application/json");
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "swagger"), "2.0");
    json_t *defs = json_object_get(r.json, "definitions");
    T_CHECK(json_object_get(defs, "io.k8s.api.apps.v1.Deployment") != NULL);
    T_CHECK(json_object_get(defs, "io.k8s.api.core.v1.ConfigMap") != NULL);
    json_t *meta = json_object_get(json_object_get(json_object_get(defs, "io.k8s.api.core.v1.ConfigMap"), "properties"),
                                   "metadata");
    T_EQ_STR(jstr(meta, "$ref"), "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    T_CHECK(json_object_get(meta, "allOf") == NULL);
    check_refs(r.json, defs, "#/definitions/");
    resp_free(&r);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    T_RUN(test_table_parses);
    srv = t_start(0);
    if (!T_SETUP("start the API server", srv != NULL)) return T_DONE();
    T_RUN(test_v3_index_and_documents);
    T_RUN(test_crd_documents_and_hashes);
    T_RUN(test_v2);
    lop_apiserver_stop(srv);
    curl_global_cleanup();
    return T_DONE();
}
