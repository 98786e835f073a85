/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_pool.h — the VMs that run the script set's webhooks (op.webhook.*, docs/webhooks.md).
 *
 * The webhook server calls lop_webhook_pool_admit / lop_webhook_pool_convert (its dispatch
 * interface) from its worker threads. Each call takes one of the pool's VM slots (waiting while
 * all are busy), brings the slot's VM up to the current script generation (a reload takes effect
 * between calls; an in-flight review finishes on the code it started with), runs the webhook and
 * gives the slot back. These VMs are the pool's own, not the reconcile workers' nor the event
 * VMs, so a slow webhook never holds a reconcile back and the reverse.
 *
 * The Lua call's deadline is 80% of the webhook's timeoutSeconds (its declaration), so the API
 * server gets an answer — a denial naming the deadline — before it gives up on the call and
 * applies the failurePolicy (kube-apiserver: admissionregistration.k8s.io/v1 timeoutSeconds).
 *
 * Thread-safety: every function from any thread; admit and convert concurrently.
 */
#ifndef LOP_RUNTIME_WEBHOOK_POOL_H
#define LOP_RUNTIME_WEBHOOK_POOL_H

#include "host/runtime/engine.h"
#include "host/runtime/scriptrt.h"

typedef struct lop_webhook_pool lop_webhook_pool_t;

/* A pool of nvms VM slots (>= 1) over rt (borrowed; must outlive the pool). */
lop_webhook_pool_t *lop_webhook_pool_new(lop_scriptrt_t *rt, int nvms);
/* Frees every slot's VM. No call may be running. NULL ok. */
void lop_webhook_pool_free(lop_webhook_pool_t *p);

/*
 * Admission review for the webhook served at path (a MUTATING or VALIDATING declaration's path).
 * request_json: the AdmissionReview's "request" object (len bytes). LOP_OK with *res filled (a
 * script error or timeout is a denial with code 500 in *res, see engine.h); LOP_ENOTFOUND when
 * the current script set serves nothing at path; LOP_EINVAL when request_json is not an object;
 * LOP_ERR when no VM could be built (err names why). ud is the pool.
 */
lop_rc_t lop_webhook_pool_admit(void *ud, const char *path, const char *request_json, size_t len,
                                lop_admission_result_t *res, lop_err_t *err);

/*
 * Convert one object (JSON, len bytes) to desired_api_version with the conversion webhook of its
 * apiVersion's group and its kind. LOP_OK with *out malloc'd JSON (*out_len bytes, NUL-terminated);
 * LOP_ENOTFOUND when no conversion webhook covers that group/kind; LOP_EINVAL when obj_json has
 * no apiVersion/kind; another rc with err naming the cause (file:line for a script error).
 */
lop_rc_t lop_webhook_pool_convert(void *ud, const char *obj_json, size_t len, const char *desired_api_version,
                                  char **out, size_t *out_len, lop_err_t *err);

/* Call fn with the declarations of the current script set (borrowed for the call, while a slot
 * is held: fn must not call back into the pool) and return how many there are (0, fn not
 * called, when a VM cannot be built). Used to decide whether to serve, and for the manifests. */
size_t lop_webhook_pool_declarations(lop_webhook_pool_t *p,
                                     void (*fn)(void *ud, const lop_webhook_decl_t *decls, size_t n), void *ud);

/* The script set declares no webhook, so no review will come: the pool's idle slots give their VMs
 * back to the script runtime (lop_vm_slot_return: only their declarations were read), and the
 * first reconcile worker takes one over instead of the process holding a VM that serves nothing.
 * Call it only while no webhook server uses the pool. */
void lop_webhook_pool_give_back(lop_webhook_pool_t *p);

#endif
