/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apply.h — create-or-replace of manifest objects through the REST client (what `luaop dev
 * --apply` does with CRDs and samples). Not server-side apply: a missing object is created
 * (POST); an existing one is replaced (GET for its resourceVersion, then PUT). Namespaced objects
 * without a namespace go to default_ns. A CustomResourceDefinition is waited for until its
 * Established condition is True, so later documents of its kind resolve.
 *
 * Thread-safety: no shared state beyond the client and mapper (both thread-safe).
 */
#ifndef LOP_RUNTIME_APPLY_H
#define LOP_RUNTIME_APPLY_H

#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"

#include <jansson.h>

/* Apply one object (borrowed). err names kind/name and the cause. */
LOP_MUST_CHECK lop_rc_t lop_apply_object(lop_rest_client_t *rest, lop_restmapper_t *mapper, json_t *obj,
                                         const char *default_ns, const lop_clock_t *clock, lop_err_t *err);

/* Apply every document of a YAML/JSON file, in order (items of a List are applied one by one). */
LOP_MUST_CHECK lop_rc_t lop_apply_file(lop_rest_client_t *rest, lop_restmapper_t *mapper, const char *path,
                                       const char *default_ns, const lop_clock_t *clock, lop_err_t *err);

#endif
