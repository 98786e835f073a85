/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_crypto.c — luaop.core.crypto (see core_crypto.h): SHA-256 and HMAC-SHA-256 through
 * OpenSSL, base64 through host/util/base64.
 */
#include "bindings/core_crypto.h"

#include "host/util/base64.h"

#include <lauxlib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void push_hex(lua_State *L, const unsigned char *md, unsigned int n)
{
    static const char digits[] = "0123456789abcdef";
    char hex[2 * EVP_MAX_MD_SIZE];
    for (unsigned int i = 0; i < n; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    lua_pushlstring(L, hex, 2 * (size_t)n);
}

/* crypto.sha256_hex(s) -> hex string. Raises on a non-string. */
static int crypto_sha256_hex(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!EVP_Digest(s, len, md, &n, EVP_sha256(), NULL)) return luaL_error(L, "sha256_hex: OpenSSL digest failed");
    push_hex(L, md, n);
    return 1;
}

/* crypto.hmac_sha256_hex(key, s) -> hex string. Raises on a non-string. */
static int crypto_hmac_sha256_hex(lua_State *L)
{
    size_t klen, len;
    const char *key = luaL_checklstring(L, 1, &klen);
    const char *s = luaL_checklstring(L, 2, &len);
    if (klen > (size_t)0x7fffffff) return luaL_argerror(L, 1, "key too long");
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)s, len, md, &n))
        return luaL_error(L, "hmac_sha256_hex: OpenSSL HMAC failed");
    push_hex(L, md, n);
    return 1;
}

/* A malloc'd result held by a userdata whose __gc frees it, so a raising lua_pushlstring (the
 * memory cap) cannot leak it. */
typedef struct boxed {
    char *p;
} boxed_t;

static const char key_box_mt = 'b';

static int box_gc(lua_State *L)
{
    boxed_t *b = (boxed_t *)lua_touserdata(L, 1);
    free(b->p);
    b->p = NULL;
    return 0;
}

/* Push an empty box. Stack: +1. Raises (memory) before anything is acquired. */
static boxed_t *push_box(lua_State *L)
{
    boxed_t *b = (boxed_t *)lua_newuserdata(L, sizeof *b);
    b->p = NULL;
    lua_pushlightuserdata(L, (void *)&key_box_mt);
    lua_rawget(L, LUA_REGISTRYINDEX);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_createtable(L, 0, 1);
        lua_pushcfunction(L, box_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushlightuserdata(L, (void *)&key_box_mt);
        lua_pushvalue(L, -2);
        lua_rawset(L, LUA_REGISTRYINDEX);
    }
    lua_setmetatable(L, -2);
    return b;
}

/* Replace the box at the top by the string it holds (len bytes) and free it. Stack: 0. */
static void unbox(lua_State *L, boxed_t *b, size_t len)
{
    lua_pushlstring(L, b->p, len); /* may raise: __gc frees b->p */
    free(b->p);
    b->p = NULL;
    lua_remove(L, -2);
}

/* crypto.base64_encode(s [, url]) -> string. Raises on a non-string. */
static int crypto_base64_encode(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    bool url = lua_toboolean(L, 2);
    lua_settop(L, 2);
    boxed_t *b = push_box(L);
    b->p = lop_base64_encode(s, len, url);
    if (!b->p) return luaL_error(L, "base64_encode: out of memory");
    unbox(L, b, strlen(b->p));
    return 1;
}

/* crypto.base64_decode(s) -> string, or nil, err for input that is not base64. Raises on a
 * non-string. */
static int crypto_base64_decode(lua_State *L)
{
    size_t len;
    luaL_checklstring(L, 1, &len);
    lua_settop(L, 1);
    boxed_t *b = push_box(L);
    size_t n = 0;
    /* An embedded zero is not base64: refuse it rather than decode the part before it. */
    const char *in = lua_tostring(L, 1);
    b->p = strlen(in) == len ? lop_base64_decode(in, &n) : NULL;
    if (!b->p) {
        lua_pushnil(L);
        lua_createtable(L, 0, 3);
        lua_pushinteger(L, 0);
        lua_setfield(L, -2, "code");
        lua_pushliteral(L, "Invalid");
        lua_setfield(L, -2, "reason");
        lua_pushfstring(L,
                        "base64_decode: the input (%d bytes) is not base64 (a character outside both "
                        "alphabets, data after padding, or a dangling sextet)",
                        (int)len);
        lua_setfield(L, -2, "message");
        return 2;
    }
    unbox(L, b, n);
    return 1;
}

void lop_lua_crypto_open(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"sha256_hex", crypto_sha256_hex},
        {"hmac_sha256_hex", crypto_hmac_sha256_hex},
        {"base64_encode", crypto_base64_encode},
        {"base64_decode", crypto_base64_decode},
        {NULL, NULL},
    };
    lua_createtable(L, 0, 4);
    for (const luaL_Reg *r = fns; r->name; r++) {
        lua_pushcfunction(L, r->func);
        lua_setfield(L, -2, r->name);
    }
}
