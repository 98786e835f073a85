/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_state.h — the server's in-memory state as a whole: the resource registry, the store and the
 * namespaces every cluster starts with, built at start and again by a reset.
 *
 * Loop thread only (or before the loop thread starts).
 */
#ifndef LOP_APISERVER_AS_STATE_H
#define LOP_APISERVER_AS_STATE_H

#include "apiserver/as_internal.h"

/* Build the registry of built-in resources and an empty store holding the namespaces default,
 * kube-system, kube-public and kube-node-lease (Active, with the kubernetes finalizer). */
void as_state_init(lop_apiserver_t *srv);
/* End every watch, free every stored object and the registry (custom resources included). */
void as_state_free(lop_apiserver_t *srv);
/* as_state_free then as_state_init, and forget the injected faults, the stall and the latency:
 * resourceVersions start again from the beginning. */
void as_state_reset(lop_apiserver_t *srv);

#endif
