/* SPDX-License-Identifier: Apache-2.0 */
/* transport_head.c — reading a response head line by line, and splitting it into headers
 * (see transport_impl.h). Pure: no libcurl, no locks. */
#include "host/kube/client/transport_impl.h"

#include <string.h>

/* The status of an "HTTP/<version> <3 digits>[ <reason>]" line of l bytes; 0 when malformed. */
static int status_code(const char *p, size_t l)
{
    const char *sp = memchr(p, ' ', l), *end = p + l;
    if (!sp || end - sp < 4) return 0;
    int code = 0;
    for (int i = 1; i <= 3; i++) {
        if (sp[i] < '0' || sp[i] > '9') return 0;
        code = code * 10 + (sp[i] - '0');
    }
    return end - sp == 4 || sp[4] == ' ' ? code : 0;
}

lop_tr_head_rc_t lop_tr_head_line(lop_buf_t *head, int *code, const char *p, size_t len)
{
    size_t l = len;
    while (l && (p[l - 1] == '\n' || p[l - 1] == '\r')) l--;
    if (len > 5 && memcmp(p, "HTTP/", 5) == 0) { /* a new response: an interim one's lines go */
        *code = status_code(p, l);
        lop_buf_reset(head);
        return LOP_TR_HEAD_MORE;
    }
    if (l == 0) return *code >= 200 || *code == 101 ? LOP_TR_HEAD_DONE : LOP_TR_HEAD_MORE;
    if (head->len + l > LOP_TR_HEAD_MAX) return LOP_TR_HEAD_TOO_BIG;
    lop_buf_append(head, p, l);
    lop_buf_putc(head, '\n');
    return LOP_TR_HEAD_MORE;
}

void lop_tr_head_each(const char *data, size_t len, lop_tr_header_fn fn, void *ud)
{
    if (!data) return;
    for (const char *p = data, *end = data + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        const char *colon = memchr(p, ':', (size_t)(nl - p));
        if (colon && colon > p) {
            const char *v = colon + 1, *ve = nl;
            while (v < ve && (*v == ' ' || *v == '\t')) v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
            fn(ud, p, (size_t)(colon - p), v, (size_t)(ve - v));
        }
        p = nl + 1;
    }
}
