/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_reqinfo.h — the authorization attributes of a request, resolved from its method, path and
 * query the way kube-apiserver's RequestInfoFactory does
 * (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go), before any routing:
 *   - paths with fewer than three segments under /api (two under /apis) and every other prefix
 *     are non-resource requests whose verb is the method in lower case ("get", "post", ...);
 *   - resource requests: verb from the method (POST create, GET/HEAD get, PUT update, PATCH
 *     patch, DELETE delete); a GET without a name is list, or watch with ?watch=true (or the
 *     /watch/ path prefix); a DELETE without a name is deletecollection; a list/watch whose
 *     fieldSelector is exactly metadata.name=X names X; /namespaces/NS/... sets the namespace
 *     (and /namespaces/NS alone is resource "namespaces", name NS, namespace NS).
 *
 * Pure; any thread.
 */
#ifndef LOP_APISERVER_AS_REQINFO_H
#define LOP_APISERVER_AS_REQINFO_H

#include <stdbool.h>

#define AS_ATTR_MAX 256

/* authorizer.Attributes without the user. Strings are "" when absent. */
typedef struct as_attrs {
    bool resource_request;
    char verb[32];
    char path[1024]; /* non-resource requests (truncated) */
    char group[AS_ATTR_MAX], version[64], resource[AS_ATTR_MAX], subresource[AS_ATTR_MAX];
    char name[AS_ATTR_MAX], ns[AS_ATTR_MAX];
} as_attrs_t;

/* Fill *out from method ("GET", ...), the decoded path, the ?watch value and the ?fieldSelector
 * value (both NULL when absent). */
void as_reqinfo_parse(const char *method, const char *path, const char *watch, const char *field_selector,
                      as_attrs_t *out);

#endif
