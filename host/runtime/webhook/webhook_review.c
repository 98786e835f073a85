/* SPDX-License-Identifier: Apache-2.0 */
/* webhook_review.c — AdmissionReview and ConversionReview v1 in and out (see webhook_review.h). */
#include "host/runtime/webhook/webhook_review.h"

#include "host/runtime/webhook/jsonpatch_diff.h"
#include "host/util/base64.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADMISSION_API_VERSION  "admission.k8s.io/v1"
#define CONVERSION_API_VERSION "apiextensions.k8s.io/v1"

static void reply_text(lop_webhook_reply_t *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void reply_text(lop_webhook_reply_t *r, int status, const char *fmt, ...)
{
    r->status = status;
    r->json = false;
    lop_buf_reset(&r->body);
    va_list ap;
    va_start(ap, fmt);
    lop_buf_vprintf(&r->body, fmt, ap);
    va_end(ap);
    lop_buf_putc(&r->body, '\n');
}

static void reply_json(lop_webhook_reply_t *r, json_t *doc)
{
    char *s = json_dumps(doc, JSON_COMPACT);
    r->status = 200;
    r->json = true;
    lop_buf_reset(&r->body);
    if (s) lop_buf_puts(&r->body, s);
    free(s);
}

/* Parse body as {"apiVersion":api_version,"kind":kind,"request":{"uid":"..."...}}. Returns the
 * document (caller decrefs) with *request and *uid borrowed from it, or NULL after a 400. */
static json_t *parse_review(const char *body, size_t len, const char *api_version, const char *kind, json_t **request,
                            const char **uid, lop_webhook_reply_t *r)
{
    json_error_t jerr;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        reply_text(r, 400, "the request body is not JSON: %s", jerr.text);
        return NULL;
    }
    const char *why = NULL;
    const char *av = json_string_value(json_object_get(doc, "apiVersion"));
    const char *k = json_string_value(json_object_get(doc, "kind"));
    *request = json_object_get(doc, "request");
    *uid = json_string_value(json_object_get(*request, "uid"));
    if (!json_is_object(doc))
        why = "the body is not a JSON object";
    else if (!av || strcmp(av, api_version) != 0)
        why = "apiVersion is not the expected one";
    else if (!k || strcmp(k, kind) != 0)
        why = "kind is not the expected one";
    else if (!json_is_object(*request))
        why = "request is missing or not an object";
    else if (!*uid || !**uid)
        why = "request.uid is missing or empty";
    if (why) {
        reply_text(r, 400, "malformed %s %s: %s", api_version, kind, why);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* The patch from request.object to res->patched_json, base64; NULL when there is none. */
static char *admission_patch(const json_t *request, const lop_admission_result_t *res, lop_webhook_reply_t *r)
{
    if (!res->patched_json) return NULL;
    json_t *patched = json_loadb(res->patched_json, res->patched_len, 0, NULL);
    if (!patched) {
        reply_text(r, 500, "the mutating webhook returned an object that is not JSON");
        return NULL;
    }
    json_t *ops = lop_jsonpatch_diff(json_object_get(request, "object"), patched);
    json_decref(patched);
    char *b64 = NULL;
    if (ops && json_array_size(ops) > 0) {
        char *s = json_dumps(ops, JSON_COMPACT);
        if (s) b64 = lop_base64_encode(s, strlen(s), false);
        free(s);
    }
    json_decref(ops);
    return b64;
}

static json_t *admission_response(const char *uid, const lop_admission_result_t *res, char *patch_b64)
{
    json_t *resp = json_object();
    json_object_set_new(resp, "uid", json_string(uid));
    json_object_set_new(resp, "allowed", json_boolean(res->allowed));
    if (!res->allowed) {
        json_t *st = json_object();
        json_object_set_new(st, "code", json_integer(res->code > 0 ? res->code : 403));
        json_object_set_new(st, "message", json_string(res->message));
        json_object_set_new(resp, "status", st);
    }
    if (res->nwarnings) {
        json_t *w = json_array();
        for (size_t i = 0; i < res->nwarnings; i++) json_array_append_new(w, json_string(res->warnings[i]));
        json_object_set_new(resp, "warnings", w);
    }
    if (res->allowed && patch_b64) {
        json_object_set_new(resp, "patchType", json_string("JSONPatch"));
        json_object_set_new(resp, "patch", json_string(patch_b64));
    }
    json_t *doc = json_object();
    json_object_set_new(doc, "apiVersion", json_string(ADMISSION_API_VERSION));
    json_object_set_new(doc, "kind", json_string("AdmissionReview"));
    json_object_set_new(doc, "response", resp);
    return doc;
}

void lop_webhook_review_admission(const lop_webhook_dispatch_t *d, const char *path, const char *body, size_t len,
                                  lop_webhook_reply_t *r)
{
    json_t *request;
    const char *uid;
    json_t *doc = parse_review(body, len, ADMISSION_API_VERSION, "AdmissionReview", &request, &uid, r);
    if (!doc) return;
    char *req_json = json_dumps(request, JSON_COMPACT);
    lop_admission_result_t res;
    memset(&res, 0, sizeof res);
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc =
        d->admit ? d->admit(d->ud, path, req_json, req_json ? strlen(req_json) : 0, &res, &err) : LOP_ENOTFOUND;
    free(req_json);
    if (rc == LOP_ENOTFOUND) {
        reply_text(r, 404, "no admission webhook is served at %s", path);
    } else if (rc != LOP_OK) {
        reply_text(r, 500, "admission webhook failed: %s", err.message);
    } else {
        r->status = 0;
        char *patch = res.allowed ? admission_patch(request, &res, r) : NULL;
        if (r->status == 0) {
            json_t *out = admission_response(uid, &res, patch);
            reply_json(r, out);
            json_decref(out);
        }
        free(patch);
    }
    lop_admission_result_free(&res);
    json_decref(doc);
}

static json_t *conversion_doc(const char *uid, json_t *converted, const char *failure)
{
    json_t *resp = json_object();
    json_object_set_new(resp, "uid", json_string(uid));
    json_t *result = json_object();
    if (failure) {
        json_object_set_new(result, "status", json_string("Failure"));
        json_object_set_new(result, "message", json_string(failure));
        json_decref(converted);
    } else {
        json_object_set_new(resp, "convertedObjects", converted);
        json_object_set_new(result, "status", json_string("Success"));
    }
    json_object_set_new(resp, "result", result);
    json_t *doc = json_object();
    json_object_set_new(doc, "apiVersion", json_string(CONVERSION_API_VERSION));
    json_object_set_new(doc, "kind", json_string("ConversionReview"));
    json_object_set_new(doc, "response", resp);
    return doc;
}

/* Convert objects[i] with d->convert; append the result to converted. LOP_OK, or the rc with
 * why[] filled (the Failure message). */
static lop_rc_t convert_one(const lop_webhook_dispatch_t *d, json_t *obj, size_t i, const char *desired,
                            json_t *converted, char *why, size_t whylen)
{
    char *in = json_dumps(obj, JSON_COMPACT);
    char *out = NULL;
    size_t out_len = 0;
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc = in ? d->convert(d->ud, in, strlen(in), desired, &out, &out_len, &err) : LOP_ENOMEM;
    free(in);
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    if (rc == LOP_ENOTFOUND) {
        snprintf(why, whylen, "objects[%zu]: no conversion webhook for %s %s", i, av ? av : "?", kind ? kind : "?");
    } else if (rc != LOP_OK) {
        snprintf(why, whylen, "objects[%zu] (%s %s) to %s: %s", i, av ? av : "?", kind ? kind : "?", desired,
                 err.message[0] ? err.message : lop_rc_str(rc));
    } else {
        json_t *o = out ? json_loadb(out, out_len, 0, NULL) : NULL;
        if (!json_is_object(o)) {
            json_decref(o);
            snprintf(why, whylen, "objects[%zu]: the converted object is not a JSON object", i);
            rc = LOP_ERR;
        } else {
            json_array_append_new(converted, o);
        }
    }
    free(out);
    return rc;
}

void lop_webhook_review_conversion(const lop_webhook_dispatch_t *d, const char *body, size_t len,
                                   lop_webhook_reply_t *r)
{
    json_t *request;
    const char *uid;
    json_t *doc = parse_review(body, len, CONVERSION_API_VERSION, "ConversionReview", &request, &uid, r);
    if (!doc) return;
    const char *desired = json_string_value(json_object_get(request, "desiredAPIVersion"));
    json_t *objects = json_object_get(request, "objects");
    if (!desired || !*desired || !json_is_array(objects)) {
        reply_text(r, 400, "malformed apiextensions.k8s.io/v1 ConversionReview: %s",
                   !desired || !*desired ? "request.desiredAPIVersion is missing" : "request.objects is not an array");
    } else if (!d->convert) {
        reply_text(r, 404, "no conversion webhook is served at %s", LOP_WEBHOOK_CONVERT_PATH);
    } else {
        json_t *converted = json_array();
        char why[1024] = "";
        bool failed = false;
        for (size_t i = 0; i < json_array_size(objects) && !failed; i++) {
            json_t *obj = json_array_get(objects, i);
            if (!json_is_object(obj)) {
                snprintf(why, sizeof why, "objects[%zu] is not an object", i);
                failed = true;
            } else {
                failed = convert_one(d, obj, i, desired, converted, why, sizeof why) != LOP_OK;
            }
        }
        json_t *out = conversion_doc(uid, converted, failed ? why : NULL);
        reply_json(r, out);
        json_decref(out);
    }
    json_decref(doc);
}
