/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_internal.h — the LuaJIT engine's VM struct and the pieces shared by engine_lua.c,
 * engine_decl.c, engine_require.c and core_host.c. Not a public header.
 *
 * Registry layout (light-userdata keys below):
 *   callbacks   { [lua_id] = function }   Lua predicates and map functions, declaration order
 *   reconcilers { [controller name] = reconcile function }
 *   scripts     { [file name] = source }  a copy of the script set
 *   loaded      { [module name] = value } what require returned (package.loaded in scripts)
 *
 * Thread-safety: one thread at a time per VM (engine.h).
 */
#ifndef LOP_LUA_ENGINE_INTERNAL_H
#define LOP_LUA_ENGINE_INTERNAL_H

#include "bindings/vm.h"
#include "host/runtime/engine.h"

#include <lua.h>

#include <stdbool.h>
#include <stdint.h>

typedef enum lop_lua_phase {
    LOP_LUA_IDLE = 0,
    LOP_LUA_LOAD,      /* main.lua is running: register_controller allowed, API calls refused */
    LOP_LUA_RECONCILE, /* a reconcile: core.context() is set */
    LOP_LUA_EVENT,     /* a predicate or map function */
    LOP_LUA_WEBHOOK,   /* an admission or conversion webhook (API calls allowed; no reconcile context) */
} lop_lua_phase_t;

struct lop_vm {
    lop_lua_vm_t lvm;           /* first: lop_lua_vm_from(L) is also the lop_vm_t */
    const lop_host_api_t *host; /* may be NULL (luaop check): API calls then fail */
    lop_engine_opts_t opts;
    char origin[256];

    lop_ctrl_decl_t *decls; /* owned; partially filled entries are freed too */
    size_t ndecls, capdecls;
    bool decl_open;               /* the last decl is being filled (or its spec failed half way) */
    lop_webhook_decl_t *webhooks; /* owned (op.webhook.*); entries count once allocated */
    size_t nwebhooks, capwebhooks;
    lop_index_decl_t *indexes; /* owned (op.index) */
    size_t nindexes, capindexes;
    char **callback_names; /* [lua_id] -> "controller 'x' for_.predicates[1]" (owned) */
    int ncallbacks;

    lop_lua_phase_t phase;
    /* The running reconcile (RECONCILE phase only; borrowed for the call). */
    const char *ctx_controller;
    const lop_reconcile_req_t *ctx_req;
    /* Event views handed to predicates/map functions are valid while event_gen is unchanged. */
    uint64_t event_gen;
};

extern const char lop_lua_key_callbacks;
extern const char lop_lua_key_reconcilers;
extern const char lop_lua_key_scripts;
extern const char lop_lua_key_loaded;

static inline lop_vm_t *lop_lua_engine_vm(lua_State *L) { return (lop_vm_t *)lop_lua_vm_from(L); }

/* Push registry[key] (a table). Stack: +1. Never raises once the tables exist. */
void lop_lua_push_registry(lua_State *L, const char *key);

/* engine_decl.c: core.register_controller (Lua function) and freeing declarations. */
int lop_lua_core_register_controller(lua_State *L);
void lop_lua_decls_free(lop_vm_t *vm);
/* Drop the last declaration if its spec failed half way. Never raises. */
void lop_lua_decls_drop_open(lop_vm_t *vm);
/* Store the function at idx in the callbacks table under a new lua_id (1, 2, ...), described as
 * desc in messages ("controller 'x' for_.predicates[1]", "webhook 'v...'"). Raises (memory). */
int lop_lua_add_callback(lua_State *L, lop_vm_t *vm, int idx, const char *desc);

/* engine_webhook.c: core.register_webhook (the spec luaop.webhook builds), freeing webhook
 * declarations, and the engine's webhook_declarations, admit and convert (engine.h). */
int lop_lua_core_register_webhook(lua_State *L);
void lop_lua_webhooks_free(lop_vm_t *vm);
void lop_lua_webhook_declarations(lop_vm_t *vm, const lop_webhook_decl_t **decls, size_t *n);
/* engine_index.c: core.register_index (op.index's spec), freeing index declarations, the
 * engine's index_declarations (engine.h), and core.fieldpath registered into the core table at
 * tidx (Stack: unchanged; may raise: memory). */
int lop_lua_core_register_index(lua_State *L);
void lop_lua_indexes_free(lop_vm_t *vm);
void lop_lua_index_declarations(lop_vm_t *vm, const lop_index_decl_t **decls, size_t *n);
void lop_lua_fieldpath_register(lua_State *L, int tidx);

lop_rc_t lop_lua_admit(lop_vm_t *vm, int lua_id, const char *request_json, size_t len, int64_t timeout_ns,
                       lop_admission_result_t *res, bool *vm_broken, lop_err_t *err);
lop_rc_t lop_lua_convert(lop_vm_t *vm, int lua_id, const char *obj_json, size_t len, const char *desired_api_version,
                         int64_t timeout_ns, char **out, size_t *out_len, bool *vm_broken, lop_err_t *err);

/* engine_require.c: install `require` and `package.loaded` over the script set and the luaop
 * library. Stack: unchanged. Raises. Must run inside a protected call. */
void lop_lua_require_install(lua_State *L, const lop_script_set_t *set);

/* core_host.c: add the host functions (get, list, request, event, log, is_leader, identity,
 * context) to the table at tidx. Stack: unchanged. Raises (memory). */
void lop_lua_core_host_register(lua_State *L, int tidx);

/* core_metrics.c: add metric_declare and metric_update (luaop.metrics) to the table at tidx.
 * Stack: unchanged. Raises (memory). */
void lop_lua_core_metrics_register(lua_State *L, int tidx);

/* Push a Lua error table {code=, reason=, message=} for rc/err. Stack: +1. Raises (memory). */
void lop_lua_push_err(lua_State *L, lop_rc_t rc, const lop_err_t *err);

#endif
