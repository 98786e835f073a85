/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_selector.c — core.selector: label selectors parsed and matched by the same code as the API
 * server and the informers (host/meta/selector.h).
 *
 *   core.selector.parse_labels(s) -> sel | nil, err     (err = "unable to parse requirement: ...")
 *   sel:matches(labels) -> boolean                      (labels: table of string values, or nil)
 *   sel:empty() -> boolean                              (matches everything)
 *   tostring(sel) -> the source text
 *
 * The selector lives in a userdata created (empty) before parsing, so a raised error never leaks
 * it; __gc frees it. Matching reads the labels from a snapshot of string pointers taken from the
 * Lua table, so no Lua call happens inside the C matcher. Any context; misuse raises.
 */
#include "bindings/core_selector.h"

#include "host/meta/selector.h"

#include <lauxlib.h>

#include <string.h>

#define SELECTOR_MT "luaop.selector"

typedef struct lsel {
    lop_label_selector_t *sel;
} lsel_t;

static int sel_gc(lua_State *L)
{
    lsel_t *s = (lsel_t *)luaL_checkudata(L, 1, SELECTOR_MT);
    if (s->sel) lop_label_selector_free(s->sel);
    s->sel = NULL;
    return 0;
}

/* core.selector.parse_labels(s) -> sel | nil, err. */
static int core_selector_parse_labels(lua_State *L)
{
    const char *text = luaL_optstring(L, 1, "");
    lua_settop(L, 1);
    lsel_t *s = (lsel_t *)lua_newuserdata(L, sizeof *s);
    s->sel = NULL;
    luaL_getmetatable(L, SELECTOR_MT);
    lua_setmetatable(L, -2);
    lua_pushstring(L, text); /* the source text, kept in the uservalue-like env table */
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "source");
    lua_setfenv(L, -3);
    lua_pop(L, 1);
    lop_err_t err;
    if (lop_label_selector_parse(text, &s->sel, &err) != LOP_OK) {
        lua_pushnil(L);
        lua_pushstring(L, err.message);
        return 2;
    }
    return 1;
}

typedef struct labels_view {
    const char **kv; /* 2*n pointers into Lua strings on the stack */
    int n;
} labels_view_t;

static const char *lookup(void *ud, const char *key)
{
    labels_view_t *v = (labels_view_t *)ud;
    for (int i = 0; i < v->n; i++)
        if (strcmp(v->kv[2 * i], key) == 0) return v->kv[2 * i + 1];
    return NULL;
}

/* sel:matches(labels) -> boolean. labels: table of string keys and string values, or nil. */
static int sel_matches(lua_State *L)
{
    lsel_t *s = (lsel_t *)luaL_checkudata(L, 1, SELECTOR_MT);
    if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);
    if (!s->sel) return luaL_error(L, "selector is not initialised");
    int n = 0;
    if (lua_istable(L, 2)) {
        lua_pushnil(L);
        while (lua_next(L, 2)) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) n++;
            lua_pop(L, 1);
        }
    }
    const char **kv = (const char **)lua_newuserdata(L, sizeof(char *) * (size_t)(2 * n + 1));
    int i = 0;
    if (lua_istable(L, 2)) {
        lua_pushnil(L);
        while (lua_next(L, 2) && i < n) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) {
                /* The strings stay alive: they are referenced by the table at index 2. */
                kv[2 * i] = lua_tostring(L, -2);
                kv[2 * i + 1] = lua_tostring(L, -1);
                i++;
            }
            lua_pop(L, 1);
        }
        lua_settop(L, 3);
    }
    labels_view_t v = {kv, i};
    lua_pushboolean(L, lop_label_selector_match(s->sel, lookup, &v));
    return 1;
}

/* sel:empty() -> boolean. */
static int sel_empty(lua_State *L)
{
    lsel_t *s = (lsel_t *)luaL_checkudata(L, 1, SELECTOR_MT);
    lua_pushboolean(L, !s->sel || lop_label_selector_empty(s->sel));
    return 1;
}

static int sel_tostring(lua_State *L)
{
    luaL_checkudata(L, 1, SELECTOR_MT);
    lua_getfenv(L, 1);
    lua_getfield(L, -1, "source");
    return 1;
}

void lop_lua_selector_open(lua_State *L)
{
    if (luaL_newmetatable(L, SELECTOR_MT)) {
        static const luaL_Reg methods[] = {{"matches", sel_matches}, {"empty", sel_empty}, {NULL, NULL}};
        lua_createtable(L, 0, 2);
        luaL_setfuncs(L, methods, 0);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, sel_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushcfunction(L, sel_tostring);
        lua_setfield(L, -2, "__tostring");
        /* getmetatable(sel) does not hand scripts this table: a __gc they put in it would run
         * with hooks off, out of reach of the deadline (sandbox_guard.h) */
        lua_pushliteral(L, "luaop.selector");
        lua_setfield(L, -2, "__metatable");
    }
    lua_pop(L, 1);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, core_selector_parse_labels);
    lua_setfield(L, -2, "parse_labels");
}
