/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scriptrt.h — the script runtime: the installed script set and the VMs built from it.
 *
 * Install = build a VM from the new set on the side (which loads every file and runs main.lua,
 * validating the declarations), and only if that succeeds make the set current and bump the
 * generation (docs/reload.md). A failed install changes nothing.
 *
 * Workers each own a lop_vm_slot_t: lop_scriptrt_vm() returns the slot's VM, rebuilding it
 * from the current set when the generation moved on (between reconciles, so an in-flight
 * reconcile finishes on the old code) or when the VM was flagged broken. The VM the install
 * built and validated goes to the first user of its generation, a worker or an event VM
 * (below); everyone after builds their own.
 *
 * Event VMs run Lua predicates and map functions for the informer threads: one per controller
 * and script generation, each with its own lock, so a slow predicate of one controller delays
 * only that controller's events (docs/execution-model.md "Predicates and map functions"). A
 * controller's event VM is built on its first event (unless a worker was first, the first one
 * of a generation takes over the VM the install built and validated); controllers without Lua predicates or map functions
 * never get one. Calls under it run under the engine's predicate deadline
 * (lop_engine_opts_t.predicate_timeout_ns).
 *
 * Thread-safety: every function from any thread unless stated otherwise.
 */
#ifndef LOP_RUNTIME_SCRIPTRT_H
#define LOP_RUNTIME_SCRIPTRT_H

#include "host/runtime/engine.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct lop_scriptrt lop_scriptrt_t;

typedef struct lop_vm_slot {
    lop_vm_t *vm;
    uint64_t gen; /* generation vm was built from; 0 = none */
} lop_vm_slot_t;

/* engine, opts and host are borrowed and must outlive the runtime. */
lop_scriptrt_t *lop_scriptrt_new(const lop_engine_t *engine, const lop_engine_opts_t *opts, const lop_host_api_t *host);
void lop_scriptrt_free(lop_scriptrt_t *rt);

/* Extra validation of a freshly built VM before it is installed (e.g. resolve every kind the
 * declarations name). Return LOP_OK to accept. Runs on the installing thread. Once it accepted,
 * the install succeeds: it may prepare what the caller puts in place after the install (the
 * manager stages its wiring there). */
typedef lop_rc_t (*lop_vm_validate_fn)(void *ud, lop_vm_t *vm, lop_err_t *err);

/* Validate and install set. On success takes ownership of set and returns LOP_OK; on failure
 * the caller keeps set, err->message names file:line, and the previous set stays current.
 * validate may be NULL. */
LOP_MUST_CHECK lop_rc_t lop_scriptrt_install(lop_scriptrt_t *rt, lop_script_set_t *set, lop_vm_validate_fn validate,
                                             void *ud, lop_err_t *err);

uint64_t lop_scriptrt_generation(lop_scriptrt_t *rt);
/* Version string of the current set ("" before the first install). Copied into buf. */
void lop_scriptrt_version(lop_scriptrt_t *rt, char *buf, size_t len);

/* A worker's up-to-date VM (see above), or NULL with err when building it failed (the old VM,
 * if any, is kept and returned instead; NULL only when there is none). Only the slot's owner
 * thread may call this. */
lop_vm_t *lop_scriptrt_vm(lop_scriptrt_t *rt, lop_vm_slot_t *slot, lop_err_t *err);
/* Mark the slot's VM broken: it is rebuilt on the next lop_scriptrt_vm. */
void lop_scriptrt_vm_broken(lop_scriptrt_t *rt, lop_vm_slot_t *slot);
void lop_vm_slot_release(lop_scriptrt_t *rt, lop_vm_slot_t *slot);
/* Give the slot's VM back to the runtime, for the next VM user of its generation to take over
 * instead of building one (as the install's VM): only for a VM nothing has been called in yet
 * (its declarations read, no reconcile, predicate, map function or webhook run), whose Lua state
 * is as the build left it. Freed instead when its generation is no longer current or the runtime
 * holds such a VM already. The slot is empty afterwards. Only the slot's owner may call this. */
void lop_vm_slot_return(lop_scriptrt_t *rt, lop_vm_slot_t *slot);

typedef struct lop_event_vm lop_event_vm_t;

/*
 * The event VM of controller for generation gen (the current one, or the one before while a
 * reload rewires: Lua callback ids are only meaningful in the VM of the generation they were
 * declared in), locked for the caller's exclusive use until lop_scriptrt_event_release(*slot).
 * Builds it when needed (on this thread). LOP_OK with *vm and *slot set; LOP_EGONE when that
 * generation is gone (its wiring is being removed); LOP_ERR with err when building it failed.
 * On failure *vm and *slot are NULL: nothing to release. controller is copied.
 */
lop_rc_t lop_scriptrt_event_acquire(lop_scriptrt_t *rt, uint64_t gen, const char *controller, lop_vm_t **vm,
                                    lop_event_vm_t **slot, lop_err_t *err);
/* Unlock an acquired event VM. broken = the call hit the memory cap: the VM is freed and the
 * controller's next event builds a fresh one from the same generation. NULL slot: no-op. */
void lop_scriptrt_event_release(lop_scriptrt_t *rt, lop_event_vm_t *slot, bool broken);
/* Free the event VMs of generations before the current one and the previous set (after the
 * handlers wired for them are removed). Waits for a call still running in one of them. */
void lop_scriptrt_event_release_prev(lop_scriptrt_t *rt);

const lop_engine_t *lop_scriptrt_engine(lop_scriptrt_t *rt);

/* Liveness of the event VMs: false, with reason naming the controller ("controller x: a Lua
 * predicate or map function has run 3.1s (limit 1.3s)"), when a call has held one longer than
 * limit_ns (on the engine options' clock). The deadline should have ended it: a call that
 * outlives it is stuck in a JIT-compiled loop (--lua-jit) or a host call that does not return,
 * and the informer thread delivering to it with it; only a restart frees it. Any thread. */
bool lop_scriptrt_event_check_stuck(lop_scriptrt_t *rt, int64_t limit_ns, char *reason, size_t len);

#endif
