/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_decl.c — core.register_controller: validate a controller spec (docs/lua-core.md,
 * "Controller spec") and convert it into a lop_ctrl_decl_t owned by the VM. Lua predicates and
 * map functions get lua_ids in declaration order (1, 2, ...), stored in the callbacks table.
 *
 * Every C allocation is attached to vm->decls as soon as it is made, so an error raised half
 * way through a spec leaks nothing (vm_free releases partially filled declarations).
 */
#include "bindings/engine_internal.h"

#include "host/util/buf.h"

#include <lauxlib.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRED_MAX_DEPTH 32

/* ------------------------------------------------------------------ freeing */

static void pred_free(lop_pred_t *p)
{
    for (size_t i = 0; i < p->nargs; i++) pred_free(&p->args[i]);
    free(p->args);
}

static void watch_free(lop_watch_decl_t *w)
{
    free(w->gvk.api_version);
    free(w->gvk.kind);
    for (size_t i = 0; i < w->npreds; i++) pred_free(&w->preds[i]);
    free(w->preds);
    free(w->namespace_);
    free(w->label_selector);
}

static void decl_free(lop_ctrl_decl_t *d)
{
    free(d->name);
    watch_free(&d->for_);
    for (size_t j = 0; j < d->nowns; j++) watch_free(&d->owns[j]);
    free(d->owns);
    for (size_t j = 0; j < d->nwatches; j++) watch_free(&d->watches[j]);
    free(d->watches);
}

void lop_lua_decls_drop_open(lop_vm_t *vm)
{
    if (!vm->decl_open) return;
    vm->decl_open = false;
    decl_free(&vm->decls[--vm->ndecls]);
}

void lop_lua_decls_free(lop_vm_t *vm)
{
    for (size_t i = 0; i < vm->ndecls; i++) decl_free(&vm->decls[i]);
    free(vm->decls);
    vm->decls = NULL;
    vm->ndecls = vm->capdecls = 0;
    for (int i = 1; i <= vm->ncallbacks && vm->callback_names; i++) free(vm->callback_names[i]);
    free(vm->callback_names);
    vm->callback_names = NULL;
    vm->ncallbacks = 0;
}

/* ------------------------------------------------------------------ validation helpers */

typedef struct spec_ctx {
    lua_State *L;
    lop_vm_t *vm;
    const char *name; /* controller name, for messages */
} spec_ctx_t;

/* Raises "controller '<name>': <path>: <msg>". */
__attribute__((noreturn, format(printf, 3, 4))) static void spec_fail(spec_ctx_t *c, const char *path, const char *fmt,
                                                                      ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->name)
        luaL_error(c->L, "controller '%s': %s%s%s", c->name, path, *path ? " " : "", msg);
    else
        luaL_error(c->L, "controller spec: %s%s%s", path, *path ? " " : "", msg);
    __builtin_unreachable();
}

/* Optional string field of the table at t: NULL when nil; raises when another type. */
static char *opt_string(spec_ctx_t *c, int t, const char *field, const char *path)
{
    lua_getfield(c->L, t, field);
    char *out = NULL;
    if (lua_type(c->L, -1) == LUA_TSTRING)
        out = lop_xstrdup(lua_tostring(c->L, -1));
    else if (!lua_isnil(c->L, -1))
        spec_fail(c, path, "%s must be a string, not a %s", field, luaL_typename(c->L, -1));
    lua_pop(c->L, 1);
    return out;
}

int lop_lua_add_callback(lua_State *L, lop_vm_t *vm, int idx, const char *desc)
{
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
    vm->callback_names = lop_xrealloc(vm->callback_names, (size_t)(vm->ncallbacks + 2) * sizeof(char *));
    vm->callback_names[vm->ncallbacks + 1] = lop_xstrdup(desc);
    vm->callback_names[0] = NULL; /* ids start at 1 */
    int id = ++vm->ncallbacks;
    lop_lua_push_registry(L, &lop_lua_key_callbacks);
    lua_pushvalue(L, idx);
    lua_rawseti(L, -2, id);
    lua_pop(L, 1);
    return id;
}

/* Register fn (at idx) as a callback of the controller being declared; returns its lua_id. */
static int add_callback(spec_ctx_t *c, int idx, const char *what)
{
    char desc[256];
    snprintf(desc, sizeof desc, "controller '%.120s' %.120s", c->name, what);
    return lop_lua_add_callback(c->L, c->vm, idx, desc);
}

static const struct {
    const char *name;
    lop_pred_kind_t kind;
} builtins[] = {
    {"generation_changed", LOP_PRED_GENERATION_CHANGED},
    {"resource_version_changed", LOP_PRED_RV_CHANGED},
    {"labels_changed", LOP_PRED_LABELS_CHANGED},
    {"annotations_changed", LOP_PRED_ANNOTATIONS_CHANGED},
    {"and", LOP_PRED_AND},
    {"or", LOP_PRED_OR},
    {"not", LOP_PRED_NOT},
};

/* Array length of the table at t, checking it is a sequence. */
static size_t seq_len(spec_ctx_t *c, int t, const char *path)
{
    size_t n = lua_objlen(c->L, t), count = 0;
    lua_pushnil(c->L);
    while (lua_next(c->L, t)) {
        lua_pop(c->L, 1);
        count++;
    }
    if (count != n) spec_fail(c, path, "must be a list (a table with keys 1..n)");
    return n;
}

static void parse_pred(spec_ctx_t *c, int v, lop_pred_t *p, const char *path, int depth)
{
    lua_State *L = c->L;
    if (depth > PRED_MAX_DEPTH) spec_fail(c, path, "predicates nested deeper than %d", PRED_MAX_DEPTH);
    if (lua_isfunction(L, v)) {
        p->kind = LOP_PRED_LUA;
        p->lua_id = add_callback(c, v, path);
        return;
    }
    if (!lua_istable(L, v))
        spec_fail(c, path, "must be a function or a { builtin = ... } table, not a %s", luaL_typename(L, v));
    lua_getfield(L, v, "builtin");
    if (lua_type(L, -1) != LUA_TSTRING)
        spec_fail(c, path, "builtin must be a string (a predicate table needs builtin = \"...\")");
    const char *b = lua_tostring(L, -1);
    size_t i;
    for (i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(b, builtins[i].name) == 0) break;
    if (i == sizeof builtins / sizeof builtins[0]) spec_fail(c, path, "unknown builtin '%s'", b);
    lua_pop(L, 1);
    p->kind = builtins[i].kind;
    if (p->kind != LOP_PRED_AND && p->kind != LOP_PRED_OR && p->kind != LOP_PRED_NOT) return;

    char sub[256];
    snprintf(sub, sizeof sub, "%s.args", path);
    lua_getfield(L, v, "args");
    int a = lua_gettop(L);
    if (!lua_istable(L, a)) spec_fail(c, sub, "must be a list of predicates");
    size_t n = seq_len(c, a, sub);
    if (p->kind == LOP_PRED_NOT && n != 1) spec_fail(c, sub, "must hold exactly one predicate for 'not'");
    if (n == 0) spec_fail(c, sub, "must not be empty");
    p->args = lop_xcalloc(n, sizeof *p->args);
    p->nargs = n;
    for (size_t j = 0; j < n; j++) {
        snprintf(sub, sizeof sub, "%s.args[%zu]", path, j + 1);
        lua_rawgeti(L, a, (int)(j + 1));
        parse_pred(c, lua_gettop(L), &p->args[j], sub, depth + 1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* Parse the watch table at t into w. map: SELF (for_), OWNER (owns) or LUA (watches). */
/* The number at key of table t, 0 when absent; raises unless it is > 0 and <= max (an integer
 * when integral). */
static double rate_field(spec_ctx_t *c, int t, const char *key, double max, bool integral)
{
    lua_State *L = c->L;
    lua_getfield(L, t, key);
    double v = 0;
    if (!lua_isnil(L, -1)) {
        v = lua_tonumber(L, -1);
        if (lua_type(L, -1) != LUA_TNUMBER || !(v > 0) || v > max || (integral && v != floor(v)))
            spec_fail(c, "", "rate_limiter.%s must be %s > 0 and <= %g", key, integral ? "an integer" : "a number",
                      max);
    }
    lua_pop(L, 1);
    return v;
}

/* rate_limiter = { base_delay =, max_delay = (seconds), qps =, burst = } into rl (absent = 0,
 * the default's value); the same bounds as luaop.controller.rate_limiter. */
static void parse_rate_limiter(spec_ctx_t *c, int t, lop_ratelimit_decl_t *rl)
{
    if (!lua_istable(c->L, t)) spec_fail(c, "", "rate_limiter must be a table, not a %s", luaL_typename(c->L, t));
    double base = rate_field(c, t, "base_delay", 3600, false), max = rate_field(c, t, "max_delay", 86400, false);
    rl->qps = rate_field(c, t, "qps", 1e6, false);
    rl->burst = (int)rate_field(c, t, "burst", 1e6, true);
    if ((base > 0 ? base : 0.005) > (max > 0 ? max : 1000))
        spec_fail(c, "", "rate_limiter.max_delay must not be below base_delay");
    rl->base_delay_ns = (int64_t)(base * 1e9);
    rl->max_delay_ns = (int64_t)(max * 1e9);
}

static void parse_watch(spec_ctx_t *c, int t, lop_watch_decl_t *w, const char *path, lop_map_kind_t map)
{
    lua_State *L = c->L;
    char sub[256];
    if (!lua_istable(L, t)) spec_fail(c, path, "must be a table, not a %s", luaL_typename(L, t));
    w->map = map;
    w->gvk.api_version = opt_string(c, t, "api_version", path);
    if (!w->gvk.api_version || !*w->gvk.api_version)
        spec_fail(c, path, "api_version must be a non-empty string (e.g. \"apps/v1\")");
    w->gvk.kind = opt_string(c, t, "kind", path);
    if (!w->gvk.kind || !*w->gvk.kind) spec_fail(c, path, "kind must be a non-empty string (e.g. \"Deployment\")");
    w->namespace_ = opt_string(c, t, "namespace", path);
    w->label_selector = opt_string(c, t, "label_selector", path);
    lua_getfield(L, t, "metadata_only");
    if (!lua_isnil(L, -1)) {
        if (!lua_isboolean(L, -1)) spec_fail(c, path, "metadata_only must be a boolean");
        w->metadata_only = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);

    lua_getfield(L, t, "predicates");
    int pt = lua_gettop(L);
    if (!lua_isnil(L, pt)) {
        snprintf(sub, sizeof sub, "%s.predicates", path);
        if (!lua_istable(L, pt)) spec_fail(c, sub, "must be a list of predicates");
        size_t n = seq_len(c, pt, sub);
        w->preds = lop_xcalloc(n ? n : 1, sizeof *w->preds);
        w->npreds = n;
        for (size_t j = 0; j < n; j++) {
            snprintf(sub, sizeof sub, "%s.predicates[%zu]", path, j + 1);
            lua_rawgeti(L, pt, (int)(j + 1));
            parse_pred(c, lua_gettop(L), &w->preds[j], sub, 0);
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);

    lua_getfield(L, t, "map");
    if (map == LOP_MAP_LUA) {
        snprintf(sub, sizeof sub, "%s.map", path);
        if (!lua_isfunction(L, -1)) spec_fail(c, sub, "must be a function(obj) returning requests");
        w->map_lua_id = add_callback(c, -1, sub);
    } else if (!lua_isnil(L, -1)) {
        spec_fail(c, path, "map is only allowed in watches");
    }
    lua_pop(L, 1);
}

static void parse_watch_list(spec_ctx_t *c, int spec, const char *field, lop_watch_decl_t **out, size_t *nout,
                             lop_map_kind_t map)
{
    lua_State *L = c->L;
    lua_getfield(L, spec, field);
    int t = lua_gettop(L);
    if (!lua_isnil(L, t)) {
        if (!lua_istable(L, t)) spec_fail(c, field, "must be a list of tables");
        size_t n = seq_len(c, t, field);
        *out = lop_xcalloc(n ? n : 1, sizeof **out);
        *nout = n;
        for (size_t i = 0; i < n; i++) {
            char path[64];
            snprintf(path, sizeof path, "%s[%zu]", field, i + 1);
            lua_rawgeti(L, t, (int)(i + 1));
            parse_watch(c, lua_gettop(L), &(*out)[i], path, map);
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
}

/* core.register_controller(spec) -> nothing. Load context only; raises on an invalid spec with
 * a message naming the controller and field. */
int lop_lua_core_register_controller(lua_State *L)
{
    lop_vm_t *vm = lop_lua_engine_vm(L);
    spec_ctx_t c = {L, vm, NULL};
    if (vm->phase != LOP_LUA_LOAD)
        return luaL_error(L, "core.register_controller may only be called while main.lua loads");
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lop_lua_decls_drop_open(vm); /* an earlier spec that failed half way (the script caught it) */

    lua_getfield(L, 1, "name");
    if (lua_type(L, -1) != LUA_TSTRING || lua_objlen(L, -1) == 0) spec_fail(&c, "", "name must be a non-empty string");
    const char *name = lua_tostring(L, -1); /* kept on the stack */
    for (size_t i = 0; i < vm->ndecls; i++)
        if (strcmp(vm->decls[i].name, name) == 0)
            return luaL_error(L, "controller '%s': declared twice (names must be unique)", name);
    c.name = name;

    lua_getfield(L, 1, "reconcile");
    if (!lua_isfunction(L, -1)) spec_fail(&c, "", "reconcile must be a function(req)");
    int reconcile = lua_gettop(L);

    if (vm->ndecls == vm->capdecls) {
        vm->capdecls = vm->capdecls ? vm->capdecls * 2 : 4;
        vm->decls = lop_xrealloc(vm->decls, vm->capdecls * sizeof *vm->decls);
    }
    lop_ctrl_decl_t *d = &vm->decls[vm->ndecls++];
    memset(d, 0, sizeof *d);
    vm->decl_open = true;
    d->name = lop_xstrdup(name);
    d->max_concurrent_reconciles = 1;
    d->leader_election = true;

    lua_getfield(L, 1, "for_");
    parse_watch(&c, lua_gettop(L), &d->for_, "for_", LOP_MAP_SELF);
    lua_pop(L, 1);
    parse_watch_list(&c, 1, "owns", &d->owns, &d->nowns, LOP_MAP_OWNER);
    parse_watch_list(&c, 1, "watches", &d->watches, &d->nwatches, LOP_MAP_LUA);

    lua_getfield(L, 1, "max_concurrent_reconciles");
    if (!lua_isnil(L, -1)) {
        lua_Number n = lua_tonumber(L, -1);
        if (lua_type(L, -1) != LUA_TNUMBER || n < 1 || n != floor(n) || n > 1024)
            spec_fail(&c, "", "max_concurrent_reconciles must be an integer from 1 to 1024");
        d->max_concurrent_reconciles = (int)n;
    }
    lua_pop(L, 1);

    lua_getfield(L, 1, "leader_election");
    if (!lua_isnil(L, -1)) {
        if (!lua_isboolean(L, -1)) spec_fail(&c, "", "leader_election must be a boolean");
        d->leader_election = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);

    lua_getfield(L, 1, "reconcile_timeout");
    if (!lua_isnil(L, -1)) {
        lua_Number s = lua_tonumber(L, -1);
        if (lua_type(L, -1) != LUA_TNUMBER || !(s > 0) || s > 86400)
            spec_fail(&c, "", "reconcile_timeout must be a number of seconds, > 0 and <= 86400");
        d->reconcile_timeout_ns = (int64_t)(s * 1e9);
    }
    lua_pop(L, 1);

    lua_getfield(L, 1, "rate_limiter");
    if (!lua_isnil(L, -1)) parse_rate_limiter(&c, lua_gettop(L), &d->rate_limiter);
    lua_pop(L, 1);

    lop_lua_push_registry(L, &lop_lua_key_reconcilers);
    lua_pushvalue(L, reconcile);
    lua_setfield(L, -2, name);
    vm->decl_open = false;
    return 0;
}
