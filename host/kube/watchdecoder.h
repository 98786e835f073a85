/*
 * watchdecoder.h — incremental splitter of a watch stream into complete top-level JSON documents
 * (reference F.4/F.5: chunk boundaries mean nothing; one callback may carry several events and
 * one event may span any number of callbacks).
 *
 * Framing: the API server writes one event per line. A document that begins in a chunk with a
 * newline after it is cut there without looking at its bytes (memchr) and handed over unchecked:
 * the consumer validates it in the pass that decodes it, and returns LOP_DOC_RETRY when those
 * bytes are not exactly one JSON object. Such a document, and one that does not end in the chunk
 * it began in, is tracked byte by byte (strings, escapes, bracket nesting — brackets must match)
 * and handed over checked when its closing brace arrives. So events that share a line, carry
 * newlines inside, or lack the final newline are still read correctly, and none waits for a
 * newline; only the common case skips the tracking pass.
 *
 * Only objects are accepted at the top level, with whitespace between them. A document growing
 * past max_doc bytes, a top-level byte that cannot start an object, mismatched brackets or
 * nesting deeper than 10000 (the API server's own limit) are errors: the decoder then stays
 * failed until lop_watchdecoder_reset.
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

/*
 * Called once per document. checked false: doc runs from a '{' to just before the next newline
 * and may be anything (validate it before acting on it; return LOP_DOC_RETRY when it is not one
 * whole JSON object followed only by whitespace — it is then tracked and passed again, checked).
 * checked true: doc is one object with balanced brackets and strings (its contents are still
 * unvalidated). Return 0 to continue, LOP_DOC_RETRY (unchecked only), or any other non-zero
 * value to stop feeding.
 */
enum { LOP_DOC_RETRY = -2 };
typedef int (*lop_doc_fn)(void *ud, const char *doc, size_t len, bool checked);

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
