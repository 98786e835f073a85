/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox_guard.h — guards the sandbox puts around the places where a script can escape the VM's
 * protections (issue 20, docs/execution-model.md "What a script cannot do"):
 *
 *  - **C-stack re-entry.** A Lua function called back from a C library function (string.gsub's
 *    function or table replacement, table.sort's comparator, __tostring through tostring and
 *    string.format, a coroutine resumed through coroutine.resume or coroutine.wrap) runs on top of
 *    that C function's frame: string.gsub alone keeps a luaL_Buffer (8 KiB) there. Nested a
 *    thousand deep (`local function g(s) return (s:gsub(".", g)) end`), the thread's C stack
 *    overflows and LuaJIT, which does not count such nesting, crashes the process (SIGSEGV). The
 *    guarded functions count their nesting per VM and refuse past LOP_LUA_MAX_C_REENTRY with a Lua
 *    error naming the function. The count is reset at every catch point (pcall, xpcall,
 *    coroutine.resume, the top of each lop_lua_vm_run), so a caught error does not leak depth.
 *  - **Message handlers during a deadline.** The deadline is enforced by a count hook that raises;
 *    an error raised inside a hook runs xpcall's message handler while the hook is still marked
 *    active, so hooks cannot fire in it and `xpcall(loop, loop)` would spin forever. The sandbox's
 *    xpcall therefore does not run the script's handler for the deadline error: it returns that
 *    error as it is (the script sees xpcall return false, "<what> deadline exceeded", and the hook
 *    raises again at its next instruction). Handlers of other errors run normally, under the hook.
 *
 * The guards are Lua functions over the originals (so the JIT can still compile code calling
 * them), installed by lop_lua_guard_install; the state they share is a table in the registry.
 */
#ifndef LOP_LUA_SANDBOX_GUARD_H
#define LOP_LUA_SANDBOX_GUARD_H

#include <lua.h>

/* Nesting through guarded C functions allowed per VM. ~100 KiB of C stack per 10 levels of
 * string.gsub; 100 levels stay far inside a thread's stack (8 MiB by default, 2 MiB at least in
 * the threads luaop starts) and far beyond what real scripts nest (one or two). */
#define LOP_LUA_MAX_C_REENTRY 100

/* Replace string.gsub, table.sort, tostring, string.format, coroutine.resume, coroutine.wrap,
 * pcall and xpcall in the state's globals with their guarded versions. Run once while opening the
 * sandbox (protected). Stack: unchanged. Raises (memory). */
void lop_lua_guard_install(lua_State *L);

/* Reset the nesting count (at the start of a protected run). Never raises once installed. */
void lop_lua_guard_reset(lua_State *L);

#endif
