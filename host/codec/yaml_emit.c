/* SPDX-License-Identifier: Apache-2.0 */
/*
 * yaml_emit.c — block-style YAML from jansson values (yaml_emit.h).
 */
#include "host/codec/yaml_emit.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void indent(lop_buf_t *o, int n)
{
    for (int i = 0; i < n; i++) lop_buf_putc(o, ' ');
}

/* A string YAML reads back as that string when written plain: letters, digits and ._/- only,
 * starting with a letter or '/', and none of YAML 1.1's booleans or null. */
static bool plain_string(const char *s)
{
    static const char *const words[] = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"};
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '/')) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
              *p == '.' || *p == '-' || *p == '/'))
            return false;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(s, words[i]) == 0) return false;
    return true;
}

static void scalar(lop_buf_t *o, const json_t *v)
{
    if (json_is_string(v) && plain_string(json_string_value(v))) {
        lop_buf_puts(o, json_string_value(v));
        return;
    }
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (s) lop_buf_puts(o, s);
    free(s);
}

static bool is_block(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v) > 0) || (json_is_array(v) && json_array_size(v) > 0);
}

static void emit(lop_buf_t *o, const json_t *v, int ind);

static void emit_object(lop_buf_t *o, const json_t *v, int ind, bool first_inline)
{
    const char *k;
    json_t *m;
    bool first = true;
    json_object_foreach((json_t *)v, k, m)
    {
        if (!(first && first_inline)) indent(o, ind);
        first = false;
        json_t *ks = json_string(k);
        scalar(o, ks); /* plain when it can be */
        json_decref(ks);
        lop_buf_putc(o, ':');
        if (is_block(m)) {
            lop_buf_putc(o, '\n');
            emit(o, m, json_is_array(m) ? ind : ind + 2);
        } else {
            lop_buf_putc(o, ' ');
            emit(o, m, ind);
        }
    }
}

/* A non-empty container is written on the lines after its key at ind; a scalar (or {} / [])
 * inline, ending the line. */
static void emit(lop_buf_t *o, const json_t *v, int ind)
{
    if (json_is_object(v) && json_object_size(v)) {
        emit_object(o, v, ind, false);
        return;
    }
    if (json_is_array(v) && json_array_size(v)) {
        size_t i;
        json_t *e;
        json_array_foreach((json_t *)v, i, e)
        {
            indent(o, ind);
            lop_buf_puts(o, "- ");
            if (json_is_object(e) && json_object_size(e)) {
                emit_object(o, e, ind + 2, true);
            } else if (is_block(e)) {
                lop_buf_putc(o, '\n');
                emit(o, e, ind + 2);
            } else {
                emit(o, e, ind);
            }
        }
        return;
    }
    if (json_is_object(v))
        lop_buf_puts(o, "{}");
    else if (json_is_array(v))
        lop_buf_puts(o, "[]");
    else
        scalar(o, v);
    lop_buf_putc(o, '\n');
}

void lop_yaml_emit(lop_buf_t *out, const json_t *v) { emit(out, v, 0); }
