/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonsimd.h — the byte searches under every JSON walk (internal to host/kube): the next byte
 * of a small set, 16 bytes per step with SSE2 (every x86-64) while 16 remain, one at a time
 * otherwise. Each returns the first index >= i whose byte is in the set, or n.
 *
 *   lop_jsimd_str_special  '"', '\\' or a control byte (<= 0x1F): a validating string scan
 *   lop_jsimd_str_stop     '"' or '\\': a string whose bytes were validated, or are only tracked
 *   lop_jsimd_tok_stop     '"', '{', '[', '}' or ']': between tokens when only nesting matters
 *   lop_jsimd_close_end    a '}' followed by nothing (at n - 1) or by a byte other than ',', '}',
 *                          ']', '"' and '\\': where a top-level object may end (those five
 *                          follow a '}' inside a value, or often inside a string)
 *
 * Pure functions; never read outside p[0..n).
 */
#ifndef LOP_CODEC_JSONSIMD_H
#define LOP_CODEC_JSONSIMD_H

#include <stddef.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* The sets; a constant argument to the helpers below, so each inlined call compiles to its own
 * loop. */
enum { LOP_JSIMD_STR_SPECIAL, LOP_JSIMD_STR_STOP, LOP_JSIMD_TOK_STOP };

static inline int lop_jsimd_in_set(unsigned char c, int set)
{
    switch (set) {
    case LOP_JSIMD_STR_SPECIAL: return c == '"' || c == '\\' || c <= 0x1F;
    case LOP_JSIMD_STR_STOP: return c == '"' || c == '\\';
    default: return c == '"' || c == '{' || c == '[' || c == '}' || c == ']';
    }
}

#ifdef __SSE2__
/* Bit k set when byte k of v is in the set. */
static inline unsigned lop_jsimd_mask(__m128i v, int set)
{
    __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                               _mm_cmpeq_epi8(v, _mm_set1_epi8(set == LOP_JSIMD_TOK_STOP ? '{' : '\\')));
    if (set == LOP_JSIMD_STR_SPECIAL) /* max(b, 0x1F) == 0x1F exactly when b <= 0x1F (unsigned) */
        hit = _mm_or_si128(hit, _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1F)), _mm_set1_epi8(0x1F)));
    if (set == LOP_JSIMD_TOK_STOP)
        hit = _mm_or_si128(hit, _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('}')),
                                             _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('[')),
                                                          _mm_cmpeq_epi8(v, _mm_set1_epi8(']')))));
    return (unsigned)_mm_movemask_epi8(hit);
}
#endif

static inline size_t lop_jsimd_next(const char *p, size_t n, size_t i, int set)
{
#ifdef __SSE2__
    while (n - i >= 16) {
        unsigned m = lop_jsimd_mask(_mm_loadu_si128((const __m128i *)(const void *)(p + i)), set);
        if (m) return i + (size_t)__builtin_ctz(m);
        i += 16;
    }
#endif
    while (i < n && !lop_jsimd_in_set((unsigned char)p[i], set)) i++;
    return i;
}

static inline size_t lop_jsimd_str_special(const char *p, size_t n, size_t i)
{
    return lop_jsimd_next(p, n, i, LOP_JSIMD_STR_SPECIAL);
}

static inline size_t lop_jsimd_str_stop(const char *p, size_t n, size_t i)
{
    return lop_jsimd_next(p, n, i, LOP_JSIMD_STR_STOP);
}

static inline size_t lop_jsimd_tok_stop(const char *p, size_t n, size_t i)
{
    return lop_jsimd_next(p, n, i, LOP_JSIMD_TOK_STOP);
}

/* The bytes that may follow a '}' without ending a top-level object (see lop_jsimd_close_end). */
static inline int lop_jsimd_after_close(char c) { return c == ',' || c == '}' || c == ']' || c == '"' || c == '\\'; }

static inline size_t lop_jsimd_close_end(const char *p, size_t n, size_t i)
{
#ifdef __SSE2__
    while (n - i > 16) { /* each of 16 bytes, and the byte after it */
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(p + i + 1));
        __m128i lw = _mm_or_si128(w, _mm_set1_epi8(0x20)); /* ']' | 0x20 == '}' */
        __m128i ok = _mm_or_si128(_mm_cmpeq_epi8(lw, _mm_set1_epi8('}')), _mm_cmpeq_epi8(w, _mm_set1_epi8(',')));
        ok = _mm_or_si128(ok, _mm_cmpeq_epi8(w, _mm_set1_epi8('"')));
        ok = _mm_or_si128(ok, _mm_cmpeq_epi8(w, _mm_set1_epi8('\\')));
        __m128i close = _mm_cmpeq_epi8(v, _mm_set1_epi8('}'));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_andnot_si128(ok, close));
        if (m) return i + (size_t)__builtin_ctz(m);
        i += 16;
    }
#endif
    for (; i < n; i++)
        if (p[i] == '}' && (i + 1 == n || !lop_jsimd_after_close(p[i + 1]))) return i;
    return n;
}

#endif
