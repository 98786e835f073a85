/* SPDX-License-Identifier: Apache-2.0 */
/*
 * restmapper.h — discovery and the Kind→resource mapping (client-go discovery/, restmapper/). Reads
 * /api, /api/v1, /apis and /apis/{group}/{version} through a REST client, maps each resource's
 * `kind` to its plural `name` (skipping subresources, i.e. names containing '/'), never guessing
 * plurals (restmapper/discovery.go). The result is cached; a lookup of an unknown kind re-reads
 * discovery once (so a CRD installed after start is found; callers should not loop on a kind that
 * stays unknown), and lop_restmapper_invalidate forces the next lookup to re-read (call it when a
 * request for a mapped resource answered 404 without an object name, e.g. a CRD was deleted and
 * re-created; restmapper's DeferredDiscoveryRESTMapper.Reset). Also builds request paths
 * (api-concepts, "Resource URIs").
 *
 * Thread-safety: a mapper is safe from any thread (rwlock; one refresh at a time).
 * lop_rest_path is a pure function.
 */
#ifndef LOP_KUBE_CLIENT_RESTMAPPER_H
#define LOP_KUBE_CLIENT_RESTMAPPER_H

#include "host/kube/client/rest.h"
#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>

/* One resolved resource. Plain data; copy by value. */
typedef struct lop_rest_mapping {
    char group[128]; /* "" for the core group */
    char version[64];
    char resource[128]; /* lowercase plural, e.g. "deployments" */
    char kind[128];
    bool namespaced;
} lop_rest_mapping_t;

typedef struct lop_restmapper lop_restmapper_t;

/* New mapper over client (borrowed; must outlive the mapper). No request is made until the
 * first lookup. */
lop_restmapper_t *lop_restmapper_new(lop_rest_client_t *client);
void lop_restmapper_free(lop_restmapper_t *m);

/*
 * Resolve api_version ("v1", "apps/v1", "example.com/v1alpha1") + kind into *out.
 * Errors: LOP_ENOTFOUND (err->reason "NotFound") when discovery, even after a refresh, has no such
 * kind in that group/version; transport/HTTP errors from discovery as returned by the client;
 * LOP_EINVAL for an empty kind or malformed api_version.
 */
LOP_MUST_CHECK lop_rc_t lop_restmapper_resolve(lop_restmapper_t *m, const char *api_version, const char *kind,
                                               lop_rest_mapping_t *out, lop_err_t *err);

/* Resolve by group/version/resource plural instead of kind (same errors). */
LOP_MUST_CHECK lop_rc_t lop_restmapper_resolve_resource(lop_restmapper_t *m, const char *group, const char *version,
                                                        const char *resource, lop_rest_mapping_t *out, lop_err_t *err);

/* Drop the cache: the next lookup re-reads discovery. */
void lop_restmapper_invalidate(lop_restmapper_t *m);

/* True when resp is a 404 for the resource itself (no object name in the Status details, as for
 * "the server could not find the requested resource"), not for a missing object. */
bool lop_rest_resource_missing(const lop_rest_resp_t *resp);

/* Call after a request for a mapped resource: invalidates the cache when
 * lop_rest_resource_missing(resp). Returns true when it did. */
bool lop_restmapper_note_404(lop_restmapper_t *m, const lop_rest_resp_t *resp);

/* Re-read discovery now. */
LOP_MUST_CHECK lop_rc_t lop_restmapper_refresh(lop_restmapper_t *m, lop_err_t *err);

/* How many times discovery was read (tests). */
int lop_restmapper_refreshes(lop_restmapper_t *m);

/*
 * Build a request path into out (appended): /api/v1 or /apis/{g}/{v}, then namespaces/{ns} for
 * namespaced resources when ns is non-empty, the resource, then /{name} and /{subresource} when
 * given, then "?" + query when query is non-empty (query is already escaped, without '?').
 * ns and name are percent-escaped. Returns LOP_EINVAL when a subresource is given without a
 * name, or a name/namespace is "." or ".." or contains '/'.
 */
LOP_MUST_CHECK lop_rc_t lop_rest_path(lop_buf_t *out, const lop_rest_mapping_t *m, const char *ns, const char *name,
                                      const char *subresource, const char *query, lop_err_t *err);

/* Append s to out percent-escaped for a URL query value (RFC 3986 unreserved kept). */
void lop_url_escape(lop_buf_t *out, const char *s);

#endif
