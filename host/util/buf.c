/* SPDX-License-Identifier: Apache-2.0 */
/* buf.c — the growable NUL-terminated byte buffer, the aborting allocators (lop_x*), and JSON
 * string escaping with UTF-8 checking (see buf.h). No shared state; a buffer has one owner thread
 * at a time. No upstream counterpart. */
#include "host/util/buf.h"

#include "host/util/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
    fprintf(stderr, "luaop: out of memory allocating %zu bytes\n", n);
    abort();
}

void *lop_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *lop_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) oom(n * size);
    return p;
}

void *lop_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *lop_xstrdup(const char *s) { return lop_xstrndup(s, strlen(s)); }

char *lop_xstrndup(const char *s, size_t n)
{
    char *p = lop_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void lop_buf_init(lop_buf_t *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
}

void lop_buf_free(lop_buf_t *b)
{
    free(b->data);
    lop_buf_init(b);
}

void lop_buf_reset(lop_buf_t *b)
{
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

void lop_buf_reserve(lop_buf_t *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    b->data = lop_xrealloc(b->data, cap);
    b->cap = cap;
}

void lop_buf_reserve_exact(lop_buf_t *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return;
    b->data = lop_xrealloc(b->data, need);
    b->cap = need;
}

const char *lop_buf_join(lop_buf_t *b, const char *p, size_t n, size_t *len)
{
    if (!b->len) {
        *len = n;
        return p;
    }
    lop_buf_append(b, p, n);
    *len = b->len;
    return b->data;
}

void lop_buf_append(lop_buf_t *b, const void *p, size_t n)
{
    lop_buf_reserve(b, n);
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void lop_buf_puts(lop_buf_t *b, const char *s) { lop_buf_append(b, s, strlen(s)); }

void lop_buf_putc(lop_buf_t *b, char c)
{
    lop_buf_reserve(b, 1);
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

void lop_buf_vprintf(lop_buf_t *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return;
    lop_buf_reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void lop_buf_printf(lop_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lop_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

size_t lop_json_str_len(const char *s, size_t n)
{
    size_t len = n + 2;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        len += lop_json_escape_len(c) - 1;
    }
    return len;
}

char *lop_json_str_write(char *dst, const char *s, size_t n)
{
    *dst++ = '"';
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        memcpy(dst, s + run, i - run);
        dst = lop_json_escape_byte(dst + (i - run), c);
        run = i + 1;
    }
    memcpy(dst, s + run, n - run);
    dst += n - run;
    *dst++ = '"';
    return dst;
}

void lop_buf_json_str(lop_buf_t *b, const char *s, size_t n)
{
    size_t need = lop_json_str_len(s, n);
    lop_buf_reserve(b, need);
    b->len = (size_t)(lop_json_str_write(b->data + b->len, s, n) - b->data);
    b->data[b->len] = '\0';
}

void lop_buf_consume(lop_buf_t *b, size_t n)
{
    if (n >= b->len) {
        lop_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

char *lop_buf_steal(lop_buf_t *b)
{
    char *p = b->data ? b->data : lop_xstrdup("");
    lop_buf_init(b);
    return p;
}

void lop_buf_utf8(lop_buf_t *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0;
    while (i < n) {
        size_t l = lop_utf8_decode(p + i, n - i, NULL);
        if (l) {
            i += l;
            continue;
        }
        lop_buf_append(b, s + run, i - run);
        lop_buf_append(b, "\xEF\xBF\xBD", 3);
        i++;
        run = i;
    }
    lop_buf_append(b, s + run, n - run);
}

char *lop_file_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    lop_buf_t b = LOP_BUF_INIT;
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) lop_buf_append(&b, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        lop_buf_free(&b);
        errno = EIO;
        return NULL;
    }
    if (!b.data) lop_buf_reserve(&b, 0);
    if (len) *len = b.len;
    return lop_buf_steal(&b);
}
