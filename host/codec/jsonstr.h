/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonstr.h — small JSON string helpers shared by the cache, the bindings' codec and the local
 * API server: the \uXXXX escape (with UTF-16 surrogate pairs), membership of a string in a
 * JSON array of strings, and equality of JSON values by value.
 *
 * The escape follows RFC 8259 §7: \uXXXX is one UTF-16 code unit; a code point above U+FFFF is
 * written as a high surrogate escape followed at once by a low one. A lone surrogate is refused,
 * as Go's encoding/json replaces it and jansson refuses it: a cache or codec that accepted it
 * could not write the string back as valid UTF-8.
 *
 * Thread-safety: pure functions.
 */
#ifndef LOP_CODEC_JSONSTR_H
#define LOP_CODEC_JSONSTR_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Failures of lop_json_unescape_u (negative). */
enum {
    LOP_JSON_U_BAD = -1,       /* not "\u" followed by four hex digits (or truncated) */
    LOP_JSON_U_LONE_LOW = -2,  /* a low surrogate (DC00..DFFF) with no high one before it */
    LOP_JSON_U_LONE_HIGH = -3, /* a high surrogate (D800..DBFF) not followed by a low one's escape */
};

/* Decode the escape at p, which points at the backslash of "\uXXXX", within p[0..end): stores the
 * code point in *cp and returns the bytes consumed (6, or 12 for a surrogate pair), or one of
 * the LOP_JSON_U_* codes. U+0000 is returned like any other code point; a caller that cannot hold
 * NUL refuses it itself. */
int lop_json_unescape_u(const char *p, const char *end, uint32_t *cp);

/* Whether the JSON array arr (NULL or not an array: false) holds a string equal to s
 * (byte-wise). Non-string members are skipped. */
bool lop_json_str_in(const json_t *arr, const char *s);

/* Whether a and b are the same JSON value: numbers by value across integer and real (1 == 1.0,
 * as RFC 6902's "test" and CEL's == compare them; two integers exactly), arrays element by
 * element, objects key by key in any order, everything else as json_equal. NULL equals NULL. */
bool lop_json_value_equal(const json_t *a, const json_t *b);

#endif
