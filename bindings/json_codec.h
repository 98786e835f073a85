/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json_codec.h — the lossless JSON <-> Lua codec behind luaop.core.json
 * (docs/lua-core.md "JSON"; docs/architecture.md "Layers").
 *
 * Decoding goes straight from JSON text into Lua values (no intermediate document):
 *   object -> plain table (a null member leaves the key absent);
 *   array  -> table carrying the array marker metatable (so [] stays []); a null element ->
 *             the null sentinel (light userdata) so positions are kept;
 *   integer literal with |v| <= 2^53 -> number; larger -> a bigint userdata keeping the digits;
 *   other numbers -> number; strings must be valid UTF-8 (\u escapes incl. surrogate pairs).
 * Encoding writes into a per-lua_State scratch buffer owned by a userdata (so a raised error
 * never leaks it) and pushes the result as one Lua string. Key order of objects is the table's
 * iteration order unless LOP_LUA_JSON_SORT_KEYS asks for byte order.
 *
 * Errors raise a Lua error whose message starts with "json: ":
 *   decode: "json: <reason> at byte N" (N = 0-based byte offset into the input);
 *   encode: "json: cannot encode <what> at <path>" with a Lua-style key path using 1-based array
 *           indexes (`spec.containers[2].env`, `metadata.labels["app.kubernetes.io/name"]`,
 *           `(root)` for the top level).
 * Depth limit: 200 nested arrays/objects both ways.
 *
 * Per-state values (array/object markers, the bigint metatable, the scratch buffer) live in the
 * registry under light-userdata keys; lop_lua_json_init creates them and is idempotent.
 *
 * Thread-safety: a lua_State is used by one thread at a time; the codec keeps no global state.
 * Every function here may raise (out of memory at least) unless stated otherwise; call it
 * from a protected context.
 */
#ifndef LOP_LUA_JSON_CODEC_H
#define LOP_LUA_JSON_CODEC_H

#include <lua.h>

#include <stdbool.h>
#include <stddef.h>

#define LOP_LUA_JSON_MAX_DEPTH 200

/* Create the registry entries the codec needs (markers, bigint metatable, scratch buffer).
 * Idempotent. Stack: unchanged. May raise (memory). */
void lop_lua_json_init(lua_State *L);

/* Decode len bytes of JSON text (need not be NUL-terminated) and push the value.
 * Stack: +1. Raises "json: <reason> at byte N" on malformed input. */
void lop_lua_json_decode(lua_State *L, const char *s, size_t len);

/* Encode the value at idx and push the JSON text as a Lua string. Returns a pointer to the
 * pushed string's bytes (valid while it stays on the stack) and its length in *len (if non-NULL).
 * Stack: +1. Raises "json: cannot encode <what> at <path>". */
const char *lop_lua_json_encode(lua_State *L, int idx, size_t *len);

/* Flags for lop_lua_json_encode_ex. */
#define LOP_LUA_JSON_SORT_KEYS 1u /* object members in byte order of their keys (deterministic) */

/* lop_lua_json_encode with flags (LOP_LUA_JSON_SORT_KEYS). */
const char *lop_lua_json_encode_ex(lua_State *L, int idx, unsigned flags, size_t *len);

/* Push the shared marker metatables. Stack: +1. Never raises after lop_lua_json_init. */
void lop_lua_json_push_array_mt(lua_State *L);
void lop_lua_json_push_object_mt(lua_State *L);

/* Push the null sentinel (a light userdata). Stack: +1. Never raises. */
void lop_lua_json_push_null(lua_State *L);
/* True when the value at idx is the null sentinel. Never raises. */
bool lop_lua_json_is_null(lua_State *L, int idx);

/* Push a bigint from decimal text: optional '-', then digits (leading zeros are dropped).
 * Returns false (pushing nothing) when the text is not a decimal integer. Stack: +1 or 0. */
bool lop_lua_bigint_push(lua_State *L, const char *s, size_t n);
/* If idx holds a bigint return its canonical digits (NUL-terminated, valid while the value
 * lives) and their length; else NULL. Never raises. */
const char *lop_lua_bigint_digits(lua_State *L, int idx, size_t *len);

/* Push the `core.json` table (decode, encode, null, array, object, is_array, bigint, array_mt,
 * object_mt). Calls lop_lua_json_init. Stack: +1. */
void lop_lua_json_open(lua_State *L);

#endif
