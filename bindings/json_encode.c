/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json_encode.c — Lua values to JSON text (see json_codec.h for the mapping and errors).
 * Output goes into the per-state scratch buffer; the key path is tracked in a fixed frame array
 * (depth <= 200) and only formatted when an error is raised.
 */
#include "bindings/json_codec.h"
#include "bindings/json_internal.h"
#include "host/util/buf.h"
#include "host/util/utf8.h"

#include <lauxlib.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct frame {
    const char *key; /* string key (borrowed from the Lua stack), or NULL for an index */
    size_t keylen;
    lua_Number index;
    const void *table; /* for cycle detection */
} frame_t;

typedef struct enc {
    lua_State *L;
    lop_lua_sbuf_t *b;
    int depth; /* number of frames in use */
    bool sort_keys;
    frame_t frames[LOP_LUA_JSON_MAX_DEPTH + 2];
} enc_t;

static void enc_value(enc_t *e, int idx);

static bool is_ident(const char *s, size_t n)
{
    if (n == 0 || !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return false;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
    }
    return true;
}

/* Raises "json: cannot encode <what> at <path>"; the path covers frames[0..depth). */
__attribute__((noreturn)) static void enc_fail(enc_t *e, const char *what)
{
    char path[640];
    size_t n = 0;
    path[0] = '\0';
    for (int i = 0; i < e->depth && n < sizeof path - 16; i++) {
        const frame_t *f = &e->frames[i];
        if (!f->key && f->index == 0) continue; /* a table-level error: its own key is unset */
        size_t room = sizeof path - n;
        int w;
        if (!f->key)
            w = snprintf(path + n, room, "[%.14g]", (double)f->index);
        else if (is_ident(f->key, f->keylen))
            w = snprintf(path + n, room, "%s%.*s", n ? "." : "", (int)f->keylen, f->key);
        else
            w = snprintf(path + n, room, "[\"%.*s\"]", (int)(f->keylen > 200 ? 200 : f->keylen), f->key);
        if (w < 0) break;
        n += (size_t)w < room ? (size_t)w : room - 1;
    }
    luaL_error(e->L, "json: cannot encode %s at %s", what, n ? path : "(root)");
    __builtin_unreachable();
}

static void put_str(enc_t *e, const char *s, size_t n)
{
    lop_lua_sbuf_t *b = e->b;
    /* Worst case every byte becomes \u00XX. */
    if (b->cap - b->len < n * 6 + 2) lop_lua_sbuf_grow(e->L, b, n * 6 + 2);
    char *o = b->p + b->len;
    *o++ = '"';
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned char c = *p;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            *o++ = (char)c;
            p++;
            continue;
        }
        if (c >= 0x80) {
            size_t k = lop_utf8_decode(p, (size_t)(end - p), NULL);
            if (!k) {
                b->len = (size_t)(o - b->p);
                enc_fail(e, "a string with invalid UTF-8");
            }
            memcpy(o, p, k);
            o += k, p += k;
            continue;
        }
        o = lop_json_escape_byte(o, c);
        p++;
    }
    *o++ = '"';
    b->len = (size_t)(o - b->p);
}

static void put_number(enc_t *e, lua_Number v)
{
    char tmp[40];
    int n;
    if (isnan(v)) enc_fail(e, "NaN");
    if (isinf(v)) enc_fail(e, v > 0 ? "inf" : "-inf");
    if (v == floor(v) && fabs(v) <= 9007199254740992.0) {
        int64_t i = (int64_t)v;
        n = snprintf(tmp, sizeof tmp, "%lld", (long long)i);
    } else {
        /* Shortest of 15/16/17 significant digits that reads back to the same double. */
        n = snprintf(tmp, sizeof tmp, "%.15g", v);
        if (strtod(tmp, NULL) != v) {
            n = snprintf(tmp, sizeof tmp, "%.16g", v);
            if (strtod(tmp, NULL) != v) n = snprintf(tmp, sizeof tmp, "%.17g", v);
        }
    }
    lop_lua_sbuf_put(e->L, e->b, tmp, (size_t)n);
}

/* What kind of Lua table: decided by marker, else by its keys. */
enum tkind { T_ARRAY, T_OBJECT };

static void push_frame(enc_t *e, const void *table)
{
    if (e->depth >= LOP_LUA_JSON_MAX_DEPTH) enc_fail(e, "a value nested deeper than 200");
    for (int i = 0; i < e->depth; i++)
        if (e->frames[i].table == table) enc_fail(e, "a table that contains itself (cycle)");
    if (!lua_checkstack(e->L, 6)) enc_fail(e, "a value: Lua stack exhausted");
    e->frames[e->depth].table = table;
    e->frames[e->depth].key = NULL;
    e->frames[e->depth].index = 0;
    e->depth++;
}

static const char *key_type_name(lua_State *L, int idx)
{
    int t = lua_type(L, idx);
    if (t == LUA_TNUMBER) return "a table with a non-integer number key";
    if (t == LUA_TBOOLEAN) return "a table with a boolean key";
    if (t == LUA_TTABLE) return "a table with a table key";
    if (t == LUA_TUSERDATA || t == LUA_TLIGHTUSERDATA) return "a table with a userdata key";
    if (t == LUA_TFUNCTION) return "a table with a function key";
    return "a table with a non-string key";
}

/* Positive integer key? */
static bool int_key(lua_State *L, int idx, lua_Number *out)
{
    if (lua_type(L, idx) != LUA_TNUMBER) return false;
    lua_Number k = lua_tonumber(L, idx);
    if (k < 1 || k != floor(k) || k > 2147483647.0) return false;
    *out = k;
    return true;
}

static void enc_array_items(enc_t *e, int t, size_t n)
{
    lua_State *L = e->L;
    frame_t *f = &e->frames[e->depth - 1];
    lop_lua_sbuf_putc(L, e->b, '[');
    for (size_t i = 1; i <= n; i++) {
        if (i > 1) lop_lua_sbuf_putc(L, e->b, ',');
        f->key = NULL;
        f->index = (lua_Number)i;
        lua_rawgeti(L, t, (int)i);
        enc_value(e, lua_gettop(L));
        lua_pop(L, 1);
    }
    lop_lua_sbuf_putc(L, e->b, ']');
}

/* Count keys and check they are exactly 1..n; returns n. Raises naming the problem. */
static size_t check_sequence(enc_t *e, int t, bool marked)
{
    lua_State *L = e->L;
    size_t count = 0;
    lua_Number max = 0, k;
    bool saw_string = false, saw_int = false;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (int_key(L, -1, &k)) {
            saw_int = true;
            if (k > max) max = k;
            count++;
        } else if (lua_type(L, -1) == LUA_TSTRING) {
            saw_string = true;
        } else {
            enc_fail(e, key_type_name(L, -1));
        }
        if (saw_int && saw_string) {
            enc_fail(e, marked ? "an array-marked table with string keys"
                               : "a mixed table (both integer and string keys)");
        }
    }
    if (saw_string) enc_fail(e, "an array-marked table with string keys");
    if ((lua_Number)count != max) {
        char what[96];
        snprintf(what, sizeof what, "a sparse array (%zu elements, highest index %.0f)", count, (double)max);
        enc_fail(e, what);
    }
    return count;
}

typedef struct skey {
    const char *s;
    size_t n;
} skey_t;

static int skey_cmp(const void *a, const void *b)
{
    const skey_t *x = (const skey_t *)a, *y = (const skey_t *)b;
    int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
    return c ? c : (x->n < y->n ? -1 : x->n > y->n);
}

static __attribute__((noreturn)) void bad_object_key(enc_t *e, frame_t *f, bool marked)
{
    lua_Number k;
    f->key = NULL;
    f->index = 0;
    if (int_key(e->L, -2, &k))
        enc_fail(e, marked ? "an object-marked table with an integer key"
                           : "a mixed table (both integer and string keys)");
    enc_fail(e, key_type_name(e->L, -2));
}

/* Object members in byte order of their keys. The key strings stay valid: the table holds them
 * and nothing modifies it while encoding; the key array is a userdata (freed by the GC). */
static void enc_object_sorted(enc_t *e, int t, bool marked)
{
    lua_State *L = e->L;
    frame_t *f = &e->frames[e->depth - 1];
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        if (lua_type(L, -2) != LUA_TSTRING) bad_object_key(e, f, marked);
        lua_pop(L, 1);
        n++;
    }
    skey_t *keys = (skey_t *)lua_newuserdata(L, (n ? n : 1) * sizeof *keys);
    size_t i = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (i < n) keys[i].s = lua_tolstring(L, -1, &keys[i].n), i++;
    }
    qsort(keys, i, sizeof *keys, skey_cmp);
    lop_lua_sbuf_putc(L, e->b, '{');
    for (size_t j = 0; j < i; j++) {
        f->key = keys[j].s;
        f->keylen = keys[j].n;
        if (j) lop_lua_sbuf_putc(L, e->b, ',');
        put_str(e, keys[j].s, keys[j].n);
        lop_lua_sbuf_putc(L, e->b, ':');
        lua_pushlstring(L, keys[j].s, keys[j].n);
        lua_rawget(L, t);
        enc_value(e, lua_gettop(L));
        lua_pop(L, 1);
    }
    lua_pop(L, 1); /* keys */
    lop_lua_sbuf_putc(L, e->b, '}');
}

static void enc_object_items(enc_t *e, int t, bool marked)
{
    lua_State *L = e->L;
    frame_t *f = &e->frames[e->depth - 1];
    if (e->sort_keys) {
        enc_object_sorted(e, t, marked);
        return;
    }
    bool first = true;
    lop_lua_sbuf_putc(L, e->b, '{');
    lua_pushnil(L);
    while (lua_next(L, t)) {
        if (lua_type(L, -2) != LUA_TSTRING) bad_object_key(e, f, marked);
        size_t kl;
        const char *ks = lua_tolstring(L, -2, &kl);
        f->key = ks;
        f->keylen = kl;
        if (!first) lop_lua_sbuf_putc(L, e->b, ',');
        first = false;
        put_str(e, ks, kl);
        lop_lua_sbuf_putc(L, e->b, ':');
        enc_value(e, lua_gettop(L));
        lua_pop(L, 1);
    }
    lop_lua_sbuf_putc(L, e->b, '}');
}

static void enc_table(enc_t *e, int t)
{
    lua_State *L = e->L;
    push_frame(e, lua_topointer(L, t));
    int marker = 0; /* 1 array, 2 object */
    if (lua_getmetatable(L, t)) {
        lua_pushlightuserdata(L, (void *)&lop_lua_json_key_array_mt);
        lua_rawget(L, LUA_REGISTRYINDEX);
        if (lua_rawequal(L, -1, -2)) {
            marker = 1;
        } else {
            lua_pop(L, 1);
            lua_pushlightuserdata(L, (void *)&lop_lua_json_key_object_mt);
            lua_rawget(L, LUA_REGISTRYINDEX);
            if (lua_rawequal(L, -1, -2)) marker = 2;
        }
        lua_pop(L, 2);
    }
    if (marker == 1) {
        enc_array_items(e, t, check_sequence(e, t, true));
    } else if (marker == 2) {
        enc_object_items(e, t, true);
    } else {
        /* Unmarked: peek at the first key. */
        lua_pushnil(L);
        if (!lua_next(L, t)) {
            lop_lua_sbuf_put(L, e->b, "{}", 2);
        } else {
            int kt = lua_type(L, -2);
            lua_pop(L, 2);
            if (kt == LUA_TSTRING)
                enc_object_items(e, t, false);
            else
                enc_array_items(e, t, check_sequence(e, t, false));
        }
    }
    e->depth--;
}

static void enc_value(enc_t *e, int idx)
{
    lua_State *L = e->L;
    switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        put_str(e, s, n);
        return;
    }
    case LUA_TNUMBER: put_number(e, lua_tonumber(L, idx)); return;
    case LUA_TBOOLEAN:
        if (lua_toboolean(L, idx))
            lop_lua_sbuf_put(L, e->b, "true", 4);
        else
            lop_lua_sbuf_put(L, e->b, "false", 5);
        return;
    case LUA_TTABLE: enc_table(e, idx); return;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == (void *)&lop_lua_json_null_sentinel) {
            lop_lua_sbuf_put(L, e->b, "null", 4);
            return;
        }
        enc_fail(e, "a light userdata");
        return;
    case LUA_TUSERDATA: {
        size_t n;
        const char *digits = lop_lua_bigint_digits(L, idx, &n);
        if (digits) {
            lop_lua_sbuf_put(L, e->b, digits, n);
            return;
        }
        enc_fail(e, "a userdata");
        return;
    }
    case LUA_TNIL: enc_fail(e, "nil"); return;
    case LUA_TFUNCTION: enc_fail(e, "a function"); return;
    case LUA_TTHREAD: enc_fail(e, "a coroutine"); return;
    default: enc_fail(e, "a value of unknown type"); return;
    }
}

const char *lop_lua_json_encode(lua_State *L, int idx, size_t *len) { return lop_lua_json_encode_ex(L, idx, 0, len); }

const char *lop_lua_json_encode_ex(lua_State *L, int idx, unsigned flags, size_t *len)
{
    if (idx < 0 && idx > LUA_REGISTRYINDEX) idx = lua_gettop(L) + idx + 1;
    lop_lua_sbuf_t *b = lop_lua_sbuf_get(L);
    enc_t enc; /* about 6 KB; nothing in it needs freeing when an error unwinds */
    enc.L = L;
    enc.b = b;
    enc.depth = 0;
    enc.sort_keys = (flags & LOP_LUA_JSON_SORT_KEYS) != 0;
    enc_value(&enc, idx);
    lua_pushlstring(L, b->p, b->len);
    lop_lua_sbuf_trim(b);
    const char *s = lua_tolstring(L, -1, len);
    return s;
}
