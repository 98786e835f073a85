/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json_lua.c — the codec's per-state setup (markers, null, bigint type, scratch buffer) and the
 * Lua functions of core.json. Functions implementing Lua functions are named after their Lua path.
 */
#include "bindings/json_codec.h"
#include "bindings/json_internal.h"

#include <lauxlib.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

const char lop_lua_json_key_array_mt = 'a';
const char lop_lua_json_key_object_mt = 'o';
const char lop_lua_json_key_bigint_mt = 'b';
const char lop_lua_json_key_scratch = 's';
const char lop_lua_json_null_sentinel = 'n';

#define SBUF_KEEP (256 * 1024) /* scratch storage kept between calls */

/* ------------------------------------------------------------------ scratch buffer */

static int sbuf_gc(lua_State *L)
{
    lop_lua_sbuf_t *b = (lop_lua_sbuf_t *)lua_touserdata(L, 1);
    if (b && b->p) b->allocf(b->allocud, b->p, b->cap, 0);
    if (b) b->p = NULL, b->cap = b->len = 0;
    return 0;
}

lop_lua_sbuf_t *lop_lua_sbuf_get(lua_State *L)
{
    lua_pushlightuserdata(L, (void *)&lop_lua_json_key_scratch);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lop_lua_sbuf_t *b = (lop_lua_sbuf_t *)lua_touserdata(L, -1);
    lua_pop(L, 1); /* still referenced from the registry */
    if (!b) luaL_error(L, "json: codec not initialised (lop_lua_json_init)");
    b->len = 0;
    return b;
}

void lop_lua_sbuf_grow(lua_State *L, lop_lua_sbuf_t *b, size_t n)
{
    size_t need = b->len + n, cap = b->cap ? b->cap : 256;
    if (need < b->len) luaL_error(L, "not enough memory");
    while (cap < need) {
        if (cap > ((size_t)-1) / 2) luaL_error(L, "not enough memory");
        cap *= 2;
    }
    char *p = (char *)b->allocf(b->allocud, b->p, b->cap, cap);
    if (!p) luaL_error(L, "not enough memory");
    b->p = p;
    b->cap = cap;
}

void lop_lua_sbuf_trim(lop_lua_sbuf_t *b)
{
    if (b->cap > SBUF_KEEP) {
        b->allocf(b->allocud, b->p, b->cap, 0);
        b->p = NULL;
        b->cap = b->len = 0;
    }
}

/* ------------------------------------------------------------------ bigint */

typedef struct bigint {
    size_t len;
    char s[1]; /* canonical: optional '-', digits without leading zeros, NUL */
} bigint_t;

bool lop_lua_json_is_bigint(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx)) return false;
    lua_pushlightuserdata(L, (void *)&lop_lua_json_key_bigint_mt);
    lua_rawget(L, LUA_REGISTRYINDEX);
    bool yes = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return yes;
}

const char *lop_lua_bigint_digits(lua_State *L, int idx, size_t *len)
{
    if (!lop_lua_json_is_bigint(L, idx)) return NULL;
    bigint_t *b = (bigint_t *)lua_touserdata(L, idx);
    if (len) *len = b->len;
    return b->s;
}

bool lop_lua_bigint_push(lua_State *L, const char *s, size_t n)
{
    bool neg = false;
    size_t i = 0;
    if (n > 0 && (s[0] == '-' || s[0] == '+')) neg = s[0] == '-', i = 1;
    if (i == n) return false;
    for (size_t j = i; j < n; j++)
        if (s[j] < '0' || s[j] > '9') return false;
    while (i < n - 1 && s[i] == '0') i++;
    if (n - i == 1 && s[i] == '0') neg = false;
    size_t len = (n - i) + (neg ? 1 : 0);
    bigint_t *b = (bigint_t *)lua_newuserdata(L, sizeof *b + len);
    b->len = len;
    char *o = b->s;
    if (neg) *o++ = '-';
    memcpy(o, s + i, n - i);
    b->s[len] = '\0';
    lua_pushlightuserdata(L, (void *)&lop_lua_json_key_bigint_mt);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lua_setmetatable(L, -2);
    return true;
}

/* The bigint at idx, or raises naming the argument. */
static bigint_t *check_bigint(lua_State *L, int idx)
{
    if (!lop_lua_json_is_bigint(L, idx)) luaL_typerror(L, idx, "bigint");
    return (bigint_t *)lua_touserdata(L, idx);
}

/* -1, 0, 1 comparing two canonical decimal strings. */
static int bigint_cmp(const bigint_t *a, const bigint_t *b)
{
    bool an = a->s[0] == '-', bn = b->s[0] == '-';
    if (an != bn) return an ? -1 : 1;
    int mag;
    if (a->len != b->len)
        mag = a->len < b->len ? -1 : 1;
    else
        mag = memcmp(a->s, b->s, a->len) < 0 ? -1 : (memcmp(a->s, b->s, a->len) > 0 ? 1 : 0);
    return an ? -mag : mag;
}

static int bigint_tostring(lua_State *L)
{
    bigint_t *b = check_bigint(L, 1);
    lua_pushlstring(L, b->s, b->len);
    return 1;
}

static int bigint_eq(lua_State *L)
{
    lua_pushboolean(L, lop_lua_json_is_bigint(L, 1) && lop_lua_json_is_bigint(L, 2) &&
                           bigint_cmp(lua_touserdata(L, 1), lua_touserdata(L, 2)) == 0);
    return 1;
}

static int bigint_lt(lua_State *L)
{
    lua_pushboolean(L, bigint_cmp(check_bigint(L, 1), check_bigint(L, 2)) < 0);
    return 1;
}

static int bigint_le(lua_State *L)
{
    lua_pushboolean(L, bigint_cmp(check_bigint(L, 1), check_bigint(L, 2)) <= 0);
    return 1;
}

static int bigint_concat(lua_State *L)
{
    for (int i = 1; i <= 2; i++) {
        if (lop_lua_json_is_bigint(L, i)) {
            bigint_t *b = lua_touserdata(L, i);
            lua_pushlstring(L, b->s, b->len);
        } else if (lua_isstring(L, i)) {
            lua_pushvalue(L, i);
        } else {
            return luaL_error(L, "attempt to concatenate a bigint with a %s", luaL_typename(L, i));
        }
    }
    lua_concat(L, 2);
    return 1;
}

/* ------------------------------------------------------------------ setup */

static void new_marker(lua_State *L, const char *key, const char *name)
{
    lua_pushlightuserdata(L, (void *)key);
    lua_createtable(L, 0, 2);
    lua_pushstring(L, name);
    lua_setfield(L, -2, "__name");
    lua_rawset(L, LUA_REGISTRYINDEX);
}

void lop_lua_json_init(lua_State *L)
{
    lua_pushlightuserdata(L, (void *)&lop_lua_json_key_scratch);
    lua_rawget(L, LUA_REGISTRYINDEX);
    bool done = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (done) return;

    new_marker(L, &lop_lua_json_key_array_mt, "luaop.json.array");
    new_marker(L, &lop_lua_json_key_object_mt, "luaop.json.object");

    static const luaL_Reg bigint_meta[] = {
        {"__tostring", bigint_tostring}, {"__eq", bigint_eq}, {"__lt", bigint_lt}, {"__le", bigint_le},
        {"__concat", bigint_concat},     {NULL, NULL},
    };
    lua_pushlightuserdata(L, (void *)&lop_lua_json_key_bigint_mt);
    lua_createtable(L, 0, 8);
    luaL_setfuncs(L, bigint_meta, 0);
    lua_pushliteral(L, "luaop.json.bigint");
    lua_setfield(L, -2, "__name");
    lua_pushliteral(L, "bigint");
    lua_setfield(L, -2, "__metatable");
    lua_rawset(L, LUA_REGISTRYINDEX);

    /* The scratch userdata last: its presence marks the state as initialised. */
    lua_pushlightuserdata(L, (void *)&lop_lua_json_key_scratch);
    lop_lua_sbuf_t *b = (lop_lua_sbuf_t *)lua_newuserdata(L, sizeof *b);
    memset(b, 0, sizeof *b);
    b->allocf = lua_getallocf(L, &b->allocud);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, sbuf_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
}

void lop_lua_json_push_array_mt(lua_State *L)
{
    lua_pushlightuserdata(L, (void *)&lop_lua_json_key_array_mt);
    lua_rawget(L, LUA_REGISTRYINDEX);
}

void lop_lua_json_push_object_mt(lua_State *L)
{
    lua_pushlightuserdata(L, (void *)&lop_lua_json_key_object_mt);
    lua_rawget(L, LUA_REGISTRYINDEX);
}

void lop_lua_json_push_null(lua_State *L) { lua_pushlightuserdata(L, (void *)&lop_lua_json_null_sentinel); }

bool lop_lua_json_is_null(lua_State *L, int idx)
{
    return lua_type(L, idx) == LUA_TLIGHTUSERDATA && lua_touserdata(L, idx) == (void *)&lop_lua_json_null_sentinel;
}

/* ------------------------------------------------------------------ core.json.* */

/* core.json.decode(s) -> value. Raises on malformed JSON. Any context. */
static int core_json_decode(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    lop_lua_json_decode(L, s, n);
    return 1;
}

/* core.json.encode(v [, opts]) -> string. opts.sort_keys: members in byte order of their keys.
 * Raises naming the key path. Any context. */
static int core_json_encode(lua_State *L)
{
    luaL_checkany(L, 1);
    unsigned flags = 0;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        lua_getfield(L, 2, "sort_keys");
        if (lua_toboolean(L, -1)) flags |= LOP_LUA_JSON_SORT_KEYS;
    }
    lua_settop(L, 1);
    lop_lua_json_encode_ex(L, 1, flags, NULL);
    return 1;
}

static int mark(lua_State *L, const char *key)
{
    if (lua_isnoneornil(L, 1)) {
        lua_settop(L, 0);
        lua_newtable(L);
    } else {
        luaL_checktype(L, 1, LUA_TTABLE);
        lua_settop(L, 1);
    }
    lua_pushlightuserdata(L, (void *)key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lua_setmetatable(L, 1);
    return 1;
}

/* core.json.array([t]) -> t marked as array. */
static int core_json_array(lua_State *L) { return mark(L, &lop_lua_json_key_array_mt); }
/* core.json.object([t]) -> t marked as object. */
static int core_json_object(lua_State *L) { return mark(L, &lop_lua_json_key_object_mt); }

/* core.json.is_array(v) -> boolean: array marker, or a non-empty table with keys exactly 1..n. */
static int core_json_is_array(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TTABLE) {
        lua_pushboolean(L, 0);
        return 1;
    }
    lua_settop(L, 1);
    if (lua_getmetatable(L, 1)) {
        lop_lua_json_push_array_mt(L);
        bool marked = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
        if (marked) {
            lua_pushboolean(L, 1);
            return 1;
        }
    }
    size_t count = 0;
    double max = 0;
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        lua_pop(L, 1);
        double k = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
        if (k < 1 || k != floor(k)) {
            lua_pushboolean(L, 0);
            return 1;
        }
        if (k > max) max = k;
        count++;
    }
    lua_pushboolean(L, count > 0 && (double)count == max);
    return 1;
}

/* core.json.bigint(s) -> bigint from a decimal string (or an integral number). Raises on junk. */
static int core_json_bigint(lua_State *L)
{
    if (lop_lua_json_is_bigint(L, 1)) {
        lua_settop(L, 1);
        return 1;
    }
    if (lua_type(L, 1) == LUA_TNUMBER) {
        double v = lua_tonumber(L, 1);
        char tmp[64];
        if (v != floor(v) || isinf(v)) return luaL_argerror(L, 1, "not an integer");
        int n = snprintf(tmp, sizeof tmp, "%.0f", v);
        lop_lua_bigint_push(L, tmp, (size_t)n);
        return 1;
    }
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    if (!lop_lua_bigint_push(L, s, n)) return luaL_argerror(L, 1, "not a decimal integer");
    return 1;
}

/* core.json.is_bigint(v) -> boolean. */
static int core_json_is_bigint(lua_State *L)
{
    lua_pushboolean(L, lop_lua_json_is_bigint(L, 1));
    return 1;
}

void lop_lua_json_open(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"decode", core_json_decode},       {"encode", core_json_encode},
        {"array", core_json_array},         {"object", core_json_object},
        {"is_array", core_json_is_array},   {"bigint", core_json_bigint},
        {"is_bigint", core_json_is_bigint}, {NULL, NULL},
    };
    lop_lua_json_init(L);
    lua_createtable(L, 0, 12);
    luaL_setfuncs(L, fns, 0);
    lop_lua_json_push_null(L);
    lua_setfield(L, -2, "null");
    lop_lua_json_push_array_mt(L);
    lua_setfield(L, -2, "array_mt");
    lop_lua_json_push_object_mt(L);
    lua_setfield(L, -2, "object_mt");
}
