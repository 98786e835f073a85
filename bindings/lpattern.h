/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lpattern.h — string.find, string.match, string.gmatch and string.gsub for the sandbox, with Lua
 * 5.1's pattern language (Lua 5.1 manual §5.4.1: classes %a %c %d %l %p %s %u %w %x %z and their
 * complements, sets [...], the items *, +, -, ?, anchors ^ and $, captures ( ) and (), %1-%9
 * back-references, %bxy, %f[set]) and its function semantics, but a matcher that can be stopped.
 *
 * Why not LuaJIT's own: its matcher is a C function that backtracks without bound, and the
 * deadline hook cannot run inside C code, so `("a"):rep(40):find(("a*"):rep(40) .. "b")` ran 8x
 * and 14x past a 1 s deadline (issue 20 part 3). This matcher counts its steps and checks the
 * VM's deadline every LOP_LUA_PATTERN_CHECK_STEPS of them (lop_lua_vm_check_deadline: the call
 * raises "<what> deadline exceeded" like any other code past its deadline); with no deadline it
 * runs to the end as LuaJIT's would. Its recursion is bounded too: past LOP_LUA_PATTERN_MAX_DEPTH
 * nested items it raises "pattern too complex" (Lua 5.2+'s limit and message) instead of
 * exhausting the C stack. Its state lives on the C stack only, so a raise leaks nothing.
 *
 * Differences from LuaJIT 2.1's functions, all deliberate: the two limits above; nothing else
 * (the unit tests compare both on a corpus of patterns and subjects).
 *
 * Thread-safety: per lua_State, like the rest of the sandbox.
 */
#ifndef LOP_LUA_LPATTERN_H
#define LOP_LUA_LPATTERN_H

#include <lua.h>

#define LOP_LUA_PATTERN_CHECK_STEPS 4096 /* matcher steps between deadline checks */
#define LOP_LUA_PATTERN_MAX_DEPTH   200  /* nested pattern items (captures, quantifiers) */

/* Replace find, match, gmatch and gsub in the `string` table at idx (the one strings index as
 * their metatable's __index). Stack: unchanged. Raises (memory). */
void lop_lua_patterns_install(lua_State *L, int idx);

/* The matcher functions themselves (for tests that compare them with LuaJIT's). */
int lop_lua_str_find(lua_State *L);
int lop_lua_str_match(lua_State *L);
int lop_lua_str_gmatch(lua_State *L);
int lop_lua_str_gsub(lua_State *L);

#endif
