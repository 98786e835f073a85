/* SPDX-License-Identifier: Apache-2.0 */
/* as_select.c — label/field selectors of list, watch and delete-collection requests: parsing,
 * the supported fields of each resource, matching. See as_select.h. */
#include "apiserver/as_select.h"

#include "apiserver/as_status.h"
#include "apiserver/as_util.h"

#include <stdio.h>
#include <string.h>

typedef struct field_ud {
    const json_t *obj;
    char num[64];
} field_ud_t;

static const char *field_lookup(void *ud, const char *key)
{
    field_ud_t *f = ud;
    const json_t *v = as_path_get(f->obj, key);
    if (json_is_string(v)) return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(f->num, sizeof f->num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return f->num;
    }
    if (json_is_boolean(v)) return json_is_true(v) ? "true" : "false";
    return NULL;
}

bool as_obj_matches(as_res_t *res, const char *ns, lop_label_selector_t *ls, lop_field_selector_t *fs,
                    const json_t *obj)
{
    (void)res;
    if (!obj) return false;
    if (ns) {
        const char *ons = as_meta_str(obj, "namespace");
        if (!ons || strcmp(ons, ns)) return false;
    }
    if (ls && !lop_label_selector_empty(ls)) {
        const json_t *m = json_object_get(obj, "metadata");
        if (!lop_label_selector_match_json(ls, m ? json_object_get(m, "labels") : NULL)) return false;
    }
    if (fs && !lop_field_selector_empty(fs)) {
        field_ud_t f = {.obj = obj};
        if (!lop_field_selector_match(fs, field_lookup, &f)) return false;
    }
    return true;
}

static int check_field_selector(as_req_t *q, lop_field_selector_t *fs)
{
    as_res_t *res = q->res;
    for (size_t i = 0; i < lop_field_selector_count(fs); i++) {
        const char *f = lop_field_selector_field(fs, i);
        bool ok = !strcmp(f, "metadata.name") || !strcmp(f, "metadata.namespace");
        for (const char *const *e = res->extra_fields; e && *e && !ok; e++) ok = !strcmp(*e, f);
        if (res->selectable && !ok) {
            size_t j;
            json_t *v;
            json_array_foreach(res->selectable, j, v)
            {
                const char *p = json_string_value(v);
                if (p && *p == '.') p++;
                if (p && !strcmp(p, f)) ok = true;
            }
        }
        if (!ok) {
            if (res->is_cr)
                as_reply_status(q, 400, "BadRequest", NULL, "field label not supported: %s", f);
            else
                as_reply_status(q, 400, "BadRequest", NULL,
                                "\"%s\" is not a known field selector: only \"metadata.name\", "
                                "\"metadata.namespace\"",
                                f);
            return -1;
        }
    }
    return 0;
}

int as_parse_selectors(as_req_t *q, lop_label_selector_t **ls, lop_field_selector_t **fs)
{
    lop_err_t err;
    *ls = NULL;
    *fs = NULL;
    if (lop_label_selector_parse(as_query(q, "labelSelector"), ls, &err) != LOP_OK) {
        as_reply_status(q, 400, "BadRequest", NULL, "%s", err.message);
        return -1;
    }
    if (lop_field_selector_parse(as_query(q, "fieldSelector"), fs, &err) != LOP_OK) {
        lop_label_selector_free(*ls);
        *ls = NULL;
        as_reply_status(q, 400, "BadRequest", NULL, "%s", err.message);
        return -1;
    }
    if (check_field_selector(q, *fs) < 0) {
        lop_label_selector_free(*ls);
        lop_field_selector_free(*fs);
        *ls = NULL;
        *fs = NULL;
        return -1;
    }
    return 0;
}
