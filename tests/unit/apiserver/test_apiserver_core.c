/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the local API server's storage and error semantics, over the wire with libcurl
 * (metadata, Status errors, GET/LIST, create/update/patch). */
#include "t.h"
#include <unistd.h>
#include "test_apiserver_util.h"

static lop_apiserver_t *srv;

static const char cm_body[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":\"%s\"}},"
    "\"data\":{\"k\":\"%s\"}}";

static resp_t create_cm(const char *ns, const char *name, const char *app, const char *val)
{
    char body[512], path[256];
    snprintf(body, sizeof body, cm_body, name, app, val);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/configmaps", ns);
    return t_http(srv, "POST", path, body, NULL);
}

static void test_create_get_and_system_fields(void)
{
    resp_t r = create_cm("default", "c1", "a", "1");
    T_EQ_INT(r.code, 201);
    T_CHECK(jstr(r.json, "metadata.uid") != NULL);
    T_CHECK(jstr(r.json, "metadata.creationTimestamp") != NULL);
    T_CHECK(jstr(r.json, "metadata.resourceVersion") != NULL);
    T_CHECK(json_object_get(json_object_get(r.json, "metadata"), "generation") == NULL);
    /* built-in key order: kind, apiVersion, metadata first */
    T_CHECK(strncmp(r.body.data, "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":", 49) == 0);
    resp_t g = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps/c1", NULL, NULL);
    T_EQ_INT(g.code, 200);
    T_EQ_STR(jstr(g.json, "data.k"), "1");
    T_EQ_STR(jstr(g.json, "metadata.resourceVersion"), jstr(r.json, "metadata.resourceVersion"));
    resp_free(&r);
    resp_free(&g);
}

static void test_exact_error_bodies(void)
{
    resp_t r = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps/nope", NULL, NULL);
    T_EQ_INT(r.code, 404);
    T_EQ_STR(r.body.data, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                          "\"message\":\"configmaps \\\"nope\\\" not found\",\"reason\":\"NotFound\","
                          "\"details\":{\"name\":\"nope\",\"kind\":\"configmaps\"},\"code\":404}\n");
    resp_free(&r);
    r = t_http(srv, "GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l1", NULL, NULL);
    T_EQ_STR(jstr(r.json, "message"), "leases.coordination.k8s.io \"l1\" not found");
    T_EQ_STR(jstr(r.json, "details.group"), "coordination.k8s.io");
    resp_free(&r);
    resp_t a = create_cm("default", "dup", "a", "1");
    resp_t b = create_cm("default", "dup", "a", "1");
    T_EQ_INT(b.code, 409);
    T_EQ_STR(b.body.data, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                          "\"message\":\"configmaps \\\"dup\\\" already exists\",\"reason\":\"AlreadyExists\","
                          "\"details\":{\"name\":\"dup\",\"kind\":\"configmaps\"},\"code\":409}\n");
    resp_free(&a);
    resp_free(&b);
    r = create_cm("missing-ns", "x", "a", "1");
    T_EQ_INT(r.code, 404);
    T_EQ_STR(jstr(r.json, "message"), "namespaces \"missing-ns\" not found");
    resp_free(&r);
}

static void test_optimistic_concurrency(void)
{
    resp_t a = create_cm("default", "occ", "a", "1");
    const char *rv = jstr(a.json, "metadata.resourceVersion");
    char body[512];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"occ\",\"resourceVersion\":\"%s\"},"
             "\"data\":{\"k\":\"2\"}}",
             rv);
    resp_t u1 = t_http(srv, "PUT", "/api/v1/namespaces/default/configmaps/occ", body, NULL);
    T_EQ_INT(u1.code, 200);
    T_CHECK(strcmp(jstr(u1.json, "metadata.resourceVersion"), rv) != 0);
    resp_t u2 = t_http(srv, "PUT", "/api/v1/namespaces/default/configmaps/occ", body, NULL);
    T_EQ_INT(u2.code, 409);
    T_EQ_STR(jstr(u2.json, "reason"), "Conflict");
    T_EQ_STR(jstr(u2.json, "message"),
             "Operation cannot be fulfilled on configmaps \"occ\": the object has been modified; "
             "please apply your changes to the latest version and try again");
    /* PUT without RV is last-writer-wins for ConfigMaps */
    resp_t u3 = t_http(
        srv, "PUT", "/api/v1/namespaces/default/configmaps/occ",
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"occ\"},\"data\":{\"k\":\"3\"}}", NULL);
    T_EQ_INT(u3.code, 200);
    resp_free(&a);
    resp_free(&u1);
    resp_free(&u2);
    resp_free(&u3);
}

static void test_bad_bodies(void)
{
    resp_t r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps", "{not json", NULL);
    T_EQ_INT(r.code, 400);
    T_EQ_STR(jstr(r.json, "reason"), "BadRequest");
    T_EQ_STR(jstr(r.json, "kind"), "Status");
    resp_free(&r);
    r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps", "a: [unclosed", "application/yaml");
    T_EQ_INT(r.code, 400);
    resp_free(&r);
    r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps",
               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fromyaml\ndata:\n  num: \"7\"\n",
               "application/yaml");
    T_EQ_INT(r.code, 201);
    T_EQ_STR(jstr(r.json, "data.num"), "7");
    resp_free(&r);
    /* wrong kind for the path */
    r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps",
               "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"}}", NULL);
    T_EQ_INT(r.code, 400);
    resp_free(&r);
    /* POST with a resourceVersion is a 500 */
    r = t_http(
        srv, "POST", "/api/v1/namespaces/default/configmaps",
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"rv\",\"resourceVersion\":\"5\"}}",
        NULL);
    T_EQ_INT(r.code, 500);
    T_EQ_STR(jstr(r.json, "message"), "resourceVersion should not be set on objects to be created");
    resp_free(&r);
    /* over 3 MiB */
    size_t n = 3u * 1024u * 1024u + 100;
    char *big = malloc(n + 200);
    int off = snprintf(
        big, 200, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"big\"},\"data\":{\"k\":\"");
    memset(big + off, 'x', n);
    strcpy(big + off + n, "\"}}");
    r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps", big, NULL);
    T_EQ_INT(r.code, 413);
    T_EQ_STR(jstr(r.json, "reason"), "RequestEntityTooLarge");
    free(big);
    resp_free(&r);
    /* invalid name → 422 with details.kind = Kind */
    r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps",
               "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"Bad_Name\"}}", NULL);
    T_EQ_INT(r.code, 422);
    T_EQ_STR(jstr(r.json, "details.kind"), "ConfigMap");
    T_EQ_STR(jstr(json_array_get(json_object_get(json_object_get(r.json, "details"), "causes"), 0), "field"),
             "metadata.name");
    resp_free(&r);
}

static int64_t rv_of(resp_t *r) { return atoll(jstr(r->json, "metadata.resourceVersion")); }

static void test_noop_write_keeps_rv_and_emits_nothing(void)
{
    resp_t a = create_cm("default", "noop", "a", "1");
    int64_t rv0 = rv_of(&a);
    char body[512];
    snprintf(body, sizeof body, cm_body, "noop", "a", "1");
    resp_t same = t_http(srv, "PUT", "/api/v1/namespaces/default/configmaps/noop", body, NULL);
    T_EQ_INT(same.code, 200);
    T_EQ_INT(rv_of(&same), rv0);
    resp_t p = t_http(srv, "PATCH", "/api/v1/namespaces/default/configmaps/noop", "{\"data\":{\"k\":\"1\"}}",
                      "application/merge-patch+json");
    T_EQ_INT(p.code, 200);
    T_EQ_INT(rv_of(&p), rv0);
    resp_t p2 = t_http(srv, "PATCH", "/api/v1/namespaces/default/configmaps/noop", "{\"data\":{\"k\":\"2\"}}",
                       "application/merge-patch+json");
    T_CHECK(rv_of(&p2) > rv0);
    /* a watch from rv0 replays exactly one MODIFIED (the real change) */
    char path[256];
    snprintf(path, sizeof path,
             "/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%%3Dnoop&resourceVersion=%lld",
             (long long)rv0);
    watch_t w;
    watch_start(&w, srv, path);
    T_EQ_INT(watch_wait_lines(&w, 1), 1);
    lop_apiserver_close_watches(srv);
    json_t *ev = watch_finish(&w);
    T_EQ_INT(json_array_size(ev), 1);
    T_EQ_STR(ev_type(ev, 0), "MODIFIED");
    T_EQ_STR(jstr(json_object_get(json_array_get(ev, 0), "object"), "data.k"), "2");
    json_decref(ev);
    resp_free(&a);
    resp_free(&same);
    resp_free(&p);
    resp_free(&p2);
}

static void test_list_shape_and_selectors(void)
{
    resp_t r = t_http(srv, "GET", "/api/v1/namespaces/kube-public/configmaps", NULL, NULL);
    T_EQ_INT(r.code, 200);
    T_CHECK(json_is_array(json_object_get(r.json, "items")));
    T_EQ_INT(json_array_size(json_object_get(r.json, "items")), 0);
    T_EQ_STR(jstr(r.json, "kind"), "ConfigMapList");
    T_CHECK(jstr(r.json, "metadata.resourceVersion") != NULL);
    resp_free(&r);
    T_EQ_INT((r = t_http(srv, "POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"sel\"}}", NULL)).code, 201);
    resp_free(&r);
    resp_t x1 = create_cm("sel", "x1", "web", "1"), x2 = create_cm("sel", "x2", "db", "1"),
           x3 = create_cm("sel", "x3", "web", "1");
    r = t_http(srv, "GET", "/api/v1/namespaces/sel/configmaps?labelSelector=app%3Dweb", NULL, NULL);
    T_EQ_INT(json_array_size(json_object_get(r.json, "items")), 2);
    /* built-in list items carry no kind/apiVersion */
    T_CHECK(json_object_get(json_array_get(json_object_get(r.json, "items"), 0), "kind") == NULL);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/sel/configmaps?labelSelector=app!%3Dweb", NULL, NULL);
    T_EQ_INT(json_array_size(json_object_get(r.json, "items")), 1);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/configmaps?fieldSelector=metadata.namespace%3Dsel,metadata.name!%3Dx1", NULL, NULL);
    T_EQ_INT(json_array_size(json_object_get(r.json, "items")), 2);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/sel/configmaps?fieldSelector=spec.foo%3Dx", NULL, NULL);
    T_EQ_INT(r.code, 400);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/sel/configmaps?labelSelector=a%20in%20(", NULL, NULL);
    T_EQ_INT(r.code, 400);
    resp_free(&r);
    resp_free(&x1);
    resp_free(&x2);
    resp_free(&x3);
}

static void test_pagination_snapshot_and_expiry(void)
{
    resp_t r = t_http(srv, "POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"page\"}}", NULL);
    resp_free(&r);
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        r = create_cm("page", name, "a", "1");
        resp_free(&r);
    }
    resp_t p1 = t_http(srv, "GET", "/api/v1/namespaces/page/configmaps?limit=2", NULL, NULL);
    T_EQ_INT(json_array_size(json_object_get(p1.json, "items")), 2);
    const char *cont = jstr(p1.json, "metadata.continue");
    T_CHECK(cont != NULL);
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(p1.json, "metadata"), "remainingItemCount")), 3);
    /* a change after page 1 does not show up in page 2 (same snapshot RV) */
    r = create_cm("page", "p00", "a", "1");
    resp_free(&r);
    char path[1024];
    snprintf(path, sizeof path, "/api/v1/namespaces/page/configmaps?limit=2&continue=%s", cont);
    resp_t p2 = t_http(srv, "GET", path, NULL, NULL);
    T_EQ_INT(p2.code, 200);
    T_EQ_STR(jstr(p2.json, "metadata.resourceVersion"), jstr(p1.json, "metadata.resourceVersion"));
    T_EQ_STR(jstr(json_array_get(json_object_get(p2.json, "items"), 0), "metadata.name"), "p2");
    /* continue + resourceVersion → 400 */
    char path2[1100];
    snprintf(path2, sizeof path2, "%s&resourceVersion=5", path);
    r = t_http(srv, "GET", path2, NULL, NULL);
    T_EQ_INT(r.code, 400);
    resp_free(&r);
    /* after compaction the token is expired: 410 with a fresh continue token */
    lop_apiserver_compact(srv);
    r = t_http(srv, "GET", path, NULL, NULL);
    T_EQ_INT(r.code, 410);
    T_EQ_STR(jstr(r.json, "reason"), "Expired");
    T_CHECK(jstr(r.json, "metadata.continue") != NULL);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/page/configmaps?continue=%%%%garbage", NULL, NULL);
    T_EQ_INT(r.code, 400);
    resp_free(&r);
    /* RV=0 ignores limit */
    r = t_http(srv, "GET", "/api/v1/namespaces/page/configmaps?limit=2&resourceVersion=0", NULL, NULL);
    T_EQ_INT(json_array_size(json_object_get(r.json, "items")), 6);
    T_CHECK(jstr(r.json, "metadata.continue") == NULL);
    resp_free(&r);
    resp_free(&p1);
    resp_free(&p2);
}

static void test_list_options_validation(void)
{
    resp_t r = t_http(srv, "GET", "/api/v1/configmaps?resourceVersionMatch=Exact", NULL, NULL);
    T_EQ_INT(r.code, 422);
    T_EQ_STR(jstr(r.json, "message"), "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                                      "resourceVersionMatch is forbidden unless resourceVersion is provided");
    T_EQ_STR(jstr(r.json, "details.group"), "meta.k8s.io");
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/configmaps?resourceVersion=99999999", NULL, NULL);
    T_EQ_INT(r.code, 504);
    T_CHECK(strstr(r.headers.data, "Retry-After: 1") != NULL);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/configmaps?resourceVersion=abc", NULL, NULL);
    T_EQ_INT(r.code, 500);
    resp_free(&r);
    lop_apiserver_compact(srv);
    r = t_http(srv, "GET", "/api/v1/configmaps?resourceVersion=2&resourceVersionMatch=Exact", NULL, NULL);
    T_EQ_INT(r.code, 410);
    resp_free(&r);
}

static void test_discovery(void)
{
    resp_t r = t_http(srv, "GET", "/api", NULL, NULL);
    T_EQ_STR(jstr(r.json, "kind"), "APIVersions");
    T_CHECK(json_object_get(r.json, "apiVersion") == NULL);
    T_CHECK(strstr(r.headers.data, "Content-Type: application/json\r\n") != NULL);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1", NULL, NULL);
    T_EQ_STR(jstr(r.json, "groupVersion"), "v1");
    T_CHECK(json_object_get(r.json, "apiVersion") == NULL);
    resp_free(&r);
    r = t_http(srv, "GET", "/apis/apps/v1", NULL, NULL);
    T_EQ_STR(jstr(r.json, "groupVersion"), "apps/v1");
    resp_free(&r);
    r = t_http(srv, "GET", "/apis/nope.example.com/v1/things", NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
}

static void test_lease_rules(void)
{
    const char *lease = "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"lk\"},"
                        "\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15,"
                        "\"renewTime\":\"2025-03-01T10:05:12.650001Z\"}}";
    resp_t r = t_http(srv, "PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/lk", lease, NULL);
    T_EQ_INT(r.code, 201); /* create-on-PUT */
    resp_free(&r);
    r = t_http(srv, "PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/lk", lease, NULL);
    T_EQ_INT(r.code, 422); /* PUT without RV on an existing Lease */
    T_EQ_STR(jstr(r.json, "details.kind"), "leases");
    resp_free(&r);
    r = t_http(srv, "PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/lk2",
               "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"lk2\"},"
               "\"spec\":{\"renewTime\":\"2025-03-01T10:05:12Z\"}}",
               NULL);
    T_EQ_INT(r.code, 400); /* MicroTime needs six digits */
    resp_free(&r);
    r = t_http(srv, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
               "{\"metadata\":{\"name\":\"lk3\"},\"spec\":{\"leaseDurationSeconds\":0}}", NULL);
    T_EQ_INT(r.code, 422);
    T_EQ_STR(jstr(r.json, "message"), "Lease.coordination.k8s.io \"lk3\" is invalid: spec.leaseDurationSeconds: "
                                      "Invalid value: 0: must be greater than 0");
    resp_free(&r);
}

/* kubectl's generator commands send protobuf (captured from `kubectl create secret generic s1
 * --from-literal=a=b`): decoded for the supported kinds; other protobuf bodies get 415. */
static void test_protobuf_body(void)
{
    static const unsigned char secret[] = {
        0x6b, 0x38, 0x73, 0x00, 0x0a, 0x0c, 0x0a, 0x02, 0x76, 0x31, 0x12, 0x06, 0x53, 0x65, 0x63, 0x72, 0x65, 0x74,
        0x12, 0x1e, 0x0a, 0x12, 0x0a, 0x02, 0x73, 0x31, 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00, 0x2a, 0x00, 0x32, 0x00,
        0x38, 0x00, 0x42, 0x00, 0x12, 0x06, 0x0a, 0x01, 0x61, 0x12, 0x01, 0x62, 0x1a, 0x00, 0x1a, 0x00, 0x22, 0x00};
    char url[256];
    snprintf(url, sizeof url, "%s/api/v1/namespaces/default/secrets", lop_apiserver_url(srv));
    resp_t r;
    memset(&r, 0, sizeof r);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/vnd.kubernetes.protobuf");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, (const char *)secret);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)sizeof secret);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, t_write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
    T_EQ_INT(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
    r.json = json_loadb(r.body.data, r.body.len, 0, NULL);
    T_EQ_INT(r.code, 201);
    T_EQ_STR(jstr(r.json, "metadata.name"), "s1");
    T_EQ_STR(jstr(r.json, "data.a"), "Yg==");
    T_EQ_STR(jstr(r.json, "type"), "Opaque");
    resp_free(&r);
    /* truncated envelope: 415 naming the problem, no crash */
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 20L);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
    T_EQ_INT(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
    T_EQ_INT(r.code, 415);
    resp_free(&r);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static void test_fault_injection(void)
{
    lop_apiserver_fail_next(srv, "list", "/api/v1/namespaces/default/configmaps", 1, 429, 3);
    resp_t r = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps", NULL, NULL);
    T_EQ_INT(r.code, 429);
    T_CHECK(strstr(r.headers.data, "Retry-After: 3") != NULL);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps", NULL, NULL);
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    r = t_http(srv, "POST", "/luaop-fault/fail?code=503&count=1&verb=get", "", NULL);
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/default", NULL, NULL);
    T_EQ_INT(r.code, 503);
    resp_free(&r);
    lop_apiserver_fail_next_text(srv, NULL, "/api/v1/namespaces/default/secrets", 1, 429, 4);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/secrets", NULL, NULL);
    T_EQ_INT(r.code, 429);
    T_EQ_STR(r.body.data, "Too many requests, please try again later.\n");
    T_CHECK(strstr(r.headers.data, "Content-Type: text/plain") != NULL);
    T_CHECK(strstr(r.headers.data, "Retry-After: 4") != NULL);
    T_CHECK(strstr(r.headers.data, "Audit-Id: ") != NULL);
    T_CHECK(strstr(r.headers.data, "X-Kubernetes-PF-FlowSchema-UID: ") != NULL);
    T_CHECK(strstr(r.headers.data, "X-Kubernetes-PF-PriorityLevel-UID: ") != NULL);
    resp_free(&r);
    /* a fault with no verb is any request: discovery too; deletecollection is a verb of its own */
    r = t_http(srv, "POST", "/luaop-fault/fail?code=503&count=1", "", NULL);
    resp_free(&r);
    r = t_http(srv, "GET", "/apis", NULL, NULL);
    T_EQ_INT(r.code, 503);
    resp_free(&r);
    r = t_http(srv, "GET", "/apis", NULL, NULL);
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    r = t_http(srv, "POST", "/luaop-fault/fail?code=500&count=1&verb=deletecollection", "", NULL);
    resp_free(&r);
    r = t_http(srv, "DELETE", "/api/v1/namespaces/default/secrets/none", NULL, NULL);
    T_EQ_INT(r.code, 404); /* a delete is not a deletecollection */
    resp_free(&r);
    r = t_http(srv, "DELETE", "/api/v1/namespaces/default/secrets", NULL, NULL);
    T_EQ_INT(r.code, 500);
    resp_free(&r);
    lop_apiserver_reset(srv);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps/c1", NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
    T_CHECK(lop_apiserver_revision(srv) < 10);
}

static void test_dry_run_and_delete_collection(void)
{
    resp_t r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All",
                      "{\"metadata\":{\"name\":\"dry\"}}", NULL);
    T_EQ_INT(r.code, 201);
    T_EQ_STR(jstr(r.json, "metadata.name"), "dry");
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps/dry", NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
    r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps?dryRun=Some", "{\"metadata\":{\"name\":\"dry\"}}",
               NULL);
    T_EQ_INT(r.code, 422);
    resp_free(&r);
    for (int i = 0; i < 3; i++) {
        char b[128];
        snprintf(b, sizeof b, "{\"metadata\":{\"name\":\"dc%d\",\"labels\":{\"grp\":\"%s\"}}}", i, i < 2 ? "x" : "y");
        r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps", b, NULL);
        resp_free(&r);
    }
    r = t_http(srv, "DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=grp%3Dx", NULL, NULL);
    T_EQ_INT(r.code, 200);
    T_EQ_INT(json_array_size(json_object_get(r.json, "items")), 2);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps?labelSelector=grp", NULL, NULL);
    T_EQ_INT(json_array_size(json_object_get(r.json, "items")), 1);
    resp_free(&r);
}

static void test_events_validation(void)
{
    resp_t r = t_http(srv, "POST", "/apis/events.k8s.io/v1/namespaces/default/events",
                      "{\"metadata\":{\"name\":\"e1\"},\"reason\":\"R\",\"type\":\"Normal\"}", NULL);
    T_EQ_INT(r.code, 422); /* eventTime required */
    T_EQ_STR(jstr(json_array_get(json_object_get(json_object_get(r.json, "details"), "causes"), 0), "field"),
             "eventTime");
    resp_free(&r);
    r = t_http(srv, "POST", "/apis/events.k8s.io/v1/namespaces/default/events",
               "{\"metadata\":{\"name\":\"e2\"},\"eventTime\":\"2025-03-01T10:02:00.120000Z\",\"reason\":\"R\","
               "\"type\":\"Normal\","
               "\"action\":\"A\",\"reportingController\":\"x/y\",\"reportingInstance\":\"i\"}",
               NULL);
    T_EQ_INT(r.code, 201);
    resp_free(&r);
    r = t_http(
        srv, "POST", "/api/v1/namespaces/default/events",
        "{\"metadata\":{\"name\":\"e3\"},\"involvedObject\":{\"kind\":\"Pod\",\"namespace\":\"other\",\"name\":\"p\"}}",
        NULL);
    T_EQ_INT(r.code, 422);
    resp_free(&r);
    /* one store, two views */
    r = t_http(srv, "POST", "/api/v1/namespaces/default/events",
               "{\"metadata\":{\"name\":\"e4\"},\"involvedObject\":{\"kind\":\"Pod\",\"namespace\":\"default\","
               "\"name\":\"p\"},"
               "\"message\":\"hello\",\"reason\":\"R\",\"type\":\"Normal\",\"count\":1}",
               NULL);
    T_EQ_INT(r.code, 201);
    resp_free(&r);
    r = t_http(srv, "GET", "/apis/events.k8s.io/v1/namespaces/default/events/e4", NULL, NULL);
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "apiVersion"), "events.k8s.io/v1");
    T_EQ_STR(jstr(r.json, "note"), "hello");
    T_EQ_STR(jstr(r.json, "regarding.name"), "p");
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/events/e2", NULL, NULL);
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "reportingComponent"), "x/y");
    resp_free(&r);
    r = t_http(srv, "GET", "/apis/events.k8s.io/v1/namespaces/default/events", NULL, NULL);
    T_EQ_INT(json_array_size(json_object_get(r.json, "items")), 2);
    resp_free(&r);
}

static void test_auth_and_latency(void)
{
    char path[] = "/tmp/luaop-test-tokens-XXXXXX";
    int fd = mkstemp(path);
    T_CHECK(fd >= 0);
    T_EQ_INT(write(fd, "tok1\n# comment\ntok2,user,1\n", 27), 27);
    close(fd);
    lop_apiserver_opts_t o = {.token_file = path};
    lop_apiserver_t *a;
    lop_err_t err;
    T_EQ_INT(lop_apiserver_start(&o, &a, &err), LOP_OK);
    resp_t r = t_http(a, "GET", "/api/v1/namespaces", NULL, NULL);
    T_EQ_INT(r.code, 401);
    T_EQ_STR(r.body.data, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                          "\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}\n");
    resp_free(&r);
    char url[256];
    snprintf(url, sizeof url, "%s/api/v1/namespaces", lop_apiserver_url(a));
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bearer tok2");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, t_write_cb);
    lop_buf_t body = LOP_BUF_INIT;
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    long code = 0;
    T_EQ_INT(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    T_EQ_INT(code, 200);
    lop_buf_free(&body);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    lop_apiserver_stop(a);
    unlink(path);
    /* injected latency delays answers by at least the configured time */
    lop_apiserver_set_latency(srv, 60);
    int64_t t0 = lop_clock_mono(&lop_clock_system);
    r = t_http(srv, "GET", "/version", NULL, NULL);
    int64_t took = lop_clock_mono(&lop_clock_system) - t0;
    T_EQ_INT(r.code, 200);
    T_CHECK(took >= 60 * LOP_NS_PER_MS);
    resp_free(&r);
    lop_apiserver_set_latency(srv, 0);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    srv = t_start(0);
    if (!T_SETUP("start the API server", srv != NULL)) return T_DONE();
    T_RUN(test_create_get_and_system_fields);
    T_RUN(test_exact_error_bodies);
    T_RUN(test_optimistic_concurrency);
    T_RUN(test_bad_bodies);
    T_RUN(test_noop_write_keeps_rv_and_emits_nothing);
    T_RUN(test_list_shape_and_selectors);
    T_RUN(test_pagination_snapshot_and_expiry);
    T_RUN(test_list_options_validation);
    T_RUN(test_discovery);
    T_RUN(test_lease_rules);
    T_RUN(test_protobuf_body);
    T_RUN(test_dry_run_and_delete_collection);
    T_RUN(test_events_validation);
    T_RUN(test_auth_and_latency);
    T_RUN(test_fault_injection);
    lop_apiserver_stop(srv);
    curl_global_cleanup();
    return T_DONE();
}
