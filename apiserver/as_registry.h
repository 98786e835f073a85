/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_registry.h — the resource table (one as_res_t per served group/version/resource: the
 * built-ins, and the rows each established CRD adds), the collections that store them, and the
 * discovery documents derived from the table (OpenAPI: as_openapi.h).
 *
 * Rows and collections are owned by srv and live until removed or as_registry_free; pointers
 * returned here are borrowed. Loop thread only.
 */
#ifndef LOP_APISERVER_AS_REGISTRY_H
#define LOP_APISERVER_AS_REGISTRY_H

#include "apiserver/as_internal.h"

/* Fill the table with the built-in resources (and their collections). */
void as_registry_init(lop_apiserver_t *srv);
/* Free every row and collection (stored objects included). */
void as_registry_free(lop_apiserver_t *srv);
/* The collection "group/plural", created empty when absent and create is set; else NULL. */
as_coll_t *as_coll_get(lop_apiserver_t *srv, const char *group, const char *plural, bool create);
/* The row serving group/version/plural, or NULL. */
as_res_t *as_res_find(lop_apiserver_t *srv, const char *group, const char *version, const char *plural);
/* Append a row copied from tmpl (its strings and JSON duplicated; tmpl->cschema is taken over,
 * the row frees it); returns the new row. */
as_res_t *as_res_add(lop_apiserver_t *srv, const as_res_t *tmpl);
/* Remove the rows a CRD added (ending the watches served through them). */
void as_res_remove_crd(lop_apiserver_t *srv, const char *crd_name);
/* After appending a CRD's fresh rows at [first_new, nres): merge them with its older rows. */
void as_res_merge_crd(lop_apiserver_t *srv, const char *crd_name, size_t first_new);
/* Serve a legacy discovery document: depth 0 the group list (/api when group is NULL, /apis when
 * ""), 1 one APIGroup (/apis/{group}), 2 an APIResourceList (group/version). */
void as_serve_discovery(as_req_t *q, const char *group, const char *version, int depth);

#endif
