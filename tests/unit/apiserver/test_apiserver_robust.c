/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests: bad input never crashes the local API server or corrupts stored objects; each gets
 * a 4xx/5xx Status naming the cause (issue 2, "Bad input gets what the real server gives"). */
#include "t.h"
#include <sys/resource.h>
#include <unistd.h>
#include "test_apiserver_util.h"

static lop_apiserver_t *srv;

typedef struct bad_case {
    const char *method, *path, *body, *ctype;
    int want; /* expected HTTP code */
} bad_case_t;

static const bad_case_t cases[] = {
    {"POST", "/api/v1/namespaces/default/configmaps", "", NULL, 400},
    {"POST", "/api/v1/namespaces/default/configmaps", "[1,2,3]", NULL, 400},
    {"POST", "/api/v1/namespaces/default/configmaps", "\"str\"", NULL, 400},
    {"POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":\"x\"}", NULL, 400},
    {"POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":5}}", NULL, 400},
    {"POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":1}}}", NULL,
     400},
    {"POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"a\",\"finalizers\":\"x\"}}", NULL,
     400},
    {"POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{}}", NULL, 422},
    {"POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"ok\",\"namespace\":\"other\"}}", NULL,
     400},
    {"POST", "/api/v1/namespaces/default/configmaps", "- a\n- : b: c\n", "application/yaml", 400},
    {"POST", "/api/v1/namespaces/default/configmaps", "\x01\x02\x03", "application/vnd.kubernetes.protobuf", 415},
    {"POST", "/api/v1/namespaces/default/configmaps/x", "{}", NULL, 405},
    {"POST", "/api/v1/configmaps", "{\"metadata\":{\"name\":\"a\"}}", NULL, 405},
    {"PUT", "/api/v1/namespaces/default/configmaps/target", "{\"metadata\":{\"name\":\"other\"}}", NULL, 400},
    {"PUT", "/api/v1/namespaces/default/configmaps/target", "{\"metadata\":{\"name\":\"target\",\"uid\":\"nope\"}}",
     NULL, 422},
    {"PATCH", "/api/v1/namespaces/default/configmaps/target", "{bad", "application/merge-patch+json", 400},
    {"PATCH", "/api/v1/namespaces/default/configmaps/target", "{}", "text/plain", 415},
    {"PATCH", "/api/v1/namespaces/default/configmaps/target", "[{\"op\":\"explode\"}]", "application/json-patch+json",
     0},
    {"PATCH", "/api/v1/namespaces/default/configmaps/target", "{\"op\":\"add\"}", "application/json-patch+json", 0},
    {"PATCH", "/api/v1/namespaces/default/configmaps/target", "[{\"op\":\"remove\",\"path\":\"/nope/deeper\"}]",
     "application/json-patch+json", 422},
    {"PATCH", "/api/v1/namespaces/default/configmaps/target", "[{\"op\":\"replace\",\"path\":\"\",\"value\":7}]",
     "application/json-patch+json", 0},
    {"PATCH", "/api/v1/namespaces/default/configmaps/target", "{\"metadata\":{\"name\":\"x\"}}",
     "application/apply-patch+yaml", 422},
    {"PATCH", "/api/v1/namespaces/default/configmaps/target?fieldManager=m", ":::", "application/apply-patch+yaml",
     400},
    {"PATCH", "/api/v1/namespaces/default/configmaps/target?force=true", "{}", "application/merge-patch+json", 422},
    {"PATCH", "/api/v1/namespaces/default/configmaps/missing", "{}", "application/merge-patch+json", 404},
    {"DELETE", "/api/v1/namespaces/default/configmaps/target", "{not json", NULL, 400},
    {"DELETE", "/api/v1/namespaces/default/configmaps/target?propagationPolicy=Sideways", NULL, NULL, 422},
    {"DELETE", "/api/v1/namespaces/default/configmaps/target", "{\"preconditions\":{\"uid\":\"wrong\"}}", NULL, 409},
    {"GET", "/api/v1/namespaces/default/configmaps?limit=abc&continue=!!", NULL, NULL, 400},
    {"GET", "/api/v1/namespaces/default/configmaps?labelSelector=%%%%", NULL, NULL, 400},
    {"GET", "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=-5", NULL, NULL, 500},
    {"GET", "/api/v1/namespaces/default/configmaps?watch=1&resourceVersionMatch=Exact", NULL, NULL, 422},
    {"GET", "/api/v1/namespaces/default/configmaps?sendInitialEvents=true", NULL, NULL, 422},
    {"GET", "/api/v1/namespaces/default/configmaps/target/status", NULL, NULL, 404},
    {"GET", "/api/v1/namespaces/default/configmaps/a/b/c/d", NULL, NULL, 404},
    {"GET", "/api/v2", NULL, NULL, 404},
    {"GET", "/apis/apps", NULL, NULL, 200},
    {"GET", "/nothing/here", NULL, NULL, 404},
    {"GET", "/luaop-fault/compact", NULL, NULL, 405},
    {"POST", "/luaop-fault/fail?code=99", "", NULL, 400},
    {"POST", "/luaop-fault/unknown", "", NULL, 404},
    {"POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "{\"metadata\":{\"name\":\"x\"},\"spec\":{}}",
     NULL, 422},
    {"POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
     "{\"metadata\":{\"name\":\"as.b.c\"},\"spec\":{\"group\":\"b.c\",\"scope\":\"Namespaced\",\"names\":{\"plural\":"
     "\"as\",\"kind\":\"A\"},"
     "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":false}]}}",
     NULL, 422},
};

static void test_bad_requests_get_status_answers(void)
{
    resp_t t = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps",
                      "{\"metadata\":{\"name\":\"target\"},\"data\":{\"keep\":\"me\"}}", NULL);
    T_EQ_INT(t.code, 201);
    const char *rv = jstr(t.json, "metadata.resourceVersion");
    char rvcopy[32];
    snprintf(rvcopy, sizeof rvcopy, "%s", rv ? rv : "");
    resp_free(&t);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_case_t *c = &cases[i];
        resp_t r = t_http(srv, c->method, c->path, c->body, c->ctype);
        if (c->want) {
            if (r.code != c->want) fprintf(stderr, "case %zu: %s %s -> %ld\n", i, c->method, c->path, r.code);
            T_EQ_INT(r.code, c->want);
        } else {
            T_CHECK(r.code >= 400 && r.code < 500);
        }
        if (r.code >= 400) T_EQ_STR(jstr(r.json, "kind"), "Status");
        resp_free(&r);
    }
    /* the target object is untouched */
    t = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps/target", NULL, NULL);
    T_EQ_INT(t.code, 200);
    T_EQ_STR(jstr(t.json, "data.keep"), "me");
    T_EQ_STR(jstr(t.json, "metadata.resourceVersion"), rvcopy);
    resp_free(&t);
}

static void test_deep_and_odd_json(void)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, "{\"metadata\":{\"name\":\"deep\"},\"data\":{\"k\":\"v\"},\"x\":");
    for (int i = 0; i < 5000; i++) lop_buf_putc(&b, '[');
    for (int i = 0; i < 5000; i++) lop_buf_putc(&b, ']');
    lop_buf_putc(&b, '}');
    resp_t r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps", b.data, NULL);
    T_CHECK(r.code == 201 || r.code == 400);
    resp_free(&r);
    lop_buf_free(&b);
    r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps",
               "{\"metadata\":{\"name\":\"uni\",\"labels\":{\"a\":\"b\"}},\"data\":{\"k\":\"\\u00e9x\"}}", NULL);
    T_EQ_INT(r.code, 201);
    resp_free(&r);
    /* NUL inside strings is refused with a 400 naming the parse error (never truncated silently) */
    r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps",
               "{\"metadata\":{\"name\":\"nul\"},\"data\":{\"k\":\"a\\u0000b\"}}", NULL);
    T_EQ_INT(r.code, 400);
    resp_free(&r);
    r = t_http(srv, "GET", "/version", NULL, NULL);
    T_EQ_INT(r.code, 200);
    resp_free(&r);
}

static void test_crd_must_be_structural(void)
{
    resp_t r =
        t_http(srv, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
               "{\"metadata\":{\"name\":\"things.ex.com\"},\"spec\":{\"group\":\"ex.com\",\"scope\":\"Cluster\","
               "\"names\":{\"plural\":\"things\",\"kind\":\"Thing\"},\"versions\":[{\"name\":\"v1\",\"served\":true,"
               "\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{"
               "\"properties\":{}}}}}}]}}",
               NULL);
    T_EQ_INT(r.code, 422);
    T_EQ_STR(jstr(r.json, "message"),
             "CustomResourceDefinition.apiextensions.k8s.io \"things.ex.com\" is invalid: "
             "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must "
             "not be empty for specified object fields");
    resp_free(&r);
    r = t_http(srv, "GET", "/apis/ex.com/v1/things", NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
}

/* Exactly one log line per rejected request, naming method, path, code and reason. */
static void test_one_log_line_per_rejection(void)
{
    char path[] = "/tmp/luaop-test-log-XXXXXX";
    int fd = mkstemp(path);
    T_CHECK(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    resp_t r = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps/absent", NULL, NULL);
    resp_free(&r);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps", NULL, NULL); /* accepted */
    resp_free(&r);
    r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps", "{oops", NULL);
    resp_free(&r);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[4096] = {0};
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    unlink(path);
    T_CHECK(n > 0);
    int lines = 0;
    for (char *p = buf; (p = strstr(p, "request rejected")) != NULL; p++) lines++;
    T_EQ_INT(lines, 2);
    T_CHECK(strstr(buf, "method=GET path=/api/v1/namespaces/default/configmaps/absent code=404 reason=NotFound") !=
            NULL);
    T_CHECK(strstr(buf, "method=POST path=/api/v1/namespaces/default/configmaps code=400 reason=BadRequest") != NULL);
}

/* A server-side apply whose body names another object than the URL: 400 naming both names (the
 * old code formatted the body's name after releasing the body, a use-after-free ASan reports). */
static void test_apply_name_must_match_the_url(void)
{
    resp_t r = t_http(srv, "PATCH", "/api/v1/namespaces/default/configmaps/applied?fieldManager=m",
                      "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                      "\"a-body-name-long-enough-to-live-on-the-heap\"}}",
                      "application/apply-patch+yaml");
    T_EQ_INT(r.code, 400);
    T_EQ_STR(jstr(r.json, "message"), "the name of the object (a-body-name-long-enough-to-live-on-the-heap) does not "
                                      "match the name on the URL (applied)");
    resp_free(&r);
}

static long max_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* "Billion laughs" in a YAML body (~390 bytes, 9^8 strings expanded): refused with a 400 naming
 * excessive aliasing, and the process' peak RSS barely moves (the old code grew by ~120 MB). */
static void test_yaml_alias_bomb_is_refused(void)
{
    static const char bomb[] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs}\n"
                               "x:\n  a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n"
                               "  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                               "  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                               "  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                               "  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                               "  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                               "  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
                               "  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n";
    long before = max_rss_kb();
    resp_t r = t_http(srv, "POST", "/api/v1/namespaces/default/configmaps", bomb, "application/yaml");
    T_EQ_INT(r.code, 400);
    const char *msg = jstr(r.json, "message");
    T_CHECK(msg && strstr(msg, "excessive aliasing") != NULL);
    resp_free(&r);
    r = t_http(srv, "PATCH", "/api/v1/namespaces/default/configmaps/laughs?fieldManager=m", bomb,
               "application/apply-patch+yaml");
    T_EQ_INT(r.code, 400);
    msg = jstr(r.json, "message");
    T_CHECK(msg && strstr(msg, "excessive aliasing") != NULL);
    resp_free(&r);
    long grown_mb = (max_rss_kb() - before) / 1024;
    T_CHECK(grown_mb < 32);
    r = t_http(srv, "GET", "/api/v1/namespaces/default/configmaps/laughs", NULL, NULL);
    T_EQ_INT(r.code, 404);
    resp_free(&r);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    srv = t_start(0);
    if (!T_SETUP("start the API server", srv != NULL)) return T_DONE();
    T_RUN(test_bad_requests_get_status_answers);
    T_RUN(test_deep_and_odd_json);
    T_RUN(test_crd_must_be_structural);
    T_RUN(test_one_log_line_per_rejection);
    T_RUN(test_apply_name_must_match_the_url);
    T_RUN(test_yaml_alias_bomb_is_refused);
    lop_apiserver_stop(srv);
    curl_global_cleanup();
    return T_DONE();
}
