/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_store.h — storage: the collections' sorted entries, the one global revision handed out as
 * resourceVersion, the ring of watch events and point-in-time snapshots rebuilt from it (what
 * k8s.io/apiserver/pkg/registry/generic/registry/store.go does over etcd, in memory).
 *
 * Stored objects are immutable once committed and kept serialized; trees are decoded on demand (see
 * as_decode.h and apiserver/README.md "Memory"). Loop thread only.
 */
#ifndef LOP_APISERVER_AS_STORE_H
#define LOP_APISERVER_AS_STORE_H

#include "apiserver/as_internal.h"

/* Start with revision 1 and an empty history ring of srv->history events, srv->history_bytes bytes. */
void as_store_init(lop_apiserver_t *srv);
/* Free the history ring and its events, empty the decode cache, free the collections. */
void as_store_free(lop_apiserver_t *srv);
/* The entry at key in c (borrowed), or NULL. */
as_entry_t *as_store_find(as_coll_t *c, const char *key);
/* Commit new_obj (stolen; NULL = delete) at key. Sets metadata.resourceVersion, serializes it once
 * (the bytes every reader is served, with their as_facts_t), records the event (the ring drops its
 * oldest events to stay within srv->history events and srv->history_bytes), notifies watchers.
 * Returns the committed object or, on delete, the deleted state: borrowed from the decode cache,
 * valid until the current event-loop callback returns (json_incref it to keep it longer). */
json_t *as_store_commit(lop_apiserver_t *srv, as_coll_t *c, const char *key, json_t *new_obj);
/* Drop the whole history: older watch RVs and continue tokens become 410 Gone. */
void as_store_compact(lop_apiserver_t *srv);
/* Items of c at revision rv in namespace ns (NULL: all), sorted by key: *out is a malloc'd array
 * of n entries whose keys and blobs are borrowed (no tree is decoded or copied). Returns -1 when
 * rv is older than the history. */
int as_store_snapshot(lop_apiserver_t *srv, as_coll_t *c, int64_t rv, const char *ns, as_entry_t **out, size_t *n);
/* The serialized form of a stored object: the entry's blob if obj is its tree (as returned by
 * as_store_commit or as_entry_obj in this callback), else NULL. Borrowed. */
as_blob_t *as_store_wire(lop_apiserver_t *srv, as_coll_t *c, const json_t *obj);

/* The store key of an object: "ns/name" for namespaced resources, "name" otherwise (truncated to
 * n bytes). */
void as_make_key(const as_res_t *res, const char *ns, const char *name, char *buf, size_t n);

#endif
