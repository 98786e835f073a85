/* SPDX-License-Identifier: Apache-2.0 */
/* jsonpatch_diff.c — RFC 6902 diff of two JSON documents (see jsonpatch_diff.h). */
#include "host/runtime/webhook/jsonpatch_diff.h"

#include <string.h>

void lop_json_pointer_append(lop_buf_t *b, const char *token)
{
    lop_buf_putc(b, '/');
    for (const char *p = token; *p; p++) {
        if (*p == '~')
            lop_buf_puts(b, "~0");
        else if (*p == '/')
            lop_buf_puts(b, "~1");
        else
            lop_buf_putc(b, *p);
    }
}

/* Append {"op":op,"path":path[,"value":value]} to ops. value is borrowed (copied by reference). */
static void emit(json_t *ops, const char *op, const lop_buf_t *path, const json_t *value)
{
    json_t *o = json_object();
    json_object_set_new(o, "op", json_string(op));
    json_object_set_new(o, "path", json_string(path->data ? path->data : ""));
    if (value) json_object_set_new(o, "value", json_deep_copy(value));
    json_array_append_new(ops, o);
}

static void diff_value(json_t *ops, lop_buf_t *path, const json_t *from, const json_t *to);

/* Both from and to are objects; path is the pointer to them. */
static void diff_object(json_t *ops, lop_buf_t *path, const json_t *from, const json_t *to)
{
    size_t base = path->len;
    const char *key;
    json_t *fv;
    /* jansson's iteration order is insertion order, i.e. the document's. */
    json_object_foreach((json_t *)from, key, fv)
    {
        if (json_object_get(to, key)) continue;
        lop_json_pointer_append(path, key);
        emit(ops, "remove", path, NULL);
        path->len = base;
        path->data[base] = '\0';
    }
    json_t *tv;
    json_object_foreach((json_t *)to, key, tv)
    {
        fv = json_object_get(from, key);
        if (fv && json_equal(fv, tv)) continue;
        lop_json_pointer_append(path, key);
        if (!fv)
            emit(ops, "add", path, tv);
        else
            diff_value(ops, path, fv, tv);
        path->len = base;
        path->data[base] = '\0';
    }
}

static void diff_value(json_t *ops, lop_buf_t *path, const json_t *from, const json_t *to)
{
    if (json_equal(from, to)) return;
    if (json_is_object(from) && json_is_object(to)) {
        diff_object(ops, path, from, to);
        return;
    }
    /* Arrays that differ, scalars that differ, or a change of type: replace whole. */
    emit(ops, "replace", path, to);
}

json_t *lop_jsonpatch_diff(const json_t *from, const json_t *to)
{
    json_t *null = json_null();
    if (!from) from = null;
    if (!to) to = null;
    json_t *ops = json_array();
    if (!ops) return NULL;
    lop_buf_t path = LOP_BUF_INIT;
    lop_buf_reserve(&path, 64); /* allocate, so path.data is never NULL below */
    path.data[0] = '\0';
    diff_value(ops, &path, from, to);
    lop_buf_free(&path);
    return ops;
}
