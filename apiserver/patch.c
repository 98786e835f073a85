/* SPDX-License-Identifier: Apache-2.0 */
/*
 * patch.c — RFC 7386 JSON merge patch and RFC 6902 JSON patch (see patch.h).
 * Strategic merge patch lives in patch_smp.c; the built-in list schema in patch_schema.c.
 *
 * JSON patch follows the library the API server uses: paths are JSON pointers (RFC 6901,
 * `~1` = '/', `~0` = '~'), array indices are decimal without leading zeros, `-` appends on add,
 * negative indices count from the end, numbers compare by value in `test`, and `test` on a
 * missing member succeeds only against null.
 */
#include "apiserver/patch.h"

#include "host/codec/jsonstr.h"
#include "host/util/buf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_JSON_PATCH_OPS 10000
#define GENERIC_422        "the server rejected our request due to an error in our request"

/* ------------------------------------------------------------------------------------------ */
/* RFC 7386                                                                                   */

json_t *as_patch_merge(const json_t *target, const json_t *patch)
{
    if (!json_is_object(patch)) return patch ? json_deep_copy(patch) : json_null();
    json_t *out = json_is_object(target) ? json_deep_copy(target) : json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v)
    {
        if (json_is_null(v)) {
            json_object_del(out, k);
            continue;
        }
        json_t *merged = as_patch_merge(json_object_get(out, k), v);
        json_object_set_new(out, k, merged);
    }
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* JSON pointer                                                                               */

typedef struct ptr {
    char **tok;
    size_t n;
} ptr_t;

static void ptr_free(ptr_t *p)
{
    for (size_t i = 0; i < p->n; i++) free(p->tok[i]);
    free(p->tok);
    p->tok = NULL;
    p->n = 0;
}

/* Split "/a/b~1c" into unescaped tokens. Returns false for a malformed pointer. */
static bool ptr_parse(const char *s, ptr_t *p)
{
    p->tok = NULL;
    p->n = 0;
    if (!s) return false;
    if (!*s) return true;
    if (*s != '/') return false;
    const char *cur = s + 1;
    for (;;) {
        lop_buf_t b = LOP_BUF_INIT;
        lop_buf_puts(&b, "");
        while (*cur && *cur != '/') {
            if (*cur == '~') {
                if (cur[1] == '0')
                    lop_buf_putc(&b, '~');
                else if (cur[1] == '1')
                    lop_buf_putc(&b, '/');
                else {
                    lop_buf_free(&b);
                    ptr_free(p);
                    return false;
                }
                cur += 2;
            } else {
                lop_buf_putc(&b, *cur++);
            }
        }
        p->tok = lop_xrealloc(p->tok, (p->n + 1) * sizeof *p->tok);
        p->tok[p->n++] = lop_buf_steal(&b);
        if (!*cur) break;
        cur++;
    }
    return true;
}

/* Array index token: "0" or [1-9][0-9]*, or a negative index. Returns false if not a number. */
static bool parse_index(const char *t, long long *out)
{
    const char *d = t;
    if (*d == '-') d++;
    if (!*d || (d[0] == '0' && d[1]) || (d != t && d[0] == '0')) return false;
    for (const char *q = d; *q; q++)
        if (*q < '0' || *q > '9' || q - d > 15) return false;
    *out = strtoll(t, NULL, 10);
    return true;
}

/* The container that holds the last token (borrowed), or NULL when a step is missing. */
static json_t *ptr_parent(json_t *doc, const ptr_t *p)
{
    json_t *cur = doc;
    for (size_t i = 0; i + 1 < p->n && cur; i++) {
        if (json_is_object(cur)) {
            cur = json_object_get(cur, p->tok[i]);
        } else if (json_is_array(cur)) {
            long long idx;
            if (!parse_index(p->tok[i], &idx)) return NULL;
            if (idx < 0) idx += (long long)json_array_size(cur);
            if (idx < 0) return NULL;
            cur = json_array_get(cur, (size_t)idx);
        } else {
            return NULL;
        }
    }
    return cur;
}

/* Resolve an existing array index for get/remove/replace (negatives from the end). */
static bool existing_index(json_t *arr, const char *t, size_t *out)
{
    long long idx, n = (long long)json_array_size(arr);
    if (!parse_index(t, &idx)) return false;
    if (idx < 0) idx += n;
    if (idx < 0 || idx >= n) return false;
    *out = (size_t)idx;
    return true;
}

static json_t *ptr_get(json_t *doc, const ptr_t *p)
{
    if (p->n == 0) return doc;
    json_t *parent = ptr_parent(doc, p);
    const char *last = p->tok[p->n - 1];
    if (json_is_object(parent)) return json_object_get(parent, last);
    size_t i;
    if (json_is_array(parent) && existing_index(parent, last, &i)) return json_array_get(parent, i);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* RFC 6902 operations; each takes ownership of nothing and reports failure with false.       */

/* Add value (stolen) at p; *doc may be replaced when p is the root. */
static bool op_add(json_t **doc, const ptr_t *p, json_t *value)
{
    if (p->n == 0) {
        json_decref(*doc);
        *doc = value;
        return true;
    }
    json_t *parent = ptr_parent(*doc, p);
    const char *last = p->tok[p->n - 1];
    if (json_is_object(parent)) {
        json_object_set_new(parent, last, value);
        return true;
    }
    if (json_is_array(parent)) {
        long long n = (long long)json_array_size(parent), idx;
        if (strcmp(last, "-") == 0) {
            json_array_append_new(parent, value);
            return true;
        }
        if (parse_index(last, &idx)) {
            if (idx < 0) idx += n;
            if (idx >= 0 && idx <= n) {
                json_array_insert_new(parent, (size_t)idx, value);
                return true;
            }
        }
    }
    json_decref(value);
    return false;
}

static bool op_remove(json_t *doc, const ptr_t *p)
{
    if (p->n == 0) return false;
    json_t *parent = ptr_parent(doc, p);
    const char *last = p->tok[p->n - 1];
    if (json_is_object(parent)) return json_object_get(parent, last) && !json_object_del(parent, last);
    size_t i;
    if (json_is_array(parent) && existing_index(parent, last, &i)) return json_array_remove(parent, i) == 0;
    return false;
}

static bool op_replace(json_t **doc, const ptr_t *p, json_t *value)
{
    if (p->n == 0) {
        json_decref(*doc);
        *doc = value;
        return true;
    }
    json_t *parent = ptr_parent(*doc, p);
    const char *last = p->tok[p->n - 1];
    if (json_is_object(parent) && json_object_get(parent, last)) {
        json_object_set_new(parent, last, value);
        return true;
    }
    size_t i;
    if (json_is_array(parent) && existing_index(parent, last, &i)) {
        json_array_set_new(parent, i, value);
        return true;
    }
    json_decref(value);
    return false;
}

/* True when a is a proper prefix of b (moving a value into its own child). */
static bool ptr_is_proper_prefix(const ptr_t *a, const ptr_t *b)
{
    if (a->n >= b->n) return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->tok[i], b->tok[i]) != 0) return false;
    return true;
}

static bool apply_one(json_t **doc, const json_t *op)
{
    const char *name = json_string_value(json_object_get(op, "op"));
    const char *path_s = json_string_value(json_object_get(op, "path"));
    if (!name || !path_s) return false;
    ptr_t path, from = {0};
    if (!ptr_parse(path_s, &path)) return false;
    bool ok = false;
    json_t *value = json_object_get(op, "value");
    if (strcmp(name, "add") == 0) {
        ok = value && op_add(doc, &path, json_deep_copy(value));
    } else if (strcmp(name, "remove") == 0) {
        ok = op_remove(*doc, &path);
    } else if (strcmp(name, "replace") == 0) {
        ok = value && op_replace(doc, &path, json_deep_copy(value));
    } else if (strcmp(name, "test") == 0) {
        json_t *have = ptr_get(*doc, &path);
        if (!value)
            ok = false;
        else if (!have)
            ok = json_is_null(value) && (path.n == 0 || ptr_parent(*doc, &path) != NULL);
        else
            ok = lop_json_value_equal(have, value);
    } else if (strcmp(name, "move") == 0 || strcmp(name, "copy") == 0) {
        const char *from_s = json_string_value(json_object_get(op, "from"));
        if (from_s && ptr_parse(from_s, &from)) {
            json_t *src = ptr_get(*doc, &from);
            if (src && name[0] == 'c') {
                ok = op_add(doc, &path, json_deep_copy(src));
            } else if (src && !ptr_is_proper_prefix(&from, &path)) {
                json_t *moved = json_incref(src);
                ok = op_remove(*doc, &from) && op_add(doc, &path, json_incref(moved));
                json_decref(moved);
            }
        }
    }
    ptr_free(&path);
    ptr_free(&from);
    return ok;
}

json_t *as_patch_json(const json_t *target, const json_t *ops, lop_err_t *err)
{
    if (!json_is_array(ops)) {
        lop_err_set(err, LOP_EINVAL, 400, "BadRequest",
                    "invalid JSON patch: the patch must be a JSON array of operations");
        return NULL;
    }
    size_t n = json_array_size(ops);
    for (size_t i = 0; i < n; i++) {
        if (!json_is_object(json_array_get(ops, i))) {
            lop_err_set(err, LOP_EINVAL, 400, "BadRequest", "invalid JSON patch: operation %zu is not an object", i);
            return NULL;
        }
    }
    if (n > MAX_JSON_PATCH_OPS) {
        lop_err_set(err, LOP_EINVAL, 413, "RequestEntityTooLarge",
                    "Request entity too large: The allowed maximum operations in a JSON patch is "
                    "%d, got %zu",
                    MAX_JSON_PATCH_OPS, n);
        return NULL;
    }
    json_t *doc = target ? json_deep_copy(target) : json_null();
    for (size_t i = 0; i < n; i++) {
        if (!apply_one(&doc, json_array_get(ops, i))) {
            json_decref(doc);
            lop_err_set(err, LOP_EINVAL, 422, "Invalid", GENERIC_422);
            return NULL;
        }
    }
    return doc;
}
