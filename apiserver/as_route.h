/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_route.h — the URL path of a request, parsed into the endpoint it names (the API server's
 * request-info resolution, k8s.io/apiserver/pkg/endpoints/request/requestinfo.go, for the
 * endpoints this server has): /version, /healthz|readyz|livez, /openapi, /luaop-fault, the
 * discovery documents of /api and /apis, and resource paths
 *   /api/<v>/<resource>[/<name>[/<sub>]]
 *   /apis/<g>/<v>/<resource>[/<name>[/<sub>]]
 *   /api/<v>/namespaces/<ns>/<resource>[/<name>[/<sub>]]   (and the /apis/<g>/<v> form)
 *
 * Pure: the registry is asked through the find callback only, so this runs without a server
 * (fuzz/fuzz_apirequest.c does). Any thread, as far as find allows.
 */
#ifndef LOP_APISERVER_AS_ROUTE_H
#define LOP_APISERVER_AS_ROUTE_H

#include "apiserver/as_internal.h"

#define AS_ROUTE_MAX_SEGMENTS 16 /* segments past this many are not looked at */

typedef enum as_route_kind {
    AS_ROUTE_NOT_FOUND, /* no such endpoint, resource or subresource (404) */
    AS_ROUTE_FAULT,     /* /luaop-fault... (as_fault.h) */
    AS_ROUTE_VERSION,
    AS_ROUTE_HEALTH, /* healthz, readyz, livez and anything under them */
    AS_ROUTE_OPENAPI,
    AS_ROUTE_DISCOVERY, /* group/version/level as as_serve_discovery takes them */
    AS_ROUTE_RESOURCE,  /* res, ns, name, sub */
} as_route_kind_t;

/* Looks a resource up by group ("" for the core group), version and plural; NULL when unknown. */
typedef as_res_t *(*as_route_find_fn)(void *ud, const char *group, const char *version, const char *plural);

typedef struct as_route {
    as_route_kind_t kind;
    /* AS_ROUTE_DISCOVERY: group NULL with level 0 for /api, "" for /apis; version NULL below 2 */
    const char *group, *version;
    int level;
    /* AS_ROUTE_RESOURCE: ns NULL for a cluster-scoped path, name NULL for a collection, sub NULL
     * or "status"/"scale"/"token" (only when res has that subresource) */
    as_res_t *res;
    const char *ns, *name, *sub;
    /* private: the strings above point into this copy of the path */
    char *copy;
} as_route_t;

/* Parse path (decoded, NUL-terminated; empty segments are skipped) into *out. Never fails: an
 * unknown path is AS_ROUTE_NOT_FOUND. Release with as_route_cleanup. */
void as_route_parse(const char *path, as_route_find_fn find, void *ud, as_route_t *out);
void as_route_cleanup(as_route_t *r);

#endif
