/* SPDX-License-Identifier: Apache-2.0 */
/* as_goval.c — Go's fmt renderings of unstructured values (fmt %q, %v, %#v) for field errors. */
#include "apiserver/as_goval.h"

#include "host/util/utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void as_goval_quote(lop_buf_t *b, const char *s, size_t n)
{
    lop_buf_putc(b, '"');
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        uint32_t cp;
        size_t len = lop_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (len == 0) { /* invalid byte: strconv.Quote writes \x.. */
            lop_buf_printf(b, "\\x%02x", c);
            i++;
            continue;
        }
        if (len > 1) { /* printable non-ASCII kept as is (close enough to unicode.IsPrint) */
            lop_buf_append(b, s + i, len);
            i += len;
            continue;
        }
        switch (c) {
        case '"': lop_buf_puts(b, "\\\""); break;
        case '\\': lop_buf_puts(b, "\\\\"); break;
        case '\n': lop_buf_puts(b, "\\n"); break;
        case '\t': lop_buf_puts(b, "\\t"); break;
        case '\r': lop_buf_puts(b, "\\r"); break;
        case '\a': lop_buf_puts(b, "\\a"); break;
        case '\b': lop_buf_puts(b, "\\b"); break;
        case '\f': lop_buf_puts(b, "\\f"); break;
        case '\v': lop_buf_puts(b, "\\v"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                lop_buf_printf(b, "\\x%02x", c);
            else
                lop_buf_putc(b, (char)c);
        }
        i++;
    }
    lop_buf_putc(b, '"');
}

/* strconv.FormatFloat(d, 'g', -1, 64), which fmt's %v is: the shortest digits that round-trip, in
 * %e form when the decimal exponent is below -4 or at least 6 (1e+06, 1.5e-05). */
void as_goval_float(lop_buf_t *b, double d)
{
    if (isnan(d)) {
        lop_buf_puts(b, "NaN");
        return;
    }
    if (isinf(d)) {
        lop_buf_puts(b, d > 0 ? "+Inf" : "-Inf");
        return;
    }
    char e[40];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, d);
        if (strtod(e, NULL) == d) break;
    }
    const char *ep = strchr(e, 'e');
    int exp = ep ? atoi(ep + 1) : 0;
    if (exp < -4 || exp >= 6) {
        /* mantissa digits, then e+XX with at least two exponent digits */
        lop_buf_append(b, e, (size_t)(ep - e));
        lop_buf_printf(b, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        return;
    }
    int decimals = prec - 1 - exp;
    lop_buf_printf(b, "%.*f", decimals > 0 ? decimals : 0, d);
}

static int key_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static void append_sharp(lop_buf_t *b, const json_t *v);

static void append_sharp_object(lop_buf_t *b, const json_t *v)
{
    size_t n = json_object_size(v), i = 0;
    const char **keys = n ? malloc(n * sizeof *keys) : NULL;
    const char *k;
    json_t *e;
    json_object_foreach((json_t *)v, k, e) keys[i++] = k;
    if (n) qsort(keys, n, sizeof *keys, key_cmp);
    lop_buf_puts(b, "map[string]interface {}{");
    for (i = 0; i < n; i++) {
        if (i) lop_buf_puts(b, ", ");
        as_goval_quote(b, keys[i], strlen(keys[i]));
        lop_buf_putc(b, ':');
        append_sharp(b, json_object_get(v, keys[i]));
    }
    lop_buf_putc(b, '}');
    free(keys);
}

/* %#v of an unstructured value (nested inside a map or slice). */
static void append_sharp(lop_buf_t *b, const json_t *v)
{
    size_t i;
    json_t *e;
    switch (json_typeof(v)) {
    case JSON_OBJECT: append_sharp_object(b, v); break;
    case JSON_ARRAY:
        lop_buf_puts(b, "[]interface {}{");
        json_array_foreach((json_t *)v, i, e)
        {
            if (i) lop_buf_puts(b, ", ");
            append_sharp(b, e);
        }
        lop_buf_putc(b, '}');
        break;
    case JSON_NULL: lop_buf_puts(b, "interface {}(nil)"); break;
    default: as_goval_append(b, v);
    }
}

void as_goval_append(lop_buf_t *b, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING: as_goval_quote(b, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: lop_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL: as_goval_float(b, json_real_value(v)); break;
    case JSON_TRUE: lop_buf_puts(b, "true"); break;
    case JSON_FALSE: lop_buf_puts(b, "false"); break;
    case JSON_NULL: lop_buf_puts(b, "null"); break;
    default: append_sharp(b, v);
    }
}

void as_cause_add(json_t *causes, const char *reason, const char *field, const char *message)
{
    json_t *c = json_object();
    json_object_set_new(c, "reason", json_string(reason));
    json_object_set_new(c, "message", json_string(message));
    json_object_set_new(c, "field", json_string(field));
    json_array_append_new(causes, c);
}

void as_cause_addf(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
{
    lop_buf_t b = LOP_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    lop_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    as_cause_add(causes, reason, field, b.data ? b.data : "");
    lop_buf_free(&b);
}
