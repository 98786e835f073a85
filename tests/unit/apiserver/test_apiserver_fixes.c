/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for issue 22 part 6's fixes in the local API server: DELETE with
 * propagationPolicy=Orphan keeps the dependents and takes the owner's reference out of them
 * (the list key gone when it empties, other owners kept); the apps/v1 /scale subresource shows
 * spec.replicas and status.selector and writes spec.replicas (PUT and merge patch); responses over
 * 128 KiB are gzipped when Accept-Encoding asks for it (Content-Encoding and Vary set, the body
 * the same once decompressed), smaller ones and q=0 are not. */
#include "apiserver/as_gzip.h"
#include "t.h"
#include "test_apiserver_util.h"

#include <zlib.h>

static lop_apiserver_t *srv;

#define NS      "/api/v1/namespaces/fix"
#define APPS_NS "/apis/apps/v1/namespaces/fix"

static void post(const char *path, const char *body)
{
    resp_t r = t_http(srv, "POST", path, body, NULL);
    if (r.code != 201) fprintf(stderr, "POST %s: %ld %s\n", path, r.code, r.body.data ? r.body.data : "");
    T_EQ_INT(r.code, 201);
    resp_free(&r);
}

static char *uid_of(const char *path)
{
    resp_t r = t_http(srv, "GET", path, NULL, NULL);
    char *u = lop_xstrdup(jstr(r.json, "metadata.uid") ? jstr(r.json, "metadata.uid") : "");
    resp_free(&r);
    return u;
}

static void test_orphan_removes_owner_references(void)
{
    post("/api/v1/namespaces", "{\"metadata\":{\"name\":\"fix\"}}");
    post(APPS_NS "/deployments",
         "{\"metadata\":{\"name\":\"owner\"},\"spec\":{\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"
         "\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[{\"name\":"
         "\"c\",\"image\":\"i\"}]}}}}");
    post(NS "/configmaps", "{\"metadata\":{\"name\":\"other\"}}");
    char *uid = uid_of(APPS_NS "/deployments/owner"), *other = uid_of(NS "/configmaps/other");
    char body[1024];
    snprintf(
        body, sizeof body,
        "{\"metadata\":{\"name\":\"only\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
        "\"name\":\"owner\",\"uid\":\"%s\",\"controller\":true,\"blockOwnerDeletion\":true}]}}",
        uid);
    post(NS "/configmaps", body);
    snprintf(body, sizeof body,
             "{\"metadata\":{\"name\":\"two\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
             "\"name\":\"owner\",\"uid\":\"%s\"},{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"other\","
             "\"uid\":\"%s\"}]}}",
             uid, other);
    post(NS "/configmaps", body);
    /* kubectl delete --cascade=orphan: the policy in the DeleteOptions body */
    resp_t r = t_http(srv, "DELETE", APPS_NS "/deployments/owner",
                      "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"Orphan\"}", NULL);
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    r = t_http(srv, "GET", APPS_NS "/deployments/owner", NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
    r = t_http(srv, "GET", NS "/configmaps/only", NULL, NULL);
    T_EQ_INT(r.code, 200);
    T_CHECK(json_object_get(json_object_get(r.json, "metadata"), "ownerReferences") == NULL);
    resp_free(&r);
    r = t_http(srv, "GET", NS "/configmaps/two", NULL, NULL);
    T_EQ_INT(r.code, 200);
    json_t *refs = json_object_get(json_object_get(r.json, "metadata"), "ownerReferences");
    T_EQ_INT(json_array_size(refs), 1);
    T_EQ_STR(jstr(json_array_get(refs, 0), "uid"), other);
    resp_free(&r);
    free(uid);
    free(other);
}

static void test_deployment_scale(void)
{
    post(APPS_NS "/deployments",
         "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":"
         "{\"app\":\"web\",\"tier\":\"fe\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":"
         "\"web\",\"tier\":\"fe\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}");
    resp_t r = t_http(srv, "PATCH", APPS_NS "/deployments/web/status", "{\"status\":{\"replicas\":2}}",
                      "application/merge-patch+json");
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    r = t_http(srv, "GET", APPS_NS "/deployments/web/scale", NULL, NULL);
    T_EQ_INT(r.code, 200);
    T_EQ_STR(jstr(r.json, "kind"), "Scale");
    T_EQ_STR(jstr(r.json, "apiVersion"), "autoscaling/v1");
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "spec"), "replicas")), 2);
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "status"), "replicas")), 2);
    T_EQ_STR(jstr(r.json, "status.selector"), "app=web,tier=fe");
    resp_free(&r);
    r = t_http(
        srv, "PUT", APPS_NS "/deployments/web/scale",
        "{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"Scale\",\"metadata\":{\"name\":\"web\",\"namespace\":\"fix\"},"
        "\"spec\":{\"replicas\":5}}",
        NULL);
    T_EQ_INT(r.code, 200);
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "spec"), "replicas")), 5);
    resp_free(&r);
    r = t_http(srv, "PATCH", APPS_NS "/deployments/web/scale", "{\"spec\":{\"replicas\":7}}",
               "application/merge-patch+json");
    T_EQ_INT(r.code, 200);
    resp_free(&r);
    r = t_http(srv, "GET", APPS_NS "/deployments/web", NULL, NULL);
    T_EQ_INT(json_integer_value(json_object_get(json_object_get(r.json, "spec"), "replicas")), 7);
    resp_free(&r);
}

/* A GET with a raw Accept-Encoding header (libcurl does not decode): the body as sent. */
static resp_t get_encoded(const char *path, const char *accept_encoding)
{
    resp_t r;
    memset(&r, 0, sizeof r);
    char url[1024], h[200];
    snprintf(url, sizeof url, "%s%s", lop_apiserver_url(srv), path);
    snprintf(h, sizeof h, "Accept-Encoding: %s", accept_encoding);
    CURL *c = curl_easy_init();
    struct curl_slist *hs = curl_slist_append(NULL, h);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, t_write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, t_write_cb);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r.headers);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
    curl_slist_free_all(hs);
    curl_easy_cleanup(c);
    return r;
}

static void gunzip(const lop_buf_t *in, lop_buf_t *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    T_CHECK(inflateInit2(&z, 15 + 16) == Z_OK);
    z.next_in = (unsigned char *)in->data;
    z.avail_in = (uInt)in->len;
    unsigned char chunk[65536];
    int rc;
    do {
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        rc = inflate(&z, Z_NO_FLUSH);
        lop_buf_append(out, chunk, sizeof chunk - z.avail_out);
    } while (rc == Z_OK);
    T_EQ_INT(rc, Z_STREAM_END);
    inflateEnd(&z);
}

static void test_gzip(void)
{
    static const struct {
        const char *ae;
        bool ok;
    } cases[] = {{NULL, false},           {"", false},           {"gzip", true},
                 {"deflate, gzip", true}, {"GZIP", true},        {"gzip;q=0", false},
                 {"gzip; q=0.5", true},   {"br, x-gzip", false}, {"identity", false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) T_CHECK(as_accepts_gzip(cases[i].ae) == cases[i].ok);
    char big[2100];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char body[2400];
    for (int i = 0; i < 100; i++) { /* ~210 KB of ConfigMaps */
        snprintf(body, sizeof body, "{\"metadata\":{\"name\":\"gz%03d\"},\"data\":{\"k\":\"%s\"}}", i, big);
        post(NS "/configmaps", body);
    }
    resp_t plain = get_encoded(NS "/configmaps", "identity");
    resp_t gz = get_encoded(NS "/configmaps", "gzip");
    T_EQ_INT(gz.code, 200);
    T_CHECK(plain.body.len > AS_GZIP_THRESHOLD);
    T_CHECK(strstr(plain.headers.data, "Content-Encoding") == NULL);
    T_CHECK(strstr(gz.headers.data, "Content-Encoding: gzip\r\n") != NULL);
    T_CHECK(strstr(gz.headers.data, "Vary: Accept-Encoding\r\n") != NULL);
    T_CHECK(gz.body.len < plain.body.len / 4);
    lop_buf_t dec = LOP_BUF_INIT;
    gunzip(&gz.body, &dec);
    T_CHECK(dec.len == plain.body.len && !memcmp(dec.data, plain.body.data, dec.len));
    lop_buf_free(&dec);
    resp_free(&gz);
    resp_free(&plain);
    resp_t small = get_encoded(NS "/configmaps/gz001", "gzip"); /* one object: under the threshold */
    T_EQ_INT(small.code, 200);
    T_CHECK(strstr(small.headers.data, "Content-Encoding") == NULL);
    resp_free(&small);
    resp_t refused = get_encoded(NS "/configmaps", "gzip;q=0");
    T_CHECK(strstr(refused.headers.data, "Content-Encoding") == NULL);
    resp_free(&refused);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    srv = t_start(0);
    if (!T_SETUP("start the API server", srv != NULL)) return T_DONE();
    T_RUN(test_orphan_removes_owner_references);
    T_RUN(test_deployment_scale);
    T_RUN(test_gzip);
    lop_apiserver_stop(srv);
    curl_global_cleanup();
    return T_DONE();
}
