/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_lua.c — the lop_engine_t vtable over LuaJIT VMs (see engine_lua.h and engine.h):
 * building a VM from a script set, reconcile with result mapping (docs/lua-core.md), Lua
 * predicates and map functions over lazily decoded events.
 */
#include "bindings/engine_lua.h"

#include "bindings/core_clock.h"
#include "bindings/core_crypto.h"
#include "bindings/core_selector.h"
#include "bindings/core_yaml.h"
#include "bindings/engine_internal.h"
#include "bindings/json_codec.h"
#include "bindings/result_map.h"

#include "host/util/buf.h"

#include <lauxlib.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char lop_lua_key_callbacks = 'c';
const char lop_lua_key_reconcilers = 'r';
const char lop_lua_key_scripts = 's';
const char lop_lua_key_loaded = 'l';
static const char key_event_mt = 'e';
static const char key_event_ref = 'v';

void lop_lua_push_registry(lua_State *L, const char *key)
{
    lua_pushlightuserdata(L, (void *)key);
    lua_rawget(L, LUA_REGISTRYINDEX);
}

static void new_registry_table(lua_State *L, const char *key)
{
    lua_pushlightuserdata(L, (void *)key);
    lua_newtable(L);
    lua_rawset(L, LUA_REGISTRYINDEX);
}

/* ------------------------------------------------------------------ events */

typedef struct event_ref {
    lop_vm_t *vm;
    uint64_t gen;
    const lop_event_view_t *view;
} event_ref_t;

/* event.__index(t, k): decode "object" / "old" on first access; valid during the call only. */
static int event_index(lua_State *L)
{
    const char *k = lua_tostring(L, 2);
    if (lua_type(L, 2) != LUA_TSTRING || (strcmp(k, "object") != 0 && strcmp(k, "old") != 0)) return 0;
    lua_pushlightuserdata(L, (void *)&key_event_ref);
    lua_rawget(L, 1);
    event_ref_t *ref = (event_ref_t *)lua_touserdata(L, -1);
    if (!ref) return 0;
    if (ref->gen != ref->vm->event_gen || ref->vm->phase != LOP_LUA_EVENT)
        return luaL_error(L,
                          "event.%s read after the predicate or map function returned "
                          "(event data is only valid during the call)",
                          k);
    const lop_event_view_t *ev = ref->view;
    if (k[0] == 'o' && k[1] == 'b') {
        if (!ev->obj_json) return 0;
        lop_lua_json_decode(L, ev->obj_json, ev->obj_len);
    } else {
        if (ev->type != LOP_EV_UPDATE || !ev->old_json) return 0;
        lop_lua_json_decode(L, ev->old_json, ev->old_len);
    }
    lua_pushvalue(L, 2);
    lua_pushvalue(L, -2);
    lua_rawset(L, 1);
    return 1;
}

/* Push {type = "add"|"update"|"delete"} whose object/old decode on first read. */
static void push_event(lua_State *L, lop_vm_t *vm, const lop_event_view_t *ev)
{
    static const char *const types[] = {"add", "update", "delete"};
    lua_createtable(L, 0, 4);
    lua_pushstring(L, (unsigned)ev->type < 3 ? types[ev->type] : "unknown");
    lua_setfield(L, -2, "type");
    lua_pushlightuserdata(L, (void *)&key_event_ref);
    event_ref_t *ref = (event_ref_t *)lua_newuserdata(L, sizeof *ref);
    ref->vm = vm;
    ref->gen = vm->event_gen;
    ref->view = ev;
    lua_rawset(L, -3);
    lop_lua_push_registry(L, &key_event_mt);
    lua_setmetatable(L, -2);
}

/* ------------------------------------------------------------------ vm_new */

typedef struct load_ctx {
    lop_vm_t *vm;
    const lop_script_set_t *set;
} load_ctx_t;

static int load_fn(lua_State *L)
{
    load_ctx_t *c = (load_ctx_t *)lua_touserdata(L, 1);
    lop_vm_t *vm = c->vm;
    new_registry_table(L, &lop_lua_key_callbacks);
    new_registry_table(L, &lop_lua_key_reconcilers);

    lua_pushlightuserdata(L, (void *)&key_event_mt);
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, event_index);
    lua_setfield(L, -2, "__index");
    lua_rawset(L, LUA_REGISTRYINDEX);

    lop_lua_require_install(L, c->set);

    /* luaop.core */
    lua_createtable(L, 0, 24);
    int core = lua_gettop(L);
    lop_lua_json_open(L);
    lua_setfield(L, core, "json");
    lop_lua_selector_open(L);
    lua_setfield(L, core, "selector");
    lop_lua_crypto_open(L);
    lua_setfield(L, core, "crypto");
    lop_lua_yaml_open(L);
    lua_setfield(L, core, "yaml");
    lua_pushcfunction(L, lop_lua_reconcile_result);
    lua_setfield(L, core, "reconcile_result");
    lop_lua_clock_register(L, core, vm->lvm.clock);
    lop_lua_core_host_register(L, core);
    lop_lua_fieldpath_register(L, core);
    lua_pushboolean(L, 1);
    lua_setfield(L, core, "in_host");
    lop_lua_push_registry(L, &lop_lua_key_loaded);
    lua_pushvalue(L, core);
    lua_setfield(L, -2, "luaop.core");
    lua_settop(L, 1);

    const lop_script_file_t *main_file = NULL;
    for (size_t i = 0; i < c->set->nfiles; i++)
        if (strcmp(c->set->files[i].name, "main.lua") == 0) main_file = &c->set->files[i];
    if (!main_file) return luaL_error(L, "script set %s has no main.lua", vm->origin);

    vm->phase = LOP_LUA_LOAD;
    /* Compile every file of the set, so that a syntax error fails the load (luaop check, a
     * reload) even in a file main.lua does not require (yet). Only compiled: a file runs when
     * it is required. */
    for (size_t i = 0; i < c->set->nfiles; i++) {
        const lop_script_file_t *f = &c->set->files[i];
        size_t nl = strlen(f->name);
        if (f == main_file || nl < 4 || strcmp(f->name + nl - 4, ".lua") != 0) continue;
        lop_lua_vm_load(L, f->data, f->len, f->name);
        lua_pop(L, 1);
    }
    lop_lua_vm_load(L, main_file->data, main_file->len, "main.lua");
    lop_lua_vm_call(L, 0, 0);
    return 0;
}

static void vm_free(lop_vm_t *vm)
{
    if (!vm) return;
    lop_lua_vm_cleanup(&vm->lvm);
    lop_lua_decls_free(vm);
    lop_lua_webhooks_free(vm);
    lop_lua_indexes_free(vm);
    free(vm);
}

static lop_vm_t *vm_new(const lop_script_set_t *set, const lop_engine_opts_t *opts, const lop_host_api_t *host,
                        lop_err_t *err)
{
    lop_engine_opts_t none = {0};
    if (!opts) opts = &none;
    lop_vm_t *vm = lop_xcalloc(1, sizeof *vm);
    vm->host = host;
    vm->opts = *opts;
    snprintf(vm->origin, sizeof vm->origin, "%s", set && set->origin[0] ? set->origin : "(unnamed)");
    if (!set) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "no script set");
        free(vm);
        return NULL;
    }
    lop_rc_t rc = lop_lua_vm_init(&vm->lvm, opts, err);
    if (rc != LOP_OK) {
        free(vm);
        return NULL;
    }
    load_ctx_t c = {vm, set};
    char msg[sizeof err->message];
    rc = lop_lua_vm_run(&vm->lvm, load_fn, &c, opts->load_timeout_ns, "script load", msg, sizeof msg);
    vm->phase = LOP_LUA_IDLE;
    lop_lua_decls_drop_open(vm);
    if (rc != LOP_OK) {
        lop_err_set(err, rc == LOP_ERR ? LOP_EINVAL : rc, 0, NULL, "%s", msg);
        vm_free(vm);
        return NULL;
    }
    /* Loading leaves garbage (about a third of a fresh VM: the compiler's and the library
     * modules' temporaries); collect it now rather than carrying it until the collector's first
     * cycle, which an idle VM may not reach for a long time. */
    lua_gc(vm->lvm.L, LUA_GCCOLLECT, 0);
    return vm;
}

static void declarations(lop_vm_t *vm, const lop_ctrl_decl_t **decls, size_t *n)
{
    *decls = vm->decls;
    *n = vm->ndecls;
}

/* ------------------------------------------------------------------ reconcile */

typedef struct rec_ctx {
    lop_vm_t *vm;
    const char *controller;
    const lop_reconcile_req_t *req;
    lop_reconcile_result_t *res;
} rec_ctx_t;

static int reconcile_fn(lua_State *L)
{
    rec_ctx_t *c = (rec_ctx_t *)lua_touserdata(L, 1);
    lop_reconcile_result_t *res = c->res;
    lop_lua_push_registry(L, &lop_lua_key_reconcilers);
    lua_getfield(L, -1, c->controller);
    if (!lua_isfunction(L, -1)) return luaL_error(L, "no controller named '%s'", c->controller);
    lua_createtable(L, 0, 3);
    lua_pushstring(L, c->req->namespace_ ? c->req->namespace_ : "");
    lua_setfield(L, -2, "namespace");
    lua_pushstring(L, c->req->name ? c->req->name : "");
    lua_setfield(L, -2, "name");
    lua_pushstring(L, c->req->reconcile_id ? c->req->reconcile_id : "");
    lua_setfield(L, -2, "id");
    lop_lua_vm_call(L, 1, 2);

    int r1 = lua_gettop(L) - 1, r2 = lua_gettop(L);
    return lop_lua_map_result(L, r1, r2, c->controller, res);
}

static const lop_ctrl_decl_t *find_decl(lop_vm_t *vm, const char *name)
{
    for (size_t i = 0; i < vm->ndecls; i++)
        if (strcmp(vm->decls[i].name, name) == 0) return &vm->decls[i];
    return NULL;
}

static void reconcile(lop_vm_t *vm, const char *controller, const lop_reconcile_req_t *req, lop_reconcile_result_t *res)
{
    memset(res, 0, sizeof *res);
    if (vm->lvm.broken) {
        res->kind = LOP_RESULT_ERROR;
        res->vm_broken = true;
        snprintf(res->message, sizeof res->message,
                 "the Lua VM is broken (memory limit exceeded earlier); it must be rebuilt");
        return;
    }
    const lop_ctrl_decl_t *d = find_decl(vm, controller);
    if (!d) {
        res->kind = LOP_RESULT_ERROR;
        snprintf(res->message, sizeof res->message, "no controller named '%s'", controller);
        return;
    }
    int64_t timeout = d->reconcile_timeout_ns ? d->reconcile_timeout_ns : vm->opts.reconcile_timeout_ns;
    rec_ctx_t c = {vm, controller, req, res};
    vm->phase = LOP_LUA_RECONCILE;
    vm->ctx_controller = controller;
    vm->ctx_req = req;
    lop_rc_t rc = lop_lua_vm_run(&vm->lvm, reconcile_fn, &c, timeout, "reconcile", res->message, sizeof res->message);
    vm->phase = LOP_LUA_IDLE;
    vm->ctx_controller = NULL;
    vm->ctx_req = NULL;
    if (rc == LOP_OK) return;
    res->kind = LOP_RESULT_ERROR;
    res->requeue_after_ns = 0;
    res->timed_out = rc == LOP_ETIMEDOUT;
    res->vm_broken = rc == LOP_ENOMEM || vm->lvm.broken;
}

/* ------------------------------------------------------------------ predicates and maps */

typedef struct ev_ctx {
    lop_vm_t *vm;
    int lua_id;
    const lop_event_view_t *ev;
    bool *pass;
    lop_request_list_t *out; /* map only; owned by the caller frame even if this raises */
    char ***vals;            /* index_values only: like out */
    int *nvals;
} ev_ctx_t;

/* Push callbacks[lua_id]. Stack: +1. Raises when there is no such function. */
static void push_callback(lua_State *L, int lua_id)
{
    lop_lua_push_registry(L, &lop_lua_key_callbacks);
    lua_rawgeti(L, -1, lua_id);
    lua_remove(L, -2);
    if (!lua_isfunction(L, -1)) luaL_error(L, "no Lua callback with id %d", lua_id);
}

static int predicate_fn(lua_State *L)
{
    ev_ctx_t *c = (ev_ctx_t *)lua_touserdata(L, 1);
    push_callback(L, c->lua_id);
    push_event(L, c->vm, c->ev);
    lop_lua_vm_call(L, 1, 1);
    *c->pass = lua_toboolean(L, -1);
    return 0;
}

static int map_fn(lua_State *L)
{
    ev_ctx_t *c = (ev_ctx_t *)lua_touserdata(L, 1);
    push_callback(L, c->lua_id);
    push_event(L, c->vm, c->ev);
    /* Map functions receive the object (docs/lua-core.md: map = function(obj)), plus the event. */
    lua_getfield(L, -1, "object");
    lua_insert(L, -2);
    lop_lua_vm_call(L, 2, 1);
    int t = lua_gettop(L);
    if (lua_isnil(L, t)) return 0;
    if (!lua_istable(L, t))
        return luaL_error(L, "map function returned a %s; expected a list of {namespace=, name=}", luaL_typename(L, t));
    size_t n = lua_objlen(L, t);
    for (size_t i = 1; i <= n; i++) {
        lua_rawgeti(L, t, (int)i);
        if (!lua_istable(L, -1))
            return luaL_error(L, "map function result [%d] is a %s; expected {namespace=, name=}", (int)i,
                              luaL_typename(L, -1));
        lua_getfield(L, -1, "name");
        if (lua_type(L, -1) != LUA_TSTRING || lua_objlen(L, -1) == 0)
            return luaL_error(L, "map function result [%d]: name must be a non-empty string", (int)i);
        lua_getfield(L, -2, "namespace");
        if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
            return luaL_error(L, "map function result [%d]: namespace must be a string or nil", (int)i);
        lua_pop(L, 3);
    }
    lop_request_list_t *out = c->out;
    out->namespaces = lop_xcalloc(n ? n : 1, sizeof(char *));
    out->names = lop_xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 1; i <= n; i++) {
        lua_rawgeti(L, t, (int)i);
        lua_getfield(L, -1, "name");
        lua_getfield(L, -2, "namespace");
        out->names[out->n] = lop_xstrdup(lua_tostring(L, -2));
        out->namespaces[out->n] = lop_xstrdup(lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
        out->n++;
        lua_pop(L, 3);
    }
    return 0;
}

/* An extract function's result: nil (no values) or a list of strings, numbers, booleans. */
static int extract_fn(lua_State *L)
{
    ev_ctx_t *c = (ev_ctx_t *)lua_touserdata(L, 1);
    push_callback(L, c->lua_id);
    lop_lua_json_decode(L, c->ev->obj_json, c->ev->obj_len);
    lop_lua_vm_call(L, 1, 1);
    int t = lua_gettop(L);
    if (lua_isnil(L, t)) return 0;
    if (!lua_istable(L, t))
        return luaL_error(L, "extract returned a %s; expected a list of strings", luaL_typename(L, t));
    size_t n = lua_objlen(L, t);
    if (n > 100000) return luaL_error(L, "extract returned %d values (at most 100000)", (int)n);
    for (size_t i = 1; i <= n; i++) {
        lua_rawgeti(L, t, (int)i);
        int ty = lua_type(L, -1);
        if (ty != LUA_TSTRING && ty != LUA_TNUMBER && ty != LUA_TBOOLEAN)
            return luaL_error(L, "extract result [%d] is a %s; expected a string", (int)i, luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    *c->vals = lop_xcalloc(n ? n : 1, sizeof(char *)); /* nothing below raises */
    for (size_t i = 1; i <= n; i++) {
        lua_rawgeti(L, t, (int)i);
        char buf[64];
        const char *v;
        if (lua_type(L, -1) == LUA_TBOOLEAN) {
            v = lua_toboolean(L, -1) ? "true" : "false";
        } else if (lua_type(L, -1) == LUA_TNUMBER) {
            lua_Number d = lua_tonumber(L, -1);
            if (d == (lua_Number)(long long)d && d > -9007199254740992.0 && d < 9007199254740992.0) {
                snprintf(buf, sizeof buf, "%lld", (long long)d);
            } else {
                for (int prec = 1; prec <= 17; prec++) { /* the shortest form that reads back */
                    snprintf(buf, sizeof buf, "%.*g", prec, d);
                    if (strtod(buf, NULL) == d) break;
                }
            }
            v = buf;
        } else {
            v = lua_tostring(L, -1);
        }
        (*c->vals)[(*c->nvals)++] = lop_xstrdup(v);
        lua_pop(L, 1);
    }
    return 0;
}

static lop_rc_t run_event(lop_vm_t *vm, lua_CFunction fn, ev_ctx_t *c, const char *what, lop_err_t *err)
{
    if (vm->lvm.broken)
        return lop_err_set(err, LOP_ENOMEM, 0, NULL, "the Lua VM is broken (memory limit exceeded earlier)");
    if (c->lua_id < 1 || c->lua_id > vm->ncallbacks)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "no Lua %s with id %d", what, c->lua_id);
    char msg[sizeof err->message];
    vm->event_gen++;
    vm->phase = LOP_LUA_EVENT;
    int64_t timeout =
        vm->opts.predicate_timeout_ns > 0 ? vm->opts.predicate_timeout_ns : LOP_PREDICATE_TIMEOUT_DEFAULT_NS;
    lop_rc_t rc = lop_lua_vm_run(&vm->lvm, fn, c, timeout, what, msg, sizeof msg);
    vm->phase = LOP_LUA_IDLE;
    vm->event_gen++;
    if (rc == LOP_OK) return LOP_OK;
    return lop_err_set(err, rc, 0, NULL, "%s: %s", vm->callback_names[c->lua_id], msg);
}

static lop_rc_t predicate(lop_vm_t *vm, int lua_id, const lop_event_view_t *ev, bool *pass, lop_err_t *err)
{
    bool p = true;
    ev_ctx_t c = {vm, lua_id, ev, &p, NULL, NULL, NULL};
    lop_rc_t rc = run_event(vm, predicate_fn, &c, "predicate", err);
    *pass = rc == LOP_OK ? p : true;
    return rc;
}

static lop_rc_t map(lop_vm_t *vm, int lua_id, const lop_event_view_t *ev, lop_request_list_t *out, lop_err_t *err)
{
    memset(out, 0, sizeof *out);
    ev_ctx_t c = {vm, lua_id, ev, NULL, out, NULL, NULL};
    lop_rc_t rc = run_event(vm, map_fn, &c, "map function", err);
    if (rc != LOP_OK) lop_request_list_free(out);
    return rc;
}

static lop_rc_t index_values(lop_vm_t *vm, int lua_id, const char *obj_json, size_t len, char ***vals, int *n,
                             lop_err_t *err)
{
    *vals = NULL;
    *n = 0;
    lop_event_view_t ev = {LOP_EV_ADD, NULL, 0, obj_json, len};
    ev_ctx_t c = {vm, lua_id, &ev, NULL, NULL, vals, n};
    lop_rc_t rc = run_event(vm, extract_fn, &c, "index extract function", err);
    if (rc != LOP_OK) {
        for (int i = 0; i < *n; i++) free((*vals)[i]);
        free(*vals);
        *vals = NULL;
        *n = 0;
    }
    return rc;
}

static size_t memory(lop_vm_t *vm) { return vm->lvm.mem_used; }

static const lop_engine_t engine = {
    .name = "luajit",
    .vm_new = vm_new,
    .declarations = declarations,
    .reconcile = reconcile,
    .predicate = predicate,
    .map = map,
    .memory = memory,
    .vm_free = vm_free,
    .webhook_declarations = lop_lua_webhook_declarations,
    .admit = lop_lua_admit,
    .convert = lop_lua_convert,
    .index_declarations = lop_lua_index_declarations,
    .index_values = index_values,
};

const lop_engine_t *lop_lua_engine(void) { return &engine; }
