/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_selector.h — core.selector (label selectors, host/meta/selector.h) for Lua.
 * Thread-safety: per lua_State.
 */
#ifndef LOP_LUA_CORE_SELECTOR_H
#define LOP_LUA_CORE_SELECTOR_H

#include <lua.h>

/* Register the selector metatable and push the `core.selector` table ({parse_labels}).
 * Stack: +1. May raise (memory). */
void lop_lua_selector_open(lua_State *L);

#endif
