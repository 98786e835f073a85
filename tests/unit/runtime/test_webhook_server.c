/* SPDX-License-Identifier: Apache-2.0 */
/* The webhook HTTPS server (host/runtime/webhook/): AdmissionReview and ConversionReview v1 over
 * loopback TLS with a fake dispatcher (a mutating patch checked by applying it with the local API
 * server's RFC 6902 applier), the worker pool's bounds, metrics, and certificate rotation by
 * kubelet's ..data symlink swap. The diff itself: test_webhook_jsonpatch.c. Clients: libcurl, and OpenSSL directly to read the serial. */
#include "apiserver/patch.h"
#include "host/runtime/metrics/metrics.h"
#include "host/runtime/webhook/certwatcher.h"
#include "host/runtime/webhook/webhook_server.h"
#include "host/util/base64.h"
#include "host/util/buf.h"
#include "t.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <event2/event.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/lop-webhook-test-XXXXXX";

/* ---------------------------------------------------------------- certificates */

/* A self-signed P-256 pair for 127.0.0.1 with the given serial in dir/tls.crt, dir/tls.key. */
static int make_pair(const char *dir, int serial)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
             "-subj /CN=webhook -addext subjectAltName=IP:127.0.0.1 -set_serial %d "
             "-keyout '%s/tls.key' -out '%s/tls.crt' >/dev/null 2>&1",
             dir, serial, dir, dir);
    return system(cmd);
}

/* kubelet's projected volume: root/..<name>/{tls.crt,tls.key}, root/..data -> ..<name> (swapped by
 * renaming a new symlink over it), root/tls.crt -> ..data/tls.crt (made once). */
static int swap_data(const char *root, const char *name)
{
    char target[300], tmp[300], data[300];
    snprintf(target, sizeof target, "..%s", name);
    snprintf(tmp, sizeof tmp, "%s/..data_tmp", root);
    snprintf(data, sizeof data, "%s/..data", root);
    unlink(tmp);
    if (symlink(target, tmp) != 0) return -1;
    return rename(tmp, data);
}

static int projected_dir(const char *root, const char *name, int serial)
{
    char d[300], link[300];
    snprintf(d, sizeof d, "%s/..%s", root, name);
    if (make_pair(d, serial) != 0 || swap_data(root, name) != 0) return -1;
    snprintf(link, sizeof link, "%s/tls.crt", root);
    if (access(link, F_OK) != 0 && symlink("..data/tls.crt", link) != 0) return -1;
    snprintf(link, sizeof link, "%s/tls.key", root);
    if (access(link, F_OK) != 0 && symlink("..data/tls.key", link) != 0) return -1;
    return 0;
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

/* ---------------------------------------------------------------- fake dispatcher */

typedef struct fake {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int blocked;  /* calls waiting in /block */
    int returned; /* calls that left /block */
    bool release; /* let them go */
} fake_t;

static fake_t fake = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, false};

static void add_warning(lop_admission_result_t *res, const char *w)
{
    res->warnings = realloc(res->warnings, (res->nwarnings + 1) * sizeof *res->warnings);
    res->warnings[res->nwarnings++] = lop_xstrdup(w);
}

/* /mutate-x: sets spec.replicas, adds a label whose key needs escaping, drops spec.drop,
 * changes spec.list. */
static void mutate(json_t *obj, lop_admission_result_t *res)
{
    json_t *spec = json_object_get(obj, "spec");
    json_object_set_new(spec, "replicas", json_integer(3));
    json_object_del(spec, "drop");
    json_object_set_new(spec, "list", json_pack("[s,s]", "a", "z"));
    json_t *md = json_object_get(obj, "metadata");
    json_object_set_new(md, "labels", json_pack("{s:s}", "a/b~c", "1"));
    res->allowed = true;
    res->patched_json = json_dumps(obj, JSON_COMPACT);
    res->patched_len = strlen(res->patched_json);
}

static void block_until_released(void)
{
    pthread_mutex_lock(&fake.mu);
    fake.blocked++;
    pthread_cond_broadcast(&fake.cv);
    while (!fake.release) pthread_cond_wait(&fake.cv, &fake.mu);
    fake.returned++;
    pthread_mutex_unlock(&fake.mu);
}

static lop_rc_t fake_admit(void *ud, const char *path, const char *request_json, size_t len,
                           lop_admission_result_t *res, lop_err_t *err)
{
    (void)ud;
    (void)err;
    json_t *req = json_loadb(request_json, len, 0, NULL);
    json_t *obj = json_object_get(req, "object");
    lop_rc_t rc = LOP_OK;
    if (strcmp(path, "/validate-x") == 0) {
        json_int_t size = json_integer_value(json_object_get(json_object_get(obj, "spec"), "size"));
        if (size > 5) {
            res->allowed = false;
            snprintf(res->message, sizeof res->message, "spec.size %lld is above 5", (long long)size);
        } else {
            res->allowed = true;
            add_warning(res, "spec.size is small");
            add_warning(res, "second warning");
        }
    } else if (strcmp(path, "/mutate-x") == 0) {
        mutate(obj, res);
    } else if (strcmp(path, "/block") == 0) {
        block_until_released();
        res->allowed = true;
    } else {
        rc = LOP_ENOTFOUND;
    }
    json_decref(req);
    return rc;
}

static lop_rc_t fake_convert(void *ud, const char *obj_json, size_t len, const char *desired, char **out,
                             size_t *out_len, lop_err_t *err)
{
    (void)ud;
    json_t *obj = json_loadb(obj_json, len, 0, NULL);
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    lop_rc_t rc = LOP_OK;
    if (kind && strcmp(kind, "Other") == 0) {
        rc = LOP_ENOTFOUND;
    } else if (json_is_true(json_object_get(obj, "fail"))) {
        rc = lop_err_set(err, LOP_ERR, 0, NULL, "main.lua:7: cannot convert this one");
    } else {
        json_object_set_new(obj, "apiVersion", json_string(desired));
        *out = json_dumps(obj, JSON_COMPACT);
        *out_len = strlen(*out);
    }
    json_decref(obj);
    return rc;
}

static const lop_webhook_dispatch_t dispatch = {NULL, fake_admit, fake_convert};

/* ---------------------------------------------------------------- client */

typedef struct resp {
    long status;
    lop_buf_t body;
    long connects; /* new connections curl made for this request */
} resp_t;

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    lop_buf_append(&((resp_t *)ud)->body, p, sz * n);
    return sz * n;
}

/* POST (or method) body to https://127.0.0.1:port/path with curl handle c (NULL: a fresh one).
 * Returns the status, 0 on a transport failure; the caller frees r->body. */
static long request(CURL *c, int port, const char *method, const char *path, const char *ctype, const char *body,
                    resp_t *r)
{
    char url[256], ct[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%d%s", port, path);
    memset(r, 0, sizeof *r);
    CURL *own = c ? NULL : curl_easy_init();
    if (!c) c = own;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L); /* the serial is checked by peer_serial */
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    struct curl_slist *h = NULL;
    snprintf(ct, sizeof ct, "Content-Type: %s", ctype ? ctype : "application/json");
    h = curl_slist_append(h, ct);
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (method && strcmp(method, "GET") == 0) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
    }
    if (curl_easy_perform(c) == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &r->connects);
    }
    curl_slist_free_all(h);
    if (own) curl_easy_cleanup(own);
    return r->status;
}

static long post(int port, const char *path, const char *body, resp_t *r)
{
    return request(NULL, port, NULL, path, NULL, body, r);
}

/* The serial of the certificate a new TLS connection to port is served; -1 on failure. */
static long peer_serial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    long serial = -1;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = SSL_new(ctx);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && SSL_set_fd(ssl, fd) == 1 && SSL_connect(ssl) == 1) {
        X509 *cert = SSL_get1_peer_certificate(ssl);
        if (cert) serial = ASN1_INTEGER_get(X509_get_serialNumber(cert));
        X509_free(cert);
        SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    return serial;
}

/* A review body: {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{...}}. */
static char *admission_review(const char *uid, const char *object_json)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_printf(&b,
                   "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"%s\","
                   "\"operation\":\"CREATE\",\"object\":%s}}",
                   uid, object_json);
    return lop_buf_steal(&b);
}

static json_t *response_of(const resp_t *r)
{
    json_t *doc = json_loads(r->body.data ? r->body.data : "", 0, NULL);
    json_t *resp = json_incref(json_object_get(doc, "response"));
    json_decref(doc);
    return resp;
}

/* ---------------------------------------------------------------- reviews over HTTPS */

static lop_webhook_server_t *srv;
static lop_metrics_t *metrics;
static int port;

static void test_validating_deny_with_message(void)
{
    char *body = admission_review("uid-deny", "{\"kind\":\"X\",\"spec\":{\"size\":9}}");
    resp_t r;
    T_EQ_INT(post(port, "/validate-x", body, &r), 200);
    json_t *resp = response_of(&r);
    T_EQ_STR(json_string_value(json_object_get(resp, "uid")), "uid-deny");
    T_CHECK(json_is_false(json_object_get(resp, "allowed")));
    json_t *st = json_object_get(resp, "status");
    T_EQ_INT(json_integer_value(json_object_get(st, "code")), 403);
    T_EQ_STR(json_string_value(json_object_get(st, "message")), "spec.size 9 is above 5");
    T_CHECK(!json_object_get(resp, "patch") && !json_object_get(resp, "warnings"));
    /* the envelope */
    json_t *doc = json_loads(r.body.data, 0, NULL);
    T_EQ_STR(json_string_value(json_object_get(doc, "apiVersion")), "admission.k8s.io/v1");
    T_EQ_STR(json_string_value(json_object_get(doc, "kind")), "AdmissionReview");
    json_decref(doc);
    json_decref(resp);
    lop_buf_free(&r.body);
    free(body);
}

static void test_validating_allow_with_warnings(void)
{
    char *body = admission_review("uid-allow", "{\"kind\":\"X\",\"spec\":{\"size\":1}}");
    resp_t r;
    T_EQ_INT(post(port, "/validate-x", body, &r), 200);
    json_t *resp = response_of(&r);
    T_EQ_STR(json_string_value(json_object_get(resp, "uid")), "uid-allow");
    T_CHECK(json_is_true(json_object_get(resp, "allowed")));
    T_CHECK(!json_object_get(resp, "status"));
    json_t *w = json_object_get(resp, "warnings");
    T_EQ_INT(json_array_size(w), 2);
    T_EQ_STR(json_string_value(json_array_get(w, 0)), "spec.size is small");
    T_EQ_STR(json_string_value(json_array_get(w, 1)), "second warning");
    T_CHECK(!json_object_get(resp, "patch") && !json_object_get(resp, "patchType"));
    json_decref(resp);
    lop_buf_free(&r.body);
    free(body);
}

static void test_mutating_patch(void)
{
    const char *obj = "{\"kind\":\"X\",\"metadata\":{\"name\":\"m\"},\"spec\":{\"drop\":1,\"list\":[\"a\",\"b\"]}}";
    char *body = admission_review("uid-mutate", obj);
    resp_t r;
    T_EQ_INT(post(port, "/mutate-x", body, &r), 200);
    json_t *resp = response_of(&r);
    T_CHECK(json_is_true(json_object_get(resp, "allowed")));
    T_EQ_STR(json_string_value(json_object_get(resp, "patchType")), "JSONPatch");
    size_t n = 0;
    char *patch = lop_base64_decode(json_string_value(json_object_get(resp, "patch")), &n);
    T_CHECK(patch != NULL);
    json_t *ops = patch ? json_loadb(patch, n, 0, NULL) : NULL;
    char *s = json_dumps(ops, JSON_COMPACT);
    T_EQ_STR(s, "[{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{\"a/b~c\":\"1\"}},"
                "{\"op\":\"remove\",\"path\":\"/spec/drop\"},"
                "{\"op\":\"replace\",\"path\":\"/spec/list\",\"value\":[\"a\",\"z\"]},"
                "{\"op\":\"add\",\"path\":\"/spec/replicas\",\"value\":3}]");
    /* applied to the object, it gives what the script made */
    json_t *orig = json_loads(obj, 0, NULL);
    lop_err_t err;
    json_t *got = as_patch_json(orig, ops, &err);
    json_t *want = json_loads("{\"kind\":\"X\",\"metadata\":{\"name\":\"m\",\"labels\":{\"a/b~c\":\"1\"}},"
                              "\"spec\":{\"list\":[\"a\",\"z\"],\"replicas\":3}}",
                              0, NULL);
    T_CHECK(got && json_equal(got, want));
    json_decref(got);
    json_decref(want);
    json_decref(orig);
    free(s);
    json_decref(ops);
    free(patch);
    json_decref(resp);
    lop_buf_free(&r.body);
    free(body);
}

static void test_errors_404_400_405_415_413(void)
{
    resp_t r;
    char *body = admission_review("u1", "{}");
    T_EQ_INT(post(port, "/validate-nothing-here", body, &r), 404);
    lop_buf_free(&r.body);
    free(body);

    const char *bad[] = {
        "not json",
        "[1]",
        "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}",
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\",\"request\":{\"uid\":\"u\"}}",
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"\"}}",
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        T_EQ_INT(post(port, "/validate-x", bad[i], &r), 400);
        T_CHECK(r.body.data && strstr(r.body.data, "\n") && r.body.data[0] != '{');
        lop_buf_free(&r.body);
    }
    T_EQ_INT(request(NULL, port, "GET", "/validate-x", NULL, NULL, &r), 405);
    lop_buf_free(&r.body);
    T_EQ_INT(request(NULL, port, NULL, "/validate-x", "text/plain", "{}", &r), 415);
    lop_buf_free(&r.body);
    /* max_body_bytes is 64 KiB in this server */
    lop_buf_t big = LOP_BUF_INIT;
    lop_buf_puts(&big, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"pad\":\"");
    for (int i = 0; i < 70000; i++) lop_buf_putc(&big, 'x');
    lop_buf_puts(&big, "\"}");
    T_EQ_INT(post(port, "/validate-x", big.data, &r), 413);
    lop_buf_free(&r.body);
    lop_buf_free(&big);
}

static const char *conversion_review(bool failing)
{
    return failing ? "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{"
                     "\"uid\":\"c2\",\"desiredAPIVersion\":\"ex.com/v2\",\"objects\":["
                     "{\"apiVersion\":\"ex.com/v1\",\"kind\":\"M\",\"n\":1},"
                     "{\"apiVersion\":\"ex.com/v1\",\"kind\":\"M\",\"n\":2,\"fail\":true}]}}"
                   : "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{"
                     "\"uid\":\"c1\",\"desiredAPIVersion\":\"ex.com/v2\",\"objects\":["
                     "{\"apiVersion\":\"ex.com/v1\",\"kind\":\"M\",\"n\":1},"
                     "{\"apiVersion\":\"ex.com/v1\",\"kind\":\"M\",\"n\":2}]}}";
}

static void test_conversion_in_order(void)
{
    resp_t r;
    T_EQ_INT(post(port, "/convert", conversion_review(false), &r), 200);
    json_t *doc = json_loads(r.body.data ? r.body.data : "", 0, NULL);
    T_EQ_STR(json_string_value(json_object_get(doc, "apiVersion")), "apiextensions.k8s.io/v1");
    T_EQ_STR(json_string_value(json_object_get(doc, "kind")), "ConversionReview");
    json_t *resp = json_object_get(doc, "response");
    T_EQ_STR(json_string_value(json_object_get(resp, "uid")), "c1");
    T_EQ_STR(json_string_value(json_object_get(json_object_get(resp, "result"), "status")), "Success");
    json_t *objs = json_object_get(resp, "convertedObjects");
    T_EQ_INT(json_array_size(objs), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *o = json_array_get(objs, i);
        T_EQ_STR(json_string_value(json_object_get(o, "apiVersion")), "ex.com/v2");
        T_EQ_INT(json_integer_value(json_object_get(o, "n")), (long long)i + 1);
    }
    json_decref(doc);
    lop_buf_free(&r.body);
}

static void test_conversion_one_failing_fails_all(void)
{
    resp_t r;
    T_EQ_INT(post(port, "/convert", conversion_review(true), &r), 200);
    json_t *resp = response_of(&r);
    T_EQ_STR(json_string_value(json_object_get(resp, "uid")), "c2");
    json_t *result = json_object_get(resp, "result");
    T_EQ_STR(json_string_value(json_object_get(result, "status")), "Failure");
    const char *msg = json_string_value(json_object_get(result, "message"));
    T_CHECK(msg && strstr(msg, "objects[1]") && strstr(msg, "main.lua:7: cannot convert this one"));
    T_CHECK(!json_object_get(resp, "convertedObjects"));
    json_decref(resp);
    lop_buf_free(&r.body);
    /* a malformed conversion review */
    T_EQ_INT(
        post(port, "/convert",
             "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"c\"}}",
             &r),
        400);
    lop_buf_free(&r.body);
}

static void test_metrics(void)
{
    lop_buf_t out = LOP_BUF_INIT;
    lop_metrics_render(metrics, &out);
    T_CHECK(strstr(out.data, "controller_runtime_webhook_requests_total{webhook=\"/validate-x\",code=\"200\"} 2"));
    T_CHECK(strstr(out.data, "controller_runtime_webhook_requests_total{webhook=\"/validate-x\",code=\"400\"} 7"));
    T_CHECK(strstr(out.data, "controller_runtime_webhook_requests_total{webhook=\"/convert\",code=\"200\"} 2"));
    T_CHECK(strstr(out.data, "controller_runtime_webhook_latency_seconds_count{webhook=\"/mutate-x\"} 1"));
    T_CHECK(strstr(out.data, "controller_runtime_webhook_requests_in_flight{webhook=\"/validate-x\"} 0"));
    T_CHECK(!strstr(out.data, "webhook=\"/validate-nothing-here\",code"));
    if (t_cur_failed) fprintf(stderr, "%s\n", out.data);
    lop_buf_free(&out);
}

/* ---------------------------------------------------------------- the worker pool */

typedef struct call {
    pthread_t th;
    int port;
    const char *path;
    char *body;
    long status;
} call_t;

static int calls_finished;

static void *call_main(void *arg)
{
    call_t *c = arg;
    resp_t r;
    c->status = post(c->port, c->path, c->body, &r);
    lop_buf_free(&r.body);
    pthread_mutex_lock(&fake.mu);
    calls_finished++;
    pthread_cond_broadcast(&fake.cv);
    pthread_mutex_unlock(&fake.mu);
    return NULL;
}

/* Wait (at most 30 s) until *counter >= want; fake.mu is held by the caller. */
static bool wait_count(int *counter, int want)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 30;
    while (*counter < want)
        if (pthread_cond_timedwait(&fake.cv, &fake.mu, &dl) != 0) break;
    return *counter >= want;
}

static char main_certs[300];

static void test_concurrency_loop_stays_responsive(void)
{
    const char *cert_dir = main_certs;
    lop_webhook_server_opts_t o = {
        .bind_addr = "127.0.0.1:0", .cert_dir = cert_dir, .concurrency = 2, .queue_depth = 1};
    lop_webhook_server_t *s = NULL;
    lop_err_t err;
    T_EQ_INT(lop_webhook_server_start(&o, &dispatch, &s, &err), LOP_OK);
    if (!s) return;
    int p = lop_webhook_server_port(s);
    char *body = admission_review("u-c", "{\"spec\":{\"size\":1}}");
    call_t calls[4];
    const char *paths[] = {"/block", "/block", "/validate-x", "/validate-x"};
    fake.blocked = 0;
    fake.release = false;
    calls_finished = 0;
    for (int i = 0; i < 2; i++) {
        calls[i] = (call_t){.port = p, .path = paths[i], .body = body};
        pthread_create(&calls[i].th, NULL, call_main, &calls[i]);
    }
    pthread_mutex_lock(&fake.mu);
    T_CHECK(wait_count(&fake.blocked, 2)); /* both workers are inside the dispatcher */
    pthread_mutex_unlock(&fake.mu);

    /* the loop still answers what it answers itself, and still does TLS handshakes */
    resp_t r;
    T_EQ_INT(request(NULL, p, "GET", "/block", NULL, NULL, &r), 405);
    lop_buf_free(&r.body);
    T_CHECK(peer_serial(p) > 0);

    /* one more review fits the queue (depth 1); of two sent now, one waits and one gets 429 */
    for (int i = 2; i < 4; i++) {
        calls[i] = (call_t){.port = p, .path = paths[i], .body = body};
        pthread_create(&calls[i].th, NULL, call_main, &calls[i]);
    }
    pthread_mutex_lock(&fake.mu);
    T_CHECK(wait_count(&calls_finished, 1));
    T_EQ_INT(calls_finished, 1);
    fake.release = true;
    pthread_cond_broadcast(&fake.cv);
    pthread_mutex_unlock(&fake.mu);
    for (int i = 0; i < 4; i++) pthread_join(calls[i].th, NULL);
    T_EQ_INT(calls[0].status, 200);
    T_EQ_INT(calls[1].status, 200);
    T_CHECK((calls[2].status == 200 && calls[3].status == 429) || (calls[2].status == 429 && calls[3].status == 200));
    free(body);
    lop_webhook_server_stop(s);
    lop_webhook_server_stop(s); /* idempotent */
    lop_webhook_server_free(s);
}

static void *stop_main(void *arg)
{
    lop_webhook_server_stop(arg);
    pthread_mutex_lock(&fake.mu);
    calls_finished = 100; /* stop returned */
    pthread_cond_broadcast(&fake.cv);
    pthread_mutex_unlock(&fake.mu);
    return NULL;
}

/* Stop while one review is in the dispatcher and another is sent: stop does not return while a
 * review is inside the dispatcher, and returns once every review that entered it has left;
 * everything is freed (leaks checked under ASan/LSan). The loop stops first, so replies are
 * dropped: whether the second review was queued or taken depends on timing, and each client gets
 * an answer or a closed connection, never a hang. */
static void test_stop_with_reviews_pending(void)
{
    lop_webhook_server_opts_t o = {.bind_addr = "127.0.0.1:0", .cert_dir = main_certs, .concurrency = 1};
    lop_webhook_server_t *s = NULL;
    lop_err_t err;
    T_EQ_INT(lop_webhook_server_start(&o, &dispatch, &s, &err), LOP_OK);
    if (!s) return;
    char *body = admission_review("u-s", "{}");
    call_t calls[2];
    fake.blocked = fake.returned = 0;
    fake.release = false;
    calls_finished = 0;
    for (int i = 0; i < 2; i++) {
        calls[i] = (call_t){.port = lop_webhook_server_port(s), .path = "/block", .body = body};
        pthread_create(&calls[i].th, NULL, call_main, &calls[i]);
    }
    pthread_mutex_lock(&fake.mu);
    T_CHECK(wait_count(&fake.blocked, 1));
    pthread_mutex_unlock(&fake.mu);
    pthread_t stopper;
    pthread_create(&stopper, NULL, stop_main, s);
    /* wait (a condition, not a time: bounded at 30 s) until stop has begun; from then on it can
     * only return after the blocked worker is released below */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (struct timespec now = t0; !lop_webhook_server_stopping(s) && now.tv_sec - t0.tv_sec < 30;
         clock_gettime(CLOCK_MONOTONIC, &now))
        sched_yield();
    T_CHECK(lop_webhook_server_stopping(s));
    pthread_mutex_lock(&fake.mu);
    T_CHECK(calls_finished != 100); /* stop began but has not returned: a review is still in the dispatcher */
    fake.release = true;            /* stop is waiting for this worker (or about to) */
    pthread_cond_broadcast(&fake.cv);
    T_CHECK(wait_count(&calls_finished, 100));
    T_EQ_INT(fake.returned, fake.blocked); /* every review that entered the dispatcher left it */
    pthread_mutex_unlock(&fake.mu);
    pthread_join(stopper, NULL);
    for (int i = 0; i < 2; i++) pthread_join(calls[i].th, NULL);
    T_CHECK(fake.blocked == 1 || fake.blocked == 2);
    for (int i = 0; i < 2; i++) T_CHECK(calls[i].status == 200 || calls[i].status == 0 || calls[i].status == 503);
    free(body);
    lop_webhook_server_free(s);
}

/* ---------------------------------------------------------------- certificates */

static void test_start_fails_naming_the_file(void)
{
    char d[300], cmd[700];
    snprintf(d, sizeof d, "%s/nocert", tmpdir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", d);
    T_EQ_INT(system(cmd), 0);
    lop_webhook_server_opts_t o = {.bind_addr = "127.0.0.1:0", .cert_dir = d};
    lop_webhook_server_t *s = NULL;
    lop_err_t err;
    T_EQ_INT(lop_webhook_server_start(&o, &dispatch, &s, &err), LOP_EINVAL);
    T_CHECK(s == NULL && strstr(err.message, "nocert/tls.crt"));

    snprintf(d, sizeof d, "%s/badkey", tmpdir);
    T_EQ_INT(make_pair(d, 5), 0);
    snprintf(cmd, sizeof cmd, "%s/tls.key", d);
    T_EQ_INT(write_file(cmd, "-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n"), 0);
    o.cert_dir = d;
    T_EQ_INT(lop_webhook_server_start(&o, &dispatch, &s, &err), LOP_EINVAL);
    T_CHECK(s == NULL && strstr(err.message, "badkey/tls.key"));

    o.bind_addr = "0"; /* disabled */
    T_EQ_INT(lop_webhook_server_start(&o, &dispatch, &s, &err), LOP_OK);
    T_CHECK(s == NULL);
}

/* The reload rules, checked one step at a time (no loop running: lop_certwatcher_check is what
 * an inotify event or the poll calls). */
static void test_certwatcher_reload_rules(void)
{
    char root[300], cmd[1400], p[400];
    snprintf(root, sizeof root, "%s/cw", tmpdir);
    T_EQ_INT(projected_dir(root, "a", 11), 0);
    struct event_base *base = event_base_new();
    lop_certwatcher_t *w = NULL;
    lop_err_t err;
    T_EQ_INT(lop_certwatcher_new(base, root, "tls.crt", "tls.key", &w, &err), LOP_OK);
    if (!w) return;
    SSL_CTX *first = lop_certwatcher_ctx(w);

    /* identical bytes in a new directory: no reload */
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/..same' && cp '%s/..a/tls.crt' '%s/..a/tls.key' '%s/..same/'", root, root,
             root, root);
    T_EQ_INT(system(cmd), 0);
    T_EQ_INT(swap_data(root, "same"), 0);
    lop_certwatcher_check(w);
    T_EQ_INT(lop_certwatcher_reloads(w), 0);
    T_CHECK(lop_certwatcher_ctx(w) == first);

    /* a broken key: the last good pair stays */
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/..bad' && cp '%s/..a/tls.crt' '%s/..bad/'", root, root, root);
    T_EQ_INT(system(cmd), 0);
    snprintf(p, sizeof p, "%s/..bad/tls.key", root);
    T_EQ_INT(write_file(p, "garbage\n"), 0);
    T_EQ_INT(swap_data(root, "bad"), 0);
    lop_certwatcher_check(w);
    T_EQ_INT(lop_certwatcher_reloads(w), 0);
    T_CHECK(lop_certwatcher_ctx(w) == first);

    /* a key from another pair: refused too */
    snprintf(p, sizeof p, "%s/other", tmpdir);
    T_EQ_INT(make_pair(p, 99), 0);
    snprintf(cmd, sizeof cmd, "cp '%s/other/tls.key' '%s/..bad/tls.key'", tmpdir, root);
    T_EQ_INT(system(cmd), 0);
    lop_certwatcher_check(w);
    T_EQ_INT(lop_certwatcher_reloads(w), 0);

    /* a good new pair: reloaded, once */
    T_EQ_INT(projected_dir(root, "b", 12), 0);
    lop_certwatcher_check(w);
    lop_certwatcher_check(w);
    T_EQ_INT(lop_certwatcher_reloads(w), 1);
    T_CHECK(lop_certwatcher_ctx(w) != first);
    X509 *leaf = SSL_CTX_get0_certificate(lop_certwatcher_ctx(w));
    T_EQ_INT(ASN1_INTEGER_get(X509_get_serialNumber(leaf)), 12);
    lop_certwatcher_free(w);
    event_base_free(base);
}

/* kubelet's symlink swap under a running server: inotify notices, new connections see the new
 * serial, a connection opened before keeps working. */
static void test_cert_rotation_symlink_swap(void)
{
    char root[300];
    snprintf(root, sizeof root, "%s/rot", tmpdir);
    T_EQ_INT(projected_dir(root, "2026_1", 1), 0);
    lop_webhook_server_opts_t o = {.bind_addr = "127.0.0.1:0", .cert_dir = root};
    lop_webhook_server_t *s = NULL;
    lop_err_t err;
    T_EQ_INT(lop_webhook_server_start(&o, &dispatch, &s, &err), LOP_OK);
    if (!s) return;
    int p = lop_webhook_server_port(s);
    T_EQ_INT(peer_serial(p), 1);
    char *body = admission_review("u-r", "{\"spec\":{\"size\":1}}");
    CURL *before = curl_easy_init();
    resp_t r;
    T_EQ_INT(request(before, p, NULL, "/validate-x", NULL, body, &r), 200);
    T_EQ_INT(r.connects, 1);
    lop_buf_free(&r.body);

    T_EQ_INT(projected_dir(root, "2026_2", 2), 0);
    /* wait for the reload itself (a condition), at most 30 s */
    for (int i = 0; i < 6000 && lop_webhook_server_cert_reloads(s) < 1; i++) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    T_EQ_INT(lop_webhook_server_cert_reloads(s), 1);
    T_EQ_INT(peer_serial(p), 2);
    T_EQ_INT(request(before, p, NULL, "/validate-x", NULL, body, &r), 200);
    T_EQ_INT(r.connects, 0); /* the old connection, still on the old certificate */
    lop_buf_free(&r.body);
    curl_easy_cleanup(before);
    free(body);
    lop_webhook_server_free(s);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (!T_SETUP("temporary directory", mkdtemp(tmpdir) != NULL)) return T_DONE();
    char *certs = main_certs;
    snprintf(main_certs, sizeof main_certs, "%s/main", tmpdir);
    if (!T_SETUP("certificate", make_pair(certs, 7) == 0)) return T_DONE();

    metrics = lop_metrics_new();
    lop_webhook_server_opts_t o = {
        .bind_addr = "127.0.0.1:0", .cert_dir = certs, .max_body_bytes = 64 * 1024, .metrics = metrics};
    lop_err_t err;
    if (T_SETUP("webhook server", lop_webhook_server_start(&o, &dispatch, &srv, &err) == LOP_OK)) {
        port = lop_webhook_server_port(srv);
        T_RUN(test_validating_deny_with_message);
        T_RUN(test_validating_allow_with_warnings);
        T_RUN(test_mutating_patch);
        T_RUN(test_errors_404_400_405_415_413);
        T_RUN(test_conversion_in_order);
        T_RUN(test_conversion_one_failing_fails_all);
        T_RUN(test_metrics);
        lop_webhook_server_free(srv);
    } else {
        fprintf(stderr, "  %s\n", err.message);
    }
    lop_metrics_free(metrics);

    T_RUN(test_concurrency_loop_stays_responsive);
    T_RUN(test_stop_with_reviews_pending);
    T_RUN(test_start_fails_naming_the_file);
    T_RUN(test_certwatcher_reload_rules);
    T_RUN(test_cert_rotation_symlink_swap);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    curl_global_cleanup();
    return T_DONE();
}
