/* SPDX-License-Identifier: Apache-2.0 */
/*
 * patch_smp.c — strategic merge patch for built-in kinds (see patch.h).
 *
 * Maps merge recursively and null deletes, as in a merge patch. Lists follow the field's schema
 * (patch_schema.h): lists of objects with a merge key merge element by element (an element
 * carrying `$patch: delete` removes the live element with the same key; an element
 * `{"$patch": "replace"}` makes the rest of the patch list replace the live list), scalar sets
 * are unioned, and every other list is replaced. Map directives: `$patch: replace|delete|merge`,
 * `$retainKeys: [...]` (drop live keys not listed), `$deleteFromPrimitiveList/<f>: [...]`
 * (remove scalars from list f) and `$setElementOrder/<f>: [...]` (order of list f).
 */
#include "apiserver/patch.h"
#include "apiserver/patch_schema.h"

#include "host/util/buf.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEL_PREFIX   "$deleteFromPrimitiveList/"
#define ORDER_PREFIX "$setElementOrder/"

typedef struct smp {
    const char *kind;
    lop_err_t *err;
    bool failed;
} smp_t;

static void fail(smp_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(smp_t *s, const char *fmt, ...)
{
    if (s->failed) return;
    s->failed = true;
    char msg[sizeof s->err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lop_err_set(s->err, LOP_EINVAL, 400, "BadRequest", "%s", msg);
}

static char *child_path(const char *path, const char *key)
{
    lop_buf_t b = LOP_BUF_INIT;
    if (*path) lop_buf_printf(&b, "%s.", path);
    lop_buf_puts(&b, key);
    return lop_buf_steal(&b);
}

static const char *directive(const json_t *m) { return json_string_value(json_object_get(m, "$patch")); }

static json_t *merge_map(smp_t *s, const json_t *orig, const json_t *patch, const char *path, bool *deleted);

/* Index of the element of list whose merge key equals that of elem, or -1. */
static long find_by_key(const json_t *list, const char *key, const json_t *val)
{
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *v = json_object_get(json_array_get(list, i), key);
        if (v && json_equal((json_t *)v, (json_t *)val)) return (long)i;
    }
    return -1;
}

/* True when the list holds the `{"$patch": "replace"}` marker. */
static bool has_replace_marker(const json_t *list)
{
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *e = json_array_get(list, i);
        const char *d = directive(e);
        if (d && strcmp(d, "replace") == 0 && json_object_size(e) == 1) return true;
    }
    return false;
}

static json_t *merge_list_map(smp_t *s, const json_t *orig, const json_t *patch, const char *key, const char *path)
{
    bool replace = has_replace_marker(patch);
    json_t *out = (!replace && json_is_array(orig)) ? json_deep_copy(orig) : json_array();
    for (size_t i = 0; i < json_array_size(patch) && !s->failed; i++) {
        const json_t *e = json_array_get(patch, i);
        if (!json_is_object(e)) {
            fail(s, "invalid strategic merge patch: element of %s is not an object", path);
            break;
        }
        const char *d = directive(e);
        if (d && strcmp(d, "replace") == 0 && json_object_size(e) == 1) continue;
        const json_t *mk = json_object_get(e, key);
        if (!mk) {
            fail(s, "map in list %s does not contain declared merge key: %s", path, key);
            break;
        }
        long at = find_by_key(out, key, mk);
        if (d && strcmp(d, "delete") == 0) {
            while (at >= 0) {
                json_array_remove(out, (size_t)at);
                at = find_by_key(out, key, mk);
            }
            continue;
        }
        bool del = false;
        json_t *merged = merge_map(s, at >= 0 ? json_array_get(out, (size_t)at) : NULL, e, path, &del);
        if (!merged) {
            if (del && at >= 0) json_array_remove(out, (size_t)at);
            continue;
        }
        if (at >= 0)
            json_array_set_new(out, (size_t)at, merged);
        else
            json_array_append_new(out, merged);
    }
    if (s->failed) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static bool list_contains(const json_t *list, const json_t *v)
{
    for (size_t i = 0; i < json_array_size(list); i++)
        if (json_equal(json_array_get(list, i), (json_t *)v)) return true;
    return false;
}

static json_t *merge_list_set(const json_t *orig, const json_t *patch)
{
    bool replace = has_replace_marker(patch);
    json_t *out = (!replace && json_is_array(orig)) ? json_deep_copy(orig) : json_array();
    for (size_t i = 0; i < json_array_size(patch); i++) {
        json_t *v = json_array_get(patch, i);
        if (json_is_object(v) && directive(v)) continue;
        if (!list_contains(out, v)) json_array_append(out, v);
    }
    return out;
}

/* Does element e of the list correspond to order entry o? */
static bool order_matches(const json_t *e, const json_t *o, const char *key)
{
    if (!key) return json_equal((json_t *)e, (json_t *)o);
    const json_t *a = json_object_get(e, key), *b = json_object_get(o, key);
    return a && b && json_equal((json_t *)a, (json_t *)b);
}

/* Reorder list by order; elements not named keep their place after their live predecessor. */
static json_t *apply_order(const json_t *list, const json_t *order, const char *key)
{
    size_t n = json_array_size(list);
    bool *used = lop_xcalloc(n ? n : 1, sizeof *used);
    long *pos = lop_xcalloc(n ? n : 1, sizeof *pos); /* position in out, -1 = not yet placed */
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) pos[i] = -1;
    for (size_t j = 0; j < json_array_size(order); j++) {
        for (size_t i = 0; i < n; i++) {
            if (used[i] || !order_matches(json_array_get(list, i), json_array_get(order, j), key)) continue;
            used[i] = true;
            json_array_append(out, json_array_get(list, i));
            break;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!used[i]) continue;
        for (size_t k = 0; k < json_array_size(out); k++)
            if (json_array_get(out, k) == json_array_get(list, i)) pos[i] = (long)k;
    }
    for (size_t i = 0; i < n; i++) {
        if (used[i]) continue;
        long at = 0;
        for (size_t p = i; p-- > 0;)
            if (pos[p] >= 0) {
                at = pos[p] + 1;
                break;
            }
        json_array_insert(out, (size_t)at, json_array_get(list, i));
        for (size_t q = 0; q < n; q++)
            if (pos[q] >= at) pos[q]++;
        pos[i] = at;
        used[i] = true;
    }
    free(used);
    free(pos);
    return out;
}

static void delete_from_list(json_t *out, const char *field, const json_t *vals)
{
    json_t *list = json_object_get(out, field);
    if (!json_is_array(list)) return;
    for (size_t i = json_array_size(list); i-- > 0;)
        if (list_contains(vals, json_array_get(list, i))) json_array_remove(list, i);
}

static void merge_field(smp_t *s, json_t *out, const char *k, const json_t *v, const char *path)
{
    char *cp = child_path(path, k);
    json_t *cur = json_object_get(out, k);
    if (json_is_null(v)) {
        json_object_del(out, k);
    } else if (json_is_object(v)) {
        bool del = false;
        json_t *m = merge_map(s, json_is_object(cur) ? cur : NULL, v, cp, &del);
        if (m)
            json_object_set_new(out, k, m);
        else if (del)
            json_object_del(out, k);
    } else if (json_is_array(v)) {
        const char *const *keys = NULL;
        as_patch_list_type_t lt = as_patch_builtin_list_type(s->kind, cp, &keys);
        json_t *m = NULL;
        if (lt == AS_PATCH_LIST_MAP)
            m = merge_list_map(s, json_is_array(cur) ? cur : NULL, v, keys[0], cp);
        else if (lt == AS_PATCH_LIST_SET)
            m = merge_list_set(json_is_array(cur) ? cur : NULL, v);
        else
            m = json_deep_copy(v);
        if (m) json_object_set_new(out, k, m);
    } else {
        json_object_set_new(out, k, json_deep_copy(v));
    }
    free(cp);
}

/*
 * Merge patch map into orig (NULL = absent). Returns a new object, or NULL when the map is to be
 * deleted (*deleted = true) or on error (s->failed).
 */
static json_t *merge_map(smp_t *s, const json_t *orig, const json_t *patch, const char *path, bool *deleted)
{
    *deleted = false;
    const char *d = directive(patch);
    if (json_object_get(patch, "$patch") && !d) {
        fail(s, "invalid strategic merge patch: $patch in %s must be a string", path);
        return NULL;
    }
    if (d && strcmp(d, "delete") == 0) {
        *deleted = true;
        return NULL;
    }
    if (d && strcmp(d, "replace") == 0) {
        json_t *out = json_deep_copy(patch);
        json_object_del(out, "$patch");
        return out;
    }
    if (d && strcmp(d, "merge") != 0) {
        fail(s, "Unknown patch type: %s in map at %s", d, path);
        return NULL;
    }
    json_t *out = orig ? json_deep_copy(orig) : json_object();
    const json_t *retain = json_object_get(patch, "$retainKeys");
    if (retain) {
        if (!json_is_array(retain)) {
            fail(s, "invalid strategic merge patch: $retainKeys in %s must be a list", path);
            json_decref(out);
            return NULL;
        }
        const char *k;
        json_t *v, *tmp;
        json_object_foreach_safe(out, tmp, k, v)
        {
            bool keep = false;
            for (size_t i = 0; i < json_array_size(retain) && !keep; i++)
                keep = json_is_string(json_array_get(retain, i)) &&
                       strcmp(json_string_value(json_array_get(retain, i)), k) == 0;
            if (!keep) json_object_del(out, k);
        }
    }
    const char *k;
    json_t *v;
    /* 1: deletions from scalar lists, 2: fields, 3: element order. */
    json_object_foreach((json_t *)patch, k, v)
    {
        if (strncmp(k, DEL_PREFIX, strlen(DEL_PREFIX)) != 0) continue;
        if (!json_is_array(v)) {
            fail(s, "invalid strategic merge patch: %s in %s must be a list", k, path);
            break;
        }
        delete_from_list(out, k + strlen(DEL_PREFIX), v);
    }
    json_object_foreach((json_t *)patch, k, v)
    {
        if (s->failed) break;
        if (k[0] == '$') continue;
        merge_field(s, out, k, v, path);
    }
    json_object_foreach((json_t *)patch, k, v)
    {
        if (s->failed || strncmp(k, ORDER_PREFIX, strlen(ORDER_PREFIX)) != 0) continue;
        const char *field = k + strlen(ORDER_PREFIX);
        json_t *list = json_object_get(out, field);
        if (!json_is_array(v)) {
            fail(s, "invalid strategic merge patch: %s in %s must be a list", k, path);
            break;
        }
        if (!json_is_array(list)) continue;
        char *cp = child_path(path, field);
        const char *const *keys = NULL;
        as_patch_list_type_t lt = as_patch_builtin_list_type(s->kind, cp, &keys);
        free(cp);
        json_object_set_new(out, field, apply_order(list, v, lt == AS_PATCH_LIST_MAP ? keys[0] : NULL));
    }
    if (s->failed) {
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *as_patch_strategic(const json_t *target, const json_t *patch, const char *api_version, const char *kind,
                           lop_err_t *err)
{
    if (!json_is_object(patch)) {
        lop_err_set(err, LOP_EINVAL, 400, "BadRequest",
                    "invalid strategic merge patch: the patch must be a JSON object");
        return NULL;
    }
    (void)api_version;
    smp_t s = {kind, err, false};
    bool deleted = false;
    json_t *out = merge_map(&s, json_is_object(target) ? target : NULL, patch, "", &deleted);
    if (!out && deleted) return json_object();
    return out;
}

int as_patch_strategic_supported(const char *api_version, const char *kind)
{
    return kind && *kind && as_patch_builtin_api_version(api_version);
}
