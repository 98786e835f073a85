/*
 * scriptrt.h — the script runtime: the installed script set and the VMs built from it.
 *
 * Install = build a VM from the new set on the side (which loads every file and runs main.lua,
 * validating the declarations), and only if that succeeds make the set current and bump the
 * generation (docs/reload.md). A failed install changes nothing.
 *
 * Workers each own a lop_vm_slot_t: lop_scriptrt_vm() returns the slot's VM, rebuilding it
 * from the current set when the generation moved on (between reconciles, so an in-flight
 * reconcile finishes on the old code) or when the VM was flagged broken.
 *
 * The "event VM" is the VM of the last install; it runs Lua predicates and map functions for
 * the informer threads, serialized by a mutex (lop_scriptrt_event_lock/unlock).
 *
 * Thread-safety: every function from any thread unless stated otherwise.
 */
#ifndef LOP_RUNTIME_SCRIPTRT_H
#define LOP_RUNTIME_SCRIPTRT_H

#include "host/runtime/engine.h"

#include <pthread.h>
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

/* The event VM, locked for the caller's exclusive use; NULL before the first install.
 * Call lop_scriptrt_event_unlock when done (also after NULL). The declarations of the current
 * set are those of this VM (engine->declarations), valid while locked. */
lop_vm_t *lop_scriptrt_event_lock(lop_scriptrt_t *rt);
void lop_scriptrt_event_unlock(lop_scriptrt_t *rt);
/* The event VM built from generation gen (the current one, or the one before while a reload
 * rewires), locked; NULL (still locked: call unlock) when that generation's VM is gone. Lua
 * callback ids are only meaningful in the VM of the generation they were declared in. */
lop_vm_t *lop_scriptrt_event_lock_gen(lop_scriptrt_t *rt, uint64_t gen);
/* With the event lock held: replace a broken (memory-capped) event VM of generation gen by a
 * fresh one built from the current set. No-op for an older generation. */
void lop_scriptrt_event_rebuild_locked(lop_scriptrt_t *rt, uint64_t gen);
/* Free the previous generation's event VM (after the handlers wired for it are removed). */
void lop_scriptrt_event_release_prev(lop_scriptrt_t *rt);

const lop_engine_t *lop_scriptrt_engine(lop_scriptrt_t *rt);

#endif
