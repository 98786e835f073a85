/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json_decode.c — JSON text straight into Lua values (see json_codec.h for the mapping).
 * A recursive-descent parser over the input bytes; strings without escapes are pushed directly
 * from the input, escaped ones are unescaped through the per-state scratch buffer.
 */
#include "bindings/json_codec.h"
#include "bindings/json_internal.h"
#include "host/codec/jsonstr.h"
#include "host/util/utf8.h"

#include <lauxlib.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dec {
    lua_State *L;
    const unsigned char *start, *p, *end;
    int depth;
    lop_lua_sbuf_t *scratch;
} dec_t;

static void dec_value(dec_t *d);

/* Raises; never returns. */
__attribute__((noreturn)) static void dec_fail(dec_t *d, const unsigned char *at, const char *reason)
{
    luaL_error(d->L, "json: %s at byte %d", reason, (int)(at - d->start));
    __builtin_unreachable();
}

__attribute__((noreturn)) static void dec_fail_char(dec_t *d, const unsigned char *at, const char *expected)
{
    char msg[96];
    if (at >= d->end) dec_fail(d, at, "unexpected end of input");
    unsigned char c = *at;
    if (c >= 0x20 && c < 0x7f)
        snprintf(msg, sizeof msg, "unexpected character '%c'%s%s", c, expected ? ", expected " : "",
                 expected ? expected : "");
    else
        snprintf(msg, sizeof msg, "unexpected byte 0x%02x%s%s", c, expected ? ", expected " : "",
                 expected ? expected : "");
    dec_fail(d, at, msg);
}

static inline void skip_ws(dec_t *d)
{
    const unsigned char *p = d->p, *end = d->end;
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    d->p = p;
}

/* d->p is just past the opening quote. Pushes the string; leaves d->p past the closing quote. */
static void dec_string(dec_t *d)
{
    const unsigned char *p = d->p, *end = d->end, *run = p;
    /* Fast path: no escapes. */
    for (;;) {
        if (p >= end) dec_fail(d, p, "unterminated string");
        unsigned char c = *p;
        if (c == '"') {
            lua_pushlstring(d->L, (const char *)run, (size_t)(p - run));
            d->p = p + 1;
            return;
        }
        if (c == '\\') break;
        if (c < 0x20) dec_fail(d, p, "control character in string");
        if (c < 0x80) {
            p++;
        } else {
            size_t n = lop_utf8_decode(p, (size_t)(end - p), NULL);
            if (!n) dec_fail(d, p, "invalid UTF-8 in string");
            p += n;
        }
    }
    /* Slow path: unescape into the scratch buffer. */
    lop_lua_sbuf_t *b = d->scratch;
    b->len = 0;
    lop_lua_sbuf_put(d->L, b, run, (size_t)(p - run));
    for (;;) {
        if (p >= end) dec_fail(d, p, "unterminated string");
        unsigned char c = *p;
        if (c == '"') break;
        if (c == '\\') {
            const unsigned char *esc = p;
            if (p + 1 >= end) dec_fail(d, p, "unterminated string");
            char out;
            switch (p[1]) {
            case '"': out = '"'; break;
            case '\\': out = '\\'; break;
            case '/': out = '/'; break;
            case 'b': out = '\b'; break;
            case 'f': out = '\f'; break;
            case 'n': out = '\n'; break;
            case 'r': out = '\r'; break;
            case 't': out = '\t'; break;
            case 'u': {
                uint32_t cp = 0;
                int used = lop_json_unescape_u((const char *)p, (const char *)end, &cp);
                if (used == LOP_JSON_U_LONE_LOW) dec_fail(d, esc, "invalid \\u escape (lone low surrogate)");
                if (used == LOP_JSON_U_LONE_HIGH)
                    dec_fail(d, esc, "invalid \\u escape (high surrogate without low surrogate)");
                if (used < 0) dec_fail(d, esc, "invalid \\u escape");
                p += used;
                char u8[4];
                lop_lua_sbuf_put(d->L, d->scratch, u8, lop_utf8_encode(cp, u8));
                continue;
            }
            default: dec_fail(d, p, "invalid escape in string");
            }
            lop_lua_sbuf_putc(d->L, b, out);
            p += 2;
            continue;
        }
        if (c < 0x20) dec_fail(d, p, "control character in string");
        if (c < 0x80) {
            lop_lua_sbuf_putc(d->L, b, (char)c);
            p++;
        } else {
            size_t n = lop_utf8_decode(p, (size_t)(end - p), NULL);
            if (!n) dec_fail(d, p, "invalid UTF-8 in string");
            lop_lua_sbuf_put(d->L, b, p, n);
            p += n;
        }
    }
    lua_pushlstring(d->L, b->p, b->len);
    d->p = p + 1;
}

/* 2^53 = 9007199254740992 has 16 digits. */
static const char two53[] = "9007199254740992";

static void dec_number(dec_t *d)
{
    const unsigned char *p = d->p, *end = d->end, *s = p;
    bool neg = false, is_int = true;
    if (p < end && *p == '-') neg = true, p++;
    const unsigned char *digits = p;
    if (p >= end || *p < '0' || *p > '9') dec_fail(d, s, "invalid number");
    if (*p == '0') {
        p++;
        if (p < end && *p >= '0' && *p <= '9') dec_fail(d, s, "invalid number (leading zero)");
    } else {
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    size_t ndigits = (size_t)(p - digits);
    if (p < end && *p == '.') {
        is_int = false;
        p++;
        if (p >= end || *p < '0' || *p > '9') dec_fail(d, s, "invalid number (digit expected after '.')");
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        is_int = false;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') dec_fail(d, s, "invalid number (digit expected in exponent)");
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    d->p = p;
    if (is_int && ndigits <= 15) {
        int64_t v = 0;
        for (const unsigned char *q = digits; q < p; q++) v = v * 10 + (*q - '0');
        lua_pushnumber(d->L, (lua_Number)(neg ? -v : v));
        return;
    }
    if (is_int && (ndigits > 16 || (ndigits == 16 && memcmp(digits, two53, 16) > 0))) {
        lop_lua_bigint_push(d->L, (const char *)s, (size_t)(p - s));
        return;
    }
    char small[64], *txt = small;
    size_t n = (size_t)(p - s);
    if (n >= sizeof small) {
        lop_lua_sbuf_t *b = d->scratch;
        b->len = 0;
        lop_lua_sbuf_put(d->L, b, s, n);
        lop_lua_sbuf_putc(d->L, b, '\0');
        txt = b->p;
    } else {
        memcpy(small, s, n);
        small[n] = '\0';
    }
    /* Huge exponents give +-HUGE_VAL (ERANGE); JSON has no infinity, so refuse them. */
    errno = 0;
    double v = strtod(txt, NULL);
    if (errno == ERANGE && (v > 1.0 || v < -1.0)) dec_fail(d, s, "number out of range");
    lua_pushnumber(d->L, (lua_Number)v);
}

static void dec_literal(dec_t *d, const char *word, size_t n)
{
    if ((size_t)(d->end - d->p) < n || memcmp(d->p, word, n) != 0) dec_fail_char(d, d->p, "a value");
    d->p += n;
}

static void dec_enter(dec_t *d)
{
    if (++d->depth > LOP_LUA_JSON_MAX_DEPTH) dec_fail(d, d->p, "nesting deeper than 200");
    if (!lua_checkstack(d->L, 6)) dec_fail(d, d->p, "Lua stack exhausted");
}

static void dec_object(dec_t *d)
{
    lua_State *L = d->L;
    dec_enter(d);
    d->p++; /* '{' */
    lua_createtable(L, 0, 4);
    skip_ws(d);
    if (d->p < d->end && *d->p == '}') {
        d->p++;
        d->depth--;
        return;
    }
    for (;;) {
        skip_ws(d);
        if (d->p >= d->end || *d->p != '"') dec_fail_char(d, d->p, "a string key");
        d->p++;
        dec_string(d);
        skip_ws(d);
        if (d->p >= d->end || *d->p != ':') dec_fail_char(d, d->p, "':'");
        d->p++;
        skip_ws(d);
        if (d->p < d->end && *d->p == 'n') {
            dec_literal(d, "null", 4);
            lua_pushnil(L); /* a null member leaves the key absent (last duplicate wins) */
        } else {
            dec_value(d);
        }
        lua_rawset(L, -3);
        skip_ws(d);
        if (d->p < d->end && *d->p == ',') {
            d->p++;
            continue;
        }
        if (d->p < d->end && *d->p == '}') {
            d->p++;
            break;
        }
        dec_fail_char(d, d->p, "',' or '}'");
    }
    d->depth--;
}

static void dec_array(dec_t *d)
{
    lua_State *L = d->L;
    dec_enter(d);
    d->p++; /* '[' */
    lua_createtable(L, 4, 0);
    lua_pushlightuserdata(L, (void *)&lop_lua_json_key_array_mt);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lua_setmetatable(L, -2);
    skip_ws(d);
    if (d->p < d->end && *d->p == ']') {
        d->p++;
        d->depth--;
        return;
    }
    for (int i = 1;; i++) {
        skip_ws(d);
        dec_value(d);
        lua_rawseti(L, -2, i);
        skip_ws(d);
        if (d->p < d->end && *d->p == ',') {
            d->p++;
            continue;
        }
        if (d->p < d->end && *d->p == ']') {
            d->p++;
            break;
        }
        dec_fail_char(d, d->p, "',' or ']'");
    }
    d->depth--;
}

static void dec_value(dec_t *d)
{
    if (d->p >= d->end) dec_fail(d, d->p, "unexpected end of input");
    switch (*d->p) {
    case '{': dec_object(d); return;
    case '[': dec_array(d); return;
    case '"':
        d->p++;
        dec_string(d);
        return;
    case 't':
        dec_literal(d, "true", 4);
        lua_pushboolean(d->L, 1);
        return;
    case 'f':
        dec_literal(d, "false", 5);
        lua_pushboolean(d->L, 0);
        return;
    case 'n':
        dec_literal(d, "null", 4);
        lua_pushlightuserdata(d->L, (void *)&lop_lua_json_null_sentinel);
        return;
    default:
        if (*d->p == '-' || (*d->p >= '0' && *d->p <= '9')) {
            dec_number(d);
            return;
        }
        dec_fail_char(d, d->p, "a value");
    }
}

void lop_lua_json_decode(lua_State *L, const char *s, size_t len)
{
    dec_t d = {L, (const unsigned char *)s, (const unsigned char *)s, (const unsigned char *)s + len, 0, NULL};
    d.scratch = lop_lua_sbuf_get(L);
    skip_ws(&d);
    dec_value(&d);
    skip_ws(&d);
    if (d.p != d.end) dec_fail_char(&d, d.p, "end of input");
    lop_lua_sbuf_trim(d.scratch);
}
