/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_decode.h — stored objects decoded on demand. The store (as_store.h) keeps each committed
 * object only as its serialized bytes plus a few facts (as_facts_t, as_internal.h); whoever needs
 * the tree asks here.
 * A stored object is kept as its bytes (as_blob_t, immutable); its tree is decoded from them when
 * a caller needs one. The decode cache keeps recently used trees, keyed by the blob (the blob
 * holds the tree and a reference on itself while cached), least recently used evicted first
 * until the cached blobs' serialized bytes are within srv->dc_budget. Eviction runs only from its
 * own event (a zero timeout added when the cache goes over budget), never inside another callback, so a
 * tree returned here stays valid until the callback that asked for it returns. Trees are shared:
 * never modify one (json_deep_copy first).
 * Loop thread only.
 */
#ifndef LOP_APISERVER_AS_DECODE_H
#define LOP_APISERVER_AS_DECODE_H

#include "apiserver/as_internal.h"

/* The tree of stored bytes b, cached (borrowed; valid until the current callback returns). An
 * unparsable blob (never made by the store) gives an empty object. */
json_t *as_blob_obj(lop_apiserver_t *srv, as_blob_t *b);
/* The entry's tree: as_blob_obj of its bytes. */
json_t *as_entry_obj(lop_apiserver_t *srv, const as_entry_t *e);
/* The tree of b as a new reference (the caller decrefs), without filling the cache (the cached
 * tree if there is one): for scans over many objects. */
json_t *as_blob_decode(lop_apiserver_t *srv, as_blob_t *b);
/* Whether the stored object (key, b) of res is in namespace ns (NULL: any) and matches ls and fs
 * (NULL or empty: everything), as as_obj_matches (as_select.h) on its tree. Decodes nothing when
 * there is no selector (namespace from the key), only the metadata when the selectors read
 * metadata only, else the whole object (through the cache when cache is true). */
bool as_blob_matches(lop_apiserver_t *srv, as_res_t *res, const char *ns, lop_label_selector_t *ls,
                     lop_field_selector_t *fs, const char *key, as_blob_t *b, bool cache);
/* Whether the stored bytes b of res need the conversion webhook to be served as to_av
 * (as_convert_needed, as_convert.h, from the blob's facts). */
bool as_blob_needs_convert(const as_res_t *res, const as_blob_t *b, const char *to_av);
/* The blob's apiVersion ("" if it has no facts). */
const char *as_blob_api_version(const as_blob_t *b);
/* Evict least recently used trees until the cache is within its budget. Called by the trim event;
 * callable directly only where no tree from the cache is in use (tests). */
void as_decode_trim(lop_apiserver_t *srv);
/* Cache tree (stolen) as the tree of b, which must be tree's serialization (as_store_commit: the
 * object just committed). Takes a reference on b while cached. */
void as_decode_put(lop_apiserver_t *srv, as_blob_t *b, json_t *tree);
/* Empty the cache and free its trim event (as_store_free). */
void as_decode_free(lop_apiserver_t *srv);
/* The facts of obj (as_internal.h) serialized as data[0..len), a new allocation (freed with the
 * blob that holds it). */
as_facts_t *as_facts_of(const json_t *obj, const char *data, size_t len);

#endif
