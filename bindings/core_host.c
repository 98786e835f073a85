/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_host.c — the host-only functions of luaop.core (docs/lua-core.md "Host only"): cache reads
 * with live fallback, REST requests, Events, logging, leader state, reconcile context.
 *
 * Contexts: every function here refuses to run while main.lua loads (raises) except log,
 * is_leader, identity and context. Misuse (wrong argument types) raises; operational failures
 * return nil, err with err = {code=, reason=, message=, details=, rc=}.
 * Deadlines: each call first checks the current deadline (cooperative when the JIT is on).
 *
 * Host memory (cache blobs, response bodies) is only held across protected Lua calls, released,
 * and only then is an error re-raised (STYLE.md habit 4).
 */
#include "bindings/engine_internal.h"
#include "bindings/json_codec.h"

#include "host/util/log.h"

#include <lauxlib.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ helpers */

static lop_vm_t *api_vm(lua_State *L, const char *fname)
{
    lop_vm_t *vm = lop_lua_engine_vm(L);
    lop_lua_vm_check_deadline(L);
    if (vm->phase == LOP_LUA_LOAD)
        luaL_error(L,
                   "core.%s may not be called while main.lua loads (only in reconcile, "
                   "predicate and map functions)",
                   fname);
    if (vm->phase == LOP_LUA_IDLE) /* no call of the host's running: a finalizer, a VM being closed */
        luaL_error(L, "core.%s may only be called in a reconcile, predicate, map function or webhook", fname);
    return vm;
}

/* For calls that block on the API (requests, sleeps): a predicate or map function runs on an
 * informer thread that must keep delivering events, so they are reconcile-only. */
static lop_vm_t *api_vm_reconcile(lua_State *L, const char *fname)
{
    lop_vm_t *vm = api_vm(L, fname);
    if (vm->phase == LOP_LUA_EVENT)
        luaL_error(L,
                   "core.%s may not be called from a predicate or map function (they run on "
                   "the informer's thread); do it in reconcile",
                   fname);
    return vm;
}

static const char *opt_str(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx)) return NULL;
    return luaL_checkstring(L, idx);
}

static const char *rc_reason(lop_rc_t rc)
{
    switch (rc) {
    case LOP_ENOTFOUND: return "NotFound";
    case LOP_ECONFLICT: return "Conflict";
    case LOP_EEXIST: return "AlreadyExists";
    case LOP_EGONE: return "Expired";
    case LOP_ETIMEDOUT: return "Timeout";
    case LOP_EINVAL: return "BadRequest";
    case LOP_EAGAIN: return "ServiceUnavailable";
    default: return NULL;
    }
}

void lop_lua_push_err(lua_State *L, lop_rc_t rc, const lop_err_t *err)
{
    lua_createtable(L, 0, 5);
    lua_pushinteger(L, err ? err->code : 0);
    lua_setfield(L, -2, "code");
    const char *reason = err && err->reason[0] ? err->reason : rc_reason(rc);
    if (reason) {
        lua_pushstring(L, reason);
        lua_setfield(L, -2, "reason");
    }
    lua_pushstring(L, err && err->message[0] ? err->message : lop_rc_str(rc));
    lua_setfield(L, -2, "message");
    lua_pushstring(L, lop_rc_str(rc));
    lua_setfield(L, -2, "rc");
}

static int return_err(lua_State *L, lop_rc_t rc, const lop_err_t *err)
{
    lua_pushnil(L);
    lop_lua_push_err(L, rc, err);
    return 2;
}

static int no_host(lua_State *L)
{
    lop_err_t err;
    lop_err_set(&err, LOP_EAGAIN, 0, "ServiceUnavailable",
                "no API server access in this mode (scripts are only being checked)");
    return return_err(L, LOP_EAGAIN, &err);
}

/* Protected decoding of memory the host owns. The caller pushes decode_fn and a light userdata
 * pointing at a job BEFORE acquiring the memory (pushing may raise), then lua_pcall(L, 1, 1, 0),
 * releases, and re-raises on failure. */
typedef struct decode_job {
    const char *s;
    size_t n;
    const lop_blob_t *items; /* list mode when non-NULL or nitems == 0 with list = true */
    size_t nitems;
    bool list;
} decode_job_t;

static int decode_fn(lua_State *L)
{
    decode_job_t *j = (decode_job_t *)lua_touserdata(L, 1);
    if (!j->list) {
        lop_lua_json_decode(L, j->s, j->n);
        return 1;
    }
    lua_createtable(L, (int)j->nitems, 0);
    lop_lua_json_push_array_mt(L);
    lua_setmetatable(L, -2);
    for (size_t i = 0; i < j->nitems; i++) {
        lop_lua_json_decode(L, j->items[i].json, j->items[i].len);
        lua_rawseti(L, -2, (int)(i + 1));
    }
    return 1;
}

static bool looks_like_json(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        return c == '{' || c == '[';
    }
    return false;
}

/*
 * One REST call. On success pushes the decoded body (nil when empty) and returns 1 with *code set;
 * on failure pushes nil, err and returns 2. err.details is taken from a Status body.
 */
static int do_request(lua_State *L, lop_vm_t *vm, const lop_api_request_t *rq, int *code)
{
    luaL_checkstack(L, 8, "core request");
    /* The call may not outlast the script's deadline (it cannot be interrupted while it blocks):
     * a passed deadline raises here, else the host gets what is left of it. */
    lop_lua_vm_check_deadline(L);
    lop_api_request_t bounded = *rq;
    if (vm->lvm.deadline_ns != INT64_MAX) {
        int64_t left = vm->lvm.deadline_ns - lop_clock_mono(vm->lvm.clock);
        bounded.timeout_ns = left > 0 ? left : 1;
    }
    lua_pushcfunction(L, decode_fn);
    decode_job_t job = {0};
    lua_pushlightuserdata(L, &job);

    lop_api_response_t resp = {0};
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc = vm->host->request(vm->host->ud, &bounded, &resp, &err);
    int st = 0;
    if (resp.body && looks_like_json(resp.body, resp.len)) {
        job.s = resp.body;
        job.n = resp.len;
        st = lua_pcall(L, 1, 1, 0);
    } else {
        lua_pop(L, 2);
        lua_pushnil(L);
    }
    free(resp.body);
    lop_lua_vm_check_deadline(L);
    *code = resp.code;
    if (rc == LOP_OK) {
        if (st != 0) {
            lop_err_t bad;
            lop_err_set(&bad, LOP_ERR, resp.code, "InternalError", "invalid JSON in the response: %s",
                        lua_tostring(L, -1));
            lua_pop(L, 1);
            return return_err(L, LOP_ERR, &bad);
        }
        return 1;
    }
    if (st != 0) {
        lua_pop(L, 1);
        lua_pushnil(L);
    }
    int body = lua_gettop(L);
    if (!err.code) err.code = resp.code;
    lua_pushnil(L);
    lop_lua_push_err(L, rc, &err);
    if (lua_istable(L, body)) {
        lua_getfield(L, body, "details");
        if (lua_istable(L, -1))
            lua_setfield(L, -2, "details");
        else
            lua_pop(L, 1);
    }
    lua_remove(L, body);
    return 2;
}

/* ------------------------------------------------------------------ core.get / core.list */

/* core.get(api_version, kind, ns, name) -> obj | nil, err. Cache first; a kind that is not cached
 * is read with a live GET. Not during load. */
static int core_get(lua_State *L)
{
    lop_vm_t *vm = api_vm(L, "get");
    const char *av = luaL_checkstring(L, 1), *kind = luaL_checkstring(L, 2);
    const char *ns = opt_str(L, 3), *name = luaL_checkstring(L, 4);
    if (!vm->host) return no_host(L);

    lua_pushcfunction(L, decode_fn);
    decode_job_t job = {0};
    lua_pushlightuserdata(L, &job);
    lop_blob_t blob = {0};
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc = vm->host->cache_get(vm->host->ud, av, kind, ns, name, &blob, &err);
    if (rc == LOP_OK) {
        job.s = blob.json;
        job.n = blob.len;
        int st = lua_pcall(L, 1, 1, 0);
        vm->host->release(vm->host->ud, &blob);
        if (st != 0) lua_error(L);
        return 1;
    }
    lua_pop(L, 2);
    if (rc != LOP_EAGAIN) return return_err(L, rc, &err);

    lop_api_request_t rq = {.verb = "get", .api_version = av, .kind = kind, .namespace_ = ns, .name = name};
    int code;
    return do_request(L, vm, &rq, &code);
}

/* Append "key=<urlencoded value>&" to b. */
static void add_query(luaL_Buffer *b, const char *key, const char *v)
{
    static const char hex[] = "0123456789ABCDEF";
    luaL_addstring(b, key);
    luaL_addchar(b, '=');
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        unsigned char c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~') {
            luaL_addchar(b, (char)c);
        } else {
            luaL_addchar(b, '%');
            luaL_addchar(b, hex[c >> 4]);
            luaL_addchar(b, hex[c & 15]);
        }
    }
}

/* core.list(api_version, kind, ns, label_selector[, index, value]) -> array of objects | nil, err.
 * Cache first; else a live LIST following continue tokens. With index (a declared field index's
 * name) and value: the cached objects whose index holds value (host_api.cache_list_index), never
 * a live LIST; an index the kind does not have raises (the message names the declared ones), a
 * cache not synced yet returns nil, err (reason "ServiceUnavailable"). Not during load. */
static int core_list(lua_State *L)
{
    lop_vm_t *vm = api_vm(L, "list");
    const char *av = luaL_checkstring(L, 1), *kind = luaL_checkstring(L, 2);
    const char *ns = opt_str(L, 3), *sel = opt_str(L, 4);
    const char *index = opt_str(L, 5), *value = index ? luaL_checkstring(L, 6) : NULL;
    if (!vm->host) return no_host(L);
    if (index && !vm->host->cache_list_index) return luaL_error(L, "core.list: this host has no field indexes");
    lua_settop(L, 6);

    lua_pushcfunction(L, decode_fn);
    decode_job_t job = {0};
    job.list = true;
    lua_pushlightuserdata(L, &job);
    lop_blob_t *items = NULL;
    size_t n = 0;
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc = index ? vm->host->cache_list_index(vm->host->ud, av, kind, ns, index, value, sel, &items, &n, &err)
                        : vm->host->cache_list(vm->host->ud, av, kind, ns, sel, &items, &n, &err);
    if (rc == LOP_OK) {
        job.items = items;
        job.nitems = n;
        int st = lua_pcall(L, 1, 1, 0);
        for (size_t i = 0; i < n; i++) vm->host->release(vm->host->ud, &items[i]);
        free(items);
        if (st != 0) lua_error(L);
        return 1;
    }
    lua_pop(L, 2);
    if (index && rc == LOP_EINVAL && strcmp(err.reason, "UnknownIndex") == 0)
        return luaL_error(L, "%s", err.message); /* misuse: the kind has no such index */
    if (rc != LOP_EAGAIN || index) return return_err(L, rc, &err);

    /* Live LIST, all pages. */
    lua_createtable(L, 16, 0);
    lop_lua_json_push_array_mt(L);
    lua_setmetatable(L, -2);
    int result = lua_gettop(L);
    int count = 0;
    lua_pushliteral(L, ""); /* continue token */
    for (int page = 0; page < 100000; page++) {
        int cont = lua_gettop(L);
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        luaL_addstring(&b, "limit=500");
        if (sel && *sel) {
            luaL_addchar(&b, '&');
            add_query(&b, "labelSelector", sel);
        }
        if (lua_objlen(L, cont) > 0) {
            luaL_addchar(&b, '&');
            add_query(&b, "continue", lua_tostring(L, cont));
        }
        luaL_pushresult(&b);
        lop_api_request_t rq = {
            .verb = "list", .api_version = av, .kind = kind, .namespace_ = ns, .query = lua_tostring(L, -1)};
        int code;
        if (do_request(L, vm, &rq, &code) == 2) return 2;
        int body = lua_gettop(L);
        if (!lua_istable(L, body)) {
            lop_err_set(&err, LOP_ERR, code, "InternalError", "LIST %s %s returned no object", av, kind);
            return return_err(L, LOP_ERR, &err);
        }
        lua_getfield(L, body, "items");
        int its = lua_gettop(L);
        if (lua_istable(L, its)) {
            /* List items carry no apiVersion/kind on the wire; fill them like client-go does. */
            size_t kl = strlen(kind);
            const char *item_kind = kl > 4 && strcmp(kind + kl - 4, "List") == 0 ? NULL : kind;
            for (int i = 1;; i++) {
                lua_rawgeti(L, its, i);
                if (lua_isnil(L, -1)) {
                    lua_pop(L, 1);
                    break;
                }
                if (lua_istable(L, -1)) {
                    lua_getfield(L, -1, "kind");
                    bool has = !lua_isnil(L, -1);
                    lua_pop(L, 1);
                    if (!has && item_kind) {
                        lua_pushstring(L, av);
                        lua_setfield(L, -2, "apiVersion");
                        lua_pushstring(L, item_kind);
                        lua_setfield(L, -2, "kind");
                    }
                }
                lua_rawseti(L, result, ++count);
            }
        }
        lua_pop(L, 1);
        lua_getfield(L, body, "metadata");
        const char *next = NULL;
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "continue");
            if (lua_type(L, -1) == LUA_TSTRING && lua_objlen(L, -1) > 0) next = lua_tostring(L, -1);
        }
        if (!next) break;
        lua_pushstring(L, next);
        lua_replace(L, cont);
        lua_settop(L, cont);
    }
    lua_settop(L, result);
    return 1;
}

/* ------------------------------------------------------------------ core.request / core.event */

/* core.request(verb, api_version, kind, ns, name, subresource, patch_type, query, body) ->
 * code, decoded_body on 2xx; nil, err otherwise. Not during load. */
static int core_request(lua_State *L)
{
    lop_vm_t *vm = api_vm_reconcile(L, "request");
    static const char *const verbs[] = {"get", "list", "create", "update", "patch", "delete", NULL};
    int v = luaL_checkoption(L, 1, NULL, verbs);
    lop_api_request_t rq = {0};
    rq.verb = verbs[v];
    rq.api_version = luaL_checkstring(L, 2);
    rq.kind = luaL_checkstring(L, 3);
    rq.namespace_ = opt_str(L, 4);
    rq.name = opt_str(L, 5);
    rq.subresource = opt_str(L, 6);
    rq.patch_type = opt_str(L, 7);
    rq.query = opt_str(L, 8);
    if (!lua_isnoneornil(L, 9)) rq.body = luaL_checklstring(L, 9, &rq.body_len);
    rq.controller = vm->ctx_controller;
    if (v == 4) {
        static const char *const types[] = {"merge", "json", "strategic", "apply", NULL};
        if (!rq.patch_type) return luaL_argerror(L, 7, "patch needs a patch_type");
        luaL_checkoption(L, 7, NULL, types);
    }
    if (!vm->host) return no_host(L);
    lua_settop(L, 9);
    int code = 0;
    if (do_request(L, vm, &rq, &code) == 2) return 2;
    lua_pushinteger(L, code);
    lua_insert(L, -2);
    return 2;
}

/* core.event(obj, type, reason, message) -> true | nil, err. Not during load. */
static int core_event(lua_State *L)
{
    lop_vm_t *vm = api_vm_reconcile(L, "event");
    luaL_checktype(L, 1, LUA_TTABLE);
    static const char *const types[] = {"Normal", "Warning", NULL};
    int t = luaL_checkoption(L, 2, NULL, types);
    const char *reason = luaL_checkstring(L, 3), *message = luaL_checkstring(L, 4);
    if (!vm->host) return no_host(L);
    lua_settop(L, 4);
    size_t len;
    const char *json = lop_lua_json_encode(L, 1, &len);
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc = vm->host->record_event(vm->host->ud, json, len, types[t], reason, message, &err);
    if (rc != LOP_OK) return return_err(L, rc, &err);
    lua_pushboolean(L, 1);
    return 1;
}

/* ------------------------------------------------------------------ sleep */

/* core.sleep(secs) -> nothing. Blocks this VM's thread for secs (0..60) on the injected clock,
 * but never past the call's deadline (then raises "<what> deadline exceeded"). Not during load. */
static int core_sleep(lua_State *L)
{
    lop_vm_t *vm = api_vm_reconcile(L, "sleep");
    lua_Number secs = luaL_checknumber(L, 1);
    if (!(secs >= 0 && secs <= 60)) return luaL_argerror(L, 1, "seconds must be from 0 to 60");
    const lop_clock_t *c = vm->lvm.clock;
    int64_t wake = lop_clock_mono(c) + (int64_t)(secs * 1e9);
    bool cut = vm->lvm.deadline_ns < wake;
    if (cut) wake = vm->lvm.deadline_ns;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond;
    lop_cond_init(&cond);
    pthread_mutex_lock(&mu);
    while (!lop_clock_wait_until(c, &cond, &mu, wake)) {}
    pthread_mutex_unlock(&mu);
    pthread_cond_destroy(&cond);
    pthread_mutex_destroy(&mu);
    lop_lua_vm_check_deadline(L);
    return 0;
}

/* ------------------------------------------------------------------ log / leader / context */

/* What the scan of a log field found, in rising precedence (a Secret anywhere wins). */
typedef enum log_scan {
    LOG_SCAN_CLEAN = 0, /* no Secret object inside: log it as JSON */
    LOG_SCAN_CYCLE,     /* a table contains itself (JSON cannot show it) */
    LOG_SCAN_TOO_DEEP,  /* nested deeper than LOG_SCAN_MAX_DEPTH: not checked, so not logged */
    LOG_SCAN_SECRET,    /* the table is or holds a Secret object */
} log_scan_t;

/* Nesting the scan follows; a deeper field is replaced by a marker, never printed unchecked. */
#define LOG_SCAN_MAX_DEPTH 64

/* Scans the table at idx (at nesting depth) and every table inside it for a Secret object (rawget
 * "kind" == "Secret"; no metamethods run). seen (stack index) maps each table met to true while
 * it is on the current path and to its height once done, so a cycle is found and a table shared
 * by two fields is scanned once (and still counted at its full height where it is met again).
 * *height receives the levels below idx. Raises only on memory. */
static log_scan_t scan_log_field(lua_State *L, int idx, int seen, int depth, int *height)
{
    *height = 0;
    if (depth > LOG_SCAN_MAX_DEPTH) return LOG_SCAN_TOO_DEEP;
    luaL_checkstack(L, 4, "core.log");
    lua_pushvalue(L, idx);
    lua_rawget(L, seen);
    int met = lua_type(L, -1);
    *height = met == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
    if (met == LUA_TBOOLEAN) return LOG_SCAN_CYCLE;
    if (met == LUA_TNUMBER) return depth + *height > LOG_SCAN_MAX_DEPTH ? LOG_SCAN_TOO_DEEP : LOG_SCAN_CLEAN;
    lua_pushvalue(L, idx);
    lua_pushboolean(L, 1);
    lua_rawset(L, seen);

    lua_pushliteral(L, "kind");
    lua_rawget(L, idx);
    log_scan_t found = LOG_SCAN_CLEAN;
    if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "Secret") == 0) found = LOG_SCAN_SECRET;
    lua_pop(L, 1);
    lua_pushnil(L);
    while (found != LOG_SCAN_SECRET && lua_next(L, idx)) {
        if (lua_type(L, -1) == LUA_TTABLE) {
            int h;
            log_scan_t r = scan_log_field(L, lua_gettop(L), seen, depth + 1, &h);
            if (r > found) found = r;
            if (h + 1 > *height) *height = h + 1;
        }
        lua_pop(L, 1);
    }
    if (found == LOG_SCAN_SECRET) lua_settop(L, idx); /* drop a pending key when the loop stopped early */
    lua_pushvalue(L, idx);
    lua_pushinteger(L, *height);
    lua_rawset(L, seen);
    return found;
}

/* Replaces the table on top of the stack by what core.log prints for it: its JSON, or a marker
 * when it holds a Secret, contains itself, or nests too deep to check. */
static void log_table_field(lua_State *L)
{
    int t = lua_gettop(L);
    lua_newtable(L);
    int height;
    log_scan_t r = scan_log_field(L, t, t + 1, 0, &height);
    lua_settop(L, t);
    switch (r) {
    case LOG_SCAN_SECRET: lua_pushliteral(L, "<redacted: holds a Secret>"); break;
    case LOG_SCAN_CYCLE: lua_pushliteral(L, "<not logged: a table that contains itself>"); break;
    case LOG_SCAN_TOO_DEEP: lua_pushliteral(L, "<redacted: nested deeper than 64 levels>"); break;
    default: lop_lua_json_encode(L, t, NULL);
    }
    lua_replace(L, t);
}

/* core.log(level, msg [, fields]) -> nothing. level: debug|info|warn|error. fields: string keys,
 * values made strings (tables as JSON; a table that is or holds a Secret object at any depth is
 * replaced by "<redacted: holds a Secret>", one nested deeper than 64 levels by "<redacted: nested
 * deeper than 64 levels>" (not checked, so not printed), one that contains itself by "<not logged:
 * a table that contains itself>"). The reconcile context is added. Any context. */
static int core_log(lua_State *L)
{
    static const char *const levels[] = {"debug", "info", "warn", "error", NULL};
    int lvl = luaL_checkoption(L, 1, NULL, levels);
    const char *msg = luaL_checkstring(L, 2);
    if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    if (!lop_log_enabled((lop_log_level_t)lvl)) return 0;
    lop_vm_t *vm = lop_lua_engine_vm(L);

    /* Collect key/value strings on the stack, then point a kv array at them. */
    int base = lua_gettop(L);
    int npairs = 0;
    if (vm->phase == LOP_LUA_RECONCILE && vm->ctx_req) {
        const char *ctx[] = {"controller", vm->ctx_controller, "namespace",   vm->ctx_req->namespace_,
                             "name",       vm->ctx_req->name,  "reconcileID", vm->ctx_req->reconcile_id};
        luaL_checkstack(L, 8, "core.log");
        for (int i = 0; i < 8; i++) lua_pushstring(L, ctx[i] ? ctx[i] : "");
        npairs += 4;
    }
    if (lua_istable(L, 3)) {
        lua_pushnil(L);
        while (lua_next(L, 3)) {
            luaL_checkstack(L, 4, "core.log");
            if (lua_type(L, -2) != LUA_TSTRING) {
                lua_pop(L, 1);
                continue;
            }
            lua_pushvalue(L, -2); /* key copy */
            lua_pushvalue(L, -2); /* value copy */
            switch (lua_type(L, -1)) {
            case LUA_TSTRING: break;
            case LUA_TNUMBER: lua_tostring(L, -1); break;
            case LUA_TBOOLEAN:
                lua_pushstring(L, lua_toboolean(L, -1) ? "true" : "false");
                lua_replace(L, -2);
                break;
            case LUA_TTABLE: log_table_field(L); break;
            case LUA_TUSERDATA:
            case LUA_TLIGHTUSERDATA:
                lop_lua_json_encode(L, -1, NULL);
                lua_replace(L, -2);
                break;
            default: lua_pushstring(L, luaL_typename(L, -1)); lua_replace(L, -2);
            }
            /* stack: key value keycopy valuestr -> move the pair below the iteration key */
            lua_insert(L, -4);
            lua_insert(L, -4);
            lua_pop(L, 1); /* the value; the key stays for lua_next */
            npairs++;
        }
    }
    const char **kv = (const char **)lua_newuserdata(L, sizeof(char *) * (size_t)(2 * npairs + 1));
    for (int i = 0; i < 2 * npairs; i++) kv[i] = lua_tostring(L, base + 1 + i);
    lop_logv((lop_log_level_t)lvl, msg, kv, npairs);
    return 0;
}

/* core.is_leader() -> boolean (false without a host). Any context. */
static int core_is_leader(lua_State *L)
{
    lop_vm_t *vm = lop_lua_engine_vm(L);
    lua_pushboolean(L, vm->host && vm->host->is_leader && vm->host->is_leader(vm->host->ud));
    return 1;
}

/* core.identity() -> string ("" without a host). Any context. */
static int core_identity(lua_State *L)
{
    lop_vm_t *vm = lop_lua_engine_vm(L);
    const char *id = vm->host && vm->host->identity ? vm->host->identity(vm->host->ud) : NULL;
    lua_pushstring(L, id ? id : "");
    return 1;
}

/* core.context() -> {controller=, namespace=, name=, reconcile_id=} | nil. Any context. */
static int core_context(lua_State *L)
{
    lop_vm_t *vm = lop_lua_engine_vm(L);
    if (vm->phase != LOP_LUA_RECONCILE || !vm->ctx_req) {
        lua_pushnil(L);
        return 1;
    }
    lua_createtable(L, 0, 4);
    lua_pushstring(L, vm->ctx_controller);
    lua_setfield(L, -2, "controller");
    lua_pushstring(L, vm->ctx_req->namespace_ ? vm->ctx_req->namespace_ : "");
    lua_setfield(L, -2, "namespace");
    lua_pushstring(L, vm->ctx_req->name ? vm->ctx_req->name : "");
    lua_setfield(L, -2, "name");
    lua_pushstring(L, vm->ctx_req->reconcile_id ? vm->ctx_req->reconcile_id : "");
    lua_setfield(L, -2, "reconcile_id");
    return 1;
}

void lop_lua_core_host_register(lua_State *L, int tidx)
{
    static const luaL_Reg fns[] = {
        {"get", core_get},
        {"list", core_list},
        {"request", core_request},
        {"event", core_event},
        {"sleep", core_sleep},
        {"log", core_log},
        {"is_leader", core_is_leader},
        {"identity", core_identity},
        {"context", core_context},
        {"register_controller", lop_lua_core_register_controller},
        {"register_webhook", lop_lua_core_register_webhook},
        {"register_index", lop_lua_core_register_index},
        {NULL, NULL},
    };
    if (tidx < 0 && tidx > LUA_REGISTRYINDEX) tidx = lua_gettop(L) + tidx + 1;
    lua_pushvalue(L, tidx);
    luaL_setfuncs(L, fns, 0);
    lua_pop(L, 1);
    lop_lua_core_metrics_register(L, tidx);
}
