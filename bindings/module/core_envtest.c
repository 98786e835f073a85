/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_envtest.c — core.apiserver and core.rest for the busted module (core_envtest.h).
 * Each server and client is a userdata created (NULL inside) before the resource is acquired,
 * so a raised error can never leak one; __gc releases what is left. Response bodies live in a
 * userdata box during decoding for the same reason (STYLE.md habit 4).
 */
#include "bindings/module/core_envtest.h"

#include "apiserver/apiserver.h"
#include "bindings/engine_internal.h"
#include "bindings/json_codec.h"
#include "host/kube/client/rest.h"
#include "host/kube/client/rest_object.h"
#include "host/kube/client/restmapper.h"
#include "host/util/log.h"

#include <lauxlib.h>

#include <stdlib.h>
#include <string.h>

#define SERVER_MT "luaop.core.apiserver"
#define CLIENT_MT "luaop.core.rest.client"
#define RESP_MT   "luaop.core.rest.response"

typedef struct lua_server {
    lop_apiserver_t *srv;
} lua_server_t;

typedef struct lua_client {
    lop_rest_client_t *client;
    lop_restmapper_t *mapper;
} lua_client_t;

static int push_fail(lua_State *L, lop_rc_t rc, const lop_err_t *err)
{
    lua_pushnil(L);
    lop_lua_push_err(L, rc, err);
    return 2;
}

/* ------------------------------------------------------------------ core.apiserver */

static lua_server_t *check_server(lua_State *L)
{
    lua_server_t *s = (lua_server_t *)luaL_checkudata(L, 1, SERVER_MT);
    if (!s->srv) luaL_error(L, "core.apiserver: the server was stopped");
    return s;
}

static const char *opt_field_str(lua_State *L, int t, const char *k, char *buf, size_t n)
{
    lua_getfield(L, t, k);
    const char *v = NULL;
    if (!lua_isnil(L, -1)) {
        if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "core.apiserver.start: opts.%s must be a string", k);
        snprintf(buf, n, "%s", lua_tostring(L, -1));
        v = buf;
    }
    lua_pop(L, 1);
    return v;
}

/* opts[k]: nil -> 0 (the server's default); else an integer in [1, max], or raises naming it. */
static double opt_field_count(lua_State *L, int t, const char *k, double max)
{
    lua_getfield(L, t, k);
    double v = 0;
    if (!lua_isnil(L, -1)) {
        v = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
        if (!(v >= 1 && v <= max) || v != (double)(long long)v)
            luaL_error(L, "core.apiserver.start: opts.%s must be a whole number >= 1", k);
    }
    lua_pop(L, 1);
    return v;
}

/* core.apiserver.start([opts]) -> server | nil, err */
static int apiserver_start(lua_State *L)
{
    lop_apiserver_opts_t o = {0};
    char listen[256];
    lop_log_level_t log_level = LOP_LOG_WARN;
    if (!lua_isnoneornil(L, 1)) {
        luaL_checktype(L, 1, LUA_TTABLE);
        o.listen = opt_field_str(L, 1, "listen", listen, sizeof listen);
        o.history = (long)opt_field_count(L, 1, "history", 1e12);
        o.history_bytes = (size_t)opt_field_count(L, 1, "history_bytes", 1e15);
        o.decode_cache_bytes = (size_t)opt_field_count(L, 1, "decode_cache_bytes", 1e15);
        char level[16];
        if (opt_field_str(L, 1, "log_level", level, sizeof level) && lop_log_level_parse(level, &log_level) != 0)
            return luaL_error(L, "core.apiserver.start: opts.log_level must be debug, info, warn or error");
    }
    /* the host's logger is process-wide: the level of the last server started wins */
    lop_log_setup(log_level, LOP_LOG_TEXT);
    lua_server_t *s = (lua_server_t *)lua_newuserdata(L, sizeof *s);
    s->srv = NULL;
    luaL_getmetatable(L, SERVER_MT);
    lua_setmetatable(L, -2);
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc = lop_apiserver_start(&o, &s->srv, &err);
    if (rc != LOP_OK) return push_fail(L, rc, &err);
    return 1;
}

static int server_url(lua_State *L)
{
    lua_pushstring(L, lop_apiserver_url(check_server(L)->srv));
    return 1;
}

static int server_port(lua_State *L)
{
    lua_pushinteger(L, lop_apiserver_port(check_server(L)->srv));
    return 1;
}

static int server_stop(lua_State *L)
{
    lua_server_t *s = (lua_server_t *)luaL_checkudata(L, 1, SERVER_MT);
    lop_apiserver_t *srv = s->srv;
    s->srv = NULL;
    lop_apiserver_stop(srv);
    return 0;
}

/* ------------------------------------------------------------------ core.rest */

static lua_client_t *check_client(lua_State *L)
{
    lua_client_t *c = (lua_client_t *)luaL_checkudata(L, 1, CLIENT_MT);
    if (!c->client) luaL_error(L, "core.rest: the client was closed");
    return c;
}

/* core.rest.new(url [, opts]) -> client | nil, err */
static int rest_new(lua_State *L)
{
    const char *url = luaL_checkstring(L, 1);
    double qps = -1;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        lua_getfield(L, 2, "qps");
        if (!lua_isnil(L, -1)) {
            if (!lua_isnumber(L, -1) || lua_tonumber(L, -1) <= 0)
                return luaL_error(L, "core.rest.new: opts.qps must be a number > 0");
            qps = lua_tonumber(L, -1);
        }
        lua_pop(L, 1);
    }
    lua_client_t *c = (lua_client_t *)lua_newuserdata(L, sizeof *c);
    c->client = NULL;
    c->mapper = NULL;
    luaL_getmetatable(L, CLIENT_MT);
    lua_setmetatable(L, -2);
    lop_rest_config_t cfg = {0};
    cfg.server = strdup(url);
    cfg.namespace = strdup("default");
    cfg.user_agent = strdup("luaop-testing/" LUAOP_VERSION);
    cfg.qps = qps;
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc = LOP_ENOMEM;
    if (cfg.server && cfg.namespace && cfg.user_agent) rc = lop_rest_client_new(&cfg, &c->client, &err);
    lop_rest_config_cleanup(&cfg);
    if (rc != LOP_OK) return push_fail(L, rc, &err);
    c->mapper = lop_restmapper_new(c->client);
    if (!c->mapper) {
        lop_rest_client_free(c->client);
        c->client = NULL;
        lop_err_set(&err, LOP_ENOMEM, 0, NULL, "core.rest.new: out of memory");
        return push_fail(L, LOP_ENOMEM, &err);
    }
    return 1;
}

static int client_close(lua_State *L)
{
    lua_client_t *c = (lua_client_t *)luaL_checkudata(L, 1, CLIENT_MT);
    if (c->mapper) lop_restmapper_free(c->mapper);
    if (c->client) lop_rest_client_free(c->client);
    c->mapper = NULL;
    c->client = NULL;
    return 0;
}

static int resp_gc(lua_State *L)
{
    lop_rest_resp_cleanup((lop_rest_resp_t *)luaL_checkudata(L, 1, RESP_MT));
    return 0;
}

static bool looks_like_json(const lop_buf_t *b)
{
    for (size_t i = 0; i < b->len; i++) {
        char ch = b->data[i];
        if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') continue;
        return ch == '{' || ch == '[';
    }
    return false;
}

/* Push the decoded body of resp (nil when empty or not JSON). Raises on malformed JSON. */
static void push_body(lua_State *L, const lop_rest_resp_t *resp)
{
    if (resp->body.data && looks_like_json(&resp->body))
        lop_lua_json_decode(L, resp->body.data, resp->body.len);
    else
        lua_pushnil(L);
}

/* Failure: nil, err (with details from a Status body). Stack: +2. */
static int push_request_err(lua_State *L, lop_rc_t rc, lop_err_t *err, const lop_rest_resp_t *resp)
{
    if (!err->code) err->code = resp->code;
    int ok = resp->body.data && looks_like_json(&resp->body);
    lua_pushnil(L);
    lop_lua_push_err(L, rc, err);
    if (ok) {
        lop_lua_json_decode(L, resp->body.data, resp->body.len);
        if (lua_istable(L, -1))
            lua_getfield(L, -1, "details");
        else
            lua_pushnil(L);
        if (lua_istable(L, -1))
            lua_setfield(L, -3, "details");
        else
            lua_pop(L, 1);
        lua_pop(L, 1);
    }
    return 2;
}

static const char *opt_arg(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx)) return NULL;
    return luaL_checkstring(L, idx);
}

/* client:request(verb, api_version, kind, ns, name, subresource, patch_type, query, body) */
static int client_request(lua_State *L)
{
    lua_client_t *c = check_client(L);
    static const char *const verbs[] = {"get", "list", "create", "update", "patch", "delete", NULL};
    static const char *const types[] = {"merge", "json", "strategic", "apply", NULL};
    lop_object_req_t rq = {0};
    rq.verb = verbs[luaL_checkoption(L, 2, NULL, verbs)];
    rq.api_version = luaL_checkstring(L, 3);
    rq.kind = luaL_checkstring(L, 4);
    rq.ns = opt_arg(L, 5);
    rq.name = opt_arg(L, 6);
    rq.subresource = opt_arg(L, 7);
    rq.patch_type = opt_arg(L, 8);
    rq.query = opt_arg(L, 9);
    if (!lua_isnoneornil(L, 10)) rq.body = luaL_checklstring(L, 10, &rq.len);
    if (strcmp(rq.verb, "patch") == 0) {
        if (!rq.patch_type) return luaL_argerror(L, 8, "patch needs a patch_type");
        rq.verb = strcmp(types[luaL_checkoption(L, 8, NULL, types)], "apply") == 0 ? "apply" : "patch";
    }
    if (rq.ns && !rq.ns[0]) rq.ns = NULL;
    lua_settop(L, 10);
    lop_rest_resp_t *resp = (lop_rest_resp_t *)lua_newuserdata(L, sizeof *resp);
    lop_rest_resp_init(resp);
    luaL_getmetatable(L, RESP_MT);
    lua_setmetatable(L, -2);
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc = lop_rest_object(c->client, c->mapper, &rq, resp, NULL, &err);
    if (rc != LOP_OK) return push_request_err(L, rc, &err, resp);
    lua_pushinteger(L, resp->code);
    push_body(L, resp);
    return 2;
}

/* ------------------------------------------------------------------ registration */

static void new_metatable(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc)
{
    luaL_newmetatable(L, name);
    lua_newtable(L);
    luaL_register(L, NULL, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
}

void lop_lua_envtest_register(lua_State *L, int tidx)
{
    if (tidx < 0) tidx = lua_gettop(L) + tidx + 1;
    static const luaL_Reg server_methods[] = {
        {"url", server_url}, {"port", server_port}, {"stop", server_stop}, {NULL, NULL}};
    static const luaL_Reg client_methods[] = {{"request", client_request}, {"close", client_close}, {NULL, NULL}};
    static const luaL_Reg no_methods[] = {{NULL, NULL}};
    new_metatable(L, SERVER_MT, server_methods, server_stop);
    new_metatable(L, CLIENT_MT, client_methods, client_close);
    new_metatable(L, RESP_MT, no_methods, resp_gc);
    lop_lua_json_init(L);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, apiserver_start);
    lua_setfield(L, -2, "start");
    lua_setfield(L, tidx, "apiserver");
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, rest_new);
    lua_setfield(L, -2, "new");
    lua_setfield(L, tidx, "rest");
}
