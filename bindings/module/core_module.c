/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_module.c — luaop.core as a plain Lua C module (build/lua/luaop/core.so) for busted specs
 * under `luajit`: the same JSON codec and clock helpers as the host VMs (system clock), without
 * the host-only functions (docs/lua-core.md): json, yaml, selector, crypto, fieldpath, now/mono/format_time/...,
 * plus what only the module has: apiserver and rest (core_envtest.h, for luaop.testing.apiserver)
 * and schema (core_schema.h, the API server's CRD validator for luaop.testing's fake)
 */
#include "bindings/core_clock.h"
#include "bindings/core_crypto.h"
#include "bindings/core_selector.h"
#include "bindings/core_yaml.h"
#include "bindings/engine_internal.h"
#include "bindings/json_codec.h"
#include "bindings/module/core_envtest.h"
#include "bindings/module/core_schema.h"
#include "bindings/result_map.h"

#include <lauxlib.h>

int luaopen_luaop_core(lua_State *L);

int luaopen_luaop_core(lua_State *L)
{
    lua_createtable(L, 0, 8);
    lop_lua_json_open(L);
    lua_setfield(L, -2, "json");
    lop_lua_selector_open(L);
    lua_setfield(L, -2, "selector");
    lop_lua_crypto_open(L);
    lua_setfield(L, -2, "crypto");
    lop_lua_yaml_open(L);
    lua_setfield(L, -2, "yaml");
    lua_pushcfunction(L, lop_lua_reconcile_result);
    lua_setfield(L, -2, "reconcile_result");
    lop_lua_clock_register(L, -1, &lop_clock_system);
    lop_lua_envtest_register(L, -1);
    lop_lua_fieldpath_register(L, -1);
    lop_lua_schema_register(L, -1);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "in_host");
    return 1;
}
