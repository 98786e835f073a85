/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssa_fieldset.c — field sets for server-side apply (see ssa_fieldset.h).
 */
#include "apiserver/ssa_fieldset.h"

#include "apiserver/patch_schema.h"
#include "host/util/buf.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Conversion and algebra                                                                     */

static bool is_member(const json_t *n) { return json_object_get(n, ".") != NULL; }

static json_t *member_leaf(void)
{
    json_t *n = json_object();
    json_object_set_new(n, ".", json_object());
    return n;
}

json_t *as_ssa_fs_from_fieldsv1(const json_t *f)
{
    json_t *out = json_object();
    if (!json_is_object(f)) return out;
    if (json_object_size(f) == 0) {
        json_object_set_new(out, ".", json_object());
        return out;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)f, k, v)
    {
        if (strcmp(k, ".") == 0) {
            json_object_set_new(out, ".", json_object());
            continue;
        }
        json_t *c = as_ssa_fs_from_fieldsv1(v);
        if (json_object_size(c))
            json_object_set_new(out, k, c);
        else
            json_decref(c);
    }
    return out;
}

json_t *as_ssa_fs_to_fieldsv1(const json_t *s)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    size_t children = 0;
    json_object_foreach((json_t *)s, k, v)
    {
        if (strcmp(k, ".") == 0) continue;
        json_object_set_new(out, k, as_ssa_fs_to_fieldsv1(v));
        children++;
    }
    if (children && is_member(s)) json_object_set_new(out, ".", json_object());
    return out;
}

bool as_ssa_fs_empty(const json_t *s) { return !s || json_object_size(s) == 0; }

json_t *as_ssa_fs_union(const json_t *a, const json_t *b)
{
    json_t *out = a ? json_deep_copy(a) : json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)b, k, v)
    {
        if (strcmp(k, ".") == 0) {
            json_object_set_new(out, ".", json_object());
            continue;
        }
        json_object_set_new(out, k, as_ssa_fs_union(json_object_get(out, k), v));
    }
    return out;
}

/* op: 'd' = a minus b, 'i' = a intersect b. */
static json_t *combine(const json_t *a, const json_t *b, char op)
{
    json_t *out = json_object();
    if (!a) return out;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v)
    {
        if (strcmp(k, ".") == 0) {
            bool in_b = b && is_member(b);
            if ((op == 'd') != in_b) json_object_set_new(out, ".", json_object());
            continue;
        }
        const json_t *bv = b ? json_object_get(b, k) : NULL;
        json_t *c;
        if (!bv)
            c = op == 'd' ? json_deep_copy(v) : json_object();
        else
            c = combine(v, bv, op);
        if (json_object_size(c))
            json_object_set_new(out, k, c);
        else
            json_decref(c);
    }
    return out;
}

json_t *as_ssa_fs_diff(const json_t *a, const json_t *b) { return combine(a, b, 'd'); }

json_t *as_ssa_fs_intersect(const json_t *a, const json_t *b) { return combine(a, b, 'i'); }

/* ------------------------------------------------------------------------------------------ */
/* Field sets of objects                                                                      */

static const char *const server_meta[] = {"name",
                                          "namespace",
                                          "uid",
                                          "resourceVersion",
                                          "generation",
                                          "creationTimestamp",
                                          "deletionTimestamp",
                                          "deletionGracePeriodSeconds",
                                          "selfLink",
                                          "managedFields"};

static bool skipped(const char *path, const char *k)
{
    if (!*path) return strcmp(k, "apiVersion") == 0 || strcmp(k, "kind") == 0;
    if (strcmp(path, "metadata") != 0) return false;
    for (size_t i = 0; i < sizeof server_meta / sizeof server_meta[0]; i++)
        if (strcmp(server_meta[i], k) == 0) return true;
    return false;
}

static char *dump(const json_t *v) { return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS); }

static char *prefixed(const char *prefix, const json_t *v)
{
    char *s = dump(v);
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_printf(&b, "%s%s", prefix, s ? s : "null");
    free(s);
    return lop_buf_steal(&b);
}

/* "k:{...}" for an element of an associative list, or NULL if it has none of the keys. */
static char *item_key(const json_t *elem, const char *const *keys)
{
    if (!json_is_object(elem)) return NULL;
    json_t *k = json_object();
    for (size_t i = 0; keys[i]; i++) {
        json_t *v = json_object_get(elem, keys[i]);
        if (v) json_object_set(k, keys[i], v);
    }
    char *s = json_object_size(k) ? prefixed("k:", k) : NULL;
    json_decref(k);
    return s;
}

static json_t *fs_of_map(const json_t *obj, const as_ssa_fs_schema_t *sc, const char *path, const char *only_top);

/* Built-in fields that are string maps (not structs): an Update that creates one owns it too. */
static bool is_builtin_map(const as_ssa_fs_schema_t *sc, const char *path)
{
    static const char *const names[] = {"labels",      "annotations",  "data",   "binaryData", "stringData",
                                        "matchLabels", "nodeSelector", "limits", "requests"};
    if (!sc->builtin || !sc->mark_maps) return false;
    const char *dot = strrchr(path, '.');
    const char *last = dot ? dot + 1 : path;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i], last) == 0) return true;
    return sc->kind && strcmp(path, "spec.selector") == 0 &&
           (strcmp(sc->kind, "Service") == 0 || strcmp(sc->kind, "ReplicationController") == 0);
}

static json_t *fs_of_value(const json_t *v, const as_ssa_fs_schema_t *sc, const char *path)
{
    if (json_is_object(v)) {
        if (json_object_size(v) == 0) return member_leaf(); /* {} is a value of its own */
        json_t *sub = fs_of_map(v, sc, path, NULL);         /* empty when every key is server-owned */
        if (json_object_size(sub) && is_builtin_map(sc, path)) json_object_set_new(sub, ".", json_object());
        return sub;
    }
    if (!json_is_array(v) || json_array_size(v) == 0 || !sc->builtin) return member_leaf();
    const char *const *keys = NULL;
    as_patch_list_type_t lt = as_patch_builtin_list_type(sc->kind, path, &keys);
    if (lt == AS_PATCH_LIST_ATOMIC) return member_leaf();
    json_t *node = json_object();
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i);
        char *key = NULL;
        if (lt == AS_PATCH_LIST_MAP)
            key = item_key(e, keys);
        else if (!json_is_object(e) && !json_is_array(e))
            key = prefixed("v:", e);
        if (!key) { /* not shaped as the schema says: own the list as a whole */
            json_decref(node);
            return member_leaf();
        }
        json_t *item = lt == AS_PATCH_LIST_MAP ? fs_of_map(e, sc, path, NULL) : json_object();
        json_object_set_new(item, ".", json_object());
        json_object_set_new(node, key, item);
        free(key);
    }
    return node;
}

static json_t *fs_of_map(const json_t *obj, const as_ssa_fs_schema_t *sc, const char *path, const char *only_top)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        if (skipped(path, k)) continue;
        if (!*path && only_top && strcmp(k, only_top) != 0) continue;
        lop_buf_t cp = LOP_BUF_INIT;
        if (*path) lop_buf_printf(&cp, "%s.", path);
        lop_buf_puts(&cp, k);
        lop_buf_t key = LOP_BUF_INIT;
        lop_buf_printf(&key, "f:%s", k);
        json_t *child = fs_of_value(v, sc, cp.data);
        if (json_object_size(child))
            json_object_set_new(out, key.data, child);
        else
            json_decref(child);
        lop_buf_free(&key);
        lop_buf_free(&cp);
    }
    return out;
}

json_t *as_ssa_fs_of_object(const json_t *obj, const as_ssa_fs_schema_t *sc, const char *only_top)
{
    if (!json_is_object(obj)) return json_object();
    return fs_of_map(obj, sc, "", only_top);
}

/* ------------------------------------------------------------------------------------------ */
/* Navigation                                                                                 */

/* Index of the element of list named by path element pe ("k:", "v:", "i:"), or -1. */
static long find_item(const json_t *list, const char *pe)
{
    if (!json_is_array(list)) return -1;
    if (strncmp(pe, "i:", 2) == 0) {
        char *end = NULL;
        long i = strtol(pe + 2, &end, 10);
        return (end && !*end && i >= 0 && (size_t)i < json_array_size(list)) ? i : -1;
    }
    json_t *want = json_loads(pe + 2, JSON_DECODE_ANY, NULL);
    if (!want) return -1;
    long found = -1;
    for (size_t i = 0; i < json_array_size(list) && found < 0; i++) {
        const json_t *e = json_array_get(list, i);
        if (pe[0] == 'v') {
            if (json_equal((json_t *)e, want)) found = (long)i;
            continue;
        }
        if (!json_is_object(e)) continue;
        bool all = true;
        const char *k;
        json_t *v;
        json_object_foreach(want, k, v)
        {
            json_t *ev = json_object_get(e, k);
            if (!ev || !json_equal(ev, v)) all = false;
        }
        if (all) found = (long)i;
    }
    json_decref(want);
    return found;
}

static const json_t *resolve(const json_t *v, const char *pe)
{
    if (!v) return NULL;
    if (strncmp(pe, "f:", 2) == 0) return json_is_object(v) ? json_object_get(v, pe + 2) : NULL;
    long i = find_item(v, pe);
    return i >= 0 ? json_array_get(v, (size_t)i) : NULL;
}

static bool same_value(const json_t *a, const json_t *b)
{
    if (!a || !b) return a == b;
    return json_equal((json_t *)a, (json_t *)b);
}

json_t *as_ssa_fs_changed(const json_t *set, const json_t *a, const json_t *b)
{
    json_t *out = json_object();
    const char *k;
    json_t *child;
    json_object_foreach((json_t *)set, k, child)
    {
        if (strcmp(k, ".") == 0) continue;
        const json_t *va = resolve(a, k), *vb = resolve(b, k);
        json_t *c;
        bool leaf = json_object_size(child) == 1 && is_member(child);
        if (leaf) {
            c = same_value(va, vb) ? json_object() : member_leaf();
        } else {
            c = as_ssa_fs_changed(child, va, vb);
            if (is_member(child) && (va == NULL) != (vb == NULL)) json_object_set_new(c, ".", json_object());
        }
        if (json_object_size(c))
            json_object_set_new(out, k, c);
        else
            json_decref(c);
    }
    return out;
}

void as_ssa_fs_remove(json_t *obj, const json_t *set)
{
    const char *k;
    json_t *child;
    json_object_foreach((json_t *)set, k, child)
    {
        if (strcmp(k, ".") == 0) continue;
        if (is_member(child)) {
            if (strncmp(k, "f:", 2) == 0) {
                if (json_is_object(obj)) json_object_del(obj, k + 2);
            } else {
                long i = find_item(obj, k);
                if (i >= 0) json_array_remove(obj, (size_t)i);
            }
            continue;
        }
        json_t *v = (json_t *)resolve(obj, k);
        if (v) as_ssa_fs_remove(v, child);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Paths                                                                                      */

static void put_element(lop_buf_t *b, const char *pe)
{
    if (strncmp(pe, "f:", 2) == 0) {
        lop_buf_printf(b, ".%s", pe + 2);
    } else if (strncmp(pe, "v:", 2) == 0) {
        lop_buf_printf(b, "[=%s]", pe + 2);
    } else if (strncmp(pe, "i:", 2) == 0) {
        lop_buf_printf(b, "[%s]", pe + 2);
    } else {
        json_t *keys = json_loads(pe + 2, 0, NULL);
        lop_buf_putc(b, '[');
        const char **names = lop_xcalloc(json_object_size(keys) + 1, sizeof *names);
        size_t n = 0;
        const char *k;
        json_t *v;
        json_object_foreach(keys, k, v) names[n++] = k;
        for (size_t i = 1; i < n; i++) /* sort key names */
            for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
                const char *t = names[j];
                names[j] = names[j - 1];
                names[j - 1] = t;
            }
        for (size_t i = 0; i < n; i++) {
            char *s = dump(json_object_get(keys, names[i]));
            lop_buf_printf(b, "%s%s=%s", i ? "," : "", names[i], s ? s : "null");
            free(s);
        }
        lop_buf_putc(b, ']');
        free(names);
        json_decref(keys);
    }
}

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Members of a node first, then its children's members, each pass in sorted order (the order the
 * API server lists conflicts in). */
static void paths_rec(const json_t *set, lop_buf_t *prefix, json_t *out)
{
    size_t n = json_object_size(set), m = 0;
    const char **keys = lop_xcalloc(n + 1, sizeof *keys);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)set, k, v) if (strcmp(k, ".") != 0) keys[m++] = k;
    qsort(keys, m, sizeof *keys, cmp_cstr);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < m; i++) {
            const json_t *child = json_object_get(set, keys[i]);
            size_t len = prefix->len;
            put_element(prefix, keys[i]);
            if (pass == 0 && is_member(child)) json_array_append_new(out, json_string(prefix->data));
            if (pass == 1) paths_rec(child, prefix, out);
            prefix->len = len;
            prefix->data[len] = '\0';
        }
    }
    free(keys);
}

void as_ssa_fs_paths(const json_t *set, json_t *out)
{
    lop_buf_t prefix = LOP_BUF_INIT;
    lop_buf_puts(&prefix, "");
    paths_rec(set, &prefix, out);
    lop_buf_free(&prefix);
}
