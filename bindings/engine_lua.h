/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_lua.h — the LuaJIT implementation of the scripting engine (host/runtime/engine.h).
 *
 * VMs: one sandboxed lua_State each (bindings/vm.h: memory cap, deadlines, no io/debug/ffi/jit nor
 * the full os unless unsafe_libs). vm_new copies the script set, runs main.lua under the load deadline
 * (opts.load_timeout_ns) and collects the controllers it declared through luaop.core's
 * register_controller (docs/lua-core.md). Errors name the user's file:line.
 *
 * Modules: `require(name)` resolves
 *   - "luaop.core" to the C module (JSON codec, clock, crypto, host functions);
 *   - "string", "table", "math", "coroutine", "bit", "os" to the sandbox's own tables;
 *   - "luaop" and "luaop.*" ONLY from the luaop Lua library (scripts can't shadow them):
 *     "luaop.x.y" -> <libdir>/luaop/x/y.lua or <libdir>/luaop/x/y/init.lua,
 *     "luaop" -> <libdir>/luaop/init.lua or <libdir>/luaop.lua;
 *   - everything else from the script set: "a.b" -> "a/b.lua" or "a/b/init.lua";
 *   - then "cjson" / "cjson.safe" through the system package path (lua-cjson), and with
 *     unsafe_libs any module the system `require` finds.
 * <libdir> (a directory that contains luaop/) is:
 *   1. lop_lua_set_library_path(dir) when called, else
 *   2. $LUAOP_LUA_PATH when set and non-empty (used as given), else the first of these that
 *      contains luaop/:
 *   3. <directory of the executable>/../share/luaop/lua (installed layout: make install);
 *   4. the source tree's scripts/ (located at compile time; builds run in place).
 * The library directory is listed once per process (on the first vm_new after a path change);
 * each file is read when a VM first requires it and its bytes are then shared read-only by every
 * VM, so a process holds only the modules its scripts use.
 *
 * Thread-safety: lop_lua_engine() and the library lookup are safe from any thread; each VM is
 * used by one thread at a time (engine.h).
 */
#ifndef LOP_LUA_ENGINE_LUA_H
#define LOP_LUA_ENGINE_LUA_H

#include "host/runtime/engine.h"

/* The engine vtable; static storage. */
const lop_engine_t *lop_lua_engine(void);

/* Override the luaop library directory (a directory containing luaop/); NULL restores the
 * default search. Takes effect for VMs created afterwards. dir is copied. */
void lop_lua_set_library_path(const char *dir);

/* The library directory in use ("" when none was found). Copied into buf. */
void lop_lua_library_path(char *buf, size_t len);

#endif
