/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_clock.c — clock functions of luaop.core. Each closure carries the clock as a light
 * userdata upvalue. Any context; they raise only on wrong argument types.
 */
#include "bindings/core_clock.h"

#include <lauxlib.h>

#include <math.h>

static const lop_clock_t *clock_of(lua_State *L) { return (const lop_clock_t *)lua_touserdata(L, lua_upvalueindex(1)); }

/* core.now() -> wall seconds (float, microsecond precision). */
static int core_now(lua_State *L)
{
    int64_t ns = lop_clock_wall(clock_of(L));
    lua_pushnumber(L, (lua_Number)(ns / 1000) / 1e6);
    return 1;
}

/* core.mono() -> monotonic seconds (float). */
static int core_mono(lua_State *L)
{
    int64_t ns = lop_clock_mono(clock_of(L));
    lua_pushnumber(L, (lua_Number)ns / 1e9);
    return 1;
}

static int64_t secs_arg(lua_State *L)
{
    if (lua_isnoneornil(L, 1)) return lop_clock_wall(clock_of(L));
    lua_Number s = luaL_checknumber(L, 1);
    if (!isfinite(s) || fabs(s) > 9e9) luaL_argerror(L, 1, "time out of range");
    /* Round to whole microseconds so 1.5e-6 style float noise does not shift the digits. */
    return (int64_t)llround(s * 1e6) * 1000;
}

/* core.format_time([secs]) -> "2006-01-02T15:04:05Z" (metav1.Time); default now. */
static int core_format_time(lua_State *L)
{
    char buf[40];
    lua_pushstring(L, lop_time_format(secs_arg(L), buf, sizeof buf));
    return 1;
}

/* core.format_microtime([secs]) -> "2006-01-02T15:04:05.000000Z" (metav1.MicroTime). */
static int core_format_microtime(lua_State *L)
{
    char buf[40];
    lua_pushstring(L, lop_microtime_format(secs_arg(L), buf, sizeof buf));
    return 1;
}

/* core.parse_time(s) -> secs or nil, err (RFC 3339, any fraction width). */
static int core_parse_time(lua_State *L)
{
    const char *s = luaL_checkstring(L, 1);
    int64_t ns;
    if (lop_time_parse(s, &ns) != 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "invalid RFC 3339 time: %s", s);
        return 2;
    }
    lua_pushnumber(L, (lua_Number)(ns / 1000) / 1e6);
    return 1;
}

void lop_lua_clock_register(lua_State *L, int tidx, const lop_clock_t *clock)
{
    static const luaL_Reg fns[] = {
        {"now", core_now},
        {"mono", core_mono},
        {"format_time", core_format_time},
        {"format_microtime", core_format_microtime},
        {"parse_time", core_parse_time},
        {NULL, NULL},
    };
    if (tidx < 0 && tidx > LUA_REGISTRYINDEX) tidx = lua_gettop(L) + tidx + 1;
    lua_pushvalue(L, tidx);
    lua_pushlightuserdata(L, (void *)clock); /* each function's one upvalue */
    luaL_setfuncs(L, fns, 1);
    lua_pop(L, 1);
}
