/*
 * jsonsimd.h — the byte searches under every JSON walk (internal to host/kube): the next byte
 * of a small set, 16 bytes per step with SSE2 (every x86-64) while 16 remain, one at a time
 * otherwise. Each returns the first index >= i whose byte is in the set, or n.
 *
 *   lop_jsimd_str_special  '"', '\\' or a control byte (<= 0x1F): a validating string scan
 *   lop_jsimd_str_stop     '"' or '\\': a string whose bytes were validated, or are only tracked
 *   lop_jsimd_tok_stop     '"', '{', '[', '}' or ']': between tokens when only nesting matters
 *
 * Pure functions; never read outside p[0..n).
 */
#ifndef LOP_KUBE_JSONSIMD_H
#define LOP_KUBE_JSONSIMD_H

#include <stddef.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

static inline size_t lop_jsimd_str_special(const char *p, size_t n, size_t i)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1F);
    while (n - i >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        /* max(b, 0x1F) == 0x1F exactly when b <= 0x1F (unsigned) */
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                   _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl));
        unsigned m = (unsigned)_mm_movemask_epi8(hit);
        if (m)
            return i + (size_t)__builtin_ctz(m);
        i += 16;
    }
#endif
    for (; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\' || c <= 0x1F)
            break;
    }
    return i;
}

static inline size_t lop_jsimd_str_stop(const char *p, size_t n, size_t i)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    while (n - i >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
        if (m)
            return i + (size_t)__builtin_ctz(m);
        i += 16;
    }
#endif
    while (i < n && p[i] != '"' && p[i] != '\\')
        i++;
    return i;
}

static inline size_t lop_jsimd_tok_stop(const char *p, size_t n, size_t i)
{
#ifdef __SSE2__
    const __m128i q = _mm_set1_epi8('"'), ob = _mm_set1_epi8('{'), cb = _mm_set1_epi8('}'),
                  os = _mm_set1_epi8('['), cs = _mm_set1_epi8(']');
    while (n - i >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, ob)),
                                   _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, cb), _mm_cmpeq_epi8(v, os)),
                                                _mm_cmpeq_epi8(v, cs)));
        unsigned m = (unsigned)_mm_movemask_epi8(hit);
        if (m)
            return i + (size_t)__builtin_ctz(m);
        i += 16;
    }
#endif
    for (; i < n; i++) {
        char c = p[i];
        if (c == '"' || c == '{' || c == '[' || c == '}' || c == ']')
            break;
    }
    return i;
}

#endif
