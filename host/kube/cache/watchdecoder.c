/* SPDX-License-Identifier: Apache-2.0 */
/* watchdecoder.c — incremental JSON document splitter (see watchdecoder.h). */
#include "host/kube/cache/watchdecoder.h"

#include "host/codec/jsonsimd.h"
#include "host/codec/jsontrack.h"
#include "host/util/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What the decoder is in the middle of between chunks. */
typedef enum {
    DOC_NONE,    /* between documents */
    DOC_HELD,    /* a document's bytes so far are in buf, untracked, waiting for its newline */
    DOC_TRACKED, /* a document's bytes so far are in buf, tracked by track */
} doc_state_t;

struct lop_watchdecoder {
    lop_doc_fn fn;
    void *ud;
    size_t max_doc;
    doc_state_t state;
    bool failed;
    lop_buf_t buf;      /* bytes of a document begun in an earlier chunk (no newline when held) */
    lop_buf_t replay;   /* a held document's bytes while they are tracked after all */
    lop_jtrack_t track; /* strings and brackets of the document being tracked */
    uint64_t held_at;   /* stream offset of the held document's '{' */
    uint64_t offset;    /* stream offset of the next byte fed */
};

lop_watchdecoder_t *lop_watchdecoder_new(size_t max_doc, lop_doc_fn fn, void *ud)
{
    lop_watchdecoder_t *d = lop_xcalloc(1, sizeof *d);
    d->fn = fn;
    d->ud = ud;
    d->max_doc = max_doc ? max_doc : (size_t)64 << 20;
    return d;
}

void lop_watchdecoder_free(lop_watchdecoder_t *d)
{
    if (!d) return;
    lop_buf_free(&d->buf);
    lop_buf_free(&d->replay);
    free(d);
}

void lop_watchdecoder_reset(lop_watchdecoder_t *d)
{
    lop_buf_reset(&d->buf);
    d->state = DOC_NONE;
    d->failed = false;
    d->offset = 0;
}

bool lop_watchdecoder_partial(const lop_watchdecoder_t *d) { return d->state != DOC_NONE; }

static lop_rc_t fail(lop_watchdecoder_t *d, lop_err_t *err, uint64_t at, const char *what)
{
    d->failed = true;
    return lop_err_set(err, LOP_EINVAL, 0, NULL, "watch stream: %s at byte %llu", what, (unsigned long long)at);
}

static bool blank(char c) { return c == ' ' || c == '\r' || c == '\t'; }

/*
 * Whether a top-level document may end in p[0..n) (bytes of a document, with no newline): some
 * '}' is followed, past blanks, by the end of p or by a byte that cannot follow a '}' inside a
 * value (',', '}', ']') nor commonly inside a string ('"' ends "a{b}", '\\' the "}\n" of a
 * last-applied-configuration annotation). A '}' inside a string followed by anything else only
 * costs a tracking pass.
 */
static bool may_end(const char *p, size_t n)
{
    size_t i = lop_jsimd_close_end(p, n, 0);
    while (i < n) {
        for (i++; i < n && blank(p[i]); i++)
            ;
        if (i == n || !lop_jsimd_after_close(p[i])) return true;
        i = lop_jsimd_close_end(p, n, i);
    }
    return false;
}

/*
 * Split data[i..len) (state DOC_NONE or DOC_TRACKED; d->offset is the stream offset of data[0]).
 * may_hold: a document with no newline after it here may be held untracked (false when data are
 * a held document's own bytes, being tracked after all).
 */
static lop_rc_t split(lop_watchdecoder_t *d, const char *data, size_t len, size_t i, bool may_hold, lop_err_t *err)
{
    size_t start = 0; /* where the current document began in data (0 when earlier) */
    while (i < len) {
        if (d->state == DOC_NONE) {
            char c = data[i];
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
                i++;
                continue;
            }
            if (c != '{') return fail(d, err, d->offset + i, "expected '{' to start a document");
            start = i;
            lop_buf_reset(&d->buf);
            /* The fast path, for a document that begins in this chunk and has a newline after
             * it here: cut it there and let the consumer validate it. */
            const char *nl = memchr(data + i, '\n', len - i);
            if (nl && (size_t)(nl - data) - start <= d->max_doc) {
                size_t end = (size_t)(nl - data), dend = end;
                while (dend > start && blank(data[dend - 1]))
                    dend--; /* the same bytes as a tracked document: "\r\n" ends some lines */
                int stop = d->fn(d->ud, data + start, dend - start, false);
                if (stop != LOP_DOC_RETRY) {
                    i = end + 1;
                    if (stop) {
                        d->offset += len;
                        return LOP_ECLOSED;
                    }
                    continue;
                }
            } else if (!nl && may_hold && len - start <= d->max_doc && !may_end(data + start, len - start)) {
                /* no newline here, and it cannot have ended yet: hold it for its newline */
                lop_buf_append(&d->buf, data + start, len - start);
                d->held_at = d->offset + start;
                d->state = DOC_HELD;
                d->offset += len;
                return LOP_OK;
            }
            /* refused, longer than the limit, or it may end in this chunk: track it */
            d->state = DOC_TRACKED;
            lop_jtrack_begin(&d->track, '{');
            i++;
            continue;
        }
        bool done;
        const char *bad = lop_jtrack_scan(&d->track, data, len, &i, &done);
        if (bad) return fail(d, err, d->offset + i, bad);
        if (d->buf.len + (i - start) > d->max_doc) return fail(d, err, d->offset + i, "document larger than the limit");
        if (!done) break;
        size_t dlen;
        const char *doc = lop_buf_join(&d->buf, data + start, i - start, &dlen);
        d->state = DOC_NONE;
        int stop = d->fn(d->ud, doc, dlen, true);
        lop_buf_reset(&d->buf);
        if (stop) {
            d->offset += len;
            return LOP_ECLOSED;
        }
    }
    if (d->state == DOC_TRACKED) lop_buf_append(&d->buf, data + start, len - start);
    d->offset += len;
    return LOP_OK;
}

/*
 * Track the held document after all, from its '{' over its first n held bytes (the rest of buf,
 * if any, is a refused line's tail from the chunk being fed). Documents that end there are
 * delivered; one that does not is left tracked in buf. d->offset is restored on LOP_OK.
 */
static lop_rc_t track_held(lop_watchdecoder_t *d, size_t n, lop_err_t *err)
{
    lop_buf_t t = d->replay;
    d->replay = d->buf;
    d->buf = t;
    lop_buf_reset(&d->buf);
    uint64_t next = d->offset;
    d->offset = d->held_at;
    d->state = DOC_NONE;
    lop_rc_t rc = split(d, d->replay.data, n, 0, false, err);
    d->offset = next;
    /* the held bytes are split (a tracked remainder was copied to buf): keep a small buffer for
     * the next fallback, not one as large as the largest event ever held */
    if (d->replay.cap > (64u << 10))
        lop_buf_free(&d->replay);
    else
        lop_buf_reset(&d->replay);
    return rc;
}

lop_rc_t lop_watchdecoder_feed(lop_watchdecoder_t *d, const char *data, size_t len, lop_err_t *err)
{
    if (d->failed) return lop_err_set(err, LOP_EINVAL, 0, NULL, "watch stream: decoder already failed");
    if (d->state != DOC_HELD) return split(d, data, len, 0, true, err);
    if (!len) return LOP_OK;
    size_t held = d->buf.len;
    const char *nl = memchr(data, '\n', len);
    size_t upto = nl ? (size_t)(nl - data) : len;
    if (held + upto <= d->max_doc) {
        if (nl) {
            /* its line is complete: handed over unchecked, as the fast path does */
            size_t dlen;
            const char *doc = lop_buf_join(&d->buf, data, upto, &dlen);
            while (dlen > 1 && blank(doc[dlen - 1])) dlen--;
            int stop = d->fn(d->ud, doc, dlen, false);
            if (stop != LOP_DOC_RETRY) {
                d->state = DOC_NONE;
                lop_buf_reset(&d->buf);
                if (stop) {
                    d->offset += len;
                    return LOP_ECLOSED;
                }
                return split(d, data, len, upto + 1, true, err);
            }
        } else if (!may_end(data, len)) {
            lop_buf_append(&d->buf, data, len);
            d->offset += len;
            return LOP_OK;
        }
    }
    /* refused, longer than the limit, or it may end in this chunk: track it from its '{' over
     * the held bytes, then on through this chunk */
    lop_rc_t rc = track_held(d, held, err);
    if (rc == LOP_ECLOSED) d->offset += len;
    if (rc != LOP_OK) return rc;
    return split(d, data, len, 0, true, err);
}

lop_rc_t lop_watchdecoder_finish(lop_watchdecoder_t *d, lop_err_t *err)
{
    if (d->failed) return lop_err_set(err, LOP_EINVAL, 0, NULL, "watch stream: decoder already failed");
    if (d->state != DOC_HELD) return LOP_OK;
    return track_held(d, d->buf.len, err);
}
