/* SPDX-License-Identifier: Apache-2.0 */
/* as_patch_handler.c — PATCH (apiserver pkg/endpoints/handlers/patch.go): JSON patch, merge patch,
 * strategic merge patch (built-ins only, 415 for custom resources) and server-side apply, on the
 * main endpoint and the /status and /scale subresources. The patch algorithms live in patch.c /
 * ssa.c. */
#include "apiserver/as_patch_handler.h"

#include "apiserver/as_decode.h"
#include "apiserver/as_convert.h"
#include "apiserver/as_registry.h"
#include "apiserver/as_status.h"
#include "apiserver/as_store.h"
#include "apiserver/as_util.h"
#include "apiserver/as_view.h"
#include "apiserver/as_write.h"

#include "apiserver/patch.h"
#include "apiserver/ssa.h"
#include "host/util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ptype { P_JSON, P_MERGE, P_STRATEGIC, P_APPLY, P_UNKNOWN };

static enum ptype patch_type(const char *ct)
{
    if (!ct) return P_UNKNOWN;
    if (!strncmp(ct, "application/json-patch+json", 27)) return P_JSON;
    if (!strncmp(ct, "application/merge-patch+json", 28)) return P_MERGE;
    if (!strncmp(ct, "application/strategic-merge-patch+json", 38)) return P_STRATEGIC;
    if (!strncmp(ct, "application/apply-patch+yaml", 28)) return P_APPLY;
    return P_UNKNOWN;
}

static void reply_415(as_req_t *q, bool cr)
{
    as_reply_status(q, 415, "UnsupportedMediaType", NULL,
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json-patch+json, application/merge-patch+json, "
                    "application/apply-patch+yaml%s",
                    cr ? "" : ", application/strategic-merge-patch+json");
}

static void patchopts_invalid(as_req_t *q, const char *reason, const char *field, const char *d)
{
    as_reply_invalid(q, "PatchOptions.meta.k8s.io", "PatchOptions", "meta.k8s.io", "", reason, field, d);
}

/* The checks on the request before its body is read: media type, subresource, PatchOptions
 * (force only for apply, fieldManager required for apply and at most 128 bytes), body size.
 * False once a reply was sent. */
static bool check_patch_request(as_req_t *q, enum ptype pt)
{
    as_res_t *res = q->res;
    if (pt == P_UNKNOWN || (pt == P_STRATEGIC && res->is_cr)) {
        reply_415(q, res->is_cr);
        return false;
    }
    if (q->sub[0] && strcmp(q->sub, "status") && strcmp(q->sub, "scale")) {
        as_reply_status(q, 404, "NotFound", NULL, "the server could not find the requested resource");
        return false;
    }
    const char *force = as_query(q, "force");
    const char *fm = as_query(q, "fieldManager");
    if (force && pt != P_APPLY) {
        patchopts_invalid(q, "FieldValueForbidden", "force", "Forbidden: may not be specified for non-apply patch");
        return false;
    }
    if (pt == P_APPLY && (!fm || !*fm)) {
        patchopts_invalid(q, "FieldValueRequired", "fieldManager", "Required value: is required for apply patch");
        return false;
    }
    if (fm && strlen(fm) > 128) {
        patchopts_invalid(q, "FieldValueTooLong", "fieldManager", "Too long: may not be more than 128 bytes");
        return false;
    }
    if (q->body_len > AS_MAX_BODY) {
        as_reply_status(q, 413, "RequestEntityTooLarge", NULL, "Request entity too large: limit is 3145728");
        return false;
    }
    return true;
}

/* The patch document: apply bodies through as_parse_body (YAML or JSON), the others as JSON.
 * NULL once a 400 was sent. */
static json_t *parse_patch_body(as_req_t *q, enum ptype pt)
{
    if (pt == P_APPLY) return as_parse_body(q);
    json_error_t je;
    json_t *patch = json_loadb(q->body ? q->body : "", q->body_len, 0, &je);
    if (!patch) {
        if (pt == P_JSON)
            as_reply_status(q, 400, "BadRequest", NULL, "invalid JSON patch");
        else
            as_reply_status(q, 400, "BadRequest", NULL,
                            "error decoding patch: json parse error at line %d column %d: %s", je.line, je.column,
                            je.text);
    }
    return patch;
}

/* The 409 for a patch whose result names a resourceVersion other than the live object's (the
 * optimistic lock a patch may carry). */
static void reply_rv_conflict(as_req_t *q)
{
    as_res_t *res = q->res;
    char qual[300];
    as_qualified_resource(res, qual, sizeof qual);
    as_reply_status(q, 409, "Conflict", as_details(q->name, res->group, res->plural),
                    "Operation cannot be fulfilled on %s \"%s\": the object has been modified; "
                    "please apply your changes to the latest version and try again",
                    qual, q->name);
}

/* Reset fields like the API server's field manager: an apply through the main endpoint never
 * touches .status when the status subresource is on, an apply to /status only .status. */
static void apply_reset_fields(const as_res_t *res, const char *sub, json_t *patch)
{
    if (res->has_status && !sub[0]) {
        json_object_del(patch, "status");
    } else if (!strcmp(sub, "status")) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(patch, tmp, k, v)
        {
            if (strcmp(k, "apiVersion") && strcmp(k, "kind") && strcmp(k, "metadata") && strcmp(k, "status"))
                json_object_del(patch, k);
        }
    }
}

/* Server-side apply of patch (consumed) onto e's object, or a create when e is NULL. */
static void handle_apply(as_req_t *q, as_entry_t *e, json_t *patch)
{
    lop_apiserver_t *srv = q->srv;
    as_res_t *res = q->res;
    const char *bname = as_meta_str(patch, "name");
    if (!bname || strcmp(bname, q->name)) {
        /* reply first: bname points into the patch */
        as_reply_status(q, 400, "BadRequest", NULL,
                        "the name of the object (%s) does not match the name on the URL (%s)", bname ? bname : "",
                        q->name);
        json_decref(patch);
        return;
    }
    if (!e && res->namespaced) {
        as_coll_t *nsc = as_coll_get(srv, "", "namespaces", false);
        if (!nsc || !as_store_find(nsc, q->ns)) {
            json_decref(patch);
            as_reply_status(q, 404, "NotFound", as_details(q->ns, NULL, "namespaces"), "namespaces \"%s\" not found",
                            q->ns);
            return;
        }
    }
    apply_reset_fields(res, q->sub, patch);
    char msg[2600];
    json_t *live = e ? as_convert(srv, res, as_entry_obj(srv, e), res->api_version, msg, sizeof msg) : NULL;
    if (e && !live) {
        json_decref(patch);
        as_reply_status(q, 500, "InternalError", NULL, "%s", msg);
        return;
    }
    as_ssa_ctx_t ctx = {.manager = as_query(q, "fieldManager"),
                        .api_version = res->api_version,
                        .subresource = q->sub[0] ? q->sub : NULL,
                        .now_wall_ns = lop_clock_wall(&lop_clock_system),
                        .builtin = !res->is_cr,
                        .kind = res->kind};
    json_t *status = NULL;
    lop_err_t err;
    lop_err_clear(&err);
    json_t *out = as_ssa_apply(live, patch, as_query_bool(as_query(q, "force")), &ctx, &status, &err);
    json_decref(patch);
    if (!out) {
        json_decref(live);
        if (status) {
            int code = (int)json_integer_value(json_object_get(status, "code"));
            const char *reason = json_string_value(json_object_get(status, "reason"));
            as_log_reject(q, code ? code : 409, reason);
            as_reply_json(q, code ? code : 409, status, false);
        } else {
            as_reply_err(q, &err);
        }
        return;
    }
    const char *prv = as_meta_str(out, "resourceVersion");
    if (live && prv && *prv && strcmp(prv, as_meta_str(live, "resourceVersion"))) {
        json_decref(out);
        json_decref(live);
        reply_rv_conflict(q);
        return;
    }
    if (!live) q->name[0] = '\0';
    as_finish_write(q, live, out, live ? 200 : 201, true);
    json_decref(live);
}

/* The patched object, or NULL with err set: JSON, merge or strategic merge patch applied to the
 * object as served (or to its /scale view). */
static json_t *run_patch(as_req_t *q, enum ptype pt, json_t *target, json_t *patch, bool scale, lop_err_t *err)
{
    as_res_t *res = q->res;
    switch (pt) {
    case P_JSON: return as_patch_json(target, patch, err);
    case P_MERGE: return as_patch_merge(target, patch);
    case P_STRATEGIC:
        return as_patch_strategic(target, patch, scale ? "autoscaling/v1" : res->api_version,
                                  scale ? "Scale" : res->kind, err);
    default: return NULL;
    }
}

/* JSON, merge or strategic merge patch (consumed) of e's object, on the main endpoint, /status or
 * /scale (whose spec.replicas is written back to the object's replicas path). */
static void handle_patch_update(as_req_t *q, as_entry_t *e, enum ptype pt, json_t *patch)
{
    as_res_t *res = q->res;
    bool scale = !strcmp(q->sub, "scale");
    lop_err_t err;
    lop_err_clear(&err);
    json_t *old = json_incref(as_entry_obj(q->srv, e));
    char msg[2600];
    json_t *target = scale ? as_scale_view(res, old)
                     : as_convert_needed(res, old, res->api_version)
                         ? as_convert(q->srv, res, old, res->api_version, msg, sizeof msg)
                         : as_served_obj(res, old);
    if (!target) {
        json_decref(patch);
        json_decref(old);
        as_reply_status(q, 500, "InternalError", NULL, "%s", msg);
        return;
    }
    json_t *out = run_patch(q, pt, target, patch, scale, &err);
    json_decref(patch);
    json_decref(target);
    if (!out) {
        json_decref(old);
        if (!err.code)
            lop_err_set(&err, LOP_EINVAL, 422, "Invalid",
                        "the server rejected our request due to an error in our request");
        as_reply_err(q, &err);
        return;
    }
    if (!json_is_object(out)) {
        json_decref(out);
        json_decref(old);
        as_reply_status(q, 422, "Invalid", NULL, "the server rejected our request due to an error in our request");
        return;
    }
    const char *prv = as_meta_str(out, "resourceVersion");
    if (prv && *prv && strcmp(prv, as_meta_str(old, "resourceVersion"))) {
        json_decref(out);
        json_decref(old);
        reply_rv_conflict(q);
        return;
    }
    const char *pname = as_meta_str(out, "name");
    if (pname && strcmp(pname, q->name)) {
        json_decref(out);
        json_decref(old);
        as_reply_status(q, 400, "BadRequest", NULL,
                        "the name of the object (%s) does not match the name on the URL (%s)", pname, q->name);
        return;
    }
    if (scale) {
        json_t *rep = json_object_get(json_object_get(out, "spec"), "replicas");
        json_t *n = json_deep_copy(old);
        if (res->scale_spec)
            as_path_set(n, res->scale_spec, json_integer(json_is_integer(rep) ? json_integer_value(rep) : 0));
        json_decref(out);
        out = n;
        q->sub[0] = '\0';
        q->reply_scale = true;
    }
    as_finish_write(q, old, out, 200, false);
    json_decref(old);
}

void as_handle_patch(as_req_t *q)
{
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(q->r), "Content-Type");
    enum ptype pt = patch_type(ct);
    if (!check_patch_request(q, pt)) return;
    json_t *patch = parse_patch_body(q, pt);
    if (!patch) return;
    char key[600];
    as_make_key(q->res, q->ns, q->name, key, sizeof key);
    as_entry_t *e = as_store_find(q->res->coll, key);
    if (!e && !(pt == P_APPLY && !q->sub[0])) {
        json_decref(patch);
        as_reply_notfound(q, q->res, q->name);
        return;
    }
    if (pt == P_APPLY)
        handle_apply(q, e, patch);
    else
        handle_patch_update(q, e, pt, patch);
}
