/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_patch_handler.h — PATCH (k8s.io/apiserver/pkg/endpoints/handlers/patch.go): JSON patch,
 * merge patch, strategic merge patch and server-side apply, on the main endpoint and the
 * /status and /scale subresources.
 *
 * Loop thread only.
 */
#ifndef LOP_APISERVER_AS_PATCH_HANDLER_H
#define LOP_APISERVER_AS_PATCH_HANDLER_H

#include "apiserver/as_internal.h"

/* PATCH of one object; answers q once. */
void as_handle_patch(as_req_t *q);

#endif
