/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssa.c — server-side apply and managedFields bookkeeping (see ssa.h).
 *
 * The managers of an object are decoded from metadata.managedFields into field sets
 * (ssa_fieldset.h), changed by the operation, and encoded back, sorted as the API server sorts
 * them (Apply before Update, then by time, manager, apiVersion, subresource). Conflict statuses
 * are built in ssa_conflict.c.
 */
#include "apiserver/ssa.h"

#include "apiserver/patch_schema.h"
#include "apiserver/ssa_fieldset.h"
#include "apiserver/ssa_internal.h"
#include "host/util/buf.h"
#include "host/util/clock.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Managers                                                                                   */

static char *dup_or_empty(const char *s) { return lop_xstrdup(s ? s : ""); }

void as_ssa_mgrs_free(as_ssa_mgrs_t *ms)
{
    for (size_t i = 0; i < ms->n; i++) {
        as_ssa_mgr_t *m = &ms->v[i];
        free(m->manager);
        free(m->operation);
        free(m->api_version);
        free(m->time);
        free(m->subresource);
        json_decref(m->set);
    }
    free(ms->v);
    ms->v = NULL;
    ms->n = 0;
}

static as_ssa_mgr_t *mgrs_add(as_ssa_mgrs_t *ms, const char *manager, const char *op, const char *api_version,
                              const char *time, const char *sub, json_t *set)
{
    ms->v = lop_xrealloc(ms->v, (ms->n + 1) * sizeof *ms->v);
    as_ssa_mgr_t *m = &ms->v[ms->n++];
    m->manager = dup_or_empty(manager);
    m->operation = dup_or_empty(op);
    m->api_version = dup_or_empty(api_version);
    m->time = dup_or_empty(time);
    m->subresource = dup_or_empty(sub);
    m->set = set ? set : json_object();
    return m;
}

/* Decode managedFields (a JSON array); malformed entries are skipped. */
static void mgrs_decode(as_ssa_mgrs_t *ms, const json_t *mf)
{
    ms->v = NULL;
    ms->n = 0;
    for (size_t i = 0; i < json_array_size(mf); i++) {
        const json_t *e = json_array_get(mf, i);
        const char *manager = json_string_value(json_object_get(e, "manager"));
        const char *op = json_string_value(json_object_get(e, "operation"));
        if (!json_is_object(e) || !op) continue;
        mgrs_add(ms, manager, op, json_string_value(json_object_get(e, "apiVersion")),
                 json_string_value(json_object_get(e, "time")), json_string_value(json_object_get(e, "subresource")),
                 as_ssa_fs_from_fieldsv1(json_object_get(e, "fieldsV1")));
    }
}

static const json_t *managed_fields_of(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "managedFields");
}

static as_ssa_mgr_t *mgrs_find(as_ssa_mgrs_t *ms, const char *manager, const char *op, const char *api_version,
                               const char *sub)
{
    for (size_t i = 0; i < ms->n; i++) {
        as_ssa_mgr_t *m = &ms->v[i];
        if (strcmp(m->manager, manager) != 0 || strcmp(m->operation, op) != 0 ||
            strcmp(m->subresource, sub ? sub : "") != 0)
            continue;
        /* Update entries are kept per apiVersion; Apply entries are not. */
        if (strcmp(op, "Update") == 0 && strcmp(m->api_version, api_version ? api_version : "") != 0) continue;
        return m;
    }
    return NULL;
}

static int cmp_mgr(const void *a, const void *b)
{
    const as_ssa_mgr_t *p = a, *q = b;
    int c = strcmp(p->operation, q->operation);
    if (c) return c;
    int64_t tp = 0, tq = 0;
    if (*p->time) lop_time_parse(p->time, &tp);
    if (*q->time) lop_time_parse(q->time, &tq);
    tp /= LOP_NS_PER_S;
    tq /= LOP_NS_PER_S;
    if (tp != tq) return tp < tq ? -1 : 1;
    if ((c = strcmp(p->manager, q->manager))) return c;
    if ((c = strcmp(p->api_version, q->api_version))) return c;
    return strcmp(p->subresource, q->subresource);
}

/* Write the managers (empty ones dropped) to obj's metadata.managedFields. */
static void mgrs_encode(as_ssa_mgrs_t *ms, json_t *obj)
{
    if (ms->n > 1) qsort(ms->v, ms->n, sizeof *ms->v, cmp_mgr);
    json_t *arr = json_array();
    for (size_t i = 0; i < ms->n; i++) {
        as_ssa_mgr_t *m = &ms->v[i];
        if (as_ssa_fs_empty(m->set)) continue;
        json_t *e = json_object();
        json_object_set_new(e, "manager", json_string(m->manager));
        json_object_set_new(e, "operation", json_string(m->operation));
        json_object_set_new(e, "apiVersion", json_string(m->api_version));
        if (*m->time) json_object_set_new(e, "time", json_string(m->time));
        json_object_set_new(e, "fieldsType", json_string("FieldsV1"));
        json_object_set_new(e, "fieldsV1", as_ssa_fs_to_fieldsv1(m->set));
        if (*m->subresource) json_object_set_new(e, "subresource", json_string(m->subresource));
        json_array_append_new(arr, e);
    }
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(obj, "metadata", meta);
    }
    if (json_array_size(arr))
        json_object_set_new(meta, "managedFields", arr);
    else {
        json_decref(arr);
        json_object_del(meta, "managedFields");
    }
}

static void set_time_now(as_ssa_mgr_t *m, const as_ssa_ctx_t *ctx)
{
    char buf[40];
    free(m->time);
    m->time = lop_xstrdup(lop_time_format(ctx->now_wall_ns, buf, sizeof buf));
}

/* A copy of obj without metadata.managedFields (for comparing content). */
static json_t *without_managed(const json_t *obj)
{
    json_t *c = obj ? json_deep_copy(obj) : json_object();
    json_object_del(json_object_get(c, "metadata"), "managedFields");
    return c;
}

/* ------------------------------------------------------------------------------------------ */
/* Merging the applied configuration                                                          */

static json_t *merge_value(const json_t *live, const json_t *cfg, const as_ssa_fs_schema_t *sc, const char *path);

static bool keys_match(const json_t *a, const json_t *cfg, const char *const *keys)
{
    bool any = false;
    for (size_t i = 0; keys[i]; i++) {
        json_t *cv = json_object_get(cfg, keys[i]);
        if (!cv) continue;
        json_t *av = json_object_get(a, keys[i]);
        if (!av || !json_equal(av, cv)) return false;
        any = true;
    }
    return any;
}

static json_t *merge_list(const json_t *live, const json_t *cfg, const as_ssa_fs_schema_t *sc, const char *path)
{
    const char *const *keys = NULL;
    as_patch_list_type_t lt = sc->builtin ? as_patch_builtin_list_type(sc->kind, path, &keys) : AS_PATCH_LIST_ATOMIC;
    if (lt == AS_PATCH_LIST_ATOMIC || !json_is_array(live)) return merge_value(NULL, cfg, sc, path);
    json_t *out = json_deep_copy(live);
    for (size_t i = 0; i < json_array_size(cfg); i++) {
        const json_t *e = json_array_get(cfg, i);
        long at = -1;
        for (size_t j = 0; j < json_array_size(out) && at < 0; j++) {
            const json_t *o = json_array_get(out, j);
            if (lt == AS_PATCH_LIST_SET ? json_equal((json_t *)o, (json_t *)e)
                                        : (json_is_object(o) && json_is_object(e) && keys_match(o, e, keys)))
                at = (long)j;
        }
        if (at >= 0 && lt == AS_PATCH_LIST_SET) continue;
        json_t *m = merge_value(at >= 0 ? json_array_get(out, (size_t)at) : NULL, e, sc, path);
        if (at >= 0)
            json_array_set_new(out, (size_t)at, m);
        else
            json_array_append_new(out, m);
    }
    return out;
}

/* Merge cfg into live (NULL = absent): maps merge, lists follow the schema, nulls drop. */
static json_t *merge_value(const json_t *live, const json_t *cfg, const as_ssa_fs_schema_t *sc, const char *path)
{
    if (json_is_array(cfg)) {
        if (json_is_array(live)) return merge_list(live, cfg, sc, path);
        json_t *out = json_array();
        for (size_t i = 0; i < json_array_size(cfg); i++)
            json_array_append_new(out, merge_value(NULL, json_array_get(cfg, i), sc, path));
        return out;
    }
    if (!json_is_object(cfg)) return json_deep_copy(cfg);
    json_t *out = json_is_object(live) ? json_deep_copy(live) : json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)cfg, k, v)
    {
        if (json_is_null(v)) {
            json_object_del(out, k);
            continue;
        }
        lop_buf_t cp = LOP_BUF_INIT;
        if (*path) lop_buf_printf(&cp, "%s.", path);
        lop_buf_puts(&cp, k);
        json_object_set_new(out, k, merge_value(json_object_get(out, k), v, sc, cp.data));
        lop_buf_free(&cp);
    }
    return out;
}

/* Drop the item marks in prune where another manager still owns something beneath the item. */
static void protect_shared(json_t *prune, const json_t *others)
{
    const char *k;
    json_t *child;
    json_object_foreach(prune, k, child)
    {
        if (strcmp(k, ".") == 0) continue;
        const json_t *o = json_object_get(others, k);
        if (!o) continue;
        if (json_object_get(child, ".") && json_object_size(o) > (json_object_get(o, ".") ? 1u : 0u))
            json_object_del(child, ".");
        protect_shared(child, o);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Apply                                                                                      */

static bool check_applied(const json_t *applied, const as_ssa_ctx_t *ctx, lop_err_t *err)
{
    if (!ctx || !ctx->manager || !*ctx->manager) {
        lop_err_set(err, LOP_EINVAL, 422, "Invalid",
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is "
                    "required for apply patch");
        return false;
    }
    if (!json_is_object(applied)) {
        lop_err_set(err, LOP_EINVAL, 400, "BadRequest", "apply patch must be a JSON object");
        return false;
    }
    if (!json_is_string(json_object_get(applied, "apiVersion")) || !json_is_string(json_object_get(applied, "kind"))) {
        lop_err_set(err, LOP_EINVAL, 400, "BadRequest",
                    "invalid object: apiVersion and kind are required in an apply patch");
        return false;
    }
    const json_t *meta = json_object_get(applied, "metadata");
    if (!json_is_object(meta) || !json_is_string(json_object_get(meta, "name"))) {
        lop_err_set(err, LOP_EINVAL, 422, "Invalid", "metadata.name: Required value: name is required");
        return false;
    }
    return true;
}

json_t *as_ssa_apply(const json_t *live, const json_t *applied, bool force, const as_ssa_ctx_t *ctx,
                     json_t **status_out, lop_err_t *err)
{
    if (status_out) *status_out = NULL;
    if (!check_applied(applied, ctx, err)) return NULL;
    const char *only_top = ctx->subresource && *ctx->subresource ? ctx->subresource : NULL;
    as_ssa_fs_schema_t sc = {ctx->builtin, ctx->kind, false};

    /* The configuration proper: no managedFields, and only the subresource's part. */
    json_t *cfg = json_deep_copy(applied);
    json_object_del(json_object_get(cfg, "metadata"), "managedFields");
    if (only_top && live) {
        json_t *part = json_object();
        json_t *v = json_object_get(cfg, only_top);
        if (v) json_object_set(part, only_top, v);
        json_decref(cfg);
        cfg = part;
    }
    json_t *base = without_managed(live);
    json_t *merged = merge_value(base, cfg, &sc, "");
    json_t *applied_set = as_ssa_fs_of_object(cfg, &sc, only_top);
    json_decref(cfg);

    as_ssa_mgrs_t ms;
    mgrs_decode(&ms, managed_fields_of(live));
    as_ssa_mgr_t *self = mgrs_find(&ms, ctx->manager, "Apply", NULL, ctx->subresource);

    /* Conflicts: fields other managers own whose value this apply changes. */
    json_t *conflicts = json_array();
    for (size_t i = 0; i < ms.n; i++) {
        if (&ms.v[i] == self) continue;
        json_t *c = as_ssa_fs_changed(ms.v[i].set, base, merged);
        json_t *owned = as_ssa_fs_intersect(c, applied_set);
        json_decref(c);
        if (!as_ssa_fs_empty(owned)) {
            json_array_append_new(conflicts, json_pack("{s:I,s:o}", "index", (json_int_t)i, "set", owned));
        } else {
            json_decref(owned);
        }
    }
    if (json_array_size(conflicts) && !force) {
        json_t *st = as_ssa_conflict_status(&ms, conflicts);
        lop_err_set(err, LOP_ECONFLICT, 409, "Conflict", "%s", json_string_value(json_object_get(st, "message")));
        if (status_out)
            *status_out = st;
        else
            json_decref(st);
        json_decref(conflicts);
        json_decref(applied_set);
        json_decref(merged);
        json_decref(base);
        as_ssa_mgrs_free(&ms);
        return NULL;
    }
    for (size_t i = 0; i < json_array_size(conflicts); i++) { /* force: take ownership */
        const json_t *c = json_array_get(conflicts, i);
        as_ssa_mgr_t *m = &ms.v[json_integer_value(json_object_get(c, "index"))];
        json_t *rest = as_ssa_fs_diff(m->set, json_object_get(c, "set"));
        json_decref(m->set);
        m->set = rest;
    }
    json_decref(conflicts);

    bool was_new = self == NULL;
    if (!self) self = mgrs_add(&ms, ctx->manager, "Apply", ctx->api_version, NULL, ctx->subresource, NULL);
    json_t *prev = self->set;
    self->set = applied_set;
    free(self->api_version);
    self->api_version = dup_or_empty(ctx->api_version);

    /* Remove what the manager applied before and no longer applies, unless someone else owns it. */
    json_t *others = json_object();
    for (size_t i = 0; i < ms.n; i++) {
        if (&ms.v[i] == self) continue;
        json_t *u = as_ssa_fs_union(others, ms.v[i].set);
        json_decref(others);
        others = u;
    }
    json_t *dropped = as_ssa_fs_diff(prev, applied_set);
    json_t *prune = as_ssa_fs_diff(dropped, others);
    protect_shared(prune, others);
    as_ssa_fs_remove(merged, prune);
    json_decref(dropped);
    json_decref(prune);
    json_decref(others);

    bool same_set = !was_new && json_equal(prev, self->set);
    bool same_obj = live && json_equal(base, merged);
    if (!(same_set && same_obj)) set_time_now(self, ctx);
    json_decref(prev);
    json_decref(base);

    mgrs_encode(&ms, merged);
    as_ssa_mgrs_free(&ms);
    return merged;
}

/* ------------------------------------------------------------------------------------------ */
/* Update tracking                                                                            */

void as_ssa_track_update(const json_t *old, json_t *new_obj, const as_ssa_ctx_t *ctx)
{
    if (!json_is_object(new_obj) || !ctx) return;
    const char *manager = ctx->manager && *ctx->manager ? ctx->manager : "unknown";
    const char *only_top = ctx->subresource && *ctx->subresource ? ctx->subresource : NULL;
    as_ssa_fs_schema_t sc = {ctx->builtin, ctx->kind, true};

    /* The request's managedFields win when it carries some ([{}] clears them); else keep old. */
    as_ssa_mgrs_t ms;
    const json_t *req_mf = managed_fields_of(new_obj);
    const json_t *old_mf = managed_fields_of(old);
    if (json_array_size(req_mf) > 0 && (!old_mf || !json_equal((json_t *)req_mf, (json_t *)old_mf)))
        mgrs_decode(&ms, req_mf);
    else
        mgrs_decode(&ms, managed_fields_of(old));

    json_t *newset = as_ssa_fs_of_object(new_obj, &sc, only_top);
    json_t *oldset = as_ssa_fs_of_object(old, &sc, only_top);
    json_t *changed = as_ssa_fs_changed(newset, old, new_obj);
    json_t *removed = as_ssa_fs_diff(oldset, newset);

    as_ssa_mgr_t *self = mgrs_find(&ms, manager, "Update", ctx->api_version, ctx->subresource);
    for (size_t i = 0; i < ms.n; i++) {
        if (&ms.v[i] == self) continue;
        json_t *rest = as_ssa_fs_diff(ms.v[i].set, changed);
        json_decref(ms.v[i].set);
        ms.v[i].set = rest;
    }
    if (!self && !as_ssa_fs_empty(changed))
        self = mgrs_add(&ms, manager, "Update", ctx->api_version, NULL, ctx->subresource, NULL);
    if (self) {
        json_t *u = as_ssa_fs_union(self->set, changed);
        json_t *next = as_ssa_fs_diff(u, removed);
        json_decref(u);
        if (!json_equal(next, self->set) || !as_ssa_fs_empty(changed)) set_time_now(self, ctx);
        json_decref(self->set);
        self->set = next;
    }
    json_decref(newset);
    json_decref(oldset);
    json_decref(changed);
    json_decref(removed);
    mgrs_encode(&ms, new_obj);
    as_ssa_mgrs_free(&ms);
}
