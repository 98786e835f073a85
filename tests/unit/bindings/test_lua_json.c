/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the lossless JSON codec (bindings/json_codec.h) through its C API: round trips,
 * null handling, big integers, error messages with byte offsets and key paths, depth limit.
 * (spec/core/json_spec.lua covers the same behaviour from Lua through the plain module.) */
#include "bindings/json_codec.h"
#include "t.h"

#include <lauxlib.h>
#include <lualib.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lua_State *L;

static int decode_fn(lua_State *l)
{
    size_t n;
    const char *s = lua_tolstring(l, 1, &n);
    lop_lua_json_decode(l, s, n);
    return 1;
}

static int encode_fn(lua_State *l)
{
    lop_lua_json_encode(l, 1, NULL);
    return 1;
}

/* decode then encode; returns the text or the error message (static buffer). */
static const char *roundtrip(const char *in)
{
    static char out[4096];
    lua_settop(L, 0);
    lua_pushcfunction(L, decode_fn);
    lua_pushstring(L, in);
    if (lua_pcall(L, 1, 1, 0) != 0) {
        snprintf(out, sizeof out, "%s", lua_tostring(L, -1));
        return out;
    }
    lua_pushcfunction(L, encode_fn);
    lua_insert(L, -2);
    if (lua_pcall(L, 1, 1, 0) != 0) {
        snprintf(out, sizeof out, "%s", lua_tostring(L, -1));
        return out;
    }
    snprintf(out, sizeof out, "%s", lua_tostring(L, -1));
    return out;
}

/* Evaluate Lua code returning a value, encode it; returns the JSON or the error. */
static const char *encode_lua(const char *code)
{
    static char out[1024];
    lua_settop(L, 0);
    if (luaL_loadstring(L, code) != 0 || lua_pcall(L, 0, 1, 0) != 0) {
        snprintf(out, sizeof out, "lua: %s", lua_tostring(L, -1));
        return out;
    }
    lua_pushcfunction(L, encode_fn);
    lua_insert(L, -2);
    if (lua_pcall(L, 1, 1, 0) != 0) {
        snprintf(out, sizeof out, "%s", lua_tostring(L, -1));
        return out;
    }
    snprintf(out, sizeof out, "%s", lua_tostring(L, -1));
    return out;
}

static void test_roundtrips(void)
{
    const char *same[] = {
        "[]",
        "{}",
        "[[],{}]",
        "{\"a\":[]}",
        "[null,1,null]",
        "[9007199254740992,-9007199254740992]",
        "[9007199254740993,123456789012345678901234567890,-18446744073709551616]",
        "[0.1,1.5,-2.25,1e+300,1e-300]",
        "[\"a\\\"b\\\\c\\n\\t\\u0001\"]",
        "[true,false]",
        "\"\xc3\xa9\xf0\x9f\x98\x80\"",
        "{\"k\":{\"x\":{\"y\":[{}]}}}",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) T_EQ_STR(roundtrip(same[i]), same[i]);
    T_EQ_STR(roundtrip("{\"a\":null}"), "{}");
    T_EQ_STR(roundtrip(" [ 1 , 2 ]\n"), "[1,2]");
    T_EQ_STR(roundtrip("1.0"), "1");
    T_EQ_STR(roundtrip("-0"), "0");
    T_EQ_STR(roundtrip("\"\\ud83d\\ude00\\/\""), "\"\xf0\x9f\x98\x80/\"");
    T_EQ_STR(roundtrip("[1e2]"), "[100]");
}

static void test_decode_errors(void)
{
    const struct {
        const char *in, *err;
    } cases[] = {
        {"[1,]", "json: unexpected character ']', expected a value at byte 3"},
        {"{\"a\":1", "json: unexpected end of input at byte 6"},
        {"{1:2}", "json: unexpected character '1', expected a string key at byte 1"},
        {"[1 2]", "json: unexpected character '2', expected ',' or ']' at byte 3"},
        {"01", "json: invalid number (leading zero) at byte 0"},
        {"1.", "json: invalid number (digit expected after '.') at byte 0"},
        {"-", "json: invalid number at byte 0"},
        {"1e999", "json: number out of range at byte 0"},
        {"\"abc", "json: unterminated string at byte 4"},
        {"\"\\q\"", "json: invalid escape in string at byte 1"},
        {"\"\xc0\xaf\"", "json: invalid UTF-8 in string at byte 1"},
        {"\"\xed\xa0\x80\"", "json: invalid UTF-8 in string at byte 1"},
        {"\"\\udc00\"", "json: invalid \\u escape (lone low surrogate) at byte 1"},
        {"[true] false", "json: unexpected character 'f', expected end of input at byte 7"},
        {"\x01", "json: unexpected byte 0x01, expected a value at byte 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) T_EQ_STR(roundtrip(cases[i].in), cases[i].err);
}

static void test_depth_limit(void)
{
    char buf[512];
    memset(buf, '[', 200);
    memset(buf + 200, ']', 200);
    buf[400] = '\0';
    T_EQ_STR(roundtrip(buf), buf);
    memset(buf, '[', 201);
    memset(buf + 201, ']', 201);
    buf[402] = '\0';
    T_EQ_STR(roundtrip(buf), "json: nesting deeper than 200 at byte 200");
}

static void test_encode_errors_name_paths(void)
{
    T_EQ_STR(encode_lua("return { spec = { containers = { {}, { env = { 1, x = 2 } } } } }"),
             "json: cannot encode a mixed table (both integer and string keys) at spec.containers[2].env");
    T_EQ_STR(encode_lua("return { a = { [1] = 1, [3] = 3 } }"),
             "json: cannot encode a sparse array (2 elements, highest index 3) at a");
    T_EQ_STR(encode_lua("return { metadata = { labels = { ['app.kubernetes.io/name'] = print } } }"),
             "json: cannot encode a function at metadata.labels[\"app.kubernetes.io/name\"]");
    T_EQ_STR(encode_lua("return { [1.5] = 1 }"), "json: cannot encode a table with a non-integer number key at (root)");
    T_EQ_STR(encode_lua("return { x = { 0/0 } }"), "json: cannot encode NaN at x[1]");
    T_EQ_STR(encode_lua("return { x = -1/0 }"), "json: cannot encode -inf at x");
    T_EQ_STR(encode_lua("local t = { a = {} } t.a.b = t return t"),
             "json: cannot encode a table that contains itself (cycle) at a.b");
    T_EQ_STR(encode_lua("return { s = 'ok\\255' }"), "json: cannot encode a string with invalid UTF-8 at s");
    T_EQ_STR(encode_lua("return coroutine.create(print)"), "json: cannot encode a coroutine at (root)");
    T_EQ_STR(encode_lua("return { 1, 2, 3 }"), "[1,2,3]");
    T_EQ_STR(encode_lua("return { a = true }"), "{\"a\":true}");
    T_EQ_STR(encode_lua("return 2^53"), "9007199254740992");
    T_EQ_STR(encode_lua("return 0.1 + 0.2"), "0.30000000000000004");
}

static void test_markers_null_bigint(void)
{
    lua_settop(L, 0);
    lop_lua_json_push_null(L);
    T_CHECK(lop_lua_json_is_null(L, -1));
    lua_pushlightuserdata(L, L);
    T_CHECK(!lop_lua_json_is_null(L, -1));
    T_CHECK(lop_lua_bigint_push(L, "-000123", 7));
    size_t n;
    T_EQ_STR(lop_lua_bigint_digits(L, -1, &n), "-123");
    T_EQ_INT(n, 4);
    T_CHECK(lop_lua_bigint_push(L, "-0", 2));
    T_EQ_STR(lop_lua_bigint_digits(L, -1, NULL), "0");
    T_CHECK(!lop_lua_bigint_push(L, "12x", 3));
    T_CHECK(!lop_lua_bigint_push(L, "-", 1));
    T_CHECK(lop_lua_bigint_digits(L, 1, NULL) == NULL);
    /* Marked empty tables. */
    lua_settop(L, 0);
    lua_newtable(L);
    lop_lua_json_push_array_mt(L);
    lua_setmetatable(L, -2);
    size_t len;
    T_EQ_STR(lop_lua_json_encode(L, 1, &len), "[]");
    T_EQ_INT(len, 2);
    lua_settop(L, 0);
    lua_newtable(L);
    lop_lua_json_push_object_mt(L);
    lua_setmetatable(L, -2);
    T_EQ_STR(lop_lua_json_encode(L, -1, NULL), "{}");
}

int main(void)
{
    L = luaL_newstate();
    luaL_openlibs(L);
    lop_lua_json_init(L);
    lop_lua_json_init(L); /* idempotent */
    T_RUN(test_roundtrips);
    T_RUN(test_decode_errors);
    T_RUN(test_depth_limit);
    T_RUN(test_encode_errors_name_paths);
    T_RUN(test_markers_null_bigint);
    lua_close(L);
    return T_DONE();
}
