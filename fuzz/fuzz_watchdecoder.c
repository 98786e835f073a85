/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: host/kube/cache/watchdecoder, differentially. The same stream is fed three
 * ways — whole, one byte per call, and in pieces whose sizes come from the input's own bytes —
 * with a consumer that validates each unchecked document with jansson as the reflector does
 * (LOP_DOC_RETRY when it is not one whole JSON object). The decoder promises that chunk
 * boundaries mean nothing (watchdecoder.h), so the three must deliver the same documents, in the
 * same order, and agree on whether the stream failed; any difference aborts.
 */
#include "fuzz.h"
#include "host/kube/cache/watchdecoder.h"

#include <jansson.h>

typedef struct docs {
    char *bytes; /* the accepted documents, each followed by a NUL */
    size_t len, cap;
    size_t count;
} docs_t;

static int on_doc(void *ud, const char *doc, size_t len, bool checked)
{
    docs_t *d = ud;
    json_error_t e;
    json_t *v = json_loadb(doc, len, JSON_DISABLE_EOF_CHECK, &e);
    bool one_object = v && json_is_object(v);
    if (v) {
        /* JSON_DISABLE_EOF_CHECK stops after the value: only whitespace may follow it */
        for (size_t i = e.position; i < len; i++)
            if (doc[i] != ' ' && doc[i] != '\t' && doc[i] != '\r' && doc[i] != '\n') one_object = false;
        json_decref(v);
    }
    if (!one_object)
        return checked ? 0 : LOP_DOC_RETRY; /* a checked non-object is skipped, as the reflector's decode error */
    if (d->len + len + 1 > d->cap) {
        d->cap = (d->len + len + 1) * 2;
        if (!(d->bytes = realloc(d->bytes, d->cap))) abort();
    }
    memcpy(d->bytes + d->len, doc, len);
    d->len += len;
    d->bytes[d->len++] = '\0';
    d->count++;
    return 0;
}

/* Feeds data in pieces of the sizes step() gives, then finishes; returns whether it failed. */
static bool run(const uint8_t *data, size_t size, size_t (*step)(const uint8_t *, size_t, size_t), docs_t *out)
{
    lop_watchdecoder_t *dec = lop_watchdecoder_new(1 << 20, on_doc, out);
    lop_err_t err;
    bool failed = false;
    for (size_t at = 0; at < size && !failed;) {
        size_t n = step(data, size, at);
        if (n == 0 || n > size - at) n = size - at;
        /* each piece in its own exact-size buffer: a read past a chunk is caught */
        char *piece = malloc(n);
        if (!piece) abort();
        memcpy(piece, data + at, n);
        failed = lop_watchdecoder_feed(dec, piece, n, &err) != LOP_OK;
        free(piece);
        at += n;
    }
    if (!failed) failed = lop_watchdecoder_finish(dec, &err) != LOP_OK;
    lop_watchdecoder_free(dec);
    return failed;
}

static size_t whole(const uint8_t *d, size_t size, size_t at) { return size - at; }
static size_t bytewise(const uint8_t *d, size_t size, size_t at) { return 1; }
static size_t by_input(const uint8_t *d, size_t size, size_t at) { return 1 + d[at] % 17; }

static void same(const docs_t *a, const docs_t *b, bool fa, bool fb)
{
    if (fa != fb) abort();
    /* a failed stream may stop at different documents (errors are found at the newline or the
     * end, watchdecoder.h), so only a stream that did not fail must match document for document */
    if (!fa && (a->count != b->count || a->len != b->len || (a->len && memcmp(a->bytes, b->bytes, a->len) != 0)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    docs_t w = {0}, b = {0}, p = {0};
    bool fw = run(data, size, whole, &w);
    bool fb = run(data, size, bytewise, &b);
    bool fp = run(data, size, by_input, &p);
    same(&w, &b, fw, fb);
    same(&w, &p, fw, fp);
    free(w.bytes);
    free(b.bytes);
    free(p.bytes);
    return 0;
}
