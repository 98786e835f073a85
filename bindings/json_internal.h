/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json_internal.h — pieces shared by json_decode.c, json_encode.c and json_lua.c (not public).
 *
 * The scratch buffer is a growable byte buffer whose storage comes from the lua_State's own
 * allocator (so it counts against the VM's memory cap) and is owned by a userdata kept in the
 * registry: when an error unwinds through the codec the memory is still owned and freed by __gc.
 * Thread-safety: per lua_State, like everything in bindings/.
 */
#ifndef LOP_LUA_JSON_INTERNAL_H
#define LOP_LUA_JSON_INTERNAL_H

#include <lua.h>

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct lop_lua_sbuf {
    char *p;
    size_t len;
    size_t cap;
    lua_Alloc allocf;
    void *allocud;
} lop_lua_sbuf_t;

/* Registry keys (their addresses are the keys). */
extern const char lop_lua_json_key_array_mt;
extern const char lop_lua_json_key_object_mt;
extern const char lop_lua_json_key_bigint_mt;
extern const char lop_lua_json_key_scratch;
extern const char lop_lua_json_null_sentinel;

/* The per-state scratch buffer, len reset to 0. Raises when lop_lua_json_init was not called. */
lop_lua_sbuf_t *lop_lua_sbuf_get(lua_State *L);
/* Make room for n more bytes; raises "not enough memory" when the allocator refuses. */
void lop_lua_sbuf_grow(lua_State *L, lop_lua_sbuf_t *b, size_t n);
/* Release storage above a threshold after a large use (keeps small buffers for reuse). */
void lop_lua_sbuf_trim(lop_lua_sbuf_t *b);

static inline void lop_lua_sbuf_put(lua_State *L, lop_lua_sbuf_t *b, const void *p, size_t n)
{
    if (b->cap - b->len < n) lop_lua_sbuf_grow(L, b, n);
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static inline void lop_lua_sbuf_putc(lua_State *L, lop_lua_sbuf_t *b, char c)
{
    if (b->cap == b->len) lop_lua_sbuf_grow(L, b, 1);
    b->p[b->len++] = c;
}

/* Whether the bigint userdata at idx exists; helpers for json_lua.c. */
bool lop_lua_json_is_bigint(lua_State *L, int idx);

#endif
