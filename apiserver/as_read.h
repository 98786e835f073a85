/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_read.h — GET and LIST (k8s.io/apiserver/pkg/endpoints/handlers/get.go): one object, or a
 * list with selectors, limit/continue over consistent snapshots and the resourceVersion /
 * resourceVersionMatch rules of kubernetes.io/docs/reference/using-api/api-concepts/.
 *
 * Each handler answers q once. Loop thread only.
 */
#ifndef LOP_APISERVER_AS_READ_H
#define LOP_APISERVER_AS_READ_H

#include "apiserver/as_internal.h"

/* GET of one object (or its /scale view). */
void as_handle_get(as_req_t *q);
/* GET of a collection. */
void as_handle_list(as_req_t *q);

#endif
