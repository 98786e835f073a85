/* watchdecoder.c — incremental JSON document splitter (see watchdecoder.h). */
#include "host/kube/watchdecoder.h"

#include "host/util/buf.h"

#include <stdint.h>
#include <stdlib.h>

/* Kubernetes' own JSON nesting limit (sigs.k8s.io/json): anything the API server stores must
 * pass, so that one deep object fails only its reconcile (the Lua codec's limit), never the watch
 * of its whole kind. */
#define MAX_NEST 10000

struct lop_watchdecoder {
    lop_doc_fn fn;
    void *ud;
    size_t max_doc;
    lop_buf_t buf;    /* bytes of a document begun in an earlier chunk */
    int depth;        /* 0 = between documents */
    bool in_str, esc, failed;
    char stack[MAX_NEST]; /* expected closers */
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
    d->depth = 0;
    d->in_str = d->esc = d->failed = false;
    d->offset = 0;
}

bool lop_watchdecoder_partial(const lop_watchdecoder_t *d) { return d->depth > 0; }

static lop_rc_t fail(lop_watchdecoder_t *d, lop_err_t *err, uint64_t at, const char *what)
{
    d->failed = true;
    return lop_err_set(err, LOP_EINVAL, 0, NULL, "watch stream: %s at byte %llu", what, (unsigned long long)at);
}

/* Bytes that end a run inside a string, and between tokens inside a document: everything else
 * is skipped a whole run at a time. */
static const unsigned char str_stop[256] = {['"'] = 1, ['\\'] = 1};
static const unsigned char tok_stop[256] = {['"'] = 1, ['{'] = 1, ['['] = 1, ['}'] = 1, [']'] = 1};

lop_rc_t lop_watchdecoder_feed(lop_watchdecoder_t *d, const char *data, size_t len, lop_err_t *err)
{
    if (d->failed)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "watch stream: decoder already failed");
    size_t start = 0; /* where the current document began in this chunk (if depth > 0) */
    for (size_t i = 0; i < len; i++) {
        char c = data[i];
        if (d->depth == 0) {
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
                continue;
            if (c != '{') {
                d->offset += i;
                return fail(d, err, d->offset, "expected '{' to start a document");
            }
            d->depth = 1;
            d->stack[0] = '}';
            start = i;
            lop_buf_reset(&d->buf);
            continue;
        }
        if (d->in_str) {
            if (d->esc) {
                d->esc = false;
                continue;
            }
            while (i < len && !str_stop[(unsigned char)data[i]])
                i++;
            if (i == len)
                break;
            if (data[i] == '\\')
                d->esc = true;
            else
                d->in_str = false;
        } else {
            while (i < len && !tok_stop[(unsigned char)data[i]])
                i++;
            if (i == len)
                break;
            c = data[i];
            uint64_t at = d->offset + i;
            if (c == '"') {
                d->in_str = true;
            } else if (c == '{' || c == '[') {
                if (d->depth >= MAX_NEST) {
                    d->offset += i;
                    return fail(d, err, at, "nesting too deep");
                }
                d->stack[d->depth++] = c == '{' ? '}' : ']';
            } else {
                if (d->stack[d->depth - 1] != c) {
                    d->offset += i;
                    return fail(d, err, at, "mismatched bracket");
                }
                if (--d->depth == 0) {
                    const char *doc;
                    size_t dlen;
                    if (d->buf.len) {
                        lop_buf_append(&d->buf, data + start, i + 1 - start);
                        doc = d->buf.data;
                        dlen = d->buf.len;
                    } else {
                        doc = data + start;
                        dlen = i + 1 - start;
                    }
                    if (dlen > d->max_doc) {
                        d->offset += i;
                        return fail(d, err, at, "document larger than the limit");
                    }
                    int stop = d->fn(d->ud, doc, dlen);
                    lop_buf_reset(&d->buf);
                    if (stop) {
                        d->offset += i + 1;
                        return LOP_ECLOSED;
                    }
                }
            }
        }
        if (d->depth > 0 && d->buf.len + (i + 1 - start) > d->max_doc) {
            d->offset += i;
            return fail(d, err, d->offset, "document larger than the limit");
        }
    }
    if (d->depth > 0) {
        if (d->buf.len + (len - start) > d->max_doc) {
            d->offset += len;
            return fail(d, err, d->offset, "document larger than the limit");
        }
        lop_buf_append(&d->buf, data + start, len - start);
    }
    d->offset += len;
    return LOP_OK;
}
