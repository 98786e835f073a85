/* SPDX-License-Identifier: Apache-2.0 */
/* as_write_checks.c — checks and bookkeeping around a write: Go-decoder type checks on metadata,
 * fieldValidation handling of unknown fields and the managedFields the server never
 * records (reset fields and pruned fields). */
#include "apiserver/as_write_checks.h"

#include "apiserver/as_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reject metadata whose JSON types a Go decoder would refuse (400, as the real decode error). */
int as_check_meta_types(as_req_t *q, const json_t *obj)
{
    const json_t *m = json_object_get(obj, "metadata");
    const char *bad = NULL;
    const char *strs[] = {"name", "generateName", "namespace", "uid", "resourceVersion", NULL};
    for (int i = 0; strs[i] && !bad; i++) {
        json_t *v = json_object_get(m, strs[i]);
        if (v && !json_is_string(v) && !json_is_null(v)) bad = strs[i];
    }
    const char *maps[] = {"labels", "annotations", NULL};
    for (int i = 0; maps[i] && !bad; i++) {
        json_t *v = json_object_get(m, maps[i]);
        if (v && json_is_null(v)) continue;
        if (v && !json_is_object(v)) bad = maps[i];
        const char *k;
        json_t *e;
        json_object_foreach(json_is_object(v) ? v : NULL, k, e)
        {
            if (!json_is_string(e)) bad = maps[i];
        }
    }
    json_t *f = json_object_get(m, "finalizers");
    if (!bad && f && !json_is_null(f)) {
        size_t i;
        json_t *e;
        if (!json_is_array(f)) bad = "finalizers";
        json_array_foreach(f, i, e)
        {
            if (!json_is_string(e)) bad = "finalizers";
        }
    }
    json_t *o = json_object_get(m, "ownerReferences");
    if (!bad && o && !json_is_null(o) && !json_is_array(o)) bad = "ownerReferences";
    if (!bad) return 0;
    as_reply_status(q, 400, "BadRequest", NULL,
                    "%s in version \"%s\" cannot be handled as a %s: json: cannot unmarshal into "
                    "Go struct field ObjectMeta.metadata.%s: wrong type",
                    q->res->kind, q->res->version, q->res->kind, bad);
    return -1;
}

/* Remove from a FieldsV1 tree the member at a dotted path ("spec.junk"; list paths skipped). */
static void fieldsv1_remove_path(json_t *f, const char *path)
{
    if (strchr(path, '[')) return;
    char seg[300];
    const char *p = path;
    json_t *cur = f;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        snprintf(seg, sizeof seg, "f:%.*s", (int)len, p);
        if (!dot) {
            json_object_del(cur, seg);
            return;
        }
        cur = json_object_get(cur, seg);
        if (!json_is_object(cur)) return;
        p = dot + 1;
    }
}

/* Ownership the server never records (reset fields): main-endpoint managers never own .status
 * when the status subresource is on; /status managers own only .status; nobody owns fields that
 * pruning removed. Entries left empty are dropped. */
void as_ssa_scrub_managed_fields(json_t *obj, bool has_status, bool status_sub, const json_t *pruned)
{
    json_t *mf = json_object_get(json_object_get(obj, "metadata"), "managedFields");
    if (!json_is_array(mf)) return;
    for (size_t i = json_array_size(mf); i-- > 0;) {
        json_t *e = json_array_get(mf, i);
        json_t *f = json_object_get(e, "fieldsV1");
        if (!json_is_object(f)) continue;
        const char *sub = json_string_value(json_object_get(e, "subresource"));
        bool is_status_entry = sub && !strcmp(sub, "status");
        json_t *nf = json_deep_copy(f);
        if (has_status && !sub) json_object_del(nf, "f:status");
        if (is_status_entry && status_sub) {
            json_t *st = json_object_get(nf, "f:status");
            json_t *only = json_object();
            if (st) json_object_set(only, "f:status", st);
            json_decref(nf);
            nf = only;
        }
        size_t k;
        json_t *p;
        json_array_foreach(pruned, k, p) { fieldsv1_remove_path(nf, json_string_value(p)); }
        /* drop now-empty parents one level down (f:spec with nothing in it) */
        const char *key;
        json_t *child;
        void *tmp;
        json_object_foreach_safe(nf, tmp, key, child)
        {
            if (json_is_object(child) && json_object_size(child) == 0 && strcmp(key, ".")) json_object_del(nf, key);
        }
        if (json_object_size(nf) == 0) {
            json_array_remove(mf, i);
        } else {
            json_object_set_new(e, "fieldsV1", nf);
            continue;
        }
        json_decref(nf);
    }
    if (json_array_size(mf) == 0) json_object_del(json_object_get(obj, "metadata"), "managedFields");
}

/* fieldValidation: Strict → 400 naming every unknown field, Warn (default) → one Warning
 * header per field, Ignore → nothing. Returns -1 when it replied. */
int as_report_unknown_fields(as_req_t *q, json_t *pruned)
{
    const char *fv = as_query(q, "fieldValidation");
    if (json_array_size(pruned) == 0 || (fv && !strcmp(fv, "Ignore"))) return 0;
    size_t i;
    json_t *v;
    if (fv && !strcmp(fv, "Strict")) {
        lop_buf_t b = LOP_BUF_INIT;
        json_array_foreach(pruned, i, v)
        {
            lop_buf_printf(&b, "%sunknown field \"%s\"", i ? ", " : "", json_string_value(v));
        }
        /* a create or update says what could not be decoded (create.go's transformDecodeError) */
        if ((q->method == EVHTTP_REQ_POST || q->method == EVHTTP_REQ_PUT) && q->res)
            as_reply_status(q, 400, "BadRequest", NULL,
                            "%s in version \"%s\" cannot be handled as a %s: strict "
                            "decoding error: %s",
                            q->res->kind, q->res->version, q->res->kind, b.data);
        else
            as_reply_status(q, 400, "BadRequest", NULL, "strict decoding error: %s", b.data);
        lop_buf_free(&b);
        return -1;
    }
    json_array_foreach(pruned, i, v)
    {
        char w[600];
        snprintf(w, sizeof w, "unknown field \"%s\"", json_string_value(v));
        as_add_warning(q, w);
    }
    return 0;
}

/* -1 (replied 422) when fieldValidation has an unknown value. */
int as_check_field_validation(as_req_t *q)
{
    const char *fv = as_query(q, "fieldValidation");
    if (!fv || !strcmp(fv, "Ignore") || !strcmp(fv, "Warn") || !strcmp(fv, "Strict")) return 0;
    char d[300];
    snprintf(d, sizeof d, "Unsupported value: \"%s\": supported values: \"Ignore\", \"Strict\", \"Warn\"", fv);
    as_reply_invalid(q, "CreateOptions.meta.k8s.io", "CreateOptions", "meta.k8s.io", "", "FieldValueNotSupported",
                     "fieldValidation", d);
    return -1;
}
