/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm.c — the sandboxed LuaJIT state: counting allocator, library allow-list, deadline hook,
 * protected calls with tracebacks (see vm.h).
 */
#include "bindings/vm.h"
#include "bindings/lpattern.h"
#include "bindings/sandbox_guard.h"
#include "bindings/sandbox_libs.h"
#include "bindings/vm_watchdog.h"

#include "host/util/log.h"

#include <lauxlib.h>
#include <luajit.h>
#include <lualib.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char lop_lua_vm_key_require = 'r';

/* ------------------------------------------------------------------ allocator */

static void *vm_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    lop_lua_vm_t *vm = (lop_lua_vm_t *)ud;
    if (!ptr) osize = 0;
    if (nsize == 0) {
        if (ptr) {
            free(ptr);
            vm->mem_used -= osize;
        }
        return NULL;
    }
    if (nsize > osize && vm->mem_limit && vm->mem_used + (nsize - osize) > vm->mem_limit) {
        vm->mem_exceeded = true;
        vm->broken = true;
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (!p) {
        /* Lua assumes shrinking never fails. */
        if (nsize <= osize) return ptr;
        return NULL;
    }
    vm->mem_used = vm->mem_used - osize + nsize;
    if (vm->mem_used > vm->mem_peak) vm->mem_peak = vm->mem_used;
    return p;
}

lop_lua_vm_t *lop_lua_vm_from(lua_State *L)
{
    void *ud = NULL;
    lua_getallocf(L, &ud);
    return (lop_lua_vm_t *)ud;
}

static int vm_panic(lua_State *L)
{
    /* Every entry into Lua is protected (lop_lua_vm_run), so this is a bug in bindings/. */
    const char *msg = lua_tostring(L, -1);
    lop_log(LOP_LOG_ERROR, "lua panic (unprotected error in bindings)", "error", msg ? msg : "?", NULL);
    abort();
}

/* ------------------------------------------------------------------ deadlines */

void lop_lua_vm_deadline_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lop_lua_vm_t *vm = lop_lua_vm_from(L);
    if (vm->deadline_ns == INT64_MAX) return;
    if (vm->deadline_hit || lop_clock_mono(vm->clock) >= vm->deadline_ns) {
        vm->deadline_hit = true;
        lua_pushfstring(L, "%s deadline exceeded", vm->deadline_what ? vm->deadline_what : "call");
        lua_error(L);
    }
}

void lop_lua_vm_check_deadline(lua_State *L)
{
    lop_lua_vm_t *vm = lop_lua_vm_from(L);
    if (vm->deadline_ns == INT64_MAX) return;
    if (vm->deadline_hit || lop_clock_mono(vm->clock) >= vm->deadline_ns) {
        vm->deadline_hit = true;
        /* Interpreted code re-raises at its next instruction even if a pcall caught this. */
        lop_lua_watchdog_sethook(vm, lop_lua_vm_deadline_hook, LUA_MASKCOUNT, 1);
        lua_pushfstring(L, "%s deadline exceeded", vm->deadline_what ? vm->deadline_what : "call");
        lua_error(L);
    }
}

/* ------------------------------------------------------------------ sandboxed base functions */

/* print(...) -> logs the tostring'd arguments, tab-separated, at info level. */
static int sandbox_print(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_Buffer b;
    lua_getglobal(L, "tostring");
    int tostr = lua_gettop(L);
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
        lua_pushvalue(L, tostr);
        lua_pushvalue(L, i);
        lua_call(L, 1, 1);
        if (!lua_isstring(L, -1)) return luaL_error(L, "'tostring' must return a string to 'print'");
        if (i > 1) luaL_addchar(&b, '\t');
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    lop_log(LOP_LOG_INFO, lua_tostring(L, -1), "source", "print", NULL);
    return 0;
}

/* load(chunk [, chunkname [, mode [, env]]]) with mode forced to text. */
static int sandbox_load(lua_State *L)
{
    int n = lua_gettop(L);
    if (n < 2) lua_settop(L, 2), n = 2;
    lua_pushvalue(L, lua_upvalueindex(1)); /* the original load */
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_pushliteral(L, "t");
    if (n >= 4) lua_pushvalue(L, 4);
    lua_call(L, n >= 4 ? 4 : 3, 2);
    return 2;
}

/* loadstring(s [, chunkname]) as text only. */
static int sandbox_loadstring(lua_State *L)
{
    luaL_checkstring(L, 1);
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    if (lua_isnil(L, 2))
        lua_pushvalue(L, 1);
    else
        lua_pushvalue(L, 2);
    lua_pushliteral(L, "t");
    lua_call(L, 3, 2);
    return 2;
}

/* collectgarbage([opt [, arg]]) limited to "collect", "count" and "step": scripts must not stop
 * the collector or retune it (the memory cap would then break the VM for no reason). */
static int sandbox_collectgarbage(lua_State *L)
{
    static const char *const opts[] = {"collect", "count", "step", NULL};
    luaL_checkoption(L, 1, "collect", opts);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

static void open_lib(lua_State *L, const char *name, lua_CFunction fn)
{
    lua_pushcfunction(L, fn);
    lua_pushstring(L, name);
    lua_call(L, 1, 0);
}

static void set_nil(lua_State *L, const char *table, const char *field)
{
    if (table) {
        lua_getglobal(L, table);
        if (lua_istable(L, -1)) {
            lua_pushnil(L);
            lua_setfield(L, -2, field);
        }
        lua_pop(L, 1);
    } else {
        lua_pushnil(L);
        lua_setglobal(L, field);
    }
}

static int open_sandbox(lua_State *L)
{
    lop_lua_vm_t *vm = (lop_lua_vm_t *)lua_touserdata(L, 1);
    open_lib(L, "", luaopen_base); /* _G and coroutine */
    open_lib(L, LUA_TABLIBNAME, luaopen_table);
    open_lib(L, LUA_STRLIBNAME, luaopen_string);
    lua_getglobal(L, LUA_STRLIBNAME);
    lop_lua_patterns_install(L, -1); /* a matcher the deadline can stop (lpattern.h) */
    lua_pop(L, 1);
    open_lib(L, LUA_MATHLIBNAME, luaopen_math);
    open_lib(L, LUA_BITLIBNAME, luaopen_bit);
    /* The jit library initialises the compiler (CPU features); opened always, hidden below. */
    open_lib(L, LUA_JITLIBNAME, luaopen_jit);
    /* package: its require is kept (registry) for the allowed C modules; the engine installs the
     * script-set require. */
    open_lib(L, LUA_LOADLIBNAME, luaopen_package);
    lua_pushlightuserdata(L, (void *)&lop_lua_vm_key_require);
    lua_getglobal(L, "require");
    lua_rawset(L, LUA_REGISTRYINDEX);
    if (vm->unsafe_libs) {
        open_lib(L, LUA_IOLIBNAME, luaopen_io);
        open_lib(L, LUA_OSLIBNAME, luaopen_os);
        open_lib(L, LUA_DBLIBNAME, luaopen_debug);
        open_lib(L, LUA_FFILIBNAME, luaopen_ffi);
    } else {
        set_nil(L, NULL, "jit");
        lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
        lua_pushnil(L);
        lua_setfield(L, -2, "jit");
        lua_pop(L, 1);
        set_nil(L, NULL, "package");
        set_nil(L, NULL, "module");
        set_nil(L, NULL, "require");
        set_nil(L, NULL, "dofile");
        set_nil(L, NULL, "loadfile");
        set_nil(L, "string", "dump");
        /* newproxy makes userdata whose __gc a script chooses: finalizers run with hooks off
         * (LuaJIT's gc_call_finalizer), so such a __gc could loop beyond any deadline, and at
         * lua_close outside any call. Tables have no __gc in Lua 5.1; the bindings' userdata
         * hide their metatables (__metatable). So no script code runs as a finalizer. */
        set_nil(L, NULL, "newproxy");
        /* os: time, date and clock only, on the VM's clock (sandbox_libs.h). */
        lop_lua_safe_os_open(L, vm->clock);
        lua_setglobal(L, LUA_OSLIBNAME);
        lua_getglobal(L, "load");
        lua_pushvalue(L, -1);
        lua_pushcclosure(L, sandbox_load, 1);
        lua_setglobal(L, "load");
        lua_pushcclosure(L, sandbox_loadstring, 1);
        lua_setglobal(L, "loadstring");
        lua_getglobal(L, "collectgarbage");
        lua_pushcclosure(L, sandbox_collectgarbage, 1);
        lua_setglobal(L, "collectgarbage");
    }
    lua_pushcfunction(L, sandbox_print);
    lua_setglobal(L, "print");
    lop_lua_guard_install(L); /* also with unsafe_libs: a crash is never wanted */
    return 0;
}

/* ------------------------------------------------------------------ lifecycle */

lop_rc_t lop_lua_vm_init(lop_lua_vm_t *vm, const lop_engine_opts_t *opts, lop_err_t *err)
{
    memset(vm, 0, sizeof *vm);
    vm->clock = opts && opts->clock ? opts->clock : &lop_clock_system;
    vm->mem_limit = opts ? opts->memory_limit_bytes : 0;
    vm->jit = opts && opts->jit;
    vm->unsafe_libs = opts && opts->unsafe_libs;
    vm->deadline_ns = INT64_MAX;
    vm->L = lua_newstate(vm_alloc, vm);
    if (!vm->L) {
        return lop_err_set(err, LOP_ENOMEM, 0, NULL, "cannot create a Lua state (memory limit %zu bytes)",
                           vm->mem_limit);
    }
    lua_atpanic(vm->L, vm_panic);
    if (lua_cpcall(vm->L, open_sandbox, vm) != 0) {
        lop_rc_t rc = vm->mem_exceeded ? LOP_ENOMEM : LOP_ERR;
        lop_err_set(err, rc, 0, NULL, "cannot open the Lua libraries: %s",
                    vm->mem_exceeded ? "memory limit exceeded" : lua_tostring(vm->L, -1));
        lop_lua_vm_cleanup(vm);
        return rc;
    }
    luaJIT_setmode(vm->L, 0, LUAJIT_MODE_ENGINE | (vm->jit ? LUAJIT_MODE_ON : LUAJIT_MODE_OFF));
    return LOP_OK;
}

void lop_lua_vm_cleanup(lop_lua_vm_t *vm)
{
    if (vm->L) lua_close(vm->L);
    vm->L = NULL;
}

/* ------------------------------------------------------------------ protected calls */

/* The first Lua frame (from the top) running a user script file: chunk names "@<file>" that are
 * not the luaop library ("@luaop/..."). Fills src/line; false when there is none. */
static bool user_location(lua_State *L, char *src, size_t srclen, int *line)
{
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar)) continue;
        if (ar.source[0] != '@' || ar.currentline <= 0) continue;
        if (strncmp(ar.source, "@luaop/", 7) == 0) continue;
        snprintf(src, srclen, "%s", ar.source + 1);
        *line = ar.currentline;
        return true;
    }
    return false;
}

/* Whether msg already starts with a user script position "file.lua:N:" (not the luaop library). */
static bool has_user_position(const char *msg)
{
    if (strncmp(msg, "luaop/", 6) == 0) return false;
    const char *colon = strchr(msg, ':');
    if (!colon || colon - msg < 5 || strncmp(colon - 4, ".lua", 4) != 0) return false;
    if (memchr(msg, ' ', (size_t)(colon - msg)) || memchr(msg, '\n', (size_t)(colon - msg))) return false;
    const char *p = colon + 1;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') p++;
    return *p == ':';
}

/* Message handler: error value -> "file:line: message\nstack traceback:\n...". */
static int vm_msgh(lua_State *L)
{
    lop_lua_vm_t *vm = lop_lua_vm_from(L);
    const char *msg = NULL;
    if (vm->mem_exceeded) {
        char tmp[80];
        snprintf(tmp, sizeof tmp, "memory limit exceeded (%zu bytes)", vm->mem_limit);
        lua_pushstring(L, tmp);
        msg = lua_tostring(L, -1);
    } else if (lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER) {
        msg = lua_tostring(L, 1);
    } else if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
        msg = lua_tostring(L, -1);
    } else if (lua_type(L, 1) == LUA_TTABLE) {
        lua_getfield(L, 1, "message");
        lua_getfield(L, 1, "reason");
        if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING)
            lua_pushfstring(L, "%s: %s", lua_tostring(L, -1), lua_tostring(L, -2));
        else if (lua_type(L, -2) == LUA_TSTRING)
            lua_pushvalue(L, -2);
        else
            lua_pushliteral(L, "(error object is a table without a message)");
        msg = lua_tostring(L, -1);
    } else {
        lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
        msg = lua_tostring(L, -1);
    }
    char src[256];
    int line = 0;
    if (!has_user_position(msg) && user_location(L, src, sizeof src, &line)) {
        {
            lua_pushfstring(L, "%s:%d: %s", src, line, msg);
            msg = lua_tostring(L, -1);
        }
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

void lop_lua_vm_call(lua_State *L, int nargs, int nresults)
{
    int base = lua_gettop(L) - nargs; /* the function's index */
    lua_pushcfunction(L, vm_msgh);
    lua_insert(L, base);
    int st = lua_pcall(L, nargs, nresults, base);
    lua_remove(L, base);
    if (st != 0) lua_error(L);
}

lop_rc_t lop_lua_vm_run(lop_lua_vm_t *vm, lua_CFunction fn, void *ud, int64_t timeout_ns, const char *what, char *msg,
                        size_t msglen)
{
    lua_State *L = vm->L;
    int top = lua_gettop(L);
    vm->mem_exceeded = false;
    vm->deadline_hit = false;
    vm->deadline_what = what;
    vm->deadline_ns = timeout_ns > 0 ? lop_clock_mono(vm->clock) + timeout_ns : INT64_MAX;
    lop_lua_guard_reset(L);
    bool watched = vm->deadline_ns != INT64_MAX && !vm->jit;
    if (watched) lop_lua_watchdog_arm(vm);
    int st = lua_cpcall(L, fn, ud);
    if (watched || vm->deadline_hit) lop_lua_watchdog_disarm(vm);
    vm->deadline_ns = INT64_MAX;

    lop_rc_t rc = LOP_OK;
    if (vm->mem_exceeded)
        rc = LOP_ENOMEM;
    else if (st != 0 && vm->deadline_hit)
        rc = LOP_ETIMEDOUT;
    else if (st != 0)
        rc = LOP_ERR;
    if (rc != LOP_OK && msg && msglen) {
        const char *m = st != 0 ? lua_tostring(L, -1) : NULL;
        if (rc == LOP_ENOMEM && (!m || strncmp(m, "memory limit exceeded", 21) != 0))
            snprintf(msg, msglen, "memory limit exceeded (%zu bytes)%s%s", vm->mem_limit, m ? ": " : "", m ? m : "");
        else
            snprintf(msg, msglen, "%s", m ? m : "(error without a message)");
    }
    lua_settop(L, top);
    vm->deadline_hit = false;
    return rc;
}

void lop_lua_vm_load(lua_State *L, const char *data, size_t len, const char *name)
{
    if (len > 0 && data[0] == LUA_SIGNATURE[0]) luaL_error(L, "%s: precompiled bytecode is not allowed", name);
    lua_pushfstring(L, "@%s", name);
    int st = luaL_loadbuffer(L, data, len, lua_tostring(L, -1));
    lua_remove(L, -2);
    if (st != 0) lua_error(L);
}
