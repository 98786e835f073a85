/* SPDX-License-Identifier: Apache-2.0 */
/*
 * utf8.h — UTF-8 as RFC 3629 defines it, the one implementation luaop uses: reading one sequence
 * (with its code point), checking a whole string, writing a code point.
 *
 * Well-formed means: the shortest form (no overlongs such as C0 80), no UTF-16 surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF, no truncated sequence. That is what Go's utf8.Valid
 * accepts (unicode/utf8/utf8.go), hence what Kubernetes' Go components accept, and what jansson
 * requires of a JSON string.
 *
 * Units: byte lengths. Thread-safety: pure functions.
 */
#ifndef LOP_UTIL_UTF8_H
#define LOP_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length (1..4) of the well-formed sequence at p[0..n), storing its code point in *cp when cp is
 * not NULL; 0 when n == 0 or the bytes are not a well-formed sequence (*cp then untouched). An
 * ASCII byte, NUL included, is a sequence of length 1. */
size_t lop_utf8_decode(const unsigned char *p, size_t n, uint32_t *cp);

/* Whether s[0..n) is well-formed UTF-8 throughout (NUL bytes allowed). */
bool lop_utf8_valid(const char *s, size_t n);

/* Write code point cp as UTF-8 into out and return its length (1..4). cp must be at most
 * U+10FFFF and not a surrogate (the caller has checked); otherwise writes U+FFFD (3 bytes). */
size_t lop_utf8_encode(uint32_t cp, char out[4]);

#endif
