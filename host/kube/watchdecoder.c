/* watchdecoder.c — incremental JSON document splitter (see watchdecoder.h). */
#include "host/kube/watchdecoder.h"

#include "host/kube/jsontrack.h"
#include "host/util/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct lop_watchdecoder {
    lop_doc_fn fn;
    void *ud;
    size_t max_doc;
    lop_buf_t buf;        /* bytes of a document begun in an earlier chunk */
    bool in_doc, failed;  /* in_doc: a tracked document has begun and not ended */
    lop_jtrack_t track;   /* strings and brackets of the document being tracked */
    uint64_t offset;      /* stream offset of the next byte fed */
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
    if (!d)
        return;
    lop_buf_free(&d->buf);
    free(d);
}

void lop_watchdecoder_reset(lop_watchdecoder_t *d)
{
    lop_buf_reset(&d->buf);
    d->in_doc = d->failed = false;
    d->offset = 0;
}

bool lop_watchdecoder_partial(const lop_watchdecoder_t *d) { return d->in_doc; }

static lop_rc_t fail(lop_watchdecoder_t *d, lop_err_t *err, uint64_t at, const char *what)
{
    d->failed = true;
    return lop_err_set(err, LOP_EINVAL, 0, NULL, "watch stream: %s at byte %llu", what, (unsigned long long)at);
}

lop_rc_t lop_watchdecoder_feed(lop_watchdecoder_t *d, const char *data, size_t len, lop_err_t *err)
{
    if (d->failed)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "watch stream: decoder already failed");
    size_t start = 0; /* where the current document began in this chunk (0 when earlier) */
    size_t i = 0;
    while (i < len) {
        if (!d->in_doc) {
            char c = data[i];
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
                i++;
                continue;
            }
            if (c != '{')
                return fail(d, err, d->offset + i, "expected '{' to start a document");
            d->in_doc = true;
            start = i;
            lop_buf_reset(&d->buf);
            /* The fast path, for a document that begins in this chunk and has a newline after
             * it here: cut it there and let the consumer validate it. Anything else (no newline
             * in this chunk, refused, longer than the limit) is tracked from its '{'. */
            const char *nl = memchr(data + i, '\n', len - i);
            if (nl && (size_t)(nl - data) - start <= d->max_doc) {
                size_t end = (size_t)(nl - data), dend = end;
                while (dend > start && (data[dend - 1] == ' ' || data[dend - 1] == '\r' || data[dend - 1] == '\t'))
                    dend--; /* the same bytes as a tracked document: "\r\n" ends some lines */
                int stop = d->fn(d->ud, data + start, dend - start, false);
                if (stop != LOP_DOC_RETRY) {
                    d->in_doc = false;
                    i = end + 1;
                    if (stop) {
                        d->offset += i;
                        return LOP_ECLOSED;
                    }
                    continue;
                }
            }
            lop_jtrack_begin(&d->track, '{');
            i++;
            continue;
        }
        bool done;
        const char *bad = lop_jtrack_scan(&d->track, data, len, &i, &done);
        if (bad)
            return fail(d, err, d->offset + i, bad);
        if (d->buf.len + (i - start) > d->max_doc)
            return fail(d, err, d->offset + i, "document larger than the limit");
        if (!done)
            break;
        size_t dlen;
        const char *doc = lop_buf_join(&d->buf, data + start, i - start, &dlen);
        d->in_doc = false;
        int stop = d->fn(d->ud, doc, dlen, true);
        lop_buf_reset(&d->buf);
        if (stop) {
            d->offset += i;
            return LOP_ECLOSED;
        }
    }
    if (d->in_doc)
        lop_buf_append(&d->buf, data + start, len - start);
    d->offset += len;
    return LOP_OK;
}
