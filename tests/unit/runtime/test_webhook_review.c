/* SPDX-License-Identifier: Apache-2.0 */
/* AdmissionReview / ConversionReview v1 handling without a transport
 * (host/runtime/webhook/webhook_review.h): the edges a server test does not reach cheaply. */
#include "host/runtime/webhook/webhook_review.h"
#include "t.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *mode; /* what the fake admit does */

static lop_rc_t admit(void *ud, const char *path, const char *request_json, size_t len, lop_admission_result_t *res,
                      lop_err_t *err)
{
    (void)ud;
    (void)path;
    if (strcmp(mode, "error") == 0) return lop_err_set(err, LOP_ERR, 0, NULL, "pool is gone");
    if (strcmp(mode, "deny500") == 0) {
        res->allowed = false;
        res->code = 500;
        snprintf(res->message, sizeof res->message, "main.lua:3: attempt to index a nil value");
        return LOP_OK;
    }
    res->allowed = true;
    json_t *req = json_loadb(request_json, len, 0, NULL);
    if (strcmp(mode, "same") == 0) res->patched_json = json_dumps(json_object_get(req, "object"), JSON_COMPACT);
    if (strcmp(mode, "notjson") == 0) res->patched_json = strdup("{oops");
    if (res->patched_json) res->patched_len = strlen(res->patched_json);
    json_decref(req);
    return LOP_OK;
}

static lop_rc_t convert(void *ud, const char *obj_json, size_t len, const char *desired, char **out, size_t *out_len,
                        lop_err_t *err)
{
    (void)ud;
    (void)obj_json;
    (void)len;
    (void)desired;
    (void)err;
    if (strcmp(mode, "notobject") == 0) {
        *out = strdup("[1]");
        *out_len = 3;
        return LOP_OK;
    }
    return LOP_ENOTFOUND;
}

static const char *review = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
                            "{\"uid\":\"u7\",\"object\":{\"a\":1}}}";
static const char *creview = "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":"
                             "{\"uid\":\"c7\",\"desiredAPIVersion\":\"ex.com/v2\",\"objects\":[{\"apiVersion\":"
                             "\"ex.com/v1\",\"kind\":\"Other\"}]}}";

static json_t *run_admission(const lop_webhook_dispatch_t *d, const char *m, int want_status)
{
    mode = m;
    lop_webhook_reply_t r = {0};
    lop_webhook_review_admission(d, "/p", review, strlen(review), &r);
    T_EQ_INT(r.status, want_status);
    json_t *resp = NULL;
    if (r.status == 200) {
        T_CHECK(r.json);
        json_t *doc = json_loads(r.body.data, 0, NULL);
        resp = json_incref(json_object_get(doc, "response"));
        json_decref(doc);
    } else {
        T_CHECK(!r.json && r.body.data && r.body.data[0] != '{');
    }
    lop_buf_free(&r.body);
    return resp;
}

static void test_denial_keeps_the_scripts_code(void)
{
    lop_webhook_dispatch_t d = {NULL, admit, convert};
    json_t *resp = run_admission(&d, "deny500", 200);
    T_EQ_STR(json_string_value(json_object_get(resp, "uid")), "u7");
    json_t *st = json_object_get(resp, "status");
    T_EQ_INT(json_integer_value(json_object_get(st, "code")), 500);
    T_EQ_STR(json_string_value(json_object_get(st, "message")), "main.lua:3: attempt to index a nil value");
    json_decref(resp);
}

static void test_unchanged_object_has_no_patch(void)
{
    lop_webhook_dispatch_t d = {NULL, admit, convert};
    json_t *resp = run_admission(&d, "same", 200);
    T_CHECK(json_is_true(json_object_get(resp, "allowed")));
    T_CHECK(!json_object_get(resp, "patch") && !json_object_get(resp, "patchType"));
    json_decref(resp);
}

static void test_dispatcher_failures(void)
{
    lop_webhook_dispatch_t d = {NULL, admit, convert};
    T_CHECK(run_admission(&d, "error", 500) == NULL);
    T_CHECK(run_admission(&d, "notjson", 500) == NULL);
    lop_webhook_dispatch_t none = {NULL, NULL, NULL};
    T_CHECK(run_admission(&none, "allow", 404) == NULL);
}

static void test_conversion_edges(void)
{
    lop_webhook_dispatch_t d = {NULL, admit, convert};
    const char *cases[][2] = {
        {"notfound", "objects[0]: no conversion webhook for ex.com/v1 Other"},
        {"notobject", "objects[0]: the converted object is not a JSON object"},
    };
    for (size_t i = 0; i < 2; i++) {
        mode = cases[i][0];
        lop_webhook_reply_t r = {0};
        lop_webhook_review_conversion(&d, creview, strlen(creview), &r);
        T_EQ_INT(r.status, 200);
        json_t *doc = json_loads(r.body.data ? r.body.data : "", 0, NULL);
        json_t *result = json_object_get(json_object_get(doc, "response"), "result");
        T_EQ_STR(json_string_value(json_object_get(result, "status")), "Failure");
        T_EQ_STR(json_string_value(json_object_get(result, "message")), cases[i][1]);
        json_decref(doc);
        lop_buf_free(&r.body);
    }
    lop_webhook_dispatch_t none = {NULL, NULL, NULL};
    lop_webhook_reply_t r = {0};
    lop_webhook_review_conversion(&none, creview, strlen(creview), &r);
    T_EQ_INT(r.status, 404);
    lop_buf_free(&r.body);
}

int main(void)
{
    T_RUN(test_denial_keeps_the_scripts_code);
    T_RUN(test_unchanged_object_has_no_patch);
    T_RUN(test_dispatcher_failures);
    T_RUN(test_conversion_edges);
    return T_DONE();
}
