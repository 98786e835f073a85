/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for host/kube/rest: Status parsing, retries (client-go rest/with_retry.go), credentials
 * refresh after a 401, request headers, watch streaming with arbitrary chunking,
 * cancellation and idle timeout, concurrency — against the scripted server in test_rest_fakesrv.h.
 */
#include "host/kube/client/rest.h"
#include "host/util/log.h"
#include "t.h"
#include "test_rest_fakesrv.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>

/* ---- helpers ---- */

#include "stepper.h"

static void stepper_start(stepper_t *s, lop_fake_clock_t *fc) { stepper_start_by(s, fc, 100 * LOP_NS_PER_MS); }

static lop_rest_client_t *mk_client(fs_server_t *s, lop_fake_clock_t *fc, double qps, int burst, lop_auth_t *auth)
{
    lop_rest_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s->port);
    cfg.server = strdup(url);
    cfg.qps = qps;
    cfg.burst = burst;
    cfg.clock = fc ? &fc->base : NULL;
    cfg.auth = auth;
    lop_rest_client_t *c = NULL;
    lop_err_t err;
    if (lop_rest_client_new(&cfg, &c, &err) != LOP_OK) fprintf(stderr, "client: %s\n", err.message);
    lop_rest_config_cleanup(&cfg);
    return c;
}

#define OK_BODY "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\"}}\n"

/* ---- Status parsing ---- */

static void test_status_parse_json_and_text(void)
{
    lop_err_t err;
    json_t *st = NULL;
    const char *nf = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                     "\"message\":\"configmaps \\\"cm\\\" not found\",\"reason\":\"NotFound\","
                     "\"details\":{\"name\":\"cm\",\"kind\":\"configmaps\"},\"code\":404}";
    T_EQ_INT(lop_rest_status_parse(404, nf, strlen(nf), &err, &st), LOP_ENOTFOUND);
    T_EQ_INT(err.code, 404);
    T_EQ_STR(err.reason, "NotFound");
    T_EQ_STR(err.message, "configmaps \"cm\" not found");
    T_EQ_STR(json_string_value(json_object_get(json_object_get(st, "details"), "kind")), "configmaps");
    json_decref(st);

    const char *txt = "Too many requests, please try again later.\n";
    T_EQ_INT(lop_rest_status_parse(429, txt, strlen(txt), &err, &st), LOP_EAGAIN);
    T_EQ_STR(err.reason, "TooManyRequests");
    T_EQ_STR(err.message, "Too many requests, please try again later.");
    T_EQ_INT(json_integer_value(json_object_get(st, "code")), 429);
    T_EQ_STR(json_string_value(json_object_get(st, "kind")), "Status");
    json_decref(st);

    const char *gone = "{\"kind\":\"Status\",\"reason\":\"Gone\",\"code\":410,\"message\":\"old\"}";
    T_EQ_INT(lop_rest_status_parse(410, gone, strlen(gone), &err, NULL), LOP_EGONE);
    T_EQ_INT(lop_rest_status_parse(410, "", 0, &err, NULL), LOP_EGONE);
    T_EQ_STR(err.reason, "Expired");

    const char *ae = "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\",\"code\":409,\"message\":\"x\"}";
    T_EQ_INT(lop_rest_status_parse(409, ae, strlen(ae), &err, NULL), LOP_EEXIST);
    /* Not JSON, not UTF-8, empty: still a typed error, never a crash. */
    const char bad[] = {'\xff', '\xfe', 'x', 0};
    T_EQ_INT(lop_rest_status_parse(503, bad, 3, &err, NULL), LOP_EAGAIN);
    T_EQ_STR(err.reason, "ServiceUnavailable");
    T_CHECK(strlen(err.message) > 0);
    T_EQ_INT(lop_rest_status_parse(500, "[1,2]", 5, &err, NULL), LOP_EAGAIN);
    T_EQ_STR(err.reason, "InternalError");
    T_EQ_STR(err.message, "[1,2]");
    T_EQ_INT(lop_rest_status_parse(504, NULL, 0, &err, NULL), LOP_ETIMEDOUT);
    T_EQ_STR(err.reason, "Timeout");
    /* A long text body is cut at 1024 bytes, but not inside a character: the text is kept, not
     * replaced by the generic message (found by fuzz_httpresponse). */
    char longtxt[1100];
    memset(longtxt, 'x', 1023);
    for (int i = 1023; i + 2 <= 1090; i += 2) memcpy(longtxt + i, "\xc3\xa9", 2);
    T_EQ_INT(lop_rest_status_parse(500, longtxt, 1089, &err, &st), LOP_EAGAIN);
    T_EQ_INT(strlen(json_string_value(json_object_get(st, "message"))), 1023);
    json_decref(st);
}

static void test_retry_after_parse(void)
{
    T_EQ_INT(lop_rest_parse_retry_after("5"), 5);
    T_EQ_INT(lop_rest_parse_retry_after(" 0 "), 0);
    T_EQ_INT(lop_rest_parse_retry_after("1.5"), -1);
    T_EQ_INT(lop_rest_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), -1);
    T_EQ_INT(lop_rest_parse_retry_after("-3"), -1);
    T_EQ_INT(lop_rest_parse_retry_after(""), -1);
    T_EQ_INT(lop_rest_parse_retry_after(NULL), -1);
    /* saturates instead of overflowing (seconds * 1e9 ns must fit in int64) */
    T_EQ_INT(lop_rest_parse_retry_after("9223372036854775807"), LOP_REST_RETRY_AFTER_MAX);
    T_EQ_INT(lop_rest_parse_retry_after("99999999999999999999999999"), LOP_REST_RETRY_AFTER_MAX);
    T_EQ_INT(lop_rest_parse_retry_after("86401"), LOP_REST_RETRY_AFTER_MAX);
}

/* ---- retries ---- */

static void h_429_twice(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b,
                        fs_reply_t *out)
{
    if (n < 2)
        out->owned = fs_resp(429, "Too Many Requests", "Retry-After: 2\r\n", "text/plain; charset=utf-8",
                             "Too many requests, please try again later.\n");
    else
        out->owned = fs_resp(200, "OK", "", "application/json", OK_BODY);
}

static void test_429_text_with_retry_after_is_retried(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    fs_server_t *s = fs_start(h_429_twice, NULL);
    lop_rest_client_t *c = mk_client(s, &fc, -1, 0, NULL);
    stepper_t st;
    stepper_start(&st, &fc);
    int64_t t0 = lop_clock_mono(&fc.base);
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces/d/configmaps/a", NULL, NULL, 0, &resp, &err), LOP_OK);
    stepper_stop(&st);
    T_EQ_INT(resp.code, 200);
    T_EQ_INT(resp.retries, 2);
    T_EQ_STR(resp.body.data, OK_BODY);
    T_EQ_INT(fs_nreqs(s), 3);
    T_CHECK(lop_clock_mono(&fc.base) - t0 >= 4 * LOP_NS_PER_S); /* waited 2 s twice (fake) */
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

static void h_429_wait_30(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b,
                          fs_reply_t *out)
{
    out->owned = fs_resp(429, "Too Many Requests", "Retry-After: 30\r\n", "text/plain", "slow down\n");
}

/* A Retry-After longer than what is left of the request's timeout is not waited: the 429 comes
 * back at once (no fake time passes, one request on the wire). */
static void test_retry_after_past_the_timeout_is_not_waited(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    fs_server_t *s = fs_start(h_429_wait_30, NULL);
    lop_rest_client_t *c = mk_client(s, &fc, -1, 0, NULL);
    int64_t t0 = lop_clock_mono(&fc.base);
    lop_rest_req_t req = {.method = "GET", .path = "/api/v1/namespaces/d/configmaps/a", .timeout_ms = 2000};
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_request(c, &req, &resp, &err), LOP_EAGAIN);
    T_EQ_INT(err.code, 429);
    T_EQ_INT(resp.retries, 0);
    T_EQ_INT(fs_nreqs(s), 1);
    T_EQ_INT(lop_clock_mono(&fc.base) - t0, 0);
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

static void h_503_plain(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b,
                        fs_reply_t *out)
{
    out->owned = fs_resp(503, "Service Unavailable", "", "text/plain", "  backend down  \n");
}

static void test_5xx_without_retry_after_is_not_retried(void)
{
    fs_server_t *s = fs_start(h_503_plain, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, NULL);
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/pods", NULL, NULL, 0, &resp, &err), LOP_EAGAIN);
    T_EQ_INT(err.code, 503);
    T_EQ_STR(err.reason, "ServiceUnavailable");
    T_EQ_STR(err.message, "backend down");
    T_EQ_INT(fs_nreqs(s), 1);
    T_EQ_INT(resp.retries, 0);
    T_CHECK(resp.status != NULL);
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

static void h_500_ra0(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b,
                      fs_reply_t *out)
{
    out->owned = fs_resp(500, "Internal Server Error", "Retry-After: 0\r\n", "application/json",
                         "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                         "\"message\":\"Internal error occurred: boom\",\"reason\":\"InternalError\",\"code\":500}");
}

static void test_retries_stop_after_ten(void)
{
    fs_server_t *s = fs_start(h_500_ra0, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, NULL);
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_do(c, "POST", "/api/v1/namespaces/d/configmaps", NULL, "{}", 2, &resp, &err), LOP_EAGAIN);
    T_EQ_INT(fs_nreqs(s), 1 + LOP_REST_MAX_RETRIES);
    T_EQ_INT(resp.retries, LOP_REST_MAX_RETRIES);
    T_EQ_STR(err.reason, "InternalError");
    T_EQ_STR(err.message, "Internal error occurred: boom");
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

static void h_close_first(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b,
                          fs_reply_t *out)
{
    if (n == 0)
        out->action = FS_CLOSE;
    else
        out->owned = fs_resp(200, "OK", "", "application/json", OK_BODY);
}

static void test_get_retried_on_connection_reset_but_not_post(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    stepper_t st;
    stepper_start(&st, &fc);
    fs_server_t *s = fs_start(h_close_first, NULL);
    lop_rest_client_t *c = mk_client(s, &fc, -1, 0, NULL);
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces/d/configmaps/a", NULL, NULL, 0, &resp, &err), LOP_OK);
    T_EQ_INT(resp.retries, 1);
    T_EQ_INT(fs_nreqs(s), 2);
    lop_rest_client_free(c);
    fs_stop(s);

    s = fs_start(h_close_first, NULL);
    c = mk_client(s, &fc, -1, 0, NULL);
    T_EQ_INT(lop_rest_do(c, "POST", "/api/v1/namespaces/d/configmaps", NULL, "{}", 2, &resp, &err), LOP_EAGAIN);
    T_EQ_INT(err.code, 0);
    T_EQ_INT(fs_nreqs(s), 1);
    stepper_stop(&st);
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

static void h_conflict(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b,
                       fs_reply_t *out)
{
    out->owned = fs_resp(409, "Conflict", "Warning: 299 - \"unknown field \\\"spec.foo\\\"\"\r\n", "application/json",
                         "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                         "\"message\":\"Operation cannot be fulfilled on configmaps \\\"a\\\": the object has been "
                         "modified; please apply your changes to the latest version and try again\","
                         "\"reason\":\"Conflict\",\"details\":{\"name\":\"a\",\"kind\":\"configmaps\"},\"code\":409}");
}

static void test_json_status_becomes_typed_error(void)
{
    fs_server_t *s = fs_start(h_conflict, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, NULL);
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_do(c, "PUT", "/api/v1/namespaces/d/configmaps/a", NULL, "{}", 2, &resp, &err), LOP_ECONFLICT);
    T_EQ_INT(err.code, 409);
    T_EQ_STR(err.reason, "Conflict");
    T_EQ_STR(json_string_value(json_object_get(json_object_get(resp.status, "details"), "name")), "a");
    T_EQ_INT(fs_nreqs(s), 1);
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

/* ---- headers and credentials ---- */

static void h_ok(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b, fs_reply_t *out)
{
    out->owned = fs_resp(200, "OK", "", "application/json", OK_BODY);
}

static void test_request_headers(void)
{
    fs_server_t *s = fs_start(h_ok, NULL);
    lop_rest_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", s->port);
    cfg.server = strdup(url);
    cfg.qps = -1;
    cfg.auth = lop_auth_new("s3cret", NULL, NULL, NULL);
    cfg.impersonate_user = strdup("alice");
    cfg.impersonate_groups = calloc(2, sizeof(char *));
    cfg.impersonate_groups[0] = strdup("g1");
    cfg.impersonate_groups[1] = strdup("g2");
    cfg.n_impersonate_groups = 2;
    cfg.impersonate_extra = calloc(1, sizeof(char *));
    cfg.impersonate_extra[0] = strdup("scopes=view");
    cfg.n_impersonate_extra = 1;
    lop_rest_client_t *c = NULL;
    lop_err_t err;
    T_EQ_INT(lop_rest_client_new(&cfg, &c, &err), LOP_OK);
    lop_rest_config_cleanup(&cfg);
    T_EQ_STR(lop_rest_client_user_agent(c), "luaop/" LUAOP_VERSION " (linux/amd64)");
    T_EQ_STR(lop_rest_client_namespace(c), "default");
    T_EQ_INT(lop_rest_do(c, "POST", "/api/v1/namespaces/d/configmaps?fieldManager=x", NULL, "{\"a\":1}", 7, NULL, &err),
             LOP_OK);
    char *r = fs_req(s, 0);
    T_CHECK(strstr(r, "POST /api/v1/namespaces/d/configmaps?fieldManager=x HTTP/1.1") == r);
    T_CHECK(strstr(r, "Authorization: Bearer s3cret") != NULL);
    T_CHECK(strstr(r, "User-Agent: luaop/" LUAOP_VERSION " (linux/amd64)") != NULL);
    T_CHECK(strstr(r, "Accept-Encoding: gzip") != NULL);
    T_CHECK(strstr(r, "Accept: application/json") != NULL);
    T_CHECK(strstr(r, "Content-Type: application/json") != NULL);
    T_CHECK(strstr(r, "Impersonate-User: alice") != NULL);
    T_CHECK(strstr(r, "Impersonate-Group: g1") != NULL);
    T_CHECK(strstr(r, "Impersonate-Group: g2") != NULL);
    T_CHECK(strstr(r, "Impersonate-Extra-scopes: view") != NULL);
    T_CHECK(strstr(r, "Expect:") == NULL);
    free(r);
    lop_rest_client_free(c);
    fs_stop(s);
}

static void test_header_values_cannot_inject_lines(void)
{
    fs_server_t *s = fs_start(h_ok, NULL);
    lop_rest_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s->port);
    cfg.server = strdup(url);
    cfg.impersonate_user = strdup("bob\r\nX-Injected: 1");
    lop_rest_client_t *c = NULL;
    lop_err_t err;
    T_EQ_INT(lop_rest_client_new(&cfg, &c, &err), LOP_OK);
    T_EQ_INT(lop_rest_do(c, "GET", "/api", NULL, NULL, 0, NULL, &err), LOP_OK);
    char *r = fs_req(s, 0);
    T_CHECK(strstr(r, "X-Injected") == NULL);
    T_CHECK(strstr(r, "Impersonate-User") == NULL);
    free(r);
    /* a request's own Accept replaces application/json, and is held to the same rule */
    lop_rest_req_t req = {.method = "GET", .path = "/api/v1/pods", .accept = LOP_ACCEPT_PARTIAL_LIST};
    T_EQ_INT(lop_rest_request(c, &req, NULL, &err), LOP_OK);
    r = fs_req(s, 1);
    T_CHECK(strstr(r, "\r\nAccept: " LOP_ACCEPT_PARTIAL_LIST "\r\n") != NULL);
    T_CHECK(strstr(r, "Accept: application/json\r\n") == NULL);
    free(r);
    req.accept = "application/json\r\nX-Injected: 1";
    T_EQ_INT(lop_rest_request(c, &req, NULL, &err), LOP_OK);
    r = fs_req(s, 2);
    T_CHECK(strstr(r, "X-Injected") == NULL);
    free(r);
    lop_rest_client_free(c);
    fs_stop(s);
}

/* gzip of a 1524-byte ConfigMapList with items cm-0..cm-49 (made with Python's gzip module). */
static const unsigned char gz_list[] = {
    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xff, 0x7d, 0xd4, 0x39, 0x0e, 0xc2, 0x40, 0x0c, 0x40, 0xd1,
    0xbb, 0xb8, 0x0e, 0x12, 0x5e, 0xd8, 0xd2, 0xd2, 0xc2, 0x09, 0x10, 0xc5, 0x88, 0x04, 0x34, 0x42, 0x13, 0x90, 0x32,
    0x5d, 0x34, 0x77, 0x07, 0x0e, 0xc0, 0xaf, 0xbf, 0xab, 0x27, 0xdb, 0x8b, 0x3c, 0xf3, 0x34, 0x48, 0x2f, 0xc7, 0xd7,
    0x74, 0xcf, 0x8f, 0x73, 0x7a, 0x9f, 0xf2, 0x5c, 0xa5, 0x93, 0x5c, 0xc7, 0x32, 0x4b, 0x7f, 0x59, 0xa4, 0x8c, 0x35,
    0x0d, 0xa9, 0x26, 0xe9, 0x17, 0x99, 0x52, 0x19, 0xbf, 0xc3, 0xb7, 0xb2, 0x5a, 0x4b, 0x6b, 0xdd, 0xbf, 0xa8, 0x14,
    0x8d, 0xa2, 0x53, 0x0c, 0x8a, 0x1b, 0x8a, 0x5b, 0x8a, 0x3b, 0x8a, 0x7b, 0x8a, 0x07, 0x44, 0x60, 0x22, 0x34, 0x52,
    0x44, 0x52, 0x54, 0x52, 0x64, 0x52, 0x74, 0x52, 0x84, 0x52, 0x94, 0x52, 0xa4, 0x52, 0xb4, 0x32, 0xb4, 0x32, 0xde,
    0x27, 0xb4, 0x32, 0xb4, 0x32, 0xb4, 0x32, 0xb4, 0x32, 0xb4, 0x32, 0xb4, 0x32, 0xb4, 0x32, 0xb4, 0x72, 0xb4, 0x72,
    0xb4, 0x72, 0x3e, 0x3e, 0xb4, 0x72, 0xb4, 0x72, 0xb4, 0x72, 0xb4, 0x72, 0xb4, 0x72, 0xb4, 0x72, 0xb4, 0x0a, 0xb4,
    0x0a, 0xb4, 0x0a, 0xb4, 0x0a, 0xfe, 0x54, 0x68, 0x15, 0x68, 0x15, 0x68, 0x15, 0x68, 0x15, 0x68, 0x15, 0x3f, 0xab,
    0x6b, 0xfb, 0x00, 0x92, 0x14, 0x4f, 0xa3, 0xf4, 0x05, 0x00, 0x00,
};

static void h_gzip(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b, fs_reply_t *out)
{
    char head[256];
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      "Content-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n",
                      sizeof gz_list);
    out->owned = malloc((size_t)hl + sizeof gz_list);
    memcpy(out->owned, head, (size_t)hl);
    memcpy(out->owned + hl, gz_list, sizeof gz_list);
    out->owned_len = (size_t)hl + sizeof gz_list;
}

static void test_gzip_bodies_are_decompressed(void)
{
    fs_server_t *s = fs_start(h_gzip, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, NULL);
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/configmaps", NULL, NULL, 0, &resp, &err), LOP_OK);
    T_EQ_INT(resp.body.len, 1524);
    T_CHECK(resp.body.data && strstr(resp.body.data, "\"cm-49\"") != NULL);
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

static char tmpdir[256];
static char tokpath[300];

static void write_file(const char *path, const char *content, int mode)
{
    FILE *f = fopen(path, "w");
    fputs(content, f);
    fclose(f);
    if (mode) chmod(path, (mode_t)mode);
}

/* 401 for token t1 (and rotate the file to t2, as the kubelet would); 200 for t2. */
static void h_token_rotation(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b,
                             fs_reply_t *out)
{
    if (strstr(h, "Authorization: Bearer t2")) {
        out->owned = fs_resp(200, "OK", "", "application/json", OK_BODY);
        return;
    }
    write_file(tokpath, "t2\n", 0);
    out->owned = fs_resp(401, "Unauthorized", "", "application/json",
                         "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                         "\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}");
}

static void test_401_rereads_token_file(void)
{
    snprintf(tokpath, sizeof tokpath, "%s/token", tmpdir);
    write_file(tokpath, "t1\n", 0);
    fs_server_t *s = fs_start(h_token_rotation, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, lop_auth_new("ignored", tokpath, NULL, NULL));
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces", NULL, NULL, 0, &resp, &err), LOP_OK);
    T_EQ_INT(resp.retries, 1);
    T_EQ_INT(fs_nreqs(s), 2);
    char *r0 = fs_req(s, 0), *r1 = fs_req(s, 1);
    T_CHECK(strstr(r0, "Bearer t1") != NULL); /* the file wins over the static token */
    T_CHECK(strstr(r1, "Bearer t2") != NULL);
    free(r0);
    free(r1);
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

static void h_exec_token(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b,
                         fs_reply_t *out)
{
    if (strstr(h, "Authorization: Bearer tok2"))
        out->owned = fs_resp(200, "OK", "", "application/json", OK_BODY);
    else
        out->owned = fs_resp(401, "Unauthorized", "", "text/plain", "Unauthorized");
}

static void test_401_reruns_exec_plugin(void)
{
    char script[300], counter[300];
    snprintf(script, sizeof script, "%s/plugin.sh", tmpdir);
    snprintf(counter, sizeof counter, "%s/count", tmpdir);
    write_file(counter, "0", 0);
    char text[1024];
    snprintf(text, sizeof text,
             "#!/bin/sh\nn=$(cat %s); n=$((n+1)); echo $n > %s\n"
             "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
             "\"status\":{\"token\":\"tok%%s\"}}' $n\n",
             counter, counter);
    write_file(script, text, 0755);
    lop_auth_exec_t e;
    memset(&e, 0, sizeof e);
    e.api_version = strdup("client.authentication.k8s.io/v1");
    e.command = strdup(script);
    e.interactive_mode = strdup("Never");
    lop_auth_t *auth = lop_auth_new(NULL, NULL, &e, NULL);
    fs_server_t *s = fs_start(h_exec_token, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, auth);
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces", NULL, NULL, 0, &resp, &err), LOP_OK);
    T_EQ_INT(lop_auth_exec_runs(auth), 2);
    T_EQ_INT(fs_nreqs(s), 2);
    /* cached: no new run for the next request */
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces", NULL, NULL, 0, &resp, &err), LOP_OK);
    T_EQ_INT(lop_auth_exec_runs(auth), 2);
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

/* ---- streams ---- */

static const char *const watch_pieces[] = {
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    /* one chunk ends in the middle of an event, the next holds the rest and a whole second event */
    "19\r\n{\"type\":\"ADDED\",\"object\":\r\n", "2e\r\n{\"kind\":\"A\"}}\n{\"type\":\"BOOKMARK\",\"object\":{}}\n\r\n",
    "1\r\n{\r\n", "1a\r\n\"type\":\"DELETED\",\"obj\":1}\n\r\n", "0\r\n\r\n", NULL};

static void h_watch(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b, fs_reply_t *out)
{
    for (int i = 0; watch_pieces[i]; i++) out->pieces[i] = watch_pieces[i];
}

static int collect(void *ud, const char *data, size_t len)
{
    lop_buf_append(ud, data, len);
    return 0;
}

static void test_watch_stream_passes_bytes_regardless_of_chunking(void)
{
    fs_server_t *s = fs_start(h_watch, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, NULL);
    lop_buf_t got = LOP_BUF_INIT;
    lop_err_t err;
    int code = 0;
    T_EQ_INT(lop_rest_stream(c, "/api/v1/configmaps?watch=true", collect, &got, NULL, &code, &err), LOP_OK);
    T_EQ_INT(code, 200);
    T_EQ_STR(got.data, "{\"type\":\"ADDED\",\"object\":{\"kind\":\"A\"}}\n{\"type\":\"BOOKMARK\",\"object\":{}}\n"
                       "{\"type\":\"DELETED\",\"obj\":1}\n");
    lop_buf_free(&got);
    lop_rest_client_free(c);
    fs_stop(s);
}

/* A 2xx body passed to a request's sink (a streamed LIST): 3 MB sent at once arrive intact,
 * in order, whatever the reads (up to 1 MiB each); a sink that stops ends the request. */
static char *big_body(void)
{
    size_t n = 3000 * 1000;
    char *b = malloc(n + 1);
    for (size_t i = 0; i < n; i++) b[i] = (char)('a' + (i * 7 + i / 1000) % 26);
    b[n] = '\0';
    return b;
}

static void h_big(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b, fs_reply_t *out)
{
    char *body = big_body();
    out->owned = fs_resp(200, "OK", "", "application/json", body);
    free(body);
}

typedef struct sink_run {
    lop_buf_t got;
    int calls, stop_at;
} sink_run_t;

static int sink(void *ud, const char *data, size_t len)
{
    sink_run_t *r = ud;
    lop_buf_append(&r->got, data, len);
    return ++r->calls == r->stop_at;
}

static void test_request_sink_gets_the_whole_body(void)
{
    fs_server_t *s = fs_start(h_big, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, NULL);
    char *want = big_body();
    sink_run_t r = {LOP_BUF_INIT, 0, 0};
    lop_rest_req_t req = {.method = "GET", .path = "/api/v1/pods", .sink = sink, .sink_ud = &r};
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_request(c, &req, &resp, &err), LOP_OK);
    T_EQ_INT(resp.code, 200);
    T_EQ_INT((long)resp.body.len, 0); /* passed on, not collected */
    T_EQ_INT((long)r.got.len, (long)strlen(want));
    T_CHECK(r.got.len == strlen(want) && memcmp(r.got.data, want, r.got.len) == 0);
    lop_rest_resp_cleanup(&resp);

    sink_run_t stop = {LOP_BUF_INIT, 0, 1}; /* stops at its first call */
    req.sink_ud = &stop;
    T_EQ_INT(lop_rest_request(c, &req, &resp, &err), LOP_ECLOSED);
    T_EQ_INT(stop.calls, 1);
    T_CHECK(stop.got.len < strlen(want));
    lop_rest_resp_cleanup(&resp);
    lop_buf_free(&stop.got);
    lop_buf_free(&r.got);
    free(want);
    lop_rest_client_free(c);
    fs_stop(s);
}

static void h_watch_410(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b,
                        fs_reply_t *out)
{
    out->owned = fs_resp(410, "Gone", "", "application/json",
                         "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                         "\"message\":\"too old resource version: 1 (5)\",\"reason\":\"Expired\",\"code\":410}");
}

static int must_not_be_called(void *ud, const char *data, size_t len)
{
    (*(int *)ud)++;
    return 0;
}

static void test_watch_http_error_is_typed(void)
{
    fs_server_t *s = fs_start(h_watch_410, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, NULL);
    lop_err_t err;
    int calls = 0;
    T_EQ_INT(lop_rest_stream(c, "/api/v1/configmaps?watch=true&resourceVersion=1", must_not_be_called, &calls, NULL,
                             NULL, &err),
             LOP_EGONE);
    T_EQ_STR(err.reason, "Expired");
    T_EQ_INT(calls, 0);
    lop_rest_client_free(c);
    fs_stop(s);
}

static void h_stall(fs_server_t *s, int n, const char *m, const char *p, const char *h, const char *b, fs_reply_t *out)
{
    out->action = FS_STALL;
    out->pieces[0] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    out->pieces[1] = "2\r\n{}\r\n";
}

/* The whole call's deadline (the reconcile's, passed by the Lua bindings) bounds Retry-After
 * waits even without a request timeout: a 30 s Retry-After under a 2 s deadline is not waited. */
static void test_retry_after_past_the_call_deadline_is_not_waited(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    fs_server_t *s = fs_start(h_429_wait_30, NULL);
    lop_rest_client_t *c = mk_client(s, &fc, -1, 0, NULL);
    int64_t t0 = lop_clock_mono(&fc.base);
    lop_rest_req_t req = {
        .method = "GET", .path = "/api/v1/namespaces/d/configmaps/a", .timeout_ms = -1, .deadline_ms = 2000};
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_request(c, &req, &resp, &err), LOP_EAGAIN);
    T_EQ_INT(err.code, 429);
    T_EQ_STR(err.reason, "TooManyRequests");
    T_EQ_INT(resp.retries, 0);
    T_EQ_INT(fs_nreqs(s), 1);
    T_EQ_INT(lop_clock_mono(&fc.base) - t0, 0);
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

/* Retry-After waits that fit the deadline are waited; the first that does not is not: with a
 * 3 s deadline and `Retry-After: 2` twice, at most one wait fits (how many depends on how far the
 * free-running stepper moved the fake clock during the first exchange), the 4 s the server asks
 * for in all never does, so the call fails instead of getting the 200 of the third attempt
 * (test_429_text_with_retry_after_is_retried gets it without a deadline): with the 429 when a wait
 * would pass the deadline, or LOP_ETIMEDOUT when the stepper moved the clock past it during the
 * wait that fitted. */
static void test_retry_after_waits_stop_at_the_call_deadline(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    fs_server_t *s = fs_start(h_429_twice, NULL);
    lop_rest_client_t *c = mk_client(s, &fc, -1, 0, NULL);
    stepper_t st;
    stepper_start(&st, &fc);
    int64_t t0 = lop_clock_mono(&fc.base);
    lop_rest_req_t req = {.method = "GET", .path = "/api/v1/namespaces/d/configmaps/a", .deadline_ms = 3000};
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    lop_rc_t rc = lop_rest_request(c, &req, &resp, &err);
    stepper_stop(&st);
    T_CHECK((rc == LOP_EAGAIN && err.code == 429) || rc == LOP_ETIMEDOUT);
    T_CHECK(resp.retries <= 1);
    T_CHECK(fs_nreqs(s) <= 2);
    /* no wait ran past the deadline: only a retry's exchange can add fake time after it */
    T_CHECK(resp.retries == 0 || lop_clock_mono(&fc.base) - t0 >= 2 * LOP_NS_PER_S);
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

/* A rate-limiter wait that would pass the deadline is not waited: LOP_ETIMEDOUT at once. */
static void test_qps_wait_past_the_call_deadline_fails_at_once(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    fs_server_t *s = fs_start(h_ok, NULL);
    lop_rest_client_t *c = mk_client(s, &fc, 0.1, 1, NULL); /* one token, the next in 10 s */
    lop_rest_resp_t first = LOP_REST_RESP_INIT;
    lop_err_t err;
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces/d/configmaps/a", NULL, NULL, 0, &first, &err), LOP_OK);
    lop_rest_resp_cleanup(&first);
    int64_t t0 = lop_clock_mono(&fc.base);
    lop_rest_req_t req = {.method = "GET", .path = "/api/v1/namespaces/d/configmaps/a", .deadline_ms = 2000};
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    T_EQ_INT(lop_rest_request(c, &req, &resp, &err), LOP_ETIMEDOUT);
    T_CHECK(strstr(err.message, "rate limiter") != NULL);
    T_EQ_INT(fs_nreqs(s), 1);
    T_EQ_INT(lop_clock_mono(&fc.base) - t0, 0);
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

/* The deadline also cuts the attempt's own timeout: a server that never answers fails the call
 * with LOP_ETIMEDOUT after the deadline (300 ms, real clock), not the 120 s request timeout. */
static void test_call_deadline_cuts_a_stalled_attempt(void)
{
    fs_server_t *s = fs_start(h_stall, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, NULL);
    lop_rest_req_t req = {.method = "GET", .path = "/api/v1/namespaces/d/configmaps/a", .deadline_ms = 300};
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    int64_t t0 = lop_clock_mono(&lop_clock_system);
    T_EQ_INT(lop_rest_request(c, &req, &resp, &err), LOP_ETIMEDOUT);
    int64_t took = lop_clock_mono(&lop_clock_system) - t0;
    T_CHECK(took >= 250 * LOP_NS_PER_MS && took < 5 * LOP_NS_PER_S);
    lop_rest_resp_cleanup(&resp);
    lop_rest_client_free(c);
    fs_stop(s);
}

typedef struct watch_run {
    lop_rest_client_t *c;
    atomic_bool cancel;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool got_data;
    lop_rc_t rc;
    lop_err_t err;
    long idle_ms;
    int stop_after; /* return 1 from the callback after this many calls; 0 = never */
    int calls;
} watch_run_t;

static int on_data(void *ud, const char *data, size_t len)
{
    watch_run_t *w = ud;
    pthread_mutex_lock(&w->mu);
    w->got_data = true;
    w->calls++;
    pthread_cond_broadcast(&w->cond);
    int stop = w->stop_after && w->calls >= w->stop_after;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

static void *watch_main(void *arg)
{
    watch_run_t *w = arg;
    lop_rest_stream_opts_t o = {.cancel = &w->cancel, .idle_timeout_ms = w->idle_ms};
    w->rc = lop_rest_stream(w->c, "/api/v1/configmaps?watch=true", on_data, w, &o, NULL, &w->err);
    return NULL;
}

static void watch_run_init(watch_run_t *w, lop_rest_client_t *c)
{
    memset(w, 0, sizeof *w);
    w->c = c;
    atomic_init(&w->cancel, false);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cond, NULL);
}

static void test_watch_cancel_from_another_thread(void)
{
    fs_server_t *s = fs_start(h_stall, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, NULL);
    watch_run_t w;
    watch_run_init(&w, c);
    pthread_t t;
    pthread_create(&t, NULL, watch_main, &w);
    pthread_mutex_lock(&w.mu);
    while (!w.got_data) pthread_cond_wait(&w.cond, &w.mu);
    pthread_mutex_unlock(&w.mu);
    atomic_store(&w.cancel, true);
    lop_rest_client_wake(c);
    pthread_join(t, NULL);
    T_EQ_INT(w.rc, LOP_ECLOSED);
    lop_rest_client_free(c);
    fs_stop(s);
}

static void test_watch_callback_can_stop(void)
{
    fs_server_t *s = fs_start(h_stall, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, NULL);
    watch_run_t w;
    watch_run_init(&w, c);
    w.stop_after = 1;
    watch_main(&w);
    T_EQ_INT(w.rc, LOP_ECLOSED);
    lop_rest_client_free(c);
    fs_stop(s);
}

static void test_watch_idle_timeout_on_injected_clock(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    fs_server_t *s = fs_start(h_stall, NULL);
    lop_rest_client_t *c = mk_client(s, &fc, -1, 0, NULL);
    watch_run_t w;
    watch_run_init(&w, c);
    w.idle_ms = 30000;
    pthread_t t;
    pthread_create(&t, NULL, watch_main, &w);
    pthread_mutex_lock(&w.mu);
    while (!w.got_data) pthread_cond_wait(&w.cond, &w.mu);
    pthread_mutex_unlock(&w.mu);
    lop_fake_clock_step(&fc, 31 * LOP_NS_PER_S);
    pthread_join(t, NULL);
    T_EQ_INT(w.rc, LOP_ETIMEDOUT);
    lop_rest_client_free(c);
    fs_stop(s);
}

/* ---- asynchronous streams and sinks (lop_rest_stream_start, lop_rest_sink_start) ---- */

/* The test's thread pumps the call, as a cache dispatcher thread does: after each notify, or,
 * when the call asks for a wait (a Retry-After, a rate limiter token, a reset retry), by stepping
 * the fake clock by exactly that wait — so a wait that blocked a thread would hang the test
 * (capped at 20 s of real time per notify, then a failure). */
typedef struct drv {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int notified;
    int64_t stepped; /* ns the clock was stepped by */
    int pumps;
} drv_t;

static void drv_notify(void *ud)
{
    drv_t *d = ud;
    pthread_mutex_lock(&d->mu);
    d->notified++;
    pthread_cond_broadcast(&d->cond);
    pthread_mutex_unlock(&d->mu);
}

static lop_rc_t drv_run(drv_t *d, lop_rest_stream_call_t *call, lop_fake_clock_t *fc, lop_stream_fn fn, void *ud,
                        lop_err_t *err)
{
    for (;;) {
        lop_rc_t rc;
        int64_t next;
        d->pumps++;
        if (lop_rest_stream_pump(call, fn, ud, &rc, &next, err)) return rc;
        pthread_mutex_lock(&d->mu);
        if (!d->notified && next != INT64_MAX) {
            pthread_mutex_unlock(&d->mu);
            lop_fake_clock_step(fc, next);
            d->stepped += next;
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 20;
        while (!d->notified)
            if (pthread_cond_timedwait(&d->cond, &d->mu, &ts) != 0) {
                pthread_mutex_unlock(&d->mu);
                return lop_err_set(err, LOP_ETIMEDOUT, 0, NULL, "no notify in 20 s");
            }
        d->notified = 0;
        pthread_mutex_unlock(&d->mu);
    }
}

static void drv_init(drv_t *d)
{
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cond, NULL);
}

/* A sink GET (a LIST page) retried after two 429s with Retry-After: 2, the waits taken as
 * timers on the injected clock, the 2xx body passed to the sink whole. */
static void test_async_sink_retry_after_and_reset(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    fs_server_t *s = fs_start(h_429_twice, NULL);
    lop_rest_client_t *c = mk_client(s, &fc, -1, 0, NULL);
    drv_t d;
    drv_init(&d);
    lop_rest_stream_call_t *call = NULL;
    lop_err_t err;
    T_EQ_INT(lop_rest_sink_start(c, "/api/v1/configmaps", NULL, drv_notify, &d, &call, &err), LOP_OK);
    T_EQ_INT(fs_nreqs(s), 0); /* nothing sent before the first pump */
    lop_buf_t got = LOP_BUF_INIT;
    T_EQ_INT(drv_run(&d, call, &fc, collect, &got, &err), LOP_OK);
    T_EQ_INT(lop_rest_stream_code(call), 200);
    T_EQ_STR(got.data, OK_BODY);
    T_EQ_INT(fs_nreqs(s), 3);
    T_EQ_INT(d.stepped, 4 * LOP_NS_PER_S); /* 2 s twice, as timers */
    lop_rest_stream_free(call);
    lop_buf_free(&got);
    lop_rest_client_free(c);
    fs_stop(s);

    /* a connection reset before any byte: retried after 1 s; a stream is not retried */
    s = fs_start(h_close_first, NULL);
    c = mk_client(s, &fc, -1, 0, NULL);
    drv_init(&d);
    lop_buf_init(&got);
    T_EQ_INT(lop_rest_sink_start(c, "/api/v1/configmaps", NULL, drv_notify, &d, &call, &err), LOP_OK);
    T_EQ_INT(drv_run(&d, call, &fc, collect, &got, &err), LOP_OK);
    T_EQ_INT(fs_nreqs(s), 2);
    T_EQ_INT(d.stepped, LOP_NS_PER_S);
    T_EQ_STR(got.data, OK_BODY);
    lop_rest_stream_free(call);
    lop_buf_free(&got);
    lop_rest_client_free(c);
    fs_stop(s);

    s = fs_start(h_close_first, NULL);
    c = mk_client(s, &fc, -1, 0, NULL);
    drv_init(&d);
    T_EQ_INT(lop_rest_stream_start(c, "/api/v1/configmaps?watch=true", NULL, drv_notify, &d, &call, &err), LOP_OK);
    T_EQ_INT(drv_run(&d, call, &fc, collect, &got, &err), LOP_EAGAIN);
    T_EQ_INT(fs_nreqs(s), 1);
    lop_rest_stream_free(call);
    lop_buf_free(&got);
    lop_rest_client_free(c);
    fs_stop(s);
}

/* An asynchronous watch: the same bytes as lop_rest_stream whatever the chunking; a Status error
 * typed; the rate limiter's wait a timer; the idle timeout on the injected clock; freeing a
 * running stream cancels it. */
static void test_async_stream(void)
{
    fs_server_t *s = fs_start(h_watch, NULL);
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_rest_client_t *c = mk_client(s, &fc, 1, 1, NULL); /* QPS 1, burst 1: the second start waits 1 s */
    lop_buf_t got = LOP_BUF_INIT;
    lop_err_t err;
    drv_t d;
    drv_init(&d);
    lop_rest_stream_call_t *call = NULL;
    for (int i = 0; i < 2; i++) {
        lop_buf_reset(&got);
        T_EQ_INT(lop_rest_stream_start(c, "/api/v1/configmaps?watch=true", NULL, drv_notify, &d, &call, &err), LOP_OK);
        T_EQ_INT(drv_run(&d, call, &fc, collect, &got, &err), LOP_OK);
        T_EQ_INT(lop_rest_stream_code(call), 200);
        T_EQ_STR(got.data, "{\"type\":\"ADDED\",\"object\":{\"kind\":\"A\"}}\n{\"type\":\"BOOKMARK\",\"object\":{}}\n"
                           "{\"type\":\"DELETED\",\"obj\":1}\n");
        lop_rest_stream_free(call);
    }
    T_CHECK(d.stepped >= 900 * LOP_NS_PER_MS && d.stepped <= LOP_NS_PER_S); /* the token, as a timer */
    lop_rest_client_free(c);
    fs_stop(s);

    s = fs_start(h_conflict, NULL);
    c = mk_client(s, &fc, -1, 0, NULL);
    drv_init(&d);
    T_EQ_INT(lop_rest_stream_start(c, "/api/v1/configmaps?watch=true", NULL, drv_notify, &d, &call, &err), LOP_OK);
    T_EQ_INT(drv_run(&d, call, &fc, collect, &got, &err), LOP_ECONFLICT);
    T_EQ_INT(err.code, 409);
    T_EQ_STR(err.reason, "Conflict");
    lop_rest_stream_free(call);
    lop_rest_client_free(c);
    fs_stop(s);

    /* idle: no byte for 30 s on the injected clock ends it with LOP_ETIMEDOUT */
    s = fs_start(h_stall, NULL);
    c = mk_client(s, &fc, -1, 0, NULL);
    drv_init(&d);
    lop_rest_stream_opts_t so = {.idle_timeout_ms = 30000};
    T_EQ_INT(lop_rest_stream_start(c, "/api/v1/configmaps?watch=true", &so, drv_notify, &d, &call, &err), LOP_OK);
    lop_buf_reset(&got);
    T_EQ_INT(drv_run(&d, call, &fc, collect, &got, &err), LOP_ETIMEDOUT);
    T_CHECK(d.stepped >= 30 * LOP_NS_PER_S);
    lop_rest_stream_free(call);

    /* freed while it runs: cancelled, no notify after */
    drv_init(&d);
    T_EQ_INT(lop_rest_stream_start(c, "/api/v1/configmaps?watch=true", NULL, drv_notify, &d, &call, &err), LOP_OK);
    lop_rc_t rc;
    int64_t next;
    T_CHECK(!lop_rest_stream_pump(call, collect, &got, &rc, &next, &err));
    lop_rest_stream_free(call);
    pthread_mutex_lock(&d.mu);
    int after = d.notified;
    pthread_mutex_unlock(&d.mu);
    lop_rest_client_wake(c); /* would notify a call still registered */
    pthread_mutex_lock(&d.mu);
    T_EQ_INT(d.notified, after);
    pthread_mutex_unlock(&d.mu);
    lop_buf_free(&got);
    lop_rest_client_free(c);
    fs_stop(s);
}

/* ---- rate limiting and concurrency ---- */

static void test_client_side_qps_waits_on_clock(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    fs_server_t *s = fs_start(h_ok, NULL);
    lop_rest_client_t *c = mk_client(s, &fc, 1, 2, NULL); /* 1 QPS, burst 2 */
    stepper_t st;
    stepper_start(&st, &fc);
    int64_t t0 = lop_clock_mono(&fc.base);
    lop_err_t err;
    for (int i = 0; i < 4; i++) T_EQ_INT(lop_rest_do(c, "GET", "/api", NULL, NULL, 0, NULL, &err), LOP_OK);
    stepper_stop(&st);
    T_CHECK(lop_clock_mono(&fc.base) - t0 >= 2 * LOP_NS_PER_S); /* two beyond the burst at 1/s */
    T_EQ_INT(fs_nreqs(s), 4);
    lop_rest_client_free(c);
    fs_stop(s);
}

typedef struct worker {
    lop_rest_client_t *c;
    int ok;
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    for (int i = 0; i < 25; i++) {
        lop_rest_resp_t resp = LOP_REST_RESP_INIT;
        lop_err_t err;
        if (lop_rest_do(w->c, "GET", "/api/v1/namespaces/d/configmaps/a", NULL, NULL, 0, &resp, &err) == LOP_OK &&
            strcmp(resp.body.data, OK_BODY) == 0)
            w->ok++;
        lop_rest_resp_cleanup(&resp);
    }
    return NULL;
}

static void test_concurrent_requests_share_one_client(void)
{
    fs_server_t *s = fs_start(h_ok, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, NULL);
    worker_t w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i].c = c;
        w[i].ok = 0;
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    int ok = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        ok += w[i].ok;
    }
    T_EQ_INT(ok, 100);
    T_EQ_INT(fs_nreqs(s), 100);
    T_EQ_INT(lop_rest_client_requests(c), 100);
    T_CHECK(s->conns <= 8); /* connections are reused, not one per request */
    lop_rest_client_free(c);
    fs_stop(s);
}

/* Warning headers are logged (not errors); no log line ever carries the bearer token. */
static void test_warnings_logged_and_secrets_never(void)
{
    char logpath[300];
    snprintf(logpath, sizeof logpath, "%s/log.txt", tmpdir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(logpath, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    dup2(fd, 2);
    close(fd);
    lop_log_setup(LOP_LOG_DEBUG, LOP_LOG_TEXT);

    fs_server_t *s = fs_start(h_conflict, NULL);
    lop_rest_client_t *c = mk_client(s, NULL, -1, 0, lop_auth_new("supersecret-token", NULL, NULL, NULL));
    lop_err_t err;
    T_EQ_INT(lop_rest_do(c, "PUT", "/api/v1/namespaces/d/configmaps/a", NULL, "{}", 2, NULL, &err), LOP_ECONFLICT);
    lop_rest_client_free(c);
    fs_stop(s);
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    stepper_t st;
    stepper_start(&st, &fc);
    s = fs_start(h_429_twice, NULL);
    c = mk_client(s, &fc, -1, 0, lop_auth_new("supersecret-token", NULL, NULL, NULL));
    T_EQ_INT(lop_rest_do(c, "GET", "/api/v1/namespaces", NULL, NULL, 0, NULL, &err), LOP_OK);
    stepper_stop(&st);
    lop_rest_client_free(c);
    fs_stop(s);

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    lop_log_setup(LOP_LOG_ERROR, LOP_LOG_TEXT);
    FILE *f = fopen(logpath, "r");
    char text[8192] = "";
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    T_CHECK(strstr(text, "API server warning") != NULL);
    T_CHECK(strstr(text, "unknown field") != NULL);
    T_CHECK(strstr(text, "Retry-After") != NULL);
    T_CHECK(strstr(text, "supersecret") == NULL);
}

static void test_bad_server_url(void)
{
    lop_rest_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = strdup("http://[::1");
    lop_rest_client_t *c = NULL;
    lop_err_t err;
    T_EQ_INT(lop_rest_client_new(&cfg, &c, &err), LOP_EINVAL);
    T_CHECK(c == NULL);
    lop_rest_config_cleanup(&cfg);
}

int main(void)
{
    lop_log_setup(LOP_LOG_ERROR, LOP_LOG_TEXT);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/luaop-rest-XXXXXX");
    if (!mkdtemp(tmpdir)) return 2;
    T_RUN(test_status_parse_json_and_text);
    T_RUN(test_retry_after_parse);
    T_RUN(test_429_text_with_retry_after_is_retried);
    T_RUN(test_retry_after_past_the_timeout_is_not_waited);
    T_RUN(test_retry_after_past_the_call_deadline_is_not_waited);
    T_RUN(test_retry_after_waits_stop_at_the_call_deadline);
    T_RUN(test_qps_wait_past_the_call_deadline_fails_at_once);
    T_RUN(test_call_deadline_cuts_a_stalled_attempt);
    T_RUN(test_5xx_without_retry_after_is_not_retried);
    T_RUN(test_retries_stop_after_ten);
    T_RUN(test_get_retried_on_connection_reset_but_not_post);
    T_RUN(test_json_status_becomes_typed_error);
    T_RUN(test_request_headers);
    T_RUN(test_header_values_cannot_inject_lines);
    T_RUN(test_gzip_bodies_are_decompressed);
    T_RUN(test_401_rereads_token_file);
    T_RUN(test_401_reruns_exec_plugin);
    T_RUN(test_watch_stream_passes_bytes_regardless_of_chunking);
    T_RUN(test_request_sink_gets_the_whole_body);
    T_RUN(test_watch_http_error_is_typed);
    T_RUN(test_watch_cancel_from_another_thread);
    T_RUN(test_watch_callback_can_stop);
    T_RUN(test_watch_idle_timeout_on_injected_clock);
    T_RUN(test_async_sink_retry_after_and_reset);
    T_RUN(test_async_stream);
    T_RUN(test_client_side_qps_waits_on_clock);
    T_RUN(test_concurrent_requests_share_one_client);
    T_RUN(test_warnings_logged_and_secrets_never);
    T_RUN(test_bad_server_url);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", tmpdir);
    return T_DONE();
}
