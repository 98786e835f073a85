/* SPDX-License-Identifier: Apache-2.0 */
/* result_map.c — a reconcile's return values mapped to a result (result_map.h). */
#include "bindings/result_map.h"

#include <lauxlib.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The text of an error value at idx (string, {message=, reason=} table, or tostring). */
static void err_text(lua_State *L, int idx, char *out, size_t len)
{
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
    if (lua_type(L, idx) == LUA_TSTRING || lua_type(L, idx) == LUA_TNUMBER) {
        snprintf(out, len, "%s", lua_tostring(L, idx));
    } else if (lua_istable(L, idx)) {
        lua_getfield(L, idx, "message");
        lua_getfield(L, idx, "reason");
        const char *m = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
        const char *r = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        if (m && r)
            snprintf(out, len, "%s: %s", r, m);
        else if (m)
            snprintf(out, len, "%s", m);
        else if (r)
            snprintf(out, len, "%s", r);
        else
            snprintf(out, len, "error (a table without message)");
        lua_pop(L, 2);
    } else if (luaL_callmeta(L, idx, "__tostring") && lua_isstring(L, -1)) {
        snprintf(out, len, "%s", lua_tostring(L, -1));
        lua_pop(L, 1);
    } else {
        snprintf(out, len, "error (a %s value)", luaL_typename(L, idx));
    }
}

int lop_lua_map_result(lua_State *L, int r1, int r2, const char *controller, lop_reconcile_result_t *res)
{
    res->requeue_after_ns = 0;
    if (!lua_isnil(L, r2)) {
        res->kind = LOP_RESULT_ERROR;
        if (lua_istable(L, r2)) {
            lua_getfield(L, r2, "terminal");
            if (lua_toboolean(L, -1)) res->kind = LOP_RESULT_TERMINAL;
            lua_pop(L, 1);
        }
        err_text(L, r2, res->message, sizeof res->message);
        return 0;
    }
    if (lua_isnil(L, r1)) {
        res->kind = LOP_RESULT_DONE;
        return 0;
    }
    if (!lua_istable(L, r1)) {
        return luaL_error(L,
                          "controller '%s': reconcile returned a %s; expected nothing, a result "
                          "table ({requeue = true} / {requeue_after = secs}) or nil, err",
                          controller, luaL_typename(L, r1));
    }
    lua_getfield(L, r1, "requeue_after");
    if (!lua_isnil(L, -1)) {
        lua_Number s = lua_tonumber(L, -1);
        if (lua_type(L, -1) != LUA_TNUMBER || isnan(s) || s < 0 || s > 1e9)
            return luaL_error(L,
                              "controller '%s': reconcile result requeue_after must be a number "
                              "of seconds >= 0",
                              controller);
        if (s > 0) {
            res->kind = LOP_RESULT_REQUEUE_AFTER;
            res->requeue_after_ns = (int64_t)llround(s * 1e9);
            if (res->requeue_after_ns <= 0) res->requeue_after_ns = 1;
            return 0;
        }
    }
    lua_pop(L, 1);
    lua_getfield(L, r1, "requeue");
    res->kind = lua_toboolean(L, -1) ? LOP_RESULT_REQUEUE : LOP_RESULT_DONE;
    return 0;
}

static const char *const kind_names[] = {[LOP_RESULT_DONE] = "done",
                                         [LOP_RESULT_REQUEUE] = "requeue",
                                         [LOP_RESULT_REQUEUE_AFTER] = "requeue_after",
                                         [LOP_RESULT_ERROR] = "error",
                                         [LOP_RESULT_TERMINAL] = "terminal"};

int lop_lua_reconcile_result(lua_State *L)
{
    lua_settop(L, 2);
    lop_reconcile_result_t res;
    memset(&res, 0, sizeof res);
    lop_lua_map_result(L, 1, 2, "(luaop.testing)", &res);
    lua_createtable(L, 0, 3);
    lua_pushstring(L, kind_names[res.kind]);
    lua_setfield(L, -2, "kind");
    if (res.kind == LOP_RESULT_REQUEUE_AFTER) {
        lua_pushnumber(L, (lua_Number)res.requeue_after_ns / 1e9);
        lua_setfield(L, -2, "requeue_after");
    }
    if (res.message[0]) {
        lua_pushstring(L, res.message);
        lua_setfield(L, -2, "message");
    }
    return 1;
}
