/* SPDX-License-Identifier: Apache-2.0 */
/* as_write.c — create (POST), update (PUT) and the shared write step: system metadata, status
 * subresource rules, generation, finalizer rules, no-op detection, dry run, commit
 * (apiserver pkg/registry/generic/registry/store.go Create/Update, pkg/registry/rest). PATCH lives
 * in as_patch_handler.c. */
#include "apiserver/as_write.h"

#include "apiserver/as_decode.h"
#include "apiserver/as_admission.h"
#include "apiserver/as_convert.h"
#include "apiserver/as_crd.h"
#include "apiserver/as_delete.h"
#include "apiserver/as_meta_rules.h"
#include "apiserver/as_proto.h"
#include "apiserver/as_registry.h"
#include "apiserver/as_status.h"
#include "apiserver/as_store.h"
#include "apiserver/as_util.h"
#include "apiserver/as_validate.h"
#include "apiserver/as_view.h"
#include "apiserver/as_write_checks.h"

#include "apiserver/ssa.h"
#include "host/codec/jsonstr.h"
#include "host/util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The media types a create or update body may have (the serializers kube-apiserver 1.32 offers by
 * default: JSON, YAML, and protobuf for built-ins); parameters such as charset are ignored. */
static bool body_media_type_ok(const char *ct, bool cr)
{
    while (*ct == ' ') ct++;
    size_t n = strcspn(ct, ";");
    while (n > 0 && ct[n - 1] == ' ') n--;
    static const char *const ok[] = {"application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
                                     NULL};
    for (int i = 0; ok[i]; i++) {
        if (cr && i == 2) break;
        if (strlen(ok[i]) == n && !strncasecmp(ct, ok[i], n)) return true;
    }
    return false;
}

json_t *as_parse_body(as_req_t *q)
{
    if (q->body_len > AS_MAX_BODY) {
        as_reply_status(q, 413, "RequestEntityTooLarge", NULL, "Request entity too large: limit is 3145728");
        return NULL;
    }
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(q->r), "Content-Type");
    if (q->method != EVHTTP_REQ_PATCH && ct && !body_media_type_ok(ct, q->res && q->res->is_cr)) {
        as_reply_status(q, 415, "UnsupportedMediaType", NULL,
                        "the body of the request was in an unknown format - accepted media types include: "
                        "application/json, application/yaml%s",
                        q->res && q->res->is_cr ? "" : ", application/vnd.kubernetes.protobuf");
        return NULL;
    }
    if (ct && strstr(ct, "protobuf")) {
        char eb[256];
        json_t *o = as_proto_decode(q->body ? q->body : "", q->body_len, eb, sizeof eb);
        if (!o) as_reply_status(q, 415, "UnsupportedMediaType", NULL, "%s", eb);
        return o;
    }
    if (ct && strstr(ct, "cbor")) {
        as_reply_status(q, 415, "UnsupportedMediaType", NULL,
                        "the body of the request was in an unknown format - accepted media types "
                        "include: application/json, application/yaml");
        return NULL;
    }
    size_t i = 0;
    while (i < q->body_len && (q->body[i] == ' ' || q->body[i] == '\n' || q->body[i] == '\r' || q->body[i] == '\t'))
        i++;
    json_t *obj;
    bool yaml = ct && strstr(ct, "yaml") && !(i < q->body_len && q->body[i] == '{');
    if (q->body_len == 0 || i == q->body_len) {
        as_reply_status(q, 400, "BadRequest", NULL, "the request body is empty");
        return NULL;
    }
    if (yaml) {
        char eb[256];
        obj = as_yaml_parse(q->body, q->body_len, eb, sizeof eb);
        if (!obj) {
            as_reply_status(q, 400, "BadRequest", NULL, "the object provided is unrecognized or malformed: %s", eb);
            return NULL;
        }
    } else {
        json_error_t je;
        obj = json_loadb(q->body, q->body_len, 0, &je);
        if (!obj) {
            as_reply_status(q, 400, "BadRequest", NULL,
                            "the object provided is unrecognized or malformed: json parse error at "
                            "line %d column %d: %s",
                            je.line, je.column, je.text);
            return NULL;
        }
    }
    if (!json_is_object(obj)) {
        json_decref(obj);
        as_reply_status(q, 400, "BadRequest", NULL,
                        "the object provided is unrecognized or malformed: expected a JSON object");
        return NULL;
    }
    json_t *m = json_object_get(obj, "metadata");
    if (m && !json_is_object(m)) {
        json_decref(obj);
        as_reply_status(q, 400, "BadRequest", NULL,
                        "the object provided is unrecognized or malformed: metadata must be an object");
        return NULL;
    }
    return obj;
}

/* Check body kind/apiVersion against the resource (filling them when absent). -1: replied. */
static int check_kind(as_req_t *q, json_t *obj, const char *want_kind, const char *want_av)
{
    json_t *k = json_object_get(obj, "kind");
    json_t *av = json_object_get(obj, "apiVersion");
    if (k && (!json_is_string(k) || strcmp(json_string_value(k), want_kind))) {
        as_reply_status(q, 400, "BadRequest", NULL,
                        "the kind of the provided object (%s) does not match the resource (%s)",
                        json_is_string(k) ? json_string_value(k) : "?", want_kind);
        return -1;
    }
    if (av && (!json_is_string(av) || strcmp(json_string_value(av), want_av))) {
        as_reply_status(q, 400, "BadRequest", NULL,
                        "the API version in the data (%s) does not match the expected API version (%s)",
                        json_is_string(av) ? json_string_value(av) : "?", want_av);
        return -1;
    }
    return 0;
}

static bool dry_run(as_req_t *q, int *bad)
{
    const char *d = as_query(q, "dryRun");
    *bad = 0;
    if (!d) return false;
    if (strcmp(d, "All")) {
        *bad = 1;
        char detail[300];
        snprintf(detail, sizeof detail, "Unsupported value: \"%s\": supported values: \"All\"", d);
        as_reply_invalid(q, "CreateOptions.meta.k8s.io", "CreateOptions", "meta.k8s.io", "", "FieldValueNotSupported",
                         "dryRun", detail);
        return false;
    }
    return true;
}

static char *field_manager(as_req_t *q)
{
    const char *fm = as_query(q, "fieldManager");
    if (fm && *fm) return lop_xstrdup(fm);
    const char *ua = evhttp_find_header(evhttp_request_get_input_headers(q->r), "User-Agent");
    return as_ssa_manager_from_user_agent(ua ? ua : "unknown");
}

static void track_managed(as_req_t *q, const json_t *old, json_t *obj, const char *sub)
{
    char *mgr = field_manager(q);
    as_ssa_ctx_t ctx = {.manager = mgr,
                        .api_version = q->res->api_version,
                        .subresource = sub && *sub ? sub : NULL,
                        .now_wall_ns = lop_clock_wall(&lop_clock_system),
                        .builtin = !q->res->is_cr,
                        .kind = q->res->kind};
    as_ssa_track_update(old, obj, &ctx);
    free(mgr);
}

/* Strip fields that never make two objects different (for no-op detection). */
static json_t *comparable(const json_t *o)
{
    json_t *c = json_deep_copy(o);
    json_t *m = json_object_get(c, "metadata");
    if (m) {
        json_object_del(m, "managedFields");
        json_object_del(m, "resourceVersion");
    }
    return c;
}

static bool same_outside(const json_t *a, const json_t *b, bool ignore_status)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v)
    {
        if (!strcmp(k, "metadata") || (ignore_status && !strcmp(k, "status"))) continue;
        if (!json_equal(v, json_object_get(b, k))) return false;
    }
    json_object_foreach((json_t *)b, k, v)
    {
        if (!strcmp(k, "metadata") || (ignore_status && !strcmp(k, "status"))) continue;
        if (!json_object_get(a, k)) return false;
    }
    return true;
}

static json_t *finalizers_of(const json_t *o)
{
    const json_t *m = json_object_get(o, "metadata");
    json_t *f = m ? json_object_get(m, "finalizers") : NULL;
    return json_is_array(f) ? f : NULL;
}

static void reply_obj(as_req_t *q, int code, const json_t *obj)
{
    if (q->reply_scale) {
        as_reply_json(q, code, as_scale_view(q->res, obj), false);
        return;
    }
    if (q->res->conv_client) { /* stored in the storage version (the stored bytes may be another's) */
        char msg[2600];
        json_t *c = as_convert(q->srv, q->res, obj, q->res->api_version, msg, sizeof msg);
        if (!c)
            as_reply_status(q, 500, "InternalError", NULL, "%s", msg);
        else
            as_reply_json(q, code, c, true);
        return;
    }
    as_reply_stored(q, code, q->res, obj, as_store_wire(q->srv, q->res->coll, obj));
}

static void namespace_exists_or_reply(as_req_t *q, int *ok)
{
    *ok = 1;
    if (!q->res->namespaced) return;
    as_coll_t *nsc = as_coll_get(q->srv, "", "namespaces", false);
    as_entry_t *e = nsc ? as_store_find(nsc, q->ns) : NULL;
    if (!e) {
        as_reply_status(q, 404, "NotFound", as_details(q->ns, NULL, "namespaces"), "namespaces \"%s\" not found",
                        q->ns);
        *ok = 0;
    }
}

/* Finish a create (old == NULL) or update. obj is stolen. code_ok is the success status. */
/* The steps of as_finish_write. Each that may refuse the write returns false once it has replied;
 * the object is then released by the caller (json_decref(*objp): a step that already gave it
 * away sets *objp to NULL). */

/* Create: a name from generateName (RetryGenerateName: a few fresh suffixes), or 422 when there is
 * none; a new uid and creationTimestamp; deletion fields, resourceVersion and (unless tracked)
 * generation reset; status dropped where the status subresource owns it. *name is the object's. */
static bool prepare_create(as_req_t *q, json_t *obj, const char **name, const char *qual_kind)
{
    as_res_t *res = q->res;
    json_t *m = as_meta(obj);
    const char *gen = as_meta_str(obj, "generateName");
    if ((!*name || !**name) && gen && *gen) {
        char suffix[6], nb[300], key[600];
        for (int attempt = 0; attempt < 8; attempt++) { /* RetryGenerateName */
            as_rand_suffix(suffix);
            snprintf(nb, sizeof nb, "%.*s%s", 58, gen, suffix);
            as_make_key(res, q->ns, nb, key, sizeof key);
            if (!as_store_find(res->coll, key)) break;
        }
        json_object_set_new(m, "name", json_string(nb));
    }
    *name = as_meta_str(obj, "name");
    if (!*name || !**name) {
        as_reply_invalid(q, qual_kind, res->kind, res->group, "", "FieldValueRequired", "metadata.name",
                         "Required value: name or generateName is required");
        return false;
    }
    char uid[37], tbuf[32];
    as_uuid(uid);
    json_object_set_new(m, "uid", json_string(uid));
    json_object_set_new(m, "creationTimestamp", json_string(as_now_time(tbuf, sizeof tbuf)));
    json_object_del(m, "deletionTimestamp");
    json_object_del(m, "deletionGracePeriodSeconds");
    json_object_set_new(m, "resourceVersion", json_string("")); /* keeps its slot */
    if (res->track_generation)
        json_object_set_new(m, "generation", json_integer(1));
    else
        json_object_del(m, "generation");
    if (res->has_status && strcmp(res->plural, "namespaces") && strcmp(res->plural, "customresourcedefinitions"))
        json_object_del(obj, "status");
    return true;
}

/* An update of a deleting object may only shrink its finalizers (422 naming the new ones). */
static bool check_no_new_finalizers(as_req_t *q, const json_t *old, const json_t *obj, const char *name,
                                    const char *qual_kind)
{
    as_res_t *res = q->res;
    if (!json_object_get(json_object_get(old, "metadata"), "deletionTimestamp")) return true;
    json_t *of = finalizers_of(old), *nf = finalizers_of(obj);
    size_t i;
    json_t *v;
    lop_buf_t added = LOP_BUF_INIT;
    json_array_foreach(nf, i, v)
    {
        if (json_is_string(v) && (!of || !lop_json_str_in(of, json_string_value(v)))) {
            lop_buf_printf(&added, "%s%s", added.len ? " " : "", json_string_value(v));
        }
    }
    if (!added.len) {
        lop_buf_free(&added);
        return true;
    }
    char detail[600];
    snprintf(detail, sizeof detail,
             "Forbidden: no new finalizers can be added if the object is being "
             "deleted, found new finalizers []string{\"%s\"}",
             added.data);
    lop_buf_free(&added);
    as_reply_invalid(q, qual_kind, res->kind, res->group, name, "FieldValueForbidden", "metadata.finalizers", detail);
    return false;
}

/* Update: uid immutable (422); the server-owned metadata carried over from old; through /status
 * only .status (and managedFields) change, elsewhere .status is kept when the subresource owns it;
 * generation bumped when anything outside status and metadata changed. May replace *objp. */
static bool prepare_update(as_req_t *q, const json_t *old, json_t **objp, const char *name, const char *qual_kind,
                           bool status_sub)
{
    as_res_t *res = q->res;
    json_t *obj = *objp, *m = as_meta(obj);
    const json_t *om = json_object_get(old, "metadata");
    const char *carry[] = {
        "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "namespace", NULL};
    const char *buid = as_meta_str(obj, "uid");
    if (buid && *buid && strcmp(buid, as_meta_str(old, "uid"))) {
        char detail[200];
        snprintf(detail, sizeof detail, "Invalid value: \"%s\": field is immutable", buid);
        as_reply_invalid(q, qual_kind, res->kind, res->group, name, "FieldValueInvalid", "metadata.uid", detail);
        return false;
    }
    for (int i = 0; carry[i]; i++) {
        json_t *v = json_object_get(om, carry[i]);
        if (v)
            json_object_set(m, carry[i], v);
        else
            json_object_del(m, carry[i]);
    }
    if (status_sub) {
        /* only .status (and managedFields) change through /status */
        json_t *st = json_object_get(obj, "status");
        json_t *mf = json_object_get(m, "managedFields");
        json_t *n = json_deep_copy(old);
        if (st)
            json_object_set(n, "status", st);
        else
            json_object_del(n, "status");
        if (mf) json_object_set(as_meta(n), "managedFields", mf);
        json_decref(obj);
        *objp = obj = n;
        m = as_meta(obj);
    } else if (res->has_status) {
        json_t *st = json_object_get(old, "status");
        if (st)
            json_object_set(obj, "status", st);
        else
            json_object_del(obj, "status");
    }
    if (res->track_generation && !status_sub && !same_outside(old, obj, res->has_status)) {
        json_t *g = json_object_get(om, "generation");
        json_object_set_new(m, "generation", json_integer((json_is_integer(g) ? json_integer_value(g) : 0) + 1));
    }
    return check_no_new_finalizers(q, old, obj, name, qual_kind);
}

/* What two kinds add on write: a CRD is checked and completed (may replace *objp, or consume it on
 * failure); a new Namespace gets the kubernetes finalizer, phase Active and its
 * kubernetes.io/metadata.name label. */
static bool finish_special_kinds(as_req_t *q, const json_t *old, json_t **objp, const char *name, bool status_sub)
{
    as_res_t *res = q->res;
    if (!strcmp(res->plural, "customresourcedefinitions") && !status_sub) {
        lop_err_t err;
        json_t *n = as_crd_finish_create(q->srv, *objp, &err); /* steals the object */
        *objp = n;
        if (!n) {
            as_reply_err(q, &err);
            return false;
        }
    }
    if (!strcmp(res->plural, "namespaces") && !old) {
        json_t *obj = *objp;
        json_t *spec = json_object_get(obj, "spec");
        if (!json_is_object(spec)) {
            spec = json_object();
            json_object_set_new(obj, "spec", spec);
        }
        json_t *fin = json_array();
        json_array_append_new(fin, json_string("kubernetes"));
        json_object_set_new(spec, "finalizers", fin);
        json_t *st = json_object();
        json_object_set_new(st, "phase", json_string("Active"));
        json_object_set_new(obj, "status", st);
        json_t *m = as_meta(obj);
        json_t *labels = json_object_get(m, "labels");
        if (!json_is_object(labels)) {
            labels = json_object();
            json_object_set_new(m, "labels", labels);
        }
        json_object_set_new(labels, "kubernetes.io/metadata.name", json_string(name));
    }
    return true;
}

/* A create must not collide with an existing object (409 AlreadyExists) nor go into a namespace
 * being terminated (403 NamespaceTerminating). */
static bool check_create_target(as_req_t *q, const char *key, const char *name)
{
    as_res_t *res = q->res;
    if (as_store_find(res->coll, key)) {
        char qual[300];
        as_qualified_resource(res, qual, sizeof qual);
        as_reply_status(q, 409, "AlreadyExists", as_details(name, res->group, res->plural), "%s \"%s\" already exists",
                        qual, name);
        return false;
    }
    if (!res->namespaced) return true;
    as_coll_t *nsc = as_coll_get(q->srv, "", "namespaces", false);
    as_entry_t *ne = nsc ? as_store_find(nsc, q->ns) : NULL;
    if (!ne || !ne->wire->facts->deleting) return true;
    char qual[300];
    as_qualified_resource(res, qual, sizeof qual);
    json_t *d = as_details(name, res->group, res->plural);
    json_t *causes = json_array(), *c = json_object();
    char cm[300];
    snprintf(cm, sizeof cm, "namespace %s is being terminated", q->ns);
    json_object_set_new(c, "reason", json_string("NamespaceTerminating"));
    json_object_set_new(c, "message", json_string(cm));
    json_object_set_new(c, "field", json_string("metadata.namespace"));
    json_array_append_new(causes, c);
    json_object_set_new(d, "causes", causes);
    as_reply_status(q, 403, "Forbidden", d,
                    "%s \"%s\" is forbidden: unable to create new content in namespace %s "
                    "because it is being terminated",
                    qual, name, q->ns);
    return false;
}

/* Store and reply (consumes obj): an update that changes nothing is answered with the old object
 * (no new resourceVersion, no event); a dry run is answered without storing; the update that
 * removes the last finalizer of a deleting object deletes it; else the object is committed. */
static void commit_write(as_req_t *q, const json_t *old, json_t *obj, const char *key, int code_ok, bool dry)
{
    lop_apiserver_t *srv = q->srv;
    as_res_t *res = q->res;
    if (!res->is_cr) {
        json_t *ord = as_order_builtin(obj);
        json_decref(obj);
        obj = ord;
    }
    if (old) {
        json_t *old_served = as_served_obj(res, old); /* the other Event API's view */
        json_t *a = comparable(old_served), *b = comparable(obj);
        json_decref(old_served);
        bool same = json_equal(a, b);
        json_decref(a);
        json_decref(b);
        if (same) { /* no-op: not persisted, same RV, no event */
            json_decref(obj);
            reply_obj(q, 200, old);
            return;
        }
    }
    if (dry) {
        if (old)
            json_object_set(as_meta(obj), "resourceVersion",
                            json_object_get(json_object_get(old, "metadata"), "resourceVersion"));
        reply_obj(q, code_ok, obj);
        json_decref(obj);
        return;
    }
    /* the update that removes the last finalizer of a deleting object deletes it */
    json_t *fin = finalizers_of(obj);
    if (old && as_meta_str(old, "deletionTimestamp") && (!fin || json_array_size(fin) == 0) &&
        strcmp(res->plural, "namespaces")) {
        reply_obj(q, 200, obj);
        json_decref(obj);
        json_t *gone = as_store_commit(srv, res->coll, key, NULL);
        if (gone && !strcmp(res->plural, "customresourcedefinitions")) as_crd_changed(srv, gone, true);
        as_gc_schedule(srv);
        return;
    }
    if (as_convert_needed(res, obj, res->storage_av)) { /* conversion webhook: store the storage version */
        char msg[2600];
        json_t *c = as_convert(srv, res, obj, res->storage_av, msg, sizeof msg);
        json_decref(obj);
        if (!c) {
            as_reply_status(q, 500, "InternalError", NULL, "%s", msg);
            return;
        }
        obj = c;
    }
    json_t *stored = as_store_commit(srv, res->coll, key, obj);
    if (!strcmp(res->plural, "customresourcedefinitions")) as_crd_changed(srv, stored, false);
    if (as_meta_str(stored, "deletionTimestamp")) as_gc_schedule(srv);
    reply_obj(q, code_ok, stored);
}

/* After the mutating webhooks: what they may not change is put back (kind, apiVersion, namespace),
 * and *name re-read (it pointed into the object a patch replaced). A renamed object → 400. */
static bool keep_identity(as_req_t *q, json_t *obj, const char **name)
{
    as_res_t *res = q->res;
    json_object_set_new(obj, "kind", json_string(res->kind));
    json_object_set_new(obj, "apiVersion", json_string(res->api_version));
    json_t *m = as_meta(obj);
    if (res->namespaced)
        json_object_set_new(m, "namespace", json_string(q->ns));
    else
        json_object_del(m, "namespace");
    const char *now = as_meta_str(obj, "name");
    const char *want = q->name[0] ? q->name : NULL;
    if (!now || (want && strcmp(now, want))) {
        as_reply_status(q, 400, "BadRequest", NULL, "a mutating admission webhook changed the object's name");
        return false;
    }
    *name = now;
    return true;
}

/* as_finish_write with old (if any) already in the request's version. */
static void finish_write(as_req_t *q, const json_t *old, json_t *obj, int code_ok, bool managed_done)
{
    as_res_t *res = q->res;
    int bad;
    bool dry = dry_run(q, &bad);
    if (bad || as_check_field_validation(q) < 0) {
        json_decref(obj);
        return;
    }
    json_object_set_new(obj, "kind", json_string(res->kind));
    json_object_set_new(obj, "apiVersion", json_string(res->api_version));
    const char *name = q->name[0] ? q->name : as_meta_str(obj, "name");
    char qual_kind[300];
    as_qualified_kind(res, qual_kind, sizeof qual_kind);
    bool status_sub = !strcmp(q->sub, "status");
    json_t *pruned = NULL; /* CR fields removed by pruning (paths) */
    bool ok =
        as_check_meta_types(q, obj) >= 0 && as_data_decode_check(q, obj) >= 0 &&
        (old ? prepare_update(q, old, &obj, name, qual_kind, status_sub) : prepare_create(q, obj, &name, qual_kind));
    if (ok) {
        json_t *m = as_meta(obj);
        if (!res->namespaced)
            json_object_del(m, "namespace");
        else
            json_object_set_new(m, "namespace", json_string(q->ns));
    }
    if (ok && !res->is_cr) as_default_builtin(res, obj);
    const char *op = old ? "UPDATE" : "CREATE";
    ok = ok && as_admit_mutate(q, op, &obj, old, dry) && keep_identity(q, obj, &name);
    ok = ok && as_validate_builtin(q, obj) >= 0;
    ok = ok && as_validate_write(q, obj, old, name, &pruned);
    ok = ok && as_admit_validate(q, op, obj, old, dry);
    ok = ok && finish_special_kinds(q, old, &obj, name, status_sub);
    if (!ok) {
        json_decref(pruned);
        json_decref(obj);
        return;
    }
    if (!managed_done) track_managed(q, old, obj, q->sub);
    as_ssa_scrub_managed_fields(obj, res->has_status, status_sub, pruned);
    json_decref(pruned);
    char key[600];
    as_make_key(res, q->ns, name, key, sizeof key);
    if (!old && !check_create_target(q, key, name)) {
        json_decref(obj);
        return;
    }
    commit_write(q, old, obj, key, code_ok, dry);
}

void as_finish_write(as_req_t *q, const json_t *old, json_t *obj, int code_ok, bool managed_done)
{
    if (!as_convert_needed(q->res, old, q->res->api_version)) {
        finish_write(q, old, obj, code_ok, managed_done);
        return;
    }
    char msg[2600];
    json_t *conv = as_convert(q->srv, q->res, old, q->res->api_version, msg, sizeof msg);
    if (!conv) {
        json_decref(obj);
        as_reply_status(q, 500, "InternalError", NULL, "%s", msg);
        return;
    }
    finish_write(q, conv, obj, code_ok, managed_done);
    json_decref(conv);
}

void as_handle_create(as_req_t *q)
{
    int ok;
    if (q->sub[0]) {
        as_reply_status(q, 405, "MethodNotAllowed", NULL,
                        "the server does not allow this method on the requested resource");
        return;
    }
    json_t *obj = as_parse_body(q);
    if (!obj) return;
    if (check_kind(q, obj, q->res->kind, q->res->api_version) < 0) {
        json_decref(obj);
        return;
    }
    const char *bns = as_meta_str(obj, "namespace");
    if (q->res->namespaced && bns && *bns && strcmp(bns, q->ns)) {
        json_decref(obj);
        as_reply_status(q, 400, "BadRequest", NULL,
                        "the namespace of the provided object does not match the namespace sent "
                        "on the request");
        return;
    }
    const char *brv = as_meta_str(obj, "resourceVersion");
    if (brv && *brv) {
        json_decref(obj);
        as_reply_status(q, 500, "InternalError", NULL, "resourceVersion should not be set on objects to be created");
        return;
    }
    namespace_exists_or_reply(q, &ok);
    if (!ok) {
        json_decref(obj);
        return;
    }
    q->name[0] = '\0';
    as_finish_write(q, NULL, obj, 201, false);
}

/* RV precondition for PUT: -1 when replied. */
static int check_update_rv(as_req_t *q, const json_t *old, const char *brv, bool required)
{
    as_res_t *res = q->res;
    char qual[300];
    as_qualified_resource(res, qual, sizeof qual);
    if (!brv || !*brv) {
        if (!required) return 0;
        json_t *d = as_details(q->name, res->group, res->plural);
        json_t *causes = json_array(), *c = json_object();
        json_object_set_new(c, "reason", json_string("FieldValueInvalid"));
        json_object_set_new(c, "message", json_string("Invalid value: 0x0: must be specified for an update"));
        json_object_set_new(c, "field", json_string("metadata.resourceVersion"));
        json_array_append_new(causes, c);
        json_object_set_new(d, "causes", causes);
        as_reply_status(q, 422, "Invalid", d,
                        "%s \"%s\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be "
                        "specified for an update",
                        qual, q->name);
        return -1;
    }
    if (strcmp(brv, as_meta_str(old, "resourceVersion"))) {
        as_reply_status(q, 409, "Conflict", as_details(q->name, res->group, res->plural),
                        "Operation cannot be fulfilled on %s \"%s\": the object has been modified; "
                        "please apply your changes to the latest version and try again",
                        qual, q->name);
        return -1;
    }
    return 0;
}

void as_handle_update(as_req_t *q)
{
    as_res_t *res = q->res;
    if (q->sub[0] && strcmp(q->sub, "status") && strcmp(q->sub, "scale")) {
        as_reply_status(q, 404, "NotFound", NULL, "the server could not find the requested resource");
        return;
    }
    json_t *obj = as_parse_body(q);
    if (!obj) return;
    bool scale = !strcmp(q->sub, "scale");
    if (check_kind(q, obj, scale ? "Scale" : res->kind, scale ? "autoscaling/v1" : res->api_version) < 0) {
        json_decref(obj);
        return;
    }
    const char *bname = as_meta_str(obj, "name");
    if (bname && strcmp(bname, q->name)) {
        as_reply_status(q, 400, "BadRequest", NULL,
                        "the name of the object (%s) does not match the name on the URL (%s)", bname, q->name);
        json_decref(obj);
        return;
    }
    const char *bns = as_meta_str(obj, "namespace");
    if (res->namespaced && bns && *bns && strcmp(bns, q->ns)) {
        json_decref(obj);
        as_reply_status(q, 400, "BadRequest", NULL,
                        "the namespace of the provided object does not match the namespace sent "
                        "on the request");
        return;
    }
    char key[600];
    as_make_key(res, q->ns, q->name, key, sizeof key);
    as_entry_t *e = as_store_find(res->coll, key);
    if (!e) {
        if (res->create_on_update && !q->sub[0]) {
            int ok;
            namespace_exists_or_reply(q, &ok);
            if (!ok) {
                json_decref(obj);
                return;
            }
            json_object_del(as_meta(obj), "resourceVersion");
            json_object_set_new(as_meta(obj), "name", json_string(q->name));
            as_finish_write(q, NULL, obj, 201, false);
            return;
        }
        json_decref(obj);
        as_reply_notfound(q, res, q->name);
        return;
    }
    json_t *old = json_incref(as_entry_obj(q->srv, e));
    const char *brv = as_meta_str(obj, "resourceVersion");
    bool required = res->require_rv || (res->is_cr && !strcmp(q->sub, "status"));
    if (check_update_rv(q, old, brv, required && !scale) < 0) {
        json_decref(obj);
        json_decref(old);
        return;
    }
    if (scale) {
        json_t *spec = json_object_get(obj, "spec");
        json_t *rep = spec ? json_object_get(spec, "replicas") : NULL;
        json_t *n = json_deep_copy(old);
        if (res->scale_spec)
            as_path_set(n, res->scale_spec, json_integer(json_is_integer(rep) ? json_integer_value(rep) : 0));
        json_decref(obj);
        obj = n;
        /* the scale write goes through the main endpoint rules */
        q->sub[0] = '\0';
        q->reply_scale = true;
        as_finish_write(q, old, obj, 200, false);
        json_decref(old);
        return;
    }
    as_finish_write(q, old, obj, 200, false);
    json_decref(old);
}
