/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox_guard.c — re-entry and message-handler guards (sandbox_guard.h).
 */
#include "bindings/sandbox_guard.h"

#include "bindings/vm.h"

#include <lauxlib.h>

static const char key_guard_state = 'g';

/* The guards, in Lua: arguments are the shared state table, the limit and deadline_hit(). */
static const char guard_src[] =
    "local state, max, deadline_hit = ...\n"
    "local raw_pcall, raw_xpcall, error = pcall, xpcall, error\n"
    "local function restore(d, ...) state.depth = d return ... end\n"
    "local function guard(f, name)\n"
    "  return function(...)\n"
    "    local d = state.depth\n"
    "    if d >= max then\n"
    "      error(name .. ': calls nested more than ' .. max .. ' deep through C functions (string.gsub, '\n"
    "        .. 'table.sort, tostring, string.format, coroutines); refused before the C stack overflows', 2)\n"
    "    end\n"
    "    state.depth = d + 1\n"
    "    return restore(d, f(...))\n"
    "  end\n"
    "end\n"
    "string.gsub = guard(string.gsub, 'string.gsub')\n"
    "table.sort = guard(table.sort, 'table.sort')\n"
    "_G.tostring = guard(tostring, 'tostring')\n"
    "string.format = guard(string.format, 'string.format')\n"
    "local resume, create = guard(coroutine.resume, 'coroutine.resume'), coroutine.create\n"
    "coroutine.resume = resume\n"
    "local function unwrap(ok, ...) if ok then return ... end error((...), 0) end\n"
    "coroutine.wrap = function(f)\n" /* over the guarded resume; errors pass through unchanged */
    "  local co = create(f)\n"
    "  return function(...) return unwrap(resume(co, ...)) end\n"
    "end\n"
    "_G.pcall = function(f, ...) return restore(state.depth, raw_pcall(f, ...)) end\n"
    "_G.xpcall = function(f, h, ...)\n"
    "  local function handler(e)\n"
    "    if deadline_hit() then return e end\n"
    "    return h(e)\n"
    "  end\n"
    "  return restore(state.depth, raw_xpcall(f, handler, ...))\n"
    "end\n";

static int deadline_hit(lua_State *L)
{
    lua_pushboolean(L, lop_lua_vm_from(L)->deadline_hit);
    return 1;
}

void lop_lua_guard_install(lua_State *L)
{
    if (luaL_loadbuffer(L, guard_src, sizeof guard_src - 1, "=luaop-sandbox-guard") != 0) lua_error(L);
    lua_pushlightuserdata(L, (void *)&key_guard_state);
    lua_createtable(L, 0, 1);
    lua_pushinteger(L, 0);
    lua_setfield(L, -2, "depth");
    lua_pushvalue(L, -1);
    lua_insert(L, -3); /* fn, state, key, state */
    lua_rawset(L, LUA_REGISTRYINDEX);
    lua_pushinteger(L, LOP_LUA_MAX_C_REENTRY);
    lua_pushcfunction(L, deadline_hit);
    lua_call(L, 3, 0);
}

void lop_lua_guard_reset(lua_State *L)
{
    lua_pushlightuserdata(L, (void *)&key_guard_state);
    lua_rawget(L, LUA_REGISTRYINDEX);
    if (lua_istable(L, -1)) {
        lua_pushinteger(L, 0);
        lua_setfield(L, -2, "depth");
    }
    lua_pop(L, 1);
}
