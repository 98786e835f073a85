/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_fault.h — fault injection: the table of injected failures that requests are matched
 * against, and the POST /luaop-fault/<action> control endpoint (see README.md; the C API in
 * apiserver.h queues the same operations to the loop thread).
 *
 * Loop thread only.
 */
#ifndef LOP_APISERVER_AS_FAULT_H
#define LOP_APISERVER_AS_FAULT_H

#include "apiserver/as_internal.h"

/* Arm fault f (copied) in a free slot of srv->faults, or over the oldest when all 16 are in use. */
void as_fault_add(lop_apiserver_t *srv, const as_fault_t *f);
/* Match q (verb or HTTP method, path prefix) against the armed faults: the first one that fits
 * answers q (a Status with f->code, or the text/plain body of an API Priority & Fairness
 * rejection), uses up one of its count and returns true. False when none fits (q untouched). */
bool as_fault_apply(as_req_t *q);
/* Serve POST /luaop-fault/<action>?... : 404 unless fault control is on, 405 for another method,
 * else {"ok":true,"revision":N} (a reset answers {"ok":true} before it runs). */
void as_fault_http(as_req_t *q);

#endif
