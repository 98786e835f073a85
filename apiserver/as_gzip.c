/* SPDX-License-Identifier: Apache-2.0 */
/* as_gzip.c — gzip of large responses (zlib; see as_gzip.h). */
#include "apiserver/as_gzip.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

bool as_accepts_gzip(const char *ae)
{
    for (const char *p = ae; p && *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        size_t n = strcspn(p, ",;");
        size_t t = n;
        while (t && (p[t - 1] == ' ' || p[t - 1] == '\t')) t--;
        bool gzip = t == 4 && !strncasecmp(p, "gzip", 4);
        const char *e = p + strcspn(p, ",");
        const char *qp = memchr(p, ';', (size_t)(e - p));
        bool zero = false;
        if (qp) { /* ";q=0" (or 0.0...) refuses it */
            const char *v = strstr(qp, "q=");
            if (v && v < e) zero = strtod(v + 2, NULL) <= 0;
        }
        if (gzip && !zero) return true;
        p = e;
    }
    return false;
}

/* Deflate every chunk of in into out as one gzip member; false when zlib fails. */
static bool deflate_buffer(struct evbuffer *in, struct evbuffer *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
    int n = evbuffer_peek(in, -1, NULL, NULL, 0);
    struct evbuffer_iovec *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
    evbuffer_peek(in, -1, NULL, v, n);
    unsigned char chunk[64 * 1024];
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        z.next_in = v[i].iov_base;
        z.avail_in = (uInt)v[i].iov_len;
        while (z.avail_in > 0 && ok) {
            z.next_out = chunk;
            z.avail_out = sizeof chunk;
            ok = deflate(&z, Z_NO_FLUSH) != Z_STREAM_ERROR;
            evbuffer_add(out, chunk, sizeof chunk - z.avail_out);
        }
    }
    int rc = Z_OK;
    while (ok && rc != Z_STREAM_END) {
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        rc = deflate(&z, Z_FINISH);
        ok = rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR;
        evbuffer_add(out, chunk, sizeof chunk - z.avail_out);
    }
    deflateEnd(&z);
    free(v);
    return ok;
}

void as_gzip_reply_body(as_req_t *q, struct evbuffer *body)
{
    if (evbuffer_get_length(body) <= AS_GZIP_THRESHOLD) return;
    if (!as_accepts_gzip(evhttp_find_header(evhttp_request_get_input_headers(q->r), "Accept-Encoding"))) return;
    struct evbuffer *out = evbuffer_new();
    if (!deflate_buffer(body, out)) {
        evbuffer_free(out);
        return;
    }
    evbuffer_drain(body, evbuffer_get_length(body));
    evbuffer_add_buffer(body, out);
    evbuffer_free(out);
    struct evkeyvalq *h = evhttp_request_get_output_headers(q->r);
    evhttp_add_header(h, "Content-Encoding", "gzip");
    evhttp_add_header(h, "Vary", "Accept-Encoding");
}
