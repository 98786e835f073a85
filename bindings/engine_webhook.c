/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_webhook.c — webhooks in the LuaJIT engine: core.register_webhook (the spec luaop.webhook
 * builds, scripts/luaop/webhook.lua) turned into a lop_webhook_decl_t owned by the VM, and the
 * engine's admit and convert (engine.h), which call the spec's `handle` function.
 *
 * What a handle's return value means is decided in webhook.lua, once, for the host and for
 * luaop.testing alike: admission handles return {allowed=, code=, message=, warnings=, patched=},
 * conversion handles the converted object. This file only carries values across.
 */
#include "bindings/engine_internal.h"
#include "bindings/json_codec.h"

#include "host/util/buf.h"

#include <lauxlib.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ freeing */

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}

static void decl_free(lop_webhook_decl_t *d)
{
    free(d->name);
    free(d->path);
    free(d->gvk.api_version);
    free(d->gvk.kind);
    for (size_t i = 0; i < d->nrules; i++) {
        lop_webhook_rule_t *r = &d->rules[i];
        strv_free(r->operations);
        strv_free(r->api_groups);
        strv_free(r->api_versions);
        strv_free(r->resources);
        free(r->scope);
    }
    free(d->rules);
    free(d->failure_policy);
    free(d->side_effects);
}

void lop_lua_webhooks_free(lop_vm_t *vm)
{
    for (size_t i = 0; i < vm->nwebhooks; i++) decl_free(&vm->webhooks[i]);
    free(vm->webhooks);
    vm->webhooks = NULL;
    vm->nwebhooks = vm->capwebhooks = 0;
}

/* ------------------------------------------------------------------ register_webhook */

/* String field of the spec at t (luaop.webhook made it, so a wrong type is a host bug or a
 * script calling core.register_webhook by hand). NULL when absent and !required. */
static char *spec_string(lua_State *L, int t, const char *field, bool required)
{
    lua_getfield(L, t, field);
    char *out = NULL;
    if (lua_type(L, -1) == LUA_TSTRING)
        out = lop_xstrdup(lua_tostring(L, -1));
    else if (required || !lua_isnil(L, -1))
        luaL_error(L, "core.register_webhook: spec.%s must be a string (declare webhooks with luaop.webhook)", field);
    lua_pop(L, 1);
    return out;
}

/* A NULL-terminated copy of the list of strings at t[field]. */
static char **spec_strings(lua_State *L, int t, const char *field)
{
    lua_getfield(L, t, field);
    if (!lua_istable(L, -1)) luaL_error(L, "core.register_webhook: rule.%s must be a list of strings", field);
    size_t n = lua_objlen(L, -1);
    char **v = lop_xcalloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, -1, (int)i + 1);
        const char *s = lua_tostring(L, -1);
        v[i] = lop_xstrdup(s ? s : "");
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return v;
}

static void parse_rules(lua_State *L, int t, lop_webhook_decl_t *d)
{
    lua_getfield(L, t, "rules");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return;
    }
    size_t n = lua_objlen(L, -1);
    d->rules = lop_xcalloc(n ? n : 1, sizeof *d->rules);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, -1, (int)i + 1);
        int r = lua_gettop(L);
        lop_webhook_rule_t *rule = &d->rules[d->nrules++]; /* counted first: freed if a field raises */
        rule->operations = spec_strings(L, r, "operations");
        rule->api_groups = spec_strings(L, r, "api_groups");
        rule->api_versions = spec_strings(L, r, "api_versions");
        rule->resources = spec_strings(L, r, "resources");
        rule->scope = spec_string(L, r, "scope", false);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* Raises when d clashes with a webhook declared before it: names are unique, so are the paths
 * of admission webhooks and the group/kind of conversion webhooks. */
static void check_unique(lua_State *L, lop_vm_t *vm, const lop_webhook_decl_t *d)
{
    for (size_t i = 0; i + 1 < vm->nwebhooks; i++) {
        const lop_webhook_decl_t *o = &vm->webhooks[i];
        if (strcmp(o->name, d->name) == 0)
            luaL_error(L, "webhook '%s': declared twice (names must be unique)", d->name);
        if (d->type == LOP_WEBHOOK_CONVERSION && o->type == LOP_WEBHOOK_CONVERSION &&
            strcmp(o->gvk.api_version, d->gvk.api_version) == 0 && strcmp(o->gvk.kind, d->gvk.kind) == 0)
            luaL_error(L, "webhook '%s': a conversion for %s %s is already declared", d->name, d->gvk.kind,
                       d->gvk.api_version);
        if (d->type != LOP_WEBHOOK_CONVERSION && o->type != LOP_WEBHOOK_CONVERSION && strcmp(o->path, d->path) == 0)
            luaL_error(L, "webhook '%s': path %s is already served by webhook '%s'", d->name, d->path, o->name);
    }
}

static lop_webhook_type_t spec_type(lua_State *L, int t)
{
    lua_getfield(L, t, "type");
    const char *s = lua_tostring(L, -1);
    lop_webhook_type_t type = LOP_WEBHOOK_MUTATING;
    if (s && strcmp(s, "validating") == 0)
        type = LOP_WEBHOOK_VALIDATING;
    else if (s && strcmp(s, "conversion") == 0)
        type = LOP_WEBHOOK_CONVERSION;
    else if (!s || strcmp(s, "mutating") != 0)
        luaL_error(L, "core.register_webhook: spec.type must be \"mutating\", \"validating\" or \"conversion\"");
    lua_pop(L, 1);
    return type;
}

/* The gvk of engine.h: "group/version" + kind for defaulters and validators, the group alone
 * + kind for conversion, nothing for generic webhooks. */
static void spec_gvk(lua_State *L, int t, lop_webhook_decl_t *d)
{
    char *group = spec_string(L, t, "group", false);
    char *version = spec_string(L, t, "version", false);
    d->gvk.kind = spec_string(L, t, "kind", false);
    if (d->type == LOP_WEBHOOK_CONVERSION || !version) {
        d->gvk.api_version = group;
        free(version);
        return;
    }
    lop_buf_t b = {0};
    if (group && group[0]) lop_buf_printf(&b, "%s/", group);
    lop_buf_printf(&b, "%s", version);
    d->gvk.api_version = lop_buf_steal(&b);
    free(group);
    free(version);
}

/* core.register_webhook(spec) -> nothing. Load context only; spec is luaop.webhook's. */
int lop_lua_core_register_webhook(lua_State *L)
{
    lop_vm_t *vm = lop_lua_engine_vm(L);
    if (vm->phase != LOP_LUA_LOAD)
        return luaL_error(L, "core.register_webhook may only be called while main.lua loads");
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_getfield(L, 1, "handle");
    if (!lua_isfunction(L, -1))
        return luaL_error(
            L, "core.register_webhook: spec.handle must be a function (declare webhooks with luaop.webhook)");
    if (vm->nwebhooks == vm->capwebhooks) {
        vm->capwebhooks = vm->capwebhooks ? vm->capwebhooks * 2 : 4;
        vm->webhooks = lop_xrealloc(vm->webhooks, vm->capwebhooks * sizeof *vm->webhooks);
    }
    lop_webhook_decl_t *d = &vm->webhooks[vm->nwebhooks++]; /* owned by the VM from here on */
    memset(d, 0, sizeof *d);
    d->type = spec_type(L, 1);
    d->name = spec_string(L, 1, "name", true);
    d->path = spec_string(L, 1, "path", true);
    spec_gvk(L, 1, d);
    parse_rules(L, 1, d);
    d->failure_policy = spec_string(L, 1, "failure_policy", false);
    d->side_effects = spec_string(L, 1, "side_effects", false);
    lua_getfield(L, 1, "timeout_seconds");
    d->timeout_seconds = lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : 10;
    lua_getfield(L, 1, "defaulter");
    d->defaulter = lua_toboolean(L, -1);
    lua_getfield(L, 1, "validator");
    d->validator = lua_toboolean(L, -1);
    lua_pop(L, 3);
    check_unique(L, vm, d);
    char desc[320];
    snprintf(desc, sizeof desc, "webhook '%s'", d->name);
    d->lua_id = lop_lua_add_callback(L, vm, 2, desc);
    return 0;
}

void lop_lua_webhook_declarations(lop_vm_t *vm, const lop_webhook_decl_t **decls, size_t *n)
{
    *decls = vm->webhooks;
    *n = vm->nwebhooks;
}

/* ------------------------------------------------------------------ admit */

typedef struct adm_ctx {
    int lua_id;
    const char *json;
    size_t len;
    lop_admission_result_t *res;
} adm_ctx_t;

/* Push callbacks[lua_id]. Raises when there is none. */
static void push_handle(lua_State *L, int lua_id)
{
    lop_lua_push_registry(L, &lop_lua_key_callbacks);
    lua_rawgeti(L, -1, lua_id);
    lua_remove(L, -2);
    if (!lua_isfunction(L, -1)) luaL_error(L, "no webhook with id %d", lua_id);
}

static void take_warnings(lua_State *L, int t, lop_admission_result_t *res)
{
    lua_getfield(L, t, "warnings");
    if (lua_istable(L, -1)) {
        size_t n = lua_objlen(L, -1);
        res->warnings = lop_xcalloc(n ? n : 1, sizeof *res->warnings);
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, -1, (int)i + 1);
            if (lua_isstring(L, -1)) res->warnings[res->nwarnings++] = lop_xstrdup(lua_tostring(L, -1));
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
}

static int admit_fn(lua_State *L)
{
    adm_ctx_t *c = (adm_ctx_t *)lua_touserdata(L, 1);
    lop_admission_result_t *res = c->res;
    push_handle(L, c->lua_id);
    lop_lua_json_decode(L, c->json, c->len);
    lop_lua_vm_call(L, 1, 1);
    int t = lua_gettop(L);
    if (!lua_istable(L, t)) return luaL_error(L, "webhook handle returned a %s, not a result", luaL_typename(L, t));
    lua_getfield(L, t, "allowed");
    res->allowed = lua_toboolean(L, -1);
    lua_getfield(L, t, "code");
    res->code = res->allowed ? 0 : lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : 403;
    lua_getfield(L, t, "message");
    if (!res->allowed)
        snprintf(res->message, sizeof res->message, "%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "denied");
    lua_pop(L, 3);
    take_warnings(L, t, res);
    lua_getfield(L, t, "patched");
    if (res->allowed && lua_istable(L, -1)) {
        size_t n = 0;
        const char *s = lop_lua_json_encode(L, -1, &n);
        res->patched_json = lop_xstrndup(s, n);
        res->patched_len = n;
    }
    return 0;
}

/* Run fn under the webhook deadline (timeout_ns; 0 = the reconcile default). On failure out
 * (cap bytes) gets "<webhook name>: <first line of the error>" and *vm_broken says whether the
 * memory cap was hit. */
static lop_rc_t run_webhook(lop_vm_t *vm, lua_CFunction fn, void *ctx, int lua_id, int64_t timeout_ns, const char *what,
                            char *out, size_t cap, bool *vm_broken)
{
    char msg[2048];
    vm->phase = LOP_LUA_WEBHOOK;
    lop_rc_t rc = lop_lua_vm_run(&vm->lvm, fn, ctx, timeout_ns > 0 ? timeout_ns : vm->opts.reconcile_timeout_ns, what,
                                 msg, sizeof msg);
    vm->phase = LOP_LUA_IDLE;
    if (rc == LOP_OK) return LOP_OK;
    const char *name = lua_id >= 1 && lua_id <= vm->ncallbacks ? vm->callback_names[lua_id] : "webhook";
    snprintf(out, cap, "%s: %.*s", name, (int)strcspn(msg, "\n"), msg); /* no traceback in what users see */
    *vm_broken = rc == LOP_ENOMEM || vm->lvm.broken;
    return rc;
}

static bool looks_like_object(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return i < len && s[i] == '{';
}

lop_rc_t lop_lua_admit(lop_vm_t *vm, int lua_id, const char *request_json, size_t len, int64_t timeout_ns,
                       lop_admission_result_t *res, bool *vm_broken, lop_err_t *err)
{
    memset(res, 0, sizeof *res);
    *vm_broken = false;
    if (!looks_like_object(request_json, len))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "the admission request is not a JSON object");
    if (vm->lvm.broken) {
        *vm_broken = true;
        res->code = 500;
        snprintf(res->message, sizeof res->message, "the Lua VM is broken (memory limit exceeded earlier)");
        return LOP_OK;
    }
    adm_ctx_t c = {lua_id, request_json, len, res};
    char msg[sizeof res->message];
    if (run_webhook(vm, admit_fn, &c, lua_id, timeout_ns, "webhook", msg, sizeof msg, vm_broken) == LOP_OK)
        return LOP_OK;
    lop_admission_result_free(res);
    memset(res, 0, sizeof *res);
    res->code = 500;
    snprintf(res->message, sizeof res->message, "%s", msg);
    return LOP_OK;
}

/* ------------------------------------------------------------------ convert */

typedef struct conv_ctx {
    int lua_id;
    const char *json;
    size_t len;
    const char *to;
    char **out;
    size_t *out_len;
} conv_ctx_t;

static int convert_fn(lua_State *L)
{
    conv_ctx_t *c = (conv_ctx_t *)lua_touserdata(L, 1);
    push_handle(L, c->lua_id);
    lop_lua_json_decode(L, c->json, c->len);
    if (!lua_istable(L, -1)) return luaL_error(L, "the object to convert is not a JSON object");
    lua_pushstring(L, c->to);
    lop_lua_vm_call(L, 2, 1);
    size_t n = 0;
    const char *s = lop_lua_json_encode(L, -1, &n);
    *c->out = lop_xstrndup(s, n);
    *c->out_len = n;
    return 0;
}

lop_rc_t lop_lua_convert(lop_vm_t *vm, int lua_id, const char *obj_json, size_t len, const char *desired_api_version,
                         int64_t timeout_ns, char **out, size_t *out_len, bool *vm_broken, lop_err_t *err)
{
    *out = NULL;
    *out_len = 0;
    *vm_broken = false;
    if (vm->lvm.broken) {
        *vm_broken = true;
        return lop_err_set(err, LOP_ENOMEM, 0, NULL, "the Lua VM is broken (memory limit exceeded earlier)");
    }
    conv_ctx_t c = {lua_id, obj_json, len, desired_api_version, out, out_len};
    char msg[sizeof err->message];
    lop_rc_t rc = run_webhook(vm, convert_fn, &c, lua_id, timeout_ns, "conversion webhook", msg, sizeof msg, vm_broken);
    if (rc == LOP_OK) return LOP_OK;
    free(*out);
    *out = NULL;
    *out_len = 0;
    return lop_err_set(err, rc, 0, NULL, "%s", msg);
}
