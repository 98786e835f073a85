/* jsonscan.c — DOM-free JSON navigation (see jsonscan.h). */
#include "host/kube/jsonscan.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Kubernetes' own JSON nesting limit (sigs.k8s.io/json): see watchdecoder.c. */
#define MAX_DEPTH 10000

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Inlined in the walks below: the API server's JSON is compact, so the first test usually ends it. */
static inline size_t ws(const char *p, size_t n, size_t i)
{
    while (i < n && is_ws(p[i]))
        i++;
    return i;
}

size_t lop_jscan_ws(const char *p, size_t n, size_t i) { return ws(p, n, i); }

/* 1 for the bytes a string scan must look at: the quote, backslash and control characters. */
static const unsigned char str_special[256] = {
    [0] = 1, [1] = 1, [2] = 1, [3] = 1, [4] = 1, [5] = 1, [6] = 1, [7] = 1,
    [8] = 1, [9] = 1, [10] = 1, [11] = 1, [12] = 1, [13] = 1, [14] = 1, [15] = 1,
    [16] = 1, [17] = 1, [18] = 1, [19] = 1, [20] = 1, [21] = 1, [22] = 1, [23] = 1,
    [24] = 1, [25] = 1, [26] = 1, [27] = 1, [28] = 1, [29] = 1, [30] = 1, [31] = 1,
    ['"'] = 1, ['\\'] = 1,
};

/* The first index from i whose byte a string scan must look at (str_special), or n. With SSE2
 * (every x86-64), 16 bytes per step while 16 remain: a quote, a backslash, or a byte <= 0x1F
 * (max(b, 0x1F) == 0x1F). */
static inline size_t next_special(const char *p, size_t n, size_t i)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1F);
    while (n - i >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                   _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl));
        unsigned m = (unsigned)_mm_movemask_epi8(hit);
        if (m)
            return i + (size_t)__builtin_ctz(m);
        i += 16;
    }
#endif
    while (i < n && !str_special[(unsigned char)p[i]])
        i++;
    return i;
}

/* i at the opening quote; returns index one past the closing quote, or 0 on error. */
static size_t skip_string(const char *p, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        i = next_special(p, n, i);
        if (i >= n)
            return 0;
        unsigned char c = (unsigned char)p[i];
        if (c == '"')
            return i + 1;
        if (c == '\\') {
            if (++i >= n)
                return 0;
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
    case 't':
        return n - i >= 4 && memcmp(p + i, "true", 4) == 0 ? i + 4 : 0;
    case 'f':
        return n - i >= 5 && memcmp(p + i, "false", 5) == 0 ? i + 5 : 0;
    case 'n':
        return n - i >= 4 && memcmp(p + i, "null", 4) == 0 ? i + 4 : 0;
    case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        for (i++; i < n && num_byte[(unsigned char)p[i]]; i++)
            ;
        return i;
    default:
        return 0;
    }
}

int lop_jscan_value(const char *p, size_t n, size_t i, size_t *start, size_t *end)
{
    i = ws(p, n, i);
    if (i >= n)
        return -1;
    *start = i;
    char c = p[i];
    if (c == '"') {
        size_t e = skip_string(p, n, i);
        if (!e)
            return -1;
        *end = e;
        return 0;
    }
    if (c != '{' && c != '[') {
        size_t e = skip_literal(p, n, i);
        if (!e)
            return -1;
        *end = e;
        return 0;
    }
    /* containers: an explicit stack of the closers we expect */
    char stack[MAX_DEPTH];
    int depth = 0;
    enum { WANT_VALUE, WANT_KEY, WANT_COLON, WANT_SEP } state = WANT_VALUE;
    bool just_opened = false;
    while (i < n) {
        i = ws(p, n, i);
        if (i >= n)
            return -1;
        c = p[i];
        if (just_opened && depth > 0 && c == stack[depth - 1]) {
            just_opened = false;
            depth--;
            i++;
            if (depth == 0) {
                *end = i;
                return 0;
            }
            state = WANT_SEP;
            continue;
        }
        just_opened = false;
        switch (state) {
        case WANT_KEY: {
            if (c != '"')
                return -1;
            size_t e = skip_string(p, n, i);
            if (!e)
                return -1;
            i = e;
            state = WANT_COLON;
            break;
        }
        case WANT_COLON:
            if (c != ':')
                return -1;
            i++;
            state = WANT_VALUE;
            break;
        case WANT_VALUE:
            if (c == '{' || c == '[') {
                if (depth >= MAX_DEPTH)
                    return -1;
                stack[depth++] = c == '{' ? '}' : ']';
                i++;
                state = c == '{' ? WANT_KEY : WANT_VALUE;
                just_opened = true;
            } else {
                size_t e = c == '"' ? skip_string(p, n, i) : skip_literal(p, n, i);
                if (!e)
                    return -1;
                i = e;
                state = WANT_SEP;
            }
            break;
        case WANT_SEP:
            if (c == ',') {
                i++;
                state = stack[depth - 1] == '}' ? WANT_KEY : WANT_VALUE;
            } else if (c == stack[depth - 1]) {
                depth--;
                i++;
                if (depth == 0) {
                    *end = i;
                    return 0;
                }
            } else {
                return -1;
            }
            break;
        }
    }
    return -1;
}

/* String at i (its opening quote): one past the closing quote, n when unterminated. */
static size_t skip_string_trusted(const char *p, size_t n, size_t i)
{
    for (i++; i < n;) {
        const char *q = memchr(p + i, '"', n - i);
        if (!q)
            return n;
        size_t e = (size_t)(q - p), b = e;
        while (b > i && p[b - 1] == '\\')
            b--;
        if ((e - b) % 2 == 0) /* an even run of backslashes escapes itself, not the quote */
            return e + 1;
        i = e + 1;
    }
    return n;
}

/* 1 for the bytes a trusted container walk stops at. */
static const unsigned char stop_byte[256] = {['"'] = 1, ['{'] = 1, ['['] = 1, ['}'] = 1, [']'] = 1};
/* 1 for the bytes that end a literal. */
static const unsigned char lit_end[256] = {[','] = 1, ['}'] = 1, [']'] = 1, [' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1, [':'] = 1};

size_t lop_jscan_skip_trusted(const char *p, size_t n, size_t i)
{
    i = ws(p, n, i);
    if (i >= n)
        return n;
    if (p[i] == '"')
        return skip_string_trusted(p, n, i);
    if (p[i] != '{' && p[i] != '[') {
        while (i < n && !lit_end[(unsigned char)p[i]])
            i++;
        return i;
    }
    size_t depth = 0;
    while (i < n) {
        while (i < n && !stop_byte[(unsigned char)p[i]])
            i++;
        if (i >= n)
            break;
        char c = p[i];
        if (c == '"') {
            i = skip_string_trusted(p, n, i);
        } else if (c == '{' || c == '[') {
            depth++;
            i++;
        } else {
            i++;
            if (--depth == 0)
                return i;
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
    if (at >= n || p[at] != open)
        return -1;
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
    if (!it->trusted)
        return lop_jscan_value(it->p, it->n, i, &it->val_start, &it->val_end);
    it->val_start = ws(it->p, it->n, i);
    if (it->val_start >= it->n)
        return -1;
    it->val_end = lop_jscan_skip_trusted(it->p, it->n, it->val_start);
    return 0;
}

/* Consume ',' or the closer; returns 1 to continue with a member, 0 at end, -1 on error. */
static int sep(lop_jscan_iter_t *it, char close)
{
    if (it->done)
        return 0;
    size_t i = ws(it->p, it->n, it->pos);
    if (i >= it->n)
        return -1;
    if (it->p[i] == close) {
        it->pos = i + 1;
        it->done = true;
        return 0;
    }
    if (!it->first) {
        if (it->p[i] != ',')
            return -1;
        i++;
    }
    it->first = false;
    it->pos = i;
    return 1;
}

int lop_jscan_object_key(lop_jscan_iter_t *it)
{
    int r = sep(it, '}');
    if (r <= 0)
        return r;
    size_t i = ws(it->p, it->n, it->pos);
    if (i >= it->n || it->p[i] != '"')
        return -1;
    size_t e = it->trusted ? skip_string_trusted(it->p, it->n, i) : skip_string(it->p, it->n, i);
    if (!e || e > it->n)
        return -1;
    it->member_start = i;
    it->key = it->p + i + 1;
    it->key_len = e - i - 2;
    i = ws(it->p, it->n, e);
    if (i >= it->n || it->p[i] != ':')
        return -1;
    it->val_start = ws(it->p, it->n, i + 1);
    it->val_end = 0;
    it->pos = it->val_start;
    return it->val_start < it->n ? 1 : -1;
}

int lop_jscan_object_next(lop_jscan_iter_t *it)
{
    int r = lop_jscan_object_key(it);
    if (r <= 0)
        return r;
    if (iter_value(it, it->val_start) != 0)
        return -1;
    it->pos = it->val_end;
    return 1;
}

int lop_jscan_array_next(lop_jscan_iter_t *it)
{
    int r = sep(it, ']');
    if (r <= 0)
        return r;
    if (iter_value(it, it->pos) != 0)
        return -1;
    it->member_start = it->val_start;
    it->pos = it->val_end;
    return 1;
}


int lop_jscan_find(const char *p, size_t n, size_t obj, const char *key, size_t *val_start, size_t *val_end)
{
    lop_jscan_iter_t it;
    if (lop_jscan_object_begin(&it, p, n, obj) != 0)
        return -1;
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
