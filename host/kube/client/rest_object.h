/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rest_object.h — one API call on an object or collection named by (apiVersion, kind): the
 * REST mapper resolves the resource, the path is built per api-concepts, and the writes get the details
 * clients must get right: metadata.resourceVersion stripped before a create (apiserver
 * storage/etcd3/store.go), an explicit fieldManager on every write (server-side-apply docs), the
 * content type for each patch flavour, server-side apply with its required fieldManager and
 * optional force. A 404 for the resource itself (not for an object) invalidates the mapper so a
 * re-created CRD is found again (client-go restmapper/discovery.go). This is what the Lua
 * bindings' core.request and other host units call.
 *
 * Thread-safety: as the client and mapper: safe from any thread.
 */
#ifndef LOP_KUBE_CLIENT_REST_OBJECT_H
#define LOP_KUBE_CLIENT_REST_OBJECT_H

#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"

#define LOP_DEFAULT_FIELD_MANAGER "luaop"

typedef struct lop_object_req {
    const char *verb;        /* get | list | create | update | patch | apply | delete */
    const char *api_version; /* "v1", "apps/v1", ... */
    const char *kind;        /* "ConfigMap", ... */
    const char *ns;          /* namespaced kinds: required except for list (NULL = all namespaces);
                              * ignored for cluster-scoped kinds */
    const char *name;        /* required except for list and create */
    const char *subresource; /* "status", "scale", or NULL */
    const char *patch_type;  /* patch: "merge" (default), "json", "strategic", or a content type */
    const char *query;       /* extra query, already escaped, without '?' (e.g. "labelSelector=a%3Db") */
    const char *body;        /* JSON: the object (create/update/apply), the patch, DeleteOptions */
    size_t len;
    const char *field_manager; /* writes: NULL = LOP_DEFAULT_FIELD_MANAGER unless query has one */
    bool force;                /* apply: take ownership on conflicts (force=true) */
    const atomic_bool *cancel;
    long timeout_ms;    /* as lop_rest_req_t */
    long deadline_ms;   /* as lop_rest_req_t */
    int64_t send_by_ns; /* as lop_rest_req_t */
} lop_object_req_t;

/*
 * Run the call. Returns what lop_rest_request returns (resp gets the response), plus:
 * LOP_EINVAL for a bad request (unknown verb or patch type, missing name/namespace/body), LOP_ENOTFOUND with reason "NotFound" and code 404 when the kind is unknown to
 * discovery ("no matches for kind ..."). *mapping_out (may be NULL) gets the resolved mapping.
 */
LOP_MUST_CHECK lop_rc_t lop_rest_object(lop_rest_client_t *c, lop_restmapper_t *m, const lop_object_req_t *req,
                                        lop_rest_resp_t *resp, lop_rest_mapping_t *mapping_out, lop_err_t *err);

#endif
