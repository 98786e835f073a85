/* SPDX-License-Identifier: Apache-2.0 */
/*
 * listdecoder.h — incremental decoder of a LIST response body
 * (`{"kind":"PodList","apiVersion":"v1","metadata":{...},"items":[{...},...]}`), fed the bytes as
 * they arrive (chunk boundaries mean nothing). Each element of `items` is handed to a callback as
 * soon as its last byte arrives, so a reflector builds its cache entries while the response is
 * still streaming and never holds the whole body: memory is one item, not one page (a 10,000-Pod
 * page is ~100 MB of JSON).
 *
 * What it checks: the body is one JSON object; its members are well formed; every item is one
 * valid JSON object (validated with lop_jscan_value, so the consumer may build it with
 * LOP_OBJ_TRUSTED) — unless item validation is turned off (lop_listdecoder_set_validate), when
 * an item is only known to start with '{' and to have balanced brackets and strings, and the
 * consumer validates it (lop_obj_new without LOP_OBJ_TRUSTED does so in the pass that builds it);
 * `items` is an array, null or absent (an empty list may carry null); `metadata` is an object
 * carrying a non-empty resourceVersion (checked by _finish). Only whitespace may follow the
 * object. Top-level members other than kind, apiVersion, metadata and items are skipped
 * (validated, not kept).
 *
 * Built-in list items carry no kind/apiVersion: the consumer takes them from the
 * list (lop_listdecoder_item_kind/_api_version). Items always stream, even when `items` comes
 * before kind/apiVersion — as in the API server's encoding of custom resource lists (unstructured,
 * keys sorted: apiVersion, items, kind, metadata), whose items carry their own kind. The list
 * kind is then still "" while the items are delivered; a consumer that met an item without kind
 * completes it after _finish (the reflector does).
 *
 * Limits: an item or a top-level member other than items larger than max_item bytes, nesting
 * deeper than 10000
 * (the API server's own limit), or a metadata.resourceVersion / continue string that cannot be
 * decoded fails the decode. A failed decoder stays failed until _reset.
 *
 * Ownership: the item passed to the callback is borrowed for the call; the strings returned by
 * the accessors are the decoder's, valid until the next _reset or _free.
 * Thread-safety: none; one response, one thread.
 */
#ifndef LOP_KUBE_CACHE_LISTDECODER_H
#define LOP_KUBE_CACHE_LISTDECODER_H

#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct lop_listdecoder lop_listdecoder_t;

/*
 * Called once per item. end NULL: item is the whole item, len bytes, not NUL-terminated (a
 * validated JSON object, or with validation off one with balanced brackets and strings).
 * end non-NULL (only with validation off): the item is unchecked — item runs from its '{' to the
 * end of the bytes at hand, and the consumer, validating as it builds, sets *end one past the
 * item's '}' and returns 0; or returns LOP_LIST_RETRY when those bytes do not begin with one
 * whole valid object (the chunk ends inside it, or it is malformed), without acting on them. The
 * decoder then tracks the item byte by byte and calls again with end NULL. This saves the
 * tracking pass for every item that arrives whole in one chunk.
 * Return 0 to continue, non-zero (other than LOP_LIST_RETRY) to stop: _feed returns LOP_ECLOSED.
 */
enum { LOP_LIST_RETRY = -2 };
typedef int (*lop_list_item_fn)(void *ud, const char *item, size_t len, size_t *end);

/* max_item: the largest item or top-level member accepted, in bytes (0 = 64 MiB). */
lop_listdecoder_t *lop_listdecoder_new(size_t max_item, lop_list_item_fn fn, void *ud);
/* Replace the item callback (e.g. per list run). */
void lop_listdecoder_set_callback(lop_listdecoder_t *d, lop_list_item_fn fn, void *ud);
/* Validate each item before delivering it (the default), or leave that to the consumer: one
 * pass over every byte less when the consumer's own pass validates, and items are then also
 * offered unchecked (see lop_list_item_fn). Kept across _reset. */
void lop_listdecoder_set_validate(lop_listdecoder_t *d, bool validate);
/* NULL accepted. */
void lop_listdecoder_free(lop_listdecoder_t *d);
/* Forget everything (for the next page or a retry); keeps the callback and the buffers. */
void lop_listdecoder_reset(lop_listdecoder_t *d);

/*
 * Feed bytes. LOP_OK when all were consumed; LOP_ECLOSED when the callback asked to stop (the
 * rest is dropped); LOP_EINVAL with err naming the cause and the byte offset on malformed input
 * or an oversized item.
 */
LOP_MUST_CHECK lop_rc_t lop_listdecoder_feed(lop_listdecoder_t *d, const char *data, size_t len, lop_err_t *err);
/*
 * The body has ended: LOP_OK when it was one complete list object with metadata.resourceVersion;
 * LOP_EINVAL naming what is missing otherwise (truncated body, no metadata, no resourceVersion).
 */
LOP_MUST_CHECK lop_rc_t lop_listdecoder_finish(lop_listdecoder_t *d, lop_err_t *err);

/* The list's kind without its "List" suffix ("PodList" → "Pod"); "" when absent or not "...List". */
const char *lop_listdecoder_item_kind(const lop_listdecoder_t *d);
/* The list's apiVersion; "" when absent. */
const char *lop_listdecoder_api_version(const lop_listdecoder_t *d);
/* metadata.resourceVersion and metadata.continue; "" when absent (or not seen yet). */
const char *lop_listdecoder_resource_version(const lop_listdecoder_t *d);
const char *lop_listdecoder_continue(const lop_listdecoder_t *d);
/* Items delivered so far. */
size_t lop_listdecoder_items(const lop_listdecoder_t *d);

#endif
