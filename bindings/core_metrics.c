/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_metrics.c — luaop.core's metric functions, the host side of luaop.metrics
 * (scripts/luaop/metrics.lua; docs/lua-api.md "luaop.metrics"):
 *
 *   core.metric_declare(type, name, help, labels, buckets) -> handle | false | nil, err
 *       type "counter"|"gauge"|"histogram"; labels: array of label names (may be empty);
 *       buckets: array of numbers or nil. false when the host has no metrics registry (luaop
 *       check, unit tests): the caller keeps values itself. Refused names/shapes: nil, message.
 *   core.metric_update(handle, op, values, v) -> true | nil, err
 *       op "add"|"set"|"observe"; values: array of label values in declaration order.
 *
 * Any context (declaring in main.lua is the normal case). Wrong argument types raise.
 * Thread-safety: the registry is process-wide and thread-safe; handles stay valid for the
 * process lifetime, so a handle may be kept in a module-level table of any VM.
 */
#include "bindings/engine_internal.h"

#include <lauxlib.h>

#include <string.h>

#define MAX_LABELS  16
#define MAX_BUCKETS 64

/* Read the array at idx into out (strings stay anchored by the table). Returns the count. */
static size_t string_array(lua_State *L, int idx, const char **out, size_t max, const char *what)
{
    if (lua_isnoneornil(L, idx)) return 0;
    luaL_checktype(L, idx, LUA_TTABLE);
    size_t n = lua_objlen(L, idx);
    if (n > max) luaL_error(L, "%s: at most %d entries", what, (int)max);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, idx, (int)i + 1);
        if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "%s[%d] must be a string", what, (int)i + 1);
        out[i] = lua_tostring(L, -1);
        lua_pop(L, 1); /* still referenced by the table */
    }
    out[n] = NULL;
    return n;
}

static int core_metric_declare(lua_State *L)
{
    static const char *const types[] = {"counter", "gauge", "histogram", NULL};
    int type = luaL_checkoption(L, 1, NULL, types);
    const char *name = luaL_checkstring(L, 2);
    const char *help = luaL_optstring(L, 3, "");
    const char *labels[MAX_LABELS + 1];
    size_t nlabels = string_array(L, 4, labels, MAX_LABELS, "labels");
    double buckets[MAX_BUCKETS];
    size_t nbuckets = 0;
    if (!lua_isnoneornil(L, 5)) {
        luaL_checktype(L, 5, LUA_TTABLE);
        nbuckets = lua_objlen(L, 5);
        if (nbuckets > MAX_BUCKETS) return luaL_error(L, "buckets: at most %d entries", MAX_BUCKETS);
        for (size_t i = 0; i < nbuckets; i++) {
            lua_rawgeti(L, 5, (int)i + 1);
            if (lua_type(L, -1) != LUA_TNUMBER) return luaL_error(L, "buckets[%d] must be a number", (int)i + 1);
            buckets[i] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
    }
    lop_vm_t *vm = lop_lua_engine_vm(L);
    if (!vm->host || !vm->host->metric_declare) {
        lua_pushboolean(L, 0);
        return 1;
    }
    lop_err_t err;
    lop_err_clear(&err);
    void *h = vm->host->metric_declare(vm->host->ud, type, name, help, nlabels ? labels : NULL,
                                       nbuckets ? buckets : NULL, nbuckets, &err);
    if (!h) {
        lua_pushnil(L);
        lua_pushstring(L, err.message);
        return 2;
    }
    lua_pushlightuserdata(L, h);
    return 1;
}

static int core_metric_update(lua_State *L)
{
    static const char *const ops[] = {"add", "set", "observe", NULL};
    luaL_checktype(L, 1, LUA_TLIGHTUSERDATA);
    void *h = lua_touserdata(L, 1);
    int op = luaL_checkoption(L, 2, NULL, ops);
    const char *values[MAX_LABELS + 1];
    size_t nvalues = string_array(L, 3, values, MAX_LABELS, "label values");
    double v = luaL_checknumber(L, 4);
    lop_vm_t *vm = lop_lua_engine_vm(L);
    if (!vm->host || !vm->host->metric_update) return luaL_error(L, "metric_update: no metrics registry");
    lop_err_t err;
    lop_err_clear(&err);
    if (vm->host->metric_update(vm->host->ud, h, op, values, nvalues, v, &err) != LOP_OK) {
        lua_pushnil(L);
        lua_pushstring(L, err.message);
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

void lop_lua_core_metrics_register(lua_State *L, int tidx)
{
    if (tidx < 0 && tidx > LUA_REGISTRYINDEX) tidx = lua_gettop(L) + tidx + 1;
    lua_pushcfunction(L, core_metric_declare);
    lua_setfield(L, tidx, "metric_declare");
    lua_pushcfunction(L, core_metric_update);
    lua_setfield(L, tidx, "metric_update");
}
