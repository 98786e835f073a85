/* SPDX-License-Identifier: Apache-2.0 */
/* jsonscan.c — DOM-free JSON navigation (see jsonscan.h). */
#include "host/codec/jsonscan.h"

#include "host/codec/jsonsimd.h"

#include <string.h>

/* Kubernetes' own JSON nesting limit (sigs.k8s.io/json): see watchdecoder.c. */
#define MAX_DEPTH 10000

/* Every JSON whitespace byte is <= ' ': one compare ends the test on the bytes that matter. */
static inline bool is_ws(char c)
{
    return (unsigned char)c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r');
}

/* Inlined in the walks below: the API server's JSON is compact, so the first test usually ends it. */
static inline size_t ws(const char *p, size_t n, size_t i)
{
    while (i < n && is_ws(p[i])) i++;
    return i;
}

size_t lop_jscan_ws(const char *p, size_t n, size_t i) { return ws(p, n, i); }

/* i at the opening quote; returns index one past the closing quote, or 0 on error. Inlined:
 * called for every key and string value of every object. */
static inline __attribute__((always_inline)) size_t skip_string(const char *p, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        i = lop_jsimd_str_special(p, n, i);
        if (i >= n) return 0;
        unsigned char c = (unsigned char)p[i];
        if (c == '"') return i + 1;
        if (c == '\\') {
            if (++i >= n) return 0;
        } else {
            return 0; /* a raw control character */
        }
    }
    return 0;
}

/* 1 for the bytes a number token may hold (checked no further; the server wrote it) */
static const unsigned char num_byte[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['-'] = 1, ['+'] = 1, ['.'] = 1, ['e'] = 1, ['E'] = 1,
};

static size_t skip_literal(const char *p, size_t n, size_t i)
{
    switch (p[i]) {
    case 't': return n - i >= 4 && memcmp(p + i, "true", 4) == 0 ? i + 4 : 0;
    case 'f': return n - i >= 5 && memcmp(p + i, "false", 5) == 0 ? i + 5 : 0;
    case 'n': return n - i >= 4 && memcmp(p + i, "null", 4) == 0 ? i + 4 : 0;
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
        for (i++; i < n && num_byte[(unsigned char)p[i]]; i++)
            ;
        return i;
    default: return 0;
    }
}

int lop_jscan_value(const char *p, size_t n, size_t i, size_t *start, size_t *end)
{
    i = ws(p, n, i);
    if (i >= n) return -1;
    *start = i;
    char c = p[i];
    if (c == '"') {
        size_t e = skip_string(p, n, i);
        if (!e) return -1;
        *end = e;
        return 0;
    }
    if (c != '{' && c != '[') {
        size_t e = skip_literal(p, n, i);
        if (!e) return -1;
        *end = e;
        return 0;
    }
    /* containers: an explicit stack of the closers we expect, and one label per grammar
     * position (the walk is on every byte of every event and list item) */
    char stack[MAX_DEPTH];
    int depth = 0;
open: /* p[i] is '{' or '[' */
    if (depth >= MAX_DEPTH) return -1;
    stack[depth++] = p[i] == '{' ? '}' : ']';
    i = ws(p, n, i + 1);
    if (i >= n) return -1;
    if (p[i] == stack[depth - 1]) {
        i++;
        goto closed;
    }
    if (stack[depth - 1] == ']') goto value;
key:
    if (p[i] != '"' || !(i = skip_string(p, n, i))) return -1;
    i = ws(p, n, i);
    if (i >= n || p[i] != ':') return -1;
    i = ws(p, n, i + 1);
    if (i >= n) return -1;
value:
    c = p[i];
    if (c == '{' || c == '[') goto open;
    if (!(i = c == '"' ? skip_string(p, n, i) : skip_literal(p, n, i))) return -1;
after:
    i = ws(p, n, i);
    if (i >= n) return -1;
    if (p[i] == ',') {
        i = ws(p, n, i + 1);
        if (i >= n) return -1;
        if (stack[depth - 1] == '}') goto key;
        goto value;
    }
    if (p[i] != stack[depth - 1]) return -1;
    i++;
closed:
    if (--depth == 0) {
        *end = i;
        return 0;
    }
    goto after;
}

/* String at i (its opening quote): one past the closing quote, n when unterminated. */
static size_t skip_string_trusted(const char *p, size_t n, size_t i)
{
    for (i++; i < n; i += 2) { /* past a backslash and the byte it escapes */
        i = lop_jsimd_str_stop(p, n, i);
        if (i >= n) return n;
        if (p[i] == '"') return i + 1;
    }
    return n;
}

/* 1 for the bytes that end a literal. */
static const unsigned char lit_end[256] = {
    [','] = 1, ['}'] = 1, [']'] = 1, [' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1, [':'] = 1};

size_t lop_jscan_skip_trusted(const char *p, size_t n, size_t i)
{
    i = ws(p, n, i);
    if (i >= n) return n;
    if (p[i] == '"') return skip_string_trusted(p, n, i);
    if (p[i] != '{' && p[i] != '[') {
        while (i < n && !lit_end[(unsigned char)p[i]]) i++;
        return i;
    }
    size_t depth = 0;
    while (i < n) {
        i = lop_jsimd_tok_stop(p, n, i);
        if (i >= n) break;
        char c = p[i];
        if (c == '"') {
            i = skip_string_trusted(p, n, i);
        } else if (c == '{' || c == '[') {
            depth++;
            i++;
        } else {
            i++;
            if (--depth == 0) return i;
        }
    }
    return n;
}

static int iter_begin(lop_jscan_iter_t *it, const char *p, size_t n, size_t at, char open)
{
    memset(it, 0, sizeof *it);
    it->p = p;
    it->n = n;
    at = ws(p, n, at);
    if (at >= n || p[at] != open) return -1;
    it->pos = at + 1;
    it->first = true;
    return 0;
}

int lop_jscan_object_begin(lop_jscan_iter_t *it, const char *p, size_t n, size_t obj)
{
    return iter_begin(it, p, n, obj, '{');
}

int lop_jscan_array_begin(lop_jscan_iter_t *it, const char *p, size_t n, size_t arr)
{
    return iter_begin(it, p, n, arr, '[');
}

int lop_jscan_object_begin_trusted(lop_jscan_iter_t *it, const char *p, size_t n, size_t obj)
{
    int r = iter_begin(it, p, n, obj, '{');
    it->trusted = true;
    return r;
}

int lop_jscan_array_begin_trusted(lop_jscan_iter_t *it, const char *p, size_t n, size_t arr)
{
    int r = iter_begin(it, p, n, arr, '[');
    it->trusted = true;
    return r;
}

/* The value at i: validated, or skipped when the iterator is trusted. */
static int iter_value(lop_jscan_iter_t *it, size_t i)
{
    if (!it->trusted) return lop_jscan_value(it->p, it->n, i, &it->val_start, &it->val_end);
    it->val_start = ws(it->p, it->n, i);
    if (it->val_start >= it->n) return -1;
    it->val_end = lop_jscan_skip_trusted(it->p, it->n, it->val_start);
    return 0;
}

/* Consume ',' or the closer; returns 1 to continue with a member, 0 at end, -1 on error. */
static int sep(lop_jscan_iter_t *it, char close)
{
    if (it->done) return 0;
    size_t i = ws(it->p, it->n, it->pos);
    if (i >= it->n) return -1;
    if (it->p[i] == close) {
        it->pos = i + 1;
        it->done = true;
        return 0;
    }
    if (!it->first) {
        if (it->p[i] != ',') return -1;
        i++;
    }
    it->first = false;
    it->pos = i;
    return 1;
}

int lop_jscan_object_key(lop_jscan_iter_t *it)
{
    int r = sep(it, '}');
    if (r <= 0) return r;
    size_t i = ws(it->p, it->n, it->pos);
    if (i >= it->n || it->p[i] != '"') return -1;
    size_t e = it->trusted ? skip_string_trusted(it->p, it->n, i) : skip_string(it->p, it->n, i);
    if (!e || e > it->n) return -1;
    it->member_start = i;
    it->key = it->p + i + 1;
    it->key_len = e - i - 2;
    i = ws(it->p, it->n, e);
    if (i >= it->n || it->p[i] != ':') return -1;
    it->val_start = ws(it->p, it->n, i + 1);
    it->val_end = 0;
    it->pos = it->val_start;
    return it->val_start < it->n ? 1 : -1;
}

int lop_jscan_object_next(lop_jscan_iter_t *it)
{
    int r = lop_jscan_object_key(it);
    if (r <= 0) return r;
    if (iter_value(it, it->val_start) != 0) return -1;
    it->pos = it->val_end;
    return 1;
}

int lop_jscan_array_next(lop_jscan_iter_t *it)
{
    int r = sep(it, ']');
    if (r <= 0) return r;
    if (iter_value(it, it->pos) != 0) return -1;
    it->member_start = it->val_start;
    it->pos = it->val_end;
    return 1;
}

int lop_jscan_find(const char *p, size_t n, size_t obj, const char *key, size_t *val_start, size_t *val_end)
{
    lop_jscan_iter_t it;
    if (lop_jscan_object_begin(&it, p, n, obj) != 0) return -1;
    int r;
    while ((r = lop_jscan_object_next(&it)) == 1) {
        if (lop_jscan_key_is(&it, key)) {
            *val_start = it.val_start;
            *val_end = it.val_end;
            return 1;
        }
    }
    return r;
}
