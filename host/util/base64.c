/* SPDX-License-Identifier: Apache-2.0 */
/* base64.c — RFC 4648 base64 encode/decode, standard and URL alphabets (see base64.h). Pure
 * functions, any thread. Upstream: Go's encoding/base64, as Kubernetes encodes []byte fields. */
#include "host/util/base64.h"

#include "host/util/buf.h"

#include <stdlib.h>
#include <string.h>

static const char std_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

char *lop_base64_encode(const void *data, size_t n, bool url)
{
    const unsigned char *p = data;
    const char *a = url ? url_alpha : std_alpha;
    char *out = lop_xmalloc((n + 2) / 3 * 4 + 1);
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        out[o++] = a[v >> 18];
        out[o++] = a[(v >> 12) & 63];
        out[o++] = a[(v >> 6) & 63];
        out[o++] = a[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0);
        out[o++] = a[v >> 18];
        out[o++] = a[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = a[(v >> 6) & 63];
        else if (!url)
            out[o++] = '=';
        if (!url) out[o++] = '=';
    }
    out[o] = '\0';
    return out;
}

static int sextet(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

char *lop_base64_decode(const char *in, size_t *len)
{
    size_t n = strlen(in);
    char *out = lop_xmalloc(n / 4 * 3 + 4);
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0, pad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = sextet(c);
        if (v < 0 || pad) {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    if (bits >= 6 || pad > 2) { /* a dangling single sextet is not valid base64 */
        free(out);
        return NULL;
    }
    out[o] = '\0';
    if (len) *len = o;
    return out;
}
