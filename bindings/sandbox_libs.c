/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox_libs.c — the safe `os` of the default sandbox: os.time, os.date and os.clock only,
 * reading the VM's injected clock (see sandbox_libs.h; Lua 5.1 manual §5.8 for the behaviour).
 */
#include "bindings/sandbox_libs.h"

#include <lauxlib.h>

#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

static const lop_clock_t *clock_of(lua_State *L) { return (const lop_clock_t *)lua_touserdata(L, lua_upvalueindex(1)); }

/* The wall time of the VM's clock in whole seconds. */
static time_t now_secs(lua_State *L)
{
    int64_t ns = lop_clock_wall(clock_of(L));
    return (time_t)(ns >= 0 ? ns / 1000000000 : -((-ns + 999999999) / 1000000000));
}

/* The time argument at idx (default: the VM's clock). Raises on a non-number or a value that
 * does not fit a time_t. */
static time_t time_arg(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx)) return now_secs(L);
    lua_Number t = luaL_checknumber(L, idx);
    if (!isfinite(t) || fabs(t) > 1e15) luaL_argerror(L, idx, "time out of range");
    return (time_t)floor(t);
}

/* Field k of the table at 1 as an int; d < 0 means required. Raises naming the field. */
static int date_field(lua_State *L, const char *k, int d)
{
    lua_getfield(L, 1, k);
    int v;
    if (lua_isnil(L, -1)) {
        if (d < 0) return luaL_error(L, "field '%s' missing in date table", k);
        v = d;
    } else {
        if (lua_type(L, -1) != LUA_TNUMBER) return luaL_error(L, "field '%s' in date table is not a number", k);
        lua_Number n = lua_tonumber(L, -1);
        if (!isfinite(n) || fabs(n) > 1e9) return luaL_error(L, "field '%s' in date table is out of range", k);
        v = (int)n;
    }
    lua_pop(L, 1);
    return v;
}

/* os.time([t]) -> seconds since the epoch: now on the VM's clock, or the local time described by
 * the table t {year, month, day, hour = 12, min = 0, sec = 0, isdst} (mktime); nil when t cannot
 * be represented. Any context; raises on a malformed table. */
static int os_time(lua_State *L)
{
    if (lua_isnoneornil(L, 1)) {
        lua_pushnumber(L, (lua_Number)now_secs(L));
        return 1;
    }
    luaL_checktype(L, 1, LUA_TTABLE);
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_sec = date_field(L, "sec", 0);
    tm.tm_min = date_field(L, "min", 0);
    tm.tm_hour = date_field(L, "hour", 12);
    tm.tm_mday = date_field(L, "day", -1);
    tm.tm_mon = date_field(L, "month", -1) - 1;
    tm.tm_year = date_field(L, "year", -1) - 1900;
    lua_getfield(L, 1, "isdst");
    tm.tm_isdst = lua_isnil(L, -1) ? -1 : lua_toboolean(L, -1);
    lua_pop(L, 1);
    time_t t = mktime(&tm);
    if (t == (time_t)-1)
        lua_pushnil(L);
    else
        lua_pushnumber(L, (lua_Number)t);
    return 1;
}

static void set_int(lua_State *L, const char *k, int v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

/* Whether c is a conversion C99's strftime defines (after an optional E or O modifier). */
static bool valid_conversion(char mod, char c)
{
    if (mod == 'E') return c && strchr("cCxXyY", c);
    if (mod == 'O') return c && strchr("deHImMSuUVwWy", c);
    return c && strchr("aAbBcCdDeFgGhHIjmMnprRStTuUVwWxXyYzZ%", c);
}

/* os.date([format [, t]]) -> string, or a table for "*t" (year, month, day, hour, min, sec,
 * wday, yday, isdst). format defaults to "%c"; a leading "!" means UTC instead of local time;
 * t defaults to now on the VM's clock. Returns nil when t cannot be broken down. Any context;
 * raises naming an invalid conversion specifier. */
static int os_date(lua_State *L)
{
    const char *s = luaL_optstring(L, 1, "%c");
    time_t t = time_arg(L, 2);
    struct tm tm, *stm;
    if (*s == '!') {
        stm = gmtime_r(&t, &tm);
        s++;
    } else {
        stm = localtime_r(&t, &tm);
    }
    if (!stm) {
        lua_pushnil(L);
        return 1;
    }
    if (strcmp(s, "*t") == 0) {
        lua_createtable(L, 0, 9);
        set_int(L, "sec", stm->tm_sec);
        set_int(L, "min", stm->tm_min);
        set_int(L, "hour", stm->tm_hour);
        set_int(L, "day", stm->tm_mday);
        set_int(L, "month", stm->tm_mon + 1);
        set_int(L, "year", stm->tm_year + 1900);
        set_int(L, "wday", stm->tm_wday + 1);
        set_int(L, "yday", stm->tm_yday + 1);
        if (stm->tm_isdst >= 0) {
            lua_pushboolean(L, stm->tm_isdst);
            lua_setfield(L, -2, "isdst");
        }
        return 1;
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (; *s; s++) {
        if (*s != '%') {
            luaL_addchar(&b, *s);
            continue;
        }
        char spec[4] = {'%', 0, 0, 0};
        char mod = 0, c = s[1];
        if (c == 'E' || c == 'O') {
            mod = c;
            c = s[2];
        }
        if (!valid_conversion(mod, c)) {
            return luaL_error(L, "bad argument #1 to 'date' (invalid conversion specifier '%%%s%c')",
                              mod == 'E'   ? "E"
                              : mod == 'O' ? "O"
                                           : "",
                              c ? c : ' ');
        }
        if (mod) {
            spec[1] = mod;
            spec[2] = c;
            s += 2;
        } else {
            spec[1] = c;
            s += 1;
        }
        char out[256];
        /* spec is one conversion checked by valid_conversion above. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        size_t n = strftime(out, sizeof out, spec, stm);
#pragma GCC diagnostic pop
        luaL_addlstring(&b, out, n);
    }
    luaL_pushresult(&b);
    return 1;
}

/* os.clock() -> CPU seconds used by the calling thread (the VM's thread). Any context. */
static int os_clock(lua_State *L)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) ts.tv_sec = 0, ts.tv_nsec = 0;
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec / 1e9);
    return 1;
}

void lop_lua_safe_os_open(lua_State *L, const lop_clock_t *clock)
{
    if (!clock) clock = &lop_clock_system;
    static const struct {
        const char *name;
        lua_CFunction fn;
    } fns[] = {{"time", os_time}, {"date", os_date}};
    lua_createtable(L, 0, 3);
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        lua_pushlightuserdata(L, (void *)clock);
        lua_pushcclosure(L, fns[i].fn, 1);
        lua_setfield(L, -2, fns[i].name);
    }
    lua_pushcfunction(L, os_clock);
    lua_setfield(L, -2, "clock");
}
