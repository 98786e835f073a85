/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm.h — one sandboxed LuaJIT state with a memory cap and per-call deadlines
 * (docs/execution-model.md "VMs" and "Deadlines"). The engine (engine_lua.c) builds one per worker.
 *
 *  - Memory: a counting allocator; an allocation that would exceed memory_limit_bytes fails
 *    (Lua raises "not enough memory"), the VM records it and is from then on flagged broken
 *    (lop_lua_vm_t.broken): the host must build a fresh VM. The failing call reports
 *    "memory limit exceeded".
 *  - Sandbox: base (without dofile, loadfile; load/loadstring refuse bytecode; collectgarbage
 *    only "collect", "count", "step"), string (without
 *    dump), table, math, coroutine, bit. io, os, debug, ffi, jit, package and string.dump only
 *    with unsafe_libs (package is opened to keep its `require`, then hidden). print logs one line
 *    at info level. The script-set `require` is installed by the engine.
 *  - Deadlines: with the JIT off (the default) the watchdog thread (vm_watchdog.h) installs an
 *    instruction-count hook once the injected clock passes the deadline; the hook raises
 *    "<what> deadline exceeded" and keeps firing on every instruction, so a script's own pcall
 *    cannot swallow it. No hook runs before the deadline (a permanent count hook costs ~2.4x).
 *    With jit=true there is no hook: deadlines are cooperative (lop_lua_vm_check_deadline, which
 *    the core.* functions call).
 *  - Every entry into Lua goes through lop_lua_vm_run (a protected call) and user functions are
 *    called through lop_lua_vm_call (pcall with a traceback message handler).
 *
 * Thread-safety: a VM is used by one thread at a time. Different VMs are independent.
 */
#ifndef LOP_LUA_VM_H
#define LOP_LUA_VM_H

#include "host/runtime/engine.h"

#include <lua.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lop_lua_vm {
    lua_State *L;
    const lop_clock_t *clock;
    size_t mem_used;  /* bytes currently allocated by L */
    size_t mem_limit; /* 0 = unlimited */
    size_t mem_peak;
    bool mem_exceeded; /* an allocation was refused since the last lop_lua_vm_run began */
    bool broken;       /* the memory cap was hit at some point: rebuild this VM */
    bool jit;
    bool unsafe_libs;
    int64_t deadline_ns;       /* INT64_MAX: none */
    const char *deadline_what; /* "reconcile", "script load", ... */
    bool deadline_hit;
    /* Deadline watchdog (vm_watchdog.h); guarded by the watchdog's mutex. */
    struct lop_lua_vm *wd_next;
    bool wd_armed;
} lop_lua_vm_t;

/* Registry key (its address) of the package library's original `require`, which the engine uses
 * for the C modules scripts may load (cjson) and, with unsafe_libs, for everything else. */
extern const char lop_lua_vm_key_require;

/* Create the state and open the sandboxed libraries. vm is caller storage (zeroed by this
 * function); opts->clock NULL means the system clock. Returns LOP_OK, or LOP_ENOMEM / LOP_ERR with
 * err filled. On failure nothing needs cleaning up. */
LOP_MUST_CHECK lop_rc_t lop_lua_vm_init(lop_lua_vm_t *vm, const lop_engine_opts_t *opts, lop_err_t *err);

/* Close the state (running __gc finalizers). Safe on a zeroed or already cleaned-up vm. */
void lop_lua_vm_cleanup(lop_lua_vm_t *vm);

/* The VM a state belongs to (its allocator's userdata). Never raises. */
lop_lua_vm_t *lop_lua_vm_from(lua_State *L);

/*
 * Run fn(L) protected (lua_cpcall with ud as the light userdata argument) under a deadline of
 * timeout_ns from now on the VM's clock (0 = none); what names the deadline in messages
 * ("reconcile" gives "reconcile deadline exceeded"). Returns:
 *   LOP_OK;
 *   LOP_ETIMEDOUT  the deadline interrupted it;
 *   LOP_ENOMEM     the memory cap was hit (the VM is now broken), even if a script caught it;
 *   LOP_ERR        fn raised (message, with traceback when it came through lop_lua_vm_call).
 * On failure msg (if non-NULL) receives the message, truncated to msglen. The Lua stack is left
 * as before the call.
 */
LOP_MUST_CHECK lop_rc_t lop_lua_vm_run(lop_lua_vm_t *vm, lua_CFunction fn, void *ud, int64_t timeout_ns,
                                       const char *what, char *msg, size_t msglen);

/*
 * Inside fn: call the function below nargs arguments on the stack (like lua_call) with a
 * traceback message handler; on error re-raise the message (now carrying the traceback and,
 * when the error came from library or C code, the first user-script file:line as prefix).
 * Stack: -(nargs+1) +nresults. Raises.
 */
void lop_lua_vm_call(lua_State *L, int nargs, int nresults);

/* Raise "<what> deadline exceeded" when the current deadline has passed (cooperative check for
 * jit=true; cheap enough for every core.* call). Raises. */
void lop_lua_vm_check_deadline(lua_State *L);

/* The hook the watchdog installs (count 1) once a deadline passed: raises "<what> deadline
 * exceeded" at every instruction until the protected call returns. Internal to bindings/. */
void lop_lua_vm_deadline_hook(lua_State *L, lua_Debug *ar);

/* Load a chunk from memory with chunk name "@name"; load errors are raised as "name:line: ..."
 * (bytecode is refused). Stack: +1 (the function). Raises. */
void lop_lua_vm_load(lua_State *L, const char *data, size_t len, const char *name);

#endif
