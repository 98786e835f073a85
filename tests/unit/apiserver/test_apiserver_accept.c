/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the local API server's Accept negotiation (406 NotAcceptable, apiserver
 * handlers/negotiation) and its metadata-only views (apiserver's
 * `as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1|v1beta1`): the negotiation as a table of
 * headers, then over the wire — LIST, paged LIST, GET, WATCH and a write of built-in and custom
 * resources answered as PartialObjectMetadata(List) with the object's own metadata, conversions
 * that do not fit refused with 406, unsupported `as=` values refused unless a later Accept range is
 * plain, and discovery unchanged for kubectl. Tables themselves: test_apiserver_table.c. */
#include "apiserver/as_accept.h"
#include "t.h"
#include "test_apiserver_util.h"

static lop_apiserver_t *srv;

/* client-go's metadata client, with and without its protobuf entry (luaop sends the latter) */
#define LIST_PB                                                                            \
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," \
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
#define LIST_JSON         "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
#define WATCH_JSON        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
#define ONLY_PARTIAL      "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
#define ONLY_PARTIAL_LIST "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
#define KUBECTL_TABLE                                           \
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/" \
    "json;as=Table;v=v1beta1;g=meta.k8s.io,"                    \
    "application/json"
#define DISCOVERY                                                           \
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," \
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"

static void test_negotiation_table(void)
{
    static const struct {
        const char *accept;
        bool resource; /* a resource endpoint (else discovery and the like) */
        bool ok;
        as_conv_kind_t kind;
        const char *api_version;
    } cases[] = {
        {NULL, true, true, AS_CONV_NONE, ""},
        {"", true, true, AS_CONV_NONE, ""},
        {"application/json", true, true, AS_CONV_NONE, ""},
        {"*/*", true, true, AS_CONV_NONE, ""},
        {"application/*", true, true, AS_CONV_NONE, ""},
        {LIST_JSON, true, true, AS_CONV_PARTIAL_LIST, "meta.k8s.io/v1"},
        {LIST_PB, true, true, AS_CONV_PARTIAL_LIST, "meta.k8s.io/v1"}, /* protobuf skipped */
        {WATCH_JSON, true, true, AS_CONV_PARTIAL, "meta.k8s.io/v1"},
        {"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1", true, true, AS_CONV_PARTIAL,
         "meta.k8s.io/v1beta1"},
        {" application/json ; as=\"PartialObjectMetadataList\" ; g=meta.k8s.io ; v=v1 ", true, true,
         AS_CONV_PARTIAL_LIST, "meta.k8s.io/v1"},
        /* off resource endpoints no conversion is granted: the plain range is served */
        {LIST_JSON, false, true, AS_CONV_NONE, ""},
        {ONLY_PARTIAL, false, false, AS_CONV_NONE, ""},
        {DISCOVERY, false, true, AS_CONV_NONE, ""},
        {DISCOVERY, true, true, AS_CONV_NONE, ""},
        /* Table (as_table.h) on resource endpoints; elsewhere skipped for the next range */
        {KUBECTL_TABLE, true, true, AS_CONV_TABLE, "meta.k8s.io/v1"},
        {"application/json;as=Table;g=meta.k8s.io;v=v1beta1", true, true, AS_CONV_TABLE, "meta.k8s.io/v1beta1"},
        {KUBECTL_TABLE, false, true, AS_CONV_NONE, ""},
        {"application/json;as=Table;g=meta.k8s.io;v=v1", false, false, AS_CONV_NONE, ""},
        {"application/json;as=Table;g=meta.k8s.io;v=v2,application/json", true, true, AS_CONV_NONE, ""},
        /* incomplete or foreign targets are not conversions the server knows */
        {"application/json;as=PartialObjectMetadata", true, false, AS_CONV_NONE, ""},
        {"application/json;as=PartialObjectMetadata;g=apps;v=v1", true, false, AS_CONV_NONE, ""},
        {"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2", true, false, AS_CONV_NONE, ""},
        {"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2,application/json", true, true, AS_CONV_NONE, ""},
        /* quality first (q=0 refuses), then specificity, then the header's order */
        {"application/json;q=0.5," ONLY_PARTIAL, true, true, AS_CONV_PARTIAL, "meta.k8s.io/v1"},
        {ONLY_PARTIAL ";q=0.2,application/json;q=0.9", true, true, AS_CONV_NONE, ""},
        {ONLY_PARTIAL ";q=0", true, false, AS_CONV_NONE, ""},
        {"*/*," ONLY_PARTIAL_LIST, true, true, AS_CONV_PARTIAL_LIST, "meta.k8s.io/v1"},
        /* binary encodings are not served; streams only as watch */
        {"application/vnd.kubernetes.protobuf", true, false, AS_CONV_NONE, ""},
        {"application/cbor", true, false, AS_CONV_NONE, ""},
        {"application/vnd.kubernetes.protobuf,application/json", true, true, AS_CONV_NONE, ""},
        {"application/json;stream=watch", true, true, AS_CONV_NONE, ""},
        {"application/json;stream=other", true, false, AS_CONV_NONE, ""},
        {"application/yaml", true, true, AS_CONV_NONE, ""}, /* answered in JSON (README) */
        {"nonsense", true, false, AS_CONV_NONE, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        as_conv_t c;
        memset(&c, 0x5a, sizeof c);
        bool ok = as_accept_negotiate(cases[i].accept, cases[i].resource, &c);
        if (ok != cases[i].ok || c.kind != cases[i].kind || strcmp(c.api_version, cases[i].api_version)) {
            fprintf(stderr, "case %zu: Accept \"%s\" (%s): got %s kind %d \"%s\"\n", i,
                    cases[i].accept ? cases[i].accept : "(none)", cases[i].resource ? "resource" : "other",
                    ok ? "ok" : "406", (int)c.kind, c.api_version);
            T_CHECK(false);
        }
    }
}

#define CMPATH "/api/v1/namespaces/acc/configmaps"

static void create_cm(const char *name, const char *value)
{
    char body[8192];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{\"l\":\"%s\"},"
             "\"annotations\":{\"a\":\"x\\u00e9\"}},\"data\":{\"big\":\"%s\"}}",
             name, name, value);
    resp_t r = t_http(srv, "POST", CMPATH, body, NULL);
    T_EQ_INT(r.code, 201);
    resp_free(&r);
}

/* o is PartialObjectMetadata of api_version whose metadata equals full's, and nothing else. */
static void check_partial(const json_t *o, const json_t *full, const char *api_version)
{
    T_EQ_STR(jstr(o, "kind"), "PartialObjectMetadata");
    T_EQ_STR(jstr(o, "apiVersion"), api_version);
    T_EQ_INT(json_object_size(o), 3);
    T_CHECK(json_equal(json_object_get(o, "metadata"), json_object_get(full, "metadata")));
}

static void check_content_type_json(const resp_t *r)
{
    /* the negotiated `as=` is not echoed: apiserver writes the serializer's plain media type */
    T_CHECK(strstr(r->headers.data, "Content-Type: application/json\r\n") != NULL);
}

static void test_list_as_partial_object_metadata_list(void)
{
    resp_t r = t_http(srv, "POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"acc\"}}", NULL);
    resp_free(&r);
    char big[4001];
    memset(big, 'v', 4000);
    big[4000] = '\0';
    create_cm("a", big);
    create_cm("b", big);
    create_cm("c", big);
    resp_t full = t_http(srv, "GET", CMPATH, NULL, NULL);
    T_EQ_INT(full.code, 200);
    r = t_http_accept(srv, "GET", CMPATH, NULL, NULL, LIST_PB);
    T_EQ_INT(r.code, 200);
    check_content_type_json(&r);
    T_EQ_STR(jstr(r.json, "kind"), "PartialObjectMetadataList");
    T_EQ_STR(jstr(r.json, "apiVersion"), "meta.k8s.io/v1");
    T_EQ_STR(jstr(r.json, "metadata.resourceVersion"), jstr(full.json, "metadata.resourceVersion"));
    json_t *items = json_object_get(r.json, "items"), *fitems = json_object_get(full.json, "items");
    T_EQ_INT(json_array_size(items), 3);
    for (size_t i = 0; i < json_array_size(items); i++)
        check_partial(json_array_get(items, i), json_array_get(fitems, i), "meta.k8s.io/v1");
    T_CHECK(strstr(r.body.data, "vvvv") == NULL);
    T_CHECK(r.body.len * 4 < full.body.len); /* the data never left the server */
    resp_free(&r);

    /* paged: continue tokens and remainingItemCount as for the full list */
    r = t_http_accept(srv, "GET", CMPATH "?limit=2", NULL, NULL, LIST_JSON);
    T_EQ_INT(json_array_size(json_object_get(r.json, "items")), 2);
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "metadata"), "remainingItemCount")), 1);
    const char *tok = jstr(r.json, "metadata.continue");
    T_CHECK(tok != NULL);
    char path[1024];
    snprintf(path, sizeof path, CMPATH "?limit=2&continue=%s", tok ? tok : "");
    resp_t r2 = t_http_accept(srv, "GET", path, NULL, NULL, LIST_JSON);
    T_EQ_INT(r2.code, 200);
    T_EQ_INT(json_array_size(json_object_get(r2.json, "items")), 1);
    check_partial(json_array_get(json_object_get(r2.json, "items"), 0), json_array_get(fitems, 2), "meta.k8s.io/v1");
    T_CHECK(jstr(r2.json, "metadata.continue") == NULL);
    resp_free(&r2);
    resp_free(&r);

    /* v1beta1 too; a label selector still applies */
    r = t_http_accept(srv, "GET", CMPATH "?labelSelector=l%3Db", NULL, NULL,
                      "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1");
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "apiVersion"), "meta.k8s.io/v1beta1");
    T_EQ_INT(json_array_size(json_object_get(r.json, "items")), 1);
    check_partial(json_array_get(json_object_get(r.json, "items"), 0), json_array_get(fitems, 1),
                  "meta.k8s.io/v1beta1");
    resp_free(&r);

    /* an empty list is still a list */
    r = t_http_accept(srv, "GET", "/apis/apps/v1/namespaces/acc/deployments", NULL, NULL, LIST_JSON);
    T_EQ_INT(r.code, 200);
    T_CHECK(json_is_array(json_object_get(r.json, "items")) && json_array_size(json_object_get(r.json, "items")) == 0);
    resp_free(&r);
    resp_free(&full);
}

static void test_get_and_write_as_partial_object_metadata(void)
{
    resp_t full = t_http(srv, "GET", CMPATH "/a", NULL, NULL);
    resp_t r = t_http_accept(srv, "GET", CMPATH "/a", NULL, NULL, WATCH_JSON);
    T_EQ_INT(r.code, 200);
    check_content_type_json(&r);
    check_partial(r.json, full.json, "meta.k8s.io/v1");
    resp_free(&r);
    resp_free(&full);
    /* a write answers with the stored object, converted as well */
    r = t_http_accept(srv, "PATCH", CMPATH "/a", "{\"metadata\":{\"labels\":{\"p\":\"1\"}}}",
                      "application/merge-patch+json", ONLY_PARTIAL);
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "kind"), "PartialObjectMetadata");
    T_EQ_STR(jstr(r.json, "metadata.labels.p"), "1");
    T_CHECK(json_object_get(r.json, "data") == NULL);
    resp_free(&r);
    /* errors stay Status objects */
    r = t_http_accept(srv, "GET", CMPATH "/nope", NULL, NULL, ONLY_PARTIAL);
    T_EQ_INT(r.code, 404);
    T_EQ_STR(jstr(r.json, "kind"), "Status");
    resp_free(&r);
}

/* A conversion that does not fit is refused once negotiated (no later range is tried). */
static void test_mismatched_conversion_is_not_acceptable(void)
{
    static const struct {
        const char *path, *accept;
    } cases[] = {
        {CMPATH, WATCH_JSON},                                          /* an object view of a list */
        {CMPATH "/a", LIST_JSON},                                      /* a list view of an object */
        {CMPATH "/a", "application/json;as=Table;g=meta.k8s.io;v=v2"}, /* no such Table version */
        {CMPATH, "application/vnd.kubernetes.protobuf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        resp_t r = t_http_accept(srv, "GET", cases[i].path, NULL, NULL, cases[i].accept);
        T_EQ_INT(r.code, 406);
        T_EQ_STR(jstr(r.json, "kind"), "Status");
        T_EQ_STR(jstr(r.json, "reason"), "NotAcceptable");
        T_EQ_INT(json_integer_value(json_object_get(r.json, "code")), 406);
        resp_free(&r);
    }
    /* kubectl's Table request gets a Table (test_apiserver_table.c); its discovery request the
     * legacy document */
    resp_t r = t_http_accept(srv, "GET", CMPATH "/a", NULL, NULL, KUBECTL_TABLE);
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "kind"), "Table");
    resp_free(&r);
    r = t_http_accept(srv, "GET", "/apis", NULL, NULL, DISCOVERY);
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "kind"), "APIGroupList");
    check_content_type_json(&r);
    resp_free(&r);
    r = t_http_accept(srv, "GET", "/api/v1", NULL, NULL, LIST_JSON); /* discovery grants no conversion */
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "kind"), "APIResourceList");
    resp_free(&r);
}

static const char crd[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"gadgets.example.com\"},\"spec\":{\"group\":\"example.com\",\"scope\":"
    "\"Namespaced\","
    "\"names\":{\"plural\":\"gadgets\",\"singular\":\"gadget\",\"kind\":\"Gadget\"},"
    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{"
    "}},"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":"
    "true}}}]}}";

#define GPATH "/apis/example.com/v1/namespaces/acc/gadgets"

static void test_watch_as_partial_object_metadata(void)
{
    resp_t r = t_http(srv, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, NULL);
    T_EQ_INT(r.code, 201);
    resp_free(&r);
    r = t_http(srv, "POST", GPATH,
               "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Gadget\",\"metadata\":{\"name\":\"g1\","
               "\"labels\":{\"z\":\"1\",\"a\":\"2\"}},\"spec\":{\"size\":3}}",
               NULL);
    T_EQ_INT(r.code, 201);
    resp_free(&r);
    /* a custom resource's list (keys sorted) converts the same way */
    resp_t full = t_http(srv, "GET", GPATH, NULL, NULL);
    r = t_http_accept(srv, "GET", GPATH, NULL, NULL, LIST_JSON);
    T_EQ_INT(r.code, 200);
    check_partial(json_array_get(json_object_get(r.json, "items"), 0),
                  json_array_get(json_object_get(full.json, "items"), 0), "meta.k8s.io/v1");
    resp_free(&r);
    resp_free(&full);

    watch_t w;
    watch_start_accept(&w, srv, GPATH "?watch=1&allowWatchBookmarks=true", WATCH_JSON);
    T_EQ_INT(watch_wait_lines(&w, 2), 2); /* initial ADDED, initial-events-end BOOKMARK */
    r = t_http(srv, "PATCH", GPATH "/g1", "{\"spec\":{\"size\":4}}", "application/merge-patch+json");
    resp_t after = r;
    T_EQ_INT(watch_wait_lines(&w, 3), 3);
    r = t_http(srv, "DELETE", GPATH "/g1", NULL, NULL);
    resp_free(&r);
    T_EQ_INT(watch_wait_lines(&w, 4), 4);
    lop_apiserver_close_watches(srv);
    char *hdr = watch_headers(&w);
    T_CHECK(strstr(hdr, "Content-Type: application/json\r\n") != NULL);
    free(hdr);
    json_t *ev = watch_finish(&w);
    T_EQ_INT(json_array_size(ev), 4);
    static const char *const types[] = {"ADDED", "BOOKMARK", "MODIFIED", "DELETED"};
    for (size_t i = 0; i < 4 && i < json_array_size(ev); i++) {
        json_t *o = json_object_get(json_array_get(ev, i), "object");
        T_EQ_STR(ev_type(ev, i), types[i]);
        T_EQ_STR(jstr(o, "kind"), "PartialObjectMetadata");
        T_EQ_STR(jstr(o, "apiVersion"), "meta.k8s.io/v1");
        T_CHECK(json_object_get(o, "spec") == NULL);
    }
    check_partial(json_object_get(json_array_get(ev, 2), "object"), after.json, "meta.k8s.io/v1");
    json_t *ann =
        json_object_get(json_object_get(json_object_get(json_array_get(ev, 1), "object"), "metadata"), "annotations");
    T_EQ_STR(json_string_value(json_object_get(ann, "k8s.io/initial-events-end")), "true");
    json_decref(ev);
    resp_free(&after);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    T_RUN(test_negotiation_table);
    srv = t_start(0);
    if (!T_SETUP("start the API server", srv != NULL)) return T_DONE();
    T_RUN(test_list_as_partial_object_metadata_list);
    T_RUN(test_get_and_write_as_partial_object_metadata);
    T_RUN(test_mismatched_conversion_is_not_acceptable);
    T_RUN(test_watch_as_partial_object_metadata);
    lop_apiserver_stop(srv);
    curl_global_cleanup();
    return T_DONE();
}
