/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_openapi.h — the OpenAPI documents kube-apiserver publishes (k8s.io/kube-openapi handler3 and
 * handler; the CRD builder of apiextensions-apiserver pkg/controller/openapi/builder):
 *   /openapi/v3                 an index {"paths": {"api/v1": {"serverRelativeURL":
 *                               "/openapi/v3/api/v1?hash=<SHA-512 of the document>"}, ...}}
 *   /openapi/v3/api/v1, /openapi/v3/apis/<g>/<v>
 *                               OpenAPI 3.0 of one group-version: one PATCH operation per resource
 *                               (its GVK and the fieldValidation parameter: kubectl leaves field
 *                               validation to the server when it sees it) and components.schemas:
 *                               every served kind, its List, and the closure of what they refer to
 *                               (io.k8s.api.core.v1.ConfigMap, ...ObjectMeta, ...) with
 *                               x-kubernetes-group-version-kind on the served kinds
 *   /openapi/v2                 Swagger 2.0 with every group-version's definitions, in JSON (a
 *                               request that accepts only protobuf gets 406)
 * Built-in kinds' schemas are the static table of as_schemas_builtin.c; a custom resource's is its
 * version's openAPIV3Schema with apiVersion, kind and metadata (a reference to ObjectMeta)
 * added, named by the reversed group (com.example.cache.v1alpha1.Memcached). The hash changes
 * exactly when a document does, so kubectl's cache follows CRD changes.
 *
 * The schema table format, one line each:
 *   "= <component name> [kind|<type>] | <description>"   starts a definition: an object (with
 *                     apiVersion, kind and metadata first when "kind" is given) or a named type
 *   "<field>[!] <type> [~<merge key>] | <description>"  a property; '!' marks it required, ~k
 *                     a list merged by key k (x-kubernetes-patch-merge-key)
 *   <type>: string boolean number integer int32 int64 double byte date-time object preserve
 *           intorstr, []<type> (array), {}<type> (map), &<name> (a reference: the one component
 *           whose name ends with .<name>)
 * Lines starting with '#' and blank lines are skipped.
 *
 * Loop thread for the handlers; the parsed table is built once per process (immutable after).
 */
#ifndef LOP_APISERVER_AS_OPENAPI_H
#define LOP_APISERVER_AS_OPENAPI_H

#include "apiserver/as_internal.h"

/* The built-in schema table (as_schemas_builtin.c). */
extern const char as_schemas_builtin[];

/* Parse a schema table: {"<component name>": <schema>, ...} with references
 * "#/components/schemas/<name>" (new reference), or NULL with the line and reason in errbuf. */
json_t *as_schemas_parse(const char *table, char *errbuf, size_t errlen);
/* Serve /openapi/v3, /openapi/v3/<gv> or /openapi/v2 (404 for anything else under /openapi). */
void as_serve_openapi(as_req_t *q);

#endif
