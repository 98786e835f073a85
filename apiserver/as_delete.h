/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_delete.h — DELETE and DELETE collection (k8s.io/apiserver/pkg/endpoints/handlers/delete.go):
 * options and preconditions, finalizers and deletionTimestamp, propagation policies, the
 * synchronous owner-reference garbage collector and the namespace finalizer.
 *
 * Loop thread only.
 */
#ifndef LOP_APISERVER_AS_DELETE_H
#define LOP_APISERVER_AS_DELETE_H

#include "apiserver/as_internal.h"

/* DELETE of one object; answers q once. */
void as_handle_delete(as_req_t *q);
/* DELETE of a collection (with selectors); answers q once. */
void as_handle_deletecollection(as_req_t *q);
/* Run the garbage collector and the namespace finalizer once the current request has been
 * answered (one pass queued at a time). */
void as_gc_schedule(lop_apiserver_t *srv);

#endif
