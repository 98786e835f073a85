/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watchdecoder.h — incremental splitter of a watch stream into complete top-level JSON documents
 * (chunk boundaries mean nothing; one callback may carry several events and
 * one event may span any number of callbacks).
 *
 * Framing: the API server writes one event per line, so a document is cut at its newline without
 * looking at its bytes (memchr) and handed over unchecked: the consumer validates it in the pass
 * that decodes it, and returns LOP_DOC_RETRY when those bytes are not exactly one JSON object.
 * A document whose newline is not in the chunk it began in is held, its bytes buffered as they
 * come, until a chunk brings its newline; then the buffer and that chunk's bytes up to the
 * newline are handed over unchecked in the same way (the transport's reads of up to 128 KiB cut
 * about one ~10 KB Pod in thirteen). A refused document is tracked byte by byte from its '{' (strings, escapes,
 * bracket nesting — brackets must match) and handed over checked when its closing brace arrives;
 * so events that share a line or carry newlines inside are still read correctly, at the cost of
 * that second pass.
 *
 * Waiting for a newline: a held document is delivered when its newline arrives, which for the
 * API server is the moment its closing brace arrives (it writes and flushes each event with its
 * newline). But a server may leave out the newline of the last event before a long pause, and
 * an event must not be held back then. So a document is held at a chunk's end only when it
 * cannot have ended in that chunk: no '}' among the chunk's bytes of it is followed, past blanks,
 * by the chunk's end or by a byte other than ',', '}', ']', '"' or '\\' (those follow a '}'
 * inside a value, or inside a string: "a{b}", "{...}\\n"). Otherwise it is tracked at once, as
 * before: a document that may be complete is delivered when its closing brace arrives, and so is
 * one followed on its line by the next (a '{' after a '}'). Only a stream that is broken anyway
 * (one of those five bytes right after a top-level '}') finds its error, and the documents
 * before it on its line, at the newline or at lop_watchdecoder_finish rather than at once.
 *
 * Every other outcome is the same as tracking every byte: the same documents and the same
 * errors naming the same stream offsets (a held document that turns out not to be one object is
 * tracked over its held bytes then, so an error in them is reported by that later call), and the
 * same max_doc limit (a held document that would pass it is tracked, so a stream that never sends
 * a newline fails there too).
 *
 * Only objects are accepted at the top level, with whitespace between them. A document growing
 * past max_doc bytes, a top-level byte that cannot start an object, mismatched brackets or
 * nesting deeper than 10000 (the API server's own limit) are errors: the decoder then stays
 * failed until lop_watchdecoder_reset.
 *
 * Ownership: the document passed to the callback is borrowed for the call. Thread-safety: none;
 * one stream, one thread.
 */
#ifndef LOP_KUBE_CACHE_WATCHDECODER_H
#define LOP_KUBE_CACHE_WATCHDECODER_H

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
LOP_MUST_CHECK lop_rc_t lop_watchdecoder_feed(lop_watchdecoder_t *d, const char *data, size_t len, lop_err_t *err);
/*
 * The stream ended: a held document is tracked now, so that one complete without its newline
 * (only a broken stream holds one, see above) is delivered, and errors are reported as by
 * lop_watchdecoder_feed. Returns as lop_watchdecoder_feed. Feeding may go on afterwards.
 */
LOP_MUST_CHECK lop_rc_t lop_watchdecoder_finish(lop_watchdecoder_t *d, lop_err_t *err);
/* True when a document has started but not finished (a stream ending now is truncated; call
 * lop_watchdecoder_finish first). */
bool lop_watchdecoder_partial(const lop_watchdecoder_t *d);
/* Forget any partial document and any failure, for a new stream. */
void lop_watchdecoder_reset(lop_watchdecoder_t *d);

#endif
