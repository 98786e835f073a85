/* transport_read.c — reading a response: status line, headers, framing (Content-Length, chunked,
 * until close), gzip (see transport.h). */
#include "host/kube/client/transport_impl.h"

#include "host/util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

size_t lop_tr_head_end(const char *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (p[i] == '\n' && (p[i + 1] == '\n' || (p[i + 1] == '\r' && i + 2 < n && p[i + 2] == '\n')))
            return i + (p[i + 1] == '\n' ? 2 : 3);
    return 0;
}

/* Whether p[0, n) holds the start of a final answer (a status line >= 200 or 101, or one that is
 * not a status line at all) after any complete interim (1xx) responses. */
bool lop_tr_final_answer(const char *p, size_t n)
{
    for (size_t pos = 0; pos < n;) {
        const char *nl = memchr(p + pos, '\n', n - pos);
        if (!nl) return false;
        const char *l = p + pos;
        if ((size_t)(nl - l) < 12 || memcmp(l, "HTTP/1.", 7) != 0 || l[9] != '1' || (l[10] == '0' && l[11] == '1'))
            return true;
        size_t e = lop_tr_head_end(l, n - pos); /* an interim response: skip it once complete */
        if (!e) return false;
        pos += e;
    }
    return false;
}

static bool token_has(const char *v, size_t vl, const char *tok)
{
    size_t tl = strlen(tok);
    for (size_t i = 0; i + tl <= vl; i++)
        if (strncasecmp(v + i, tok, tl) == 0 && (i == 0 || v[i - 1] == ' ' || v[i - 1] == ',') &&
            (i + tl == vl || v[i + tl] == ' ' || v[i + tl] == ',' || v[i + tl] == ';'))
            return true;
    return false;
}

static bool value_is(const char *v, size_t vl, const char *word)
{
    return vl == strlen(word) && strncasecmp(v, word, vl) == 0;
}

/* One header line of the final response (not NUL-terminated, no CR/LF). */
static int header_line(io_t *io, resp_t *r, const char *p, size_t n)
{
    char ex[48];
    const char *colon = memchr(p, ':', n);
    size_t kl = colon ? (size_t)(colon - p) : 0;
    /* no name, whitespace in or before the name (also an obsolete folded line): refused, as Go's
     * reader does, since two parsers reading such a block differently is how responses split */
    if (!kl || memchr(p, ' ', kl) || memchr(p, '\t', kl))
        return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: bad header line \"%s\"", io->t->host_port,
                            lop_tr_excerpt(ex, sizeof ex, p, n));
    const char *v = colon + 1;
    size_t vl = n - kl - 1;
    while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
    if (kl == 14 && strncasecmp(p, "Content-Length", 14) == 0) {
        uint64_t len = 0;
        size_t i = 0;
        for (; i < vl && v[i] >= '0' && v[i] <= '9' && len < (UINT64_MAX - 9) / 10; i++)
            len = len * 10 + (uint64_t)(v[i] - '0');
        if (i == 0 || i != vl || (r->have_length && r->left != len))
            return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: bad Content-Length", io->t->host_port);
        r->have_length = true;
        r->left = len;
    } else if (kl == 17 && strncasecmp(p, "Transfer-Encoding", 17) == 0) {
        /* only "chunked" alone: with another coding the body would not be what it claims */
        if (r->chunked || !value_is(v, vl, "chunked"))
            return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: unsupported Transfer-Encoding \"%s\"",
                                io->t->host_port, lop_tr_excerpt(ex, sizeof ex, v, vl));
        r->chunked = true;
    } else if (kl == 16 && strncasecmp(p, "Content-Encoding", 16) == 0 && io->x->gzip) {
        if (value_is(v, vl, "gzip") || value_is(v, vl, "x-gzip"))
            r->coding = 16 + MAX_WBITS;
        else if (value_is(v, vl, "deflate"))
            r->coding = 32 + MAX_WBITS;
        else if (vl == 0 || value_is(v, vl, "identity"))
            r->coding = 0;
        else
            return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: unsupported Content-Encoding \"%s\"",
                                io->t->host_port, lop_tr_excerpt(ex, sizeof ex, v, vl));
    } else if (kl == 10 && strncasecmp(p, "Connection", 10) == 0) {
        if (token_has(v, vl, "close")) r->close = true;
        if (token_has(v, vl, "keep-alive")) r->keep_alive = true;
    }
    if (io->x->on_header) io->x->on_header(io->x->ud, p, kl, v, vl);
    return 0;
}

#define INTERIM_MAX 5 /* 1xx responses before the final one (Go allows 5) */

/* Read the status line and headers, skipping 1xx responses. The whole header block, interim
 * responses included, is bounded by HEADER_MAX bytes. */
int lop_tr_read_head(io_t *io, conn_t *cn, resp_t *r)
{
    size_t pos = r->start; /* next byte not yet searched for '\n' */
    size_t total = 0;      /* header bytes taken so far */
    int interim = 0;
    bool status = true;
    char ex[48];
    for (;;) {
        char *nl = memchr(r->buf + pos, '\n', r->end - pos);
        if (!nl) {
            if (total + (r->end - r->start) >= HEADER_MAX)
                return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: header block over %d bytes",
                                    io->t->host_port, HEADER_MAX);
            pos = r->end;
            if (r->end == r->cap) {
                size_t keep = r->end - r->start;
                memmove(r->buf, r->buf + r->start, keep);
                pos -= r->start;
                r->start = 0;
                r->end = keep;
                if (r->end == r->cap) { /* a header line larger than the buffer */
                    r->cap *= 2;
                    r->buf = lop_xrealloc(r->buf, r->cap);
                }
            }
            ssize_t n = lop_tr_conn_read(io, cn, r->buf + r->end, r->cap - r->end);
            if (n < 0) return -1;
            if (n == 0)
                return lop_tr_failf(io, LOP_HTTP_ERESET, "%s closed the connection %s", io->t->host_port,
                                    io->x->response_started ? "in the middle of the response headers"
                                                            : "before responding");
            io->x->response_started = true;
            r->end += (size_t)n;
            continue;
        }
        char *line = r->buf + r->start;
        size_t len = (size_t)(nl - line);
        total += len + 1;
        if (total > HEADER_MAX)
            return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: header block over %d bytes", io->t->host_port,
                                HEADER_MAX);
        if (len && line[len - 1] == '\r') len--;
        pos = r->start = (size_t)(nl - r->buf) + 1;
        if (status) {
            if (len < 12 || memcmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
                line[9] < '1' || line[9] > '9' || line[10] < '0' || line[10] > '9' || line[11] < '0' ||
                line[11] > '9' || (len > 12 && line[12] != ' '))
                return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s is not HTTP/1.x: \"%s\"", io->t->host_port,
                                    lop_tr_excerpt(ex, sizeof ex, line, len));
            r->code = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
            r->http10 = line[7] == '0';
            status = false;
            if (r->code < 200 && r->code != 101) {
                if (++interim > INTERIM_MAX)
                    return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: more than %d interim (1xx) responses",
                                        io->t->host_port, INTERIM_MAX);
            } else {
                io->x->code = r->code;
                if (io->x->on_status) io->x->on_status(io->x->ud, r->code);
            }
            continue;
        }
        bool final = r->code >= 200 || r->code == 101;
        if (len == 0) {
            if (!final) { /* an interim response (100, 103): the real one follows */
                status = true;
                continue;
            }
            return 0;
        }
        if (final && header_line(io, r, line, len) < 0) return -1;
    }
}

/* Pass decoded body bytes on (through zlib when the body is encoded). */
static int deliver(io_t *io, resp_t *r, const char *p, size_t n)
{
    lop_http_exchange_t *x = io->x;
    if (!n) return 0;
    if (!r->coding) { /* in pieces of read_bytes: the first read (with the headers) may hold more */
        for (size_t k; n; p += k, n -= k) {
            k = n < r->read_bytes ? n : r->read_bytes;
            if (x->on_body && x->on_body(x->ud, p, k))
                return lop_tr_failf(io, LOP_HTTP_ESTOPPED, "response from %s: stopped by the consumer",
                                    io->t->host_port);
        }
        return 0;
    }
    if (!r->z_on) {
        if (inflateInit2(&r->z, r->coding) != Z_OK)
            return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: zlib cannot start", io->t->host_port);
        r->z_on = true;
        r->zout = lop_xmalloc(r->read_bytes);
    }
    r->z.next_in = (Bytef *)p;
    r->z.avail_in = (uInt)n;
    while (r->z.avail_in) {
        if (r->z_end) { /* another gzip member follows */
            inflateReset(&r->z);
            r->z_end = false;
        }
        r->z.next_out = (Bytef *)r->zout;
        r->z.avail_out = (uInt)r->read_bytes;
        int zr = inflate(&r->z, Z_NO_FLUSH);
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
            return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: bad compressed body: %s", io->t->host_port,
                                r->z.msg ? r->z.msg : "zlib error");
        if (zr == Z_STREAM_END) r->z_end = true;
        size_t got = r->read_bytes - r->z.avail_out;
        if (got && x->on_body && x->on_body(x->ud, r->zout, got))
            return lop_tr_failf(io, LOP_HTTP_ESTOPPED, "response from %s: stopped by the consumer", io->t->host_port);
        if (zr == Z_BUF_ERROR && !got) break;
    }
    return 0;
}

/* Decode the framing of the bytes in buf[start, end), moving the body bytes down to buf[start, *w).
 * Leaves start at the first unparsed byte. Returns 1 when the body is complete, 0 for more, -1. */
static int unframe(io_t *io, resp_t *r, size_t *w)
{
    char *b = r->buf;
    size_t i = r->start, o = r->start;
    while (i < r->end) {
        if (r->mode == BODY_EOF) {
            memmove(b + o, b + i, r->end - i);
            o += r->end - i;
            i = r->end;
        } else if (r->mode == BODY_LENGTH || r->ck == CK_DATA) {
            size_t n = r->end - i;
            if (n > r->left) n = (size_t)r->left;
            if (o != i) memmove(b + o, b + i, n);
            o += n;
            i += n;
            r->left -= n;
            if (r->left) continue;
            if (r->mode == BODY_LENGTH) {
                r->start = i;
                *w = o;
                return 1;
            }
            r->ck = CK_DATA_END;
        } else {
            char *nl = memchr(b + i, '\n', r->end - i);
            if (!nl) {
                if (r->end - i > 4096)
                    return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: bad chunked framing", io->t->host_port);
                break; /* the line's end is in the next read */
            }
            const char *line = b + i;
            size_t len = (size_t)(nl - line);
            if (len && line[len - 1] == '\r') len--;
            i = (size_t)(nl - b) + 1;
            if (r->ck == CK_DATA_END) {
                if (len)
                    return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: chunk longer than its size",
                                        io->t->host_port);
                r->ck = CK_SIZE;
            } else if (r->ck == CK_SIZE) {
                uint64_t size = 0;
                size_t k = 0;
                for (; k < len; k++) {
                    int d = line[k] >= '0' && line[k] <= '9'                     ? line[k] - '0'
                            : (line[k] | 0x20) >= 'a' && (line[k] | 0x20) <= 'f' ? (line[k] | 0x20) - 'a' + 10
                                                                                 : -1;
                    if (d < 0) break;
                    if (size >> 58)
                        return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: chunk size too large",
                                            io->t->host_port);
                    size = size * 16 + (uint64_t)d;
                }
                size_t d0 = k;
                while (k < len && (line[k] == ' ' || line[k] == '\t')) k++; /* then only an extension */
                if (d0 == 0 || (k < len && line[k] != ';'))
                    return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: bad chunk size line", io->t->host_port);
                if (size == 0)
                    r->ck = CK_TRAILER;
                else
                    r->ck = CK_DATA, r->left = size;
            } else { /* CK_TRAILER: fields until an empty line */
                if (len == 0) {
                    r->ck = CK_DONE;
                    r->start = i;
                    *w = o;
                    return 1;
                }
            }
        }
    }
    r->start = i;
    *w = o;
    return 0;
}

int lop_tr_read_body(io_t *io, conn_t *cn, resp_t *r)
{
    for (;;) {
        size_t from = r->start, w = from;
        int done = r->start < r->end ? unframe(io, r, &w) : 0;
        if (done < 0) return -1;
        if (deliver(io, r, r->buf + from, w - from) < 0) return -1;
        if (done) break;
        /* keep what is left (a partial chunk-size line) at the front, read more after it */
        size_t keep = r->end - r->start;
        memmove(r->buf, r->buf + r->start, keep);
        r->start = 0;
        r->end = keep;
        size_t room = r->cap - r->end;
        if (room > r->read_bytes) room = r->read_bytes;
        if (!room) return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: bad chunked framing", io->t->host_port);
        if (io->x->on_tick && io->x->on_tick(io->x->ud))
            return lop_tr_failf(io, LOP_HTTP_EABORTED, "reading the response from %s: aborted", io->t->host_port);
        if (io->deadline && lop_tr_now_ns() >= io->deadline) /* also while the data never stops */
            return lop_tr_failf(io, LOP_HTTP_ETIMEDOUT, "reading the response from %s: timed out after %ld ms",
                                io->t->host_port, io->timeout_ms);
        ssize_t n = lop_tr_conn_read(io, cn, r->buf + r->end, room);
        if (n < 0) return -1;
        if (n == 0) {
            if (r->mode == BODY_EOF) break;
            return lop_tr_failf(io, LOP_HTTP_ERESET, "%s closed the connection before the end of the body",
                                io->t->host_port);
        }
        r->end += (size_t)n;
    }
    if (r->z_on && !r->z_end)
        return lop_tr_failf(io, LOP_HTTP_EPROTO, "response from %s: the compressed body is truncated",
                            io->t->host_port);
    return 0;
}
