/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm_watchdog.h — one process-wide thread that interrupts VMs whose deadline has passed.
 *
 * A VM running with the JIT off arms the watchdog for the duration of a call instead of running
 * with a permanent instruction-count hook (which slows LuaJIT's interpreter about 2.4x). When the
 * deadline passes on the VM's clock the watchdog installs a count hook with count 1 on that VM
 * (lua_sethook is safe to call asynchronously, as lua.c does from its SIGINT handler); the hook
 * then raises "<what> deadline exceeded" on the VM's own thread at its next instruction. The
 * hook is installed again every 5 ms until the call returns (LuaJIT's lua_sethook updates a mask
 * word the VM thread also updates around finalizers, so one asynchronous install could be lost;
 * see LuaJIT issues #824 and #1012).
 *
 * Thread-safety: all functions from any thread. Hook changes on a VM are serialised by the
 * watchdog's mutex (lop_lua_watchdog_sethook).
 */
#ifndef LOP_LUA_VM_WATCHDOG_H
#define LOP_LUA_VM_WATCHDOG_H

#include "bindings/vm.h"

/* Watch vm until disarmed (vm->deadline_ns and vm->clock must be set). Starts the thread on
 * first use. Never raises. */
void lop_lua_watchdog_arm(lop_lua_vm_t *vm);

/* Stop watching vm and remove any hook from its state. Never raises. */
void lop_lua_watchdog_disarm(lop_lua_vm_t *vm);

/* lua_sethook under the watchdog's mutex (so it never races the watchdog). Never raises. */
void lop_lua_watchdog_sethook(lop_lua_vm_t *vm, lua_Hook f, int mask, int count);

#endif
