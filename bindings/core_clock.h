/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_clock.h — core.now, core.mono, core.format_time, core.format_microtime (docs/lua-core.md
 * "Clock"), reading an injected lop_clock_t (the host's, or the system clock in the plain module).
 * Thread-safety: per lua_State; the clock itself is safe from any thread.
 */
#ifndef LOP_LUA_CORE_CLOCK_H
#define LOP_LUA_CORE_CLOCK_H

#include "host/util/clock.h"

#include <lua.h>

/* Set the clock functions as fields of the table at tidx. clock is borrowed and must outlive the
 * lua_State. Stack: unchanged. May raise (memory). */
void lop_lua_clock_register(lua_State *L, int tidx, const lop_clock_t *clock);

#endif
