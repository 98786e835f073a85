/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the Lua JSON codec (bindings/json_codec.h). Any bytes go to
 * lop_lua_json_decode under a protected call: a malformed input must raise a "json: " error, never
 * crash. An input that decodes is a value the codec made, so encoding it must succeed, and the
 * codec is lossless (json_codec.h): with sorted keys, e1 = encode(decode(x)) decodes again and
 * re-encodes to exactly e1; so does the encoding in table order (no sorting) once decoded. One lua_State serves the whole process (LuaJIT is not instrumented);
 * its stack is reset after every input.
 */
#include "fuzz.h"
#include "bindings/json_codec.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>

typedef struct round {
    const char *in;
    size_t len;
    int decoded; /* set once the first decode returned */
} round_t;

static void same(const char *a, size_t na, const char *b, size_t nb)
{
    if (na != nb || memcmp(a, b, na) != 0) {
        fprintf(stderr, "luacodec: re-encoding differs:\n  %.*s\n  %.*s\n", (int)na, a, (int)nb, b);
        abort();
    }
}

/* Runs under lua_cpcall: decode, encode (sorted), decode the encoding, encode again, compare. */
static int roundtrip(lua_State *L)
{
    round_t *r = lua_touserdata(L, 1);
    lop_lua_json_decode(L, r->in, r->len);
    r->decoded = 1;
    size_t n1, n2;
    const char *e1 = lop_lua_json_encode_ex(L, -1, LOP_LUA_JSON_SORT_KEYS, &n1);
    lop_lua_json_decode(L, e1, n1);
    const char *e2 = lop_lua_json_encode_ex(L, -1, LOP_LUA_JSON_SORT_KEYS, &n2);
    same(e1, n1, e2, n2);
    /* in table order the text may differ, but it must stand for the same value */
    size_t nu, n3;
    const char *eu = lop_lua_json_encode(L, 2, &nu);
    lop_lua_json_decode(L, eu, nu);
    const char *e3 = lop_lua_json_encode_ex(L, -1, LOP_LUA_JSON_SORT_KEYS, &n3);
    same(e1, n1, e3, n3);
    return 0;
}

static int init(lua_State *L)
{
    lop_lua_json_init(L);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static lua_State *L;
    if (!L) {
        if (!(L = luaL_newstate())) abort();
        if (lua_cpcall(L, init, NULL) != 0) abort();
    }
    round_t r = {(const char *)data, size, 0};
    if (lua_cpcall(L, roundtrip, &r) != 0) {
        const char *msg = lua_tostring(L, -1);
        /* only the first decode may fail, and only with the codec's own error */
        if (r.decoded || !msg || strncmp(msg, "json: ", 6) != 0) {
            fprintf(stderr, "luacodec: unexpected error: %s\n", msg ? msg : "(not a string)");
            abort();
        }
    }
    lua_settop(L, 0);
    return 0;
}
