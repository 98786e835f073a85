/*
 * watchdecoder.h — incremental splitter of a watch stream into complete top-level JSON documents
 * (reference F.4/F.5: chunk boundaries mean nothing; one callback may carry several events and
 * one event may span any number of callbacks).
 *
 * It tracks strings, escapes and bracket nesting (brackets must match), skips whitespace between
 * documents, and accepts only objects at the top level. It does not validate the document's
 * inside (the consumer parses it). A document growing past max_doc bytes, a top-level byte that
 * cannot start an object, mismatched brackets or nesting deeper than 10000
 * (the API server's own limit) are errors: the decoder
 * then stays failed until lop_watchdecoder_reset.
 *
 * Ownership: the document passed to the callback is borrowed for the call. Thread-safety: none;
 * one stream, one thread.
 */
#ifndef LOP_KUBE_WATCHDECODER_H
#define LOP_KUBE_WATCHDECODER_H

#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct lop_watchdecoder lop_watchdecoder_t;

/* Called once per complete document. Return 0 to continue, non-zero to stop feeding. */
typedef int (*lop_doc_fn)(void *ud, const char *doc, size_t len);

/* max_doc: the largest document accepted, in bytes (0 = 64 MiB). fn/ud are kept. */
lop_watchdecoder_t *lop_watchdecoder_new(size_t max_doc, lop_doc_fn fn, void *ud);
void lop_watchdecoder_free(lop_watchdecoder_t *d);

/*
 * Feed bytes. Returns LOP_OK when all bytes were consumed; LOP_ECLOSED when the callback asked to
 * stop (the rest of this chunk is dropped); LOP_EINVAL with err naming the cause (and the byte
 * offset in the stream) on malformed input or an oversized document.
 */
lop_rc_t lop_watchdecoder_feed(lop_watchdecoder_t *d, const char *data, size_t len, lop_err_t *err);
/* True when a document has started but not finished (a stream ending now is truncated). */
bool lop_watchdecoder_partial(const lop_watchdecoder_t *d);
/* Forget any partial document and any failure, for a new stream. */
void lop_watchdecoder_reset(lop_watchdecoder_t *d);

#endif
