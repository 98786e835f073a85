/* object.c — immutable, refcounted cache entries (see object.h). */
#include "host/kube/object.h"

#include "host/kube/jsonscan.h"
#include "host/util/buf.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decode a JSON string value at p[s..e) into a new malloc'd C string; NULL if not a string. */
static char *decode_str(const char *p, size_t s, size_t e)
{
    if (e - s < 2 || p[s] != '"')
        return NULL;
    if (!memchr(p + s, '\\', e - s))
        return lop_xstrndup(p + s + 1, e - s - 2);
    json_t *j = json_loadb(p + s, e - s, JSON_DECODE_ANY, NULL);
    char *r = j && json_is_string(j) ? lop_xstrdup(json_string_value(j)) : NULL;
    json_decref(j);
    return r;
}

static const char *str_or_empty(const json_t *o, const char *k, bool *bad)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v))
        return "";
    if (!json_is_string(v)) {
        *bad = true;
        return "";
    }
    return json_string_value(v);
}

static lop_rc_t fill_meta(lop_obj_t *o, lop_err_t *err)
{
    json_t *m = o->meta_;
    bool bad = false;
    o->namespace_ = str_or_empty(m, "namespace", &bad);
    o->name = str_or_empty(m, "name", &bad);
    o->uid = str_or_empty(m, "uid", &bad);
    o->rv = str_or_empty(m, "resourceVersion", &bad);
    if (bad)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata: name, namespace, uid and resourceVersion must be strings");
    json_t *g = json_object_get(m, "generation");
    if (g && json_is_integer(g))
        o->generation = json_integer_value(g);
    else if (g && !json_is_null(g))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.generation is not an integer");
    json_t *dt = json_object_get(m, "deletionTimestamp");
    o->deleting = dt && !json_is_null(dt);

    json_t *labels = json_object_get(m, "labels"), *ann = json_object_get(m, "annotations");
    if (labels && json_is_null(labels))
        labels = NULL;
    if (ann && json_is_null(ann))
        ann = NULL;
    if ((labels && !json_is_object(labels)) || (ann && !json_is_object(ann)))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.labels/annotations is not an object");
    size_t nl = labels ? json_object_size(labels) : 0, na = ann ? json_object_size(ann) : 0;
    if (nl + na) {
        o->kv_ = lop_xcalloc(nl + na, sizeof *o->kv_);
        const char *k;
        json_t *v;
        size_t i = 0;
        json_object_foreach(labels, k, v) {
            if (!json_is_string(v))
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.labels[%s] is not a string", k);
            o->kv_[i++] = (lop_kv_t){k, json_string_value(v)};
        }
        json_object_foreach(ann, k, v) {
            if (!json_is_string(v))
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.annotations[%s] is not a string", k);
            o->kv_[i++] = (lop_kv_t){k, json_string_value(v)};
        }
    }
    o->labels = o->kv_;
    o->nlabels = nl;
    o->annotations = o->kv_ ? o->kv_ + nl : NULL;
    o->nannotations = na;

    json_t *owners = json_object_get(m, "ownerReferences");
    if (owners && json_is_null(owners))
        owners = NULL;
    if (owners && !json_is_array(owners))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences is not an array");
    size_t no = owners ? json_array_size(owners) : 0;
    if (no) {
        o->uids_ = lop_xcalloc(no, sizeof *o->uids_);
        for (size_t i = 0; i < no; i++) {
            json_t *r = json_array_get(owners, i);
            if (!json_is_object(r))
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences[%zu] is not an object", i);
            lop_owner_ref_t ref = {str_or_empty(r, "apiVersion", &bad), str_or_empty(r, "kind", &bad),
                                   str_or_empty(r, "name", &bad), str_or_empty(r, "uid", &bad)};
            if (bad)
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata.ownerReferences[%zu] has a non-string field", i);
            o->uids_[i] = ref.uid;
            if (!o->has_controller && json_is_true(json_object_get(r, "controller"))) {
                o->has_controller = true;
                o->controller = ref;
            }
        }
    }
    o->owner_uids = o->uids_;
    o->nowners = no;
    if (!o->has_controller)
        o->controller = (lop_owner_ref_t){"", "", "", ""};
    o->metadata = m;
    return LOP_OK;
}

lop_rc_t lop_obj_new_item(const char *json, size_t len, int flags, const char *dflt_api_version,
                          const char *dflt_kind, lop_obj_t **out, lop_err_t *err)
{
    /* one pass over the top-level members validates the whole document */
    lop_jscan_iter_t it;
    if (!json || lop_jscan_object_begin(&it, json, len, 0) != 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object is not a JSON object");
    size_t s = lop_jscan_ws(json, len, 0), ms = 0, me = 0, as = 0, ae = 0, ks = 0, ke = 0;
    int r;
    while ((r = lop_jscan_object_next(&it)) == 1) {
        if (lop_jscan_key_is(&it, "metadata"))
            ms = it.val_start, me = it.val_end;
        else if (lop_jscan_key_is(&it, "apiVersion"))
            as = it.val_start, ae = it.val_end;
        else if (lop_jscan_key_is(&it, "kind"))
            ks = it.val_start, ke = it.val_end;
    }
    if (r < 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object: malformed or truncated JSON");
    size_t e = it.pos;
    if (lop_jscan_ws(json, len, e) != len)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object: trailing bytes after the JSON object");
    if (me && json[ms] != '{')
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata is not an object");

    /* managedFields: splice the member (and one adjacent comma) out of the metadata bytes */
    size_t cut_s = 0, cut_e = 0;
    if (me && !(flags & LOP_OBJ_KEEP_MANAGED_FIELDS)) {
        lop_jscan_object_begin(&it, json, len, ms);
        size_t prev_end = 0;
        bool first = true;
        while (lop_jscan_object_next(&it) == 1) {
            if (lop_jscan_key_is(&it, "managedFields")) {
                if (!first) {
                    cut_s = prev_end; /* from the end of the previous value: ",\"managedFields\":[...]" */
                    cut_e = it.val_end;
                } else {
                    cut_s = it.member_start;
                    size_t j = lop_jscan_ws(json, len, it.val_end);
                    cut_e = json[j] == ',' ? lop_jscan_ws(json, len, j + 1) : it.val_end;
                }
                break;
            }
            first = false;
            prev_end = it.val_end;
        }
    }

    char *api_version = as ? decode_str(json, as, ae) : NULL;
    char *kind = ks ? decode_str(json, ks, ke) : NULL;
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_reserve(&b, len + 64);
    lop_buf_append(&b, json + s, 1); /* '{' */
    /* list items of built-in kinds carry no kind/apiVersion: add the list's */
    if (!as && dflt_api_version && *dflt_api_version) {
        lop_buf_puts(&b, "\"apiVersion\":");
        lop_buf_json_str(&b, dflt_api_version, strlen(dflt_api_version));
        lop_buf_putc(&b, ',');
        api_version = lop_xstrdup(dflt_api_version);
    }
    if (!ks && dflt_kind && *dflt_kind) {
        lop_buf_puts(&b, "\"kind\":");
        lop_buf_json_str(&b, dflt_kind, strlen(dflt_kind));
        lop_buf_putc(&b, ',');
        kind = lop_xstrdup(dflt_kind);
    }
    size_t body = s + 1;
    if (b.len > 1 && json[lop_jscan_ws(json, len, body)] == '}')
        b.len--; /* empty object: drop our trailing comma */
    size_t prefix = b.len, cut = cut_e > cut_s ? cut_e - cut_s : 0;
    if (cut) {
        lop_buf_append(&b, json + body, cut_s - body);
        lop_buf_append(&b, json + cut_e, e - cut_e);
    } else {
        lop_buf_append(&b, json + body, e - body);
    }
    /* where metadata now sits in b (the cut, if any, lies inside it) */
    size_t new_ms = me ? prefix + (ms - body) : 0, new_me = me ? prefix + (me - body) - cut : 0;

    lop_obj_t *o = lop_xcalloc(1, sizeof *o);
    o->refs_ = 1;
    o->json_len = b.len;
    o->json = lop_buf_steal(&b);
    size_t al = api_version ? strlen(api_version) : 0, kl = kind ? strlen(kind) : 0;
    o->strs_ = lop_xmalloc(al + kl + 2);
    memcpy(o->strs_, api_version ? api_version : "", al + 1);
    memcpy(o->strs_ + al + 1, kind ? kind : "", kl + 1);
    o->api_version = o->strs_;
    o->kind = o->strs_ + al + 1;
    free(api_version);
    free(kind);

    json_error_t jerr;
    o->meta_ = me ? json_loadb(o->json + new_ms, new_me - new_ms, 0, &jerr) : json_object();
    lop_rc_t rc = LOP_OK;
    if (!o->meta_)
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata: %s", jerr.text);
    else if (!json_is_object(o->meta_))
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "object metadata is not an object");
    else
        rc = fill_meta(o, err);
    if (rc != LOP_OK) {
        lop_obj_unref(o);
        return rc;
    }
    *out = o;
    return LOP_OK;
}

lop_rc_t lop_obj_new(const char *json, size_t len, int flags, lop_obj_t **out, lop_err_t *err)
{
    return lop_obj_new_item(json, len, flags, NULL, NULL, out, err);
}

lop_obj_t *lop_obj_ref(lop_obj_t *o)
{
    atomic_fetch_add_explicit((_Atomic int *)&o->refs_, 1, memory_order_relaxed);
    return o;
}

void lop_obj_unref(lop_obj_t *o)
{
    if (!o)
        return;
    if (atomic_fetch_sub_explicit((_Atomic int *)&o->refs_, 1, memory_order_acq_rel) != 1)
        return;
    json_decref(o->meta_);
    free(o->kv_);
    free(o->uids_);
    free(o->strs_);
    free((char *)o->json);
    free(o);
}

int lop_obj_key(const lop_obj_t *o, char *buf, size_t len)
{
    if (o->namespace_[0])
        return snprintf(buf, len, "%s/%s", o->namespace_, o->name);
    return snprintf(buf, len, "%s", o->name);
}

static const char *kv_find(const lop_kv_t *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kv[i].key, key) == 0)
            return kv[i].value;
    return NULL;
}

const char *lop_obj_label(const lop_obj_t *o, const char *key) { return kv_find(o->labels, o->nlabels, key); }
const char *lop_obj_annotation(const lop_obj_t *o, const char *key)
{
    return kv_find(o->annotations, o->nannotations, key);
}

bool lop_obj_owned_by(const lop_obj_t *o, const char *uid)
{
    for (size_t i = 0; i < o->nowners; i++)
        if (strcmp(o->owner_uids[i], uid) == 0)
            return true;
    return false;
}
