/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf.h — a growable byte buffer (always NUL-terminated, so data can be used as a C string).
 *
 * Ownership: the lop_buf_t owns data; lop_buf_free releases it; lop_buf_steal hands it to the
 * caller (free with free()). Thread-safety: none; one owner at a time.
 * Allocation failure aborts the process (as Redis's zmalloc does): every caller would otherwise
 * need a path it can never test, and an operator out of memory cannot make progress anyway.
 */
#ifndef LOP_UTIL_BUF_H
#define LOP_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct lop_buf {
    char *data; /* NUL-terminated; NULL until the first append */
    size_t len; /* bytes used, excluding the terminating NUL */
    size_t cap; /* bytes allocated */
} lop_buf_t;

#define LOP_BUF_INIT \
    {                \
        NULL, 0, 0   \
    }

void lop_buf_init(lop_buf_t *b);
void lop_buf_free(lop_buf_t *b);
void lop_buf_reset(lop_buf_t *b); /* len = 0, keeps the allocation */
/* Exchange the contents (data, len, capacity) of a and b. */
static inline void lop_buf_swap(lop_buf_t *a, lop_buf_t *b)
{
    lop_buf_t tmp = *a;
    *a = *b;
    *b = tmp;
}
void lop_buf_reserve(lop_buf_t *b, size_t extra); /* ensure room for extra more bytes + NUL */
/* Like lop_buf_reserve, but when it must grow it allocates exactly len + extra + 1 bytes (no
 * power-of-two slack): for buffers whose final size is known up front and that are kept (stolen)
 * afterwards, e.g. cache entries, where the slack would be resident for the entry's lifetime. */
void lop_buf_reserve_exact(lop_buf_t *b, size_t extra);
void lop_buf_append(lop_buf_t *b, const void *p, size_t n);
void lop_buf_puts(lop_buf_t *b, const char *s);
void lop_buf_putc(lop_buf_t *b, char c);
void lop_buf_printf(lop_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lop_buf_vprintf(lop_buf_t *b, const char *fmt, va_list ap);
/* Append s as a JSON string literal, quotes included, escaping as RFC 8259 requires. */
void lop_buf_json_str(lop_buf_t *b, const char *s, size_t n);
/* The number of bytes lop_buf_json_str(b, s, n) appends. */
size_t lop_json_str_len(const char *s, size_t n);
/* One byte a JSON string must escape (c < 0x20, '"' or '\\'): its escape's length (2 for the
 * short forms \" \\ \n \r \t \b \f of RFC 8259, else 6 for \u00XX), and the escape written
 * to dst (returns dst advanced past it). Shared by lop_json_str_write and the Lua codec. */
static inline size_t lop_json_escape_len(unsigned char c)
{
    return c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f' ? 2 : 6;
}

static inline char *lop_json_escape_byte(char *dst, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    char e = c == '"'    ? '"'
             : c == '\\' ? '\\'
             : c == '\n' ? 'n'
             : c == '\r' ? 'r'
             : c == '\t' ? 't'
             : c == '\b' ? 'b'
             : c == '\f' ? 'f'
                         : 0;
    *dst++ = '\\';
    if (e) {
        *dst++ = e;
        return dst;
    }
    dst[0] = 'u', dst[1] = '0', dst[2] = '0', dst[3] = hex[c >> 4], dst[4] = hex[c & 15];
    return dst + 5;
}

/* Write the same literal to dst, which has room for lop_json_str_len(s, n) bytes (no NUL is
 * written); returns dst advanced past it. For fixed-size storage computed up front. */
char *lop_json_str_write(char *dst, const char *s, size_t n);
/* Append s with every invalid UTF-8 sequence replaced by U+FFFD (so JSON encoders accept it). */
void lop_buf_utf8(lop_buf_t *b, const char *s, size_t n);
/* A value's bytes when its tail p[0..n) arrived after b collected its head: p itself when b is
 * empty (no copy), else b's data with p appended. *len gets the total length. The result is
 * borrowed (b's data, or p) until b or p changes. */
const char *lop_buf_join(lop_buf_t *b, const char *p, size_t n, size_t *len);
/* Remove the first n bytes (n <= len). */
void lop_buf_consume(lop_buf_t *b, size_t n);

/* The whole file at path: malloc'd, NUL-terminated (so "" for an empty file), its length in *len
 * when len is not NULL. NULL with errno set when it cannot be opened or read. For small files
 * (configs, certificates, fixtures); callers that must bound what they read have their own. */
char *lop_file_read(const char *path, size_t *len);
/* Return data (never NULL: "" when empty) and reset b to empty; the caller frees the result. */
char *lop_buf_steal(lop_buf_t *b);

/* malloc/calloc/realloc/strdup that abort on failure, with a message naming the size. */
void *lop_xmalloc(size_t n);
void *lop_xcalloc(size_t n, size_t size);
void *lop_xrealloc(void *p, size_t n);
char *lop_xstrdup(const char *s);
char *lop_xstrndup(const char *s, size_t n);

#endif
