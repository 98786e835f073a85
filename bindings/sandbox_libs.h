/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox_libs.h — the standard-library pieces the default sandbox adds on top of base, string,
 * table, math, coroutine and bit (docs/lua-api.md "Sandbox libraries"):
 *
 *  - a safe `os` with only time, date and clock. The rest of Lua's os library (execute, exit,
 *    getenv, remove, rename, tmpname, setlocale) is not there at all. os.time() and os.date()
 *    without a time argument read the VM's injected clock (wall time), so tests that step a fake
 *    clock see it; with an argument they are Lua 5.1's (mktime / localtime or gmtime with "!").
 *    os.clock() is the CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID) in seconds: each
 *    VM runs on one thread, so this is the CPU the script's own thread used, not the process's.
 *    Reference: the Lua 5.1 manual §5.8 (os.time, os.date, os.clock).
 *
 * os.date's format is checked against C99's strftime conversions (plus the "E"/"O" modifiers
 * POSIX allows before some of them); an unknown conversion raises naming it, as Lua 5.2+ does,
 * instead of handing glibc a format it may treat as undefined behaviour.
 *
 * Thread-safety: the functions touch only their own lua_State and use localtime_r/gmtime_r, so
 * VMs on different threads may call them at once.
 */
#ifndef LOP_LUA_SANDBOX_LIBS_H
#define LOP_LUA_SANDBOX_LIBS_H

#include "host/util/clock.h"

#include <lua.h>

/* Push the safe os table {time, date, clock}; clock NULL means the system clock. The clock must
 * outlive the state. Stack: +1. Raises (memory); must run inside a protected call. */
void lop_lua_safe_os_open(lua_State *L, const lop_clock_t *clock);

#endif
