/* SPDX-License-Identifier: Apache-2.0 */
/* as_convert.c — conversion webhooks of custom resources (apiextensions-apiserver
 * pkg/apiserver/conversion/webhook_converter.go). */
#include "apiserver/as_convert.h"

#include "apiserver/as_util.h"
#include "apiserver/as_webhook.h"

#include <stdio.h>
#include <string.h>

bool as_convert_needed(const as_res_t *res, const json_t *obj, const char *to_av)
{
    if (!res->conv_client || !obj) return false;
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    return !av || strcmp(av, to_av);
}

static json_t *conversion_review(const json_t *obj, const char *to_av, const char *uid)
{
    json_t *objs = json_array();
    json_array_append_new(objs, json_deep_copy(obj));
    json_t *req = json_object();
    json_object_set_new(req, "uid", json_string(uid));
    json_object_set_new(req, "desiredAPIVersion", json_string(to_av));
    json_object_set_new(req, "objects", objs);
    json_t *review = json_object();
    json_object_set_new(review, "apiVersion", json_string("apiextensions.k8s.io/v1"));
    json_object_set_new(review, "kind", json_string("ConversionReview"));
    json_object_set_new(review, "request", req);
    return review;
}

/* The one converted object of a reply, checked; NULL with cause. */
static json_t *converted_of(const json_t *reply, const char *uid, const json_t *in, const char *to_av, char *cause,
                            size_t n)
{
    const json_t *resp = json_object_get(reply, "response");
    const char *ruid = json_string_value(json_object_get(resp, "uid"));
    if (!json_is_object(resp) || !ruid || strcmp(ruid, uid)) {
        snprintf(cause, n, "expected response.uid=\"%s\", got \"%s\"", uid, ruid ? ruid : "");
        return NULL;
    }
    const json_t *result = json_object_get(resp, "result");
    const char *status = json_string_value(json_object_get(result, "status"));
    if (!status || strcmp(status, "Success")) {
        const char *m = json_string_value(json_object_get(result, "message"));
        snprintf(cause, n, "%s", m && *m ? m : "conversion failed");
        return NULL;
    }
    json_t *objs = json_object_get(resp, "convertedObjects");
    json_t *out = json_array_get(objs, 0);
    if (json_array_size(objs) != 1 || !json_is_object(out)) {
        snprintf(cause, n, "returned %zu objects, expected 1", json_array_size(objs));
        return NULL;
    }
    const char *av = json_string_value(json_object_get(out, "apiVersion"));
    if (!av || strcmp(av, to_av)) {
        snprintf(cause, n, "invalid apiVersion \"%s\" in the converted object, expected \"%s\"", av ? av : "", to_av);
        return NULL;
    }
    const char *uin = as_meta_str(in, "uid"), *uout = as_meta_str(out, "uid");
    if (uin && (!uout || strcmp(uin, uout))) { /* metadata other than labels/annotations must stay */
        snprintf(cause, n, "invalid metadata: uid changed");
        return NULL;
    }
    return json_incref(out);
}

json_t *as_convert(lop_apiserver_t *srv, const as_res_t *res, const json_t *obj, const char *to_av, char *msg, size_t n)
{
    if (!as_convert_needed(res, obj, to_av)) return json_incref((json_t *)obj);
    char uid[37], cause[2048];
    as_uuid(uid);
    json_t *review = conversion_review(obj, to_av, uid);
    json_t *reply = as_webhook_post(srv, res->conv_client, AS_CONVERT_TIMEOUT_S, review, cause, sizeof cause);
    json_decref(review);
    json_t *out = reply ? converted_of(reply, uid, obj, to_av, cause, sizeof cause) : NULL;
    json_decref(reply);
    if (!out) {
        const char *av = json_string_value(json_object_get(obj, "apiVersion"));
        snprintf(msg, n, "conversion webhook for %s, Kind=%s failed: %s", av ? av : "", res->kind, cause);
    }
    return out;
}
