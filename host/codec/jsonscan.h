/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonscan.h — byte-level JSON navigation without building a DOM: skip a value, walk the members
 * of an object or the elements of an array, and report byte spans. Used to strip
 * metadata.managedFields, to parse only the metadata of an object with jansson, and to cut watch
 * events and list items out of their envelopes without decoding spec/status.
 *
 * Validation: structure (brackets, strings, escapes, commas, colons) and literals (true, false,
 * null, number characters) are checked; string contents are not UTF-8 validated.
 * Keys are compared raw (escapes not decoded), which is exact for Kubernetes field names.
 *
 * Thread-safety: pure functions.
 */
#ifndef LOP_CODEC_JSONSCAN_H
#define LOP_CODEC_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Skip whitespace from i; returns the first non-space index (may be n). */
size_t lop_jscan_ws(const char *p, size_t n, size_t i);
/* Skip the value starting at i (leading whitespace allowed). On success returns 0 and sets
 * *start to its first byte and *end one past its last; -1 on malformed or truncated input. */
int lop_jscan_value(const char *p, size_t n, size_t i, size_t *start, size_t *end);

/* Member iterator over the object whose '{' is at obj (leading whitespace allowed). */
typedef struct lop_jscan_iter {
    const char *p;
    size_t n, pos;
    bool first, done;
    /* current member: key without quotes, raw; value span; member span from the key's quote
     * to the value end (for splicing) */
    const char *key;
    size_t key_len, val_start, val_end, member_start;
    bool trusted; /* set by the _trusted begin functions: values are skipped, not validated */
} lop_jscan_iter_t;

/* 0 ok, -1 when there is no object at obj. */
int lop_jscan_object_begin(lop_jscan_iter_t *it, const char *p, size_t n, size_t obj);
/* 1 = a member is current, 0 = end of object (it->pos then is one past '}'), -1 = malformed. */
int lop_jscan_object_next(lop_jscan_iter_t *it);
/* The next member's key only: 1 with key/key_len set and val_start at the value's first byte
 * (whitespace skipped), 0 at the end of the object, -1 when malformed. The caller consumes the
 * value itself and sets it->pos one past it before the next call (e.g. to build an object from
 * the value in the pass that validates it). */
int lop_jscan_object_key(lop_jscan_iter_t *it);
/* Element iterator over the array whose '[' is at arr. Uses val_start/val_end. */
int lop_jscan_array_begin(lop_jscan_iter_t *it, const char *p, size_t n, size_t arr);
int lop_jscan_array_next(lop_jscan_iter_t *it);

/*
 * Trusted variants, for bytes that were already validated (e.g. a list item that
 * lop_jscan_array_next or lop_jscan_value walked): values are skipped with memchr to the next
 * quote and a bracket count, nothing is checked. On bytes that were not validated the results
 * are unspecified but never read outside p[0..n).
 */
size_t lop_jscan_skip_trusted(const char *p, size_t n, size_t i); /* i at the value; one past it */
int lop_jscan_object_begin_trusted(lop_jscan_iter_t *it, const char *p, size_t n, size_t obj);
int lop_jscan_array_begin_trusted(lop_jscan_iter_t *it, const char *p, size_t n, size_t arr);

/* Find member key of the object at obj. 1 found (spans set), 0 absent, -1 malformed. */
int lop_jscan_find(const char *p, size_t n, size_t obj, const char *key, size_t *val_start, size_t *val_end);
/* True when the current member's raw key is key. Inline: with a literal key, strlen folds. */
static inline bool lop_jscan_key_is(const lop_jscan_iter_t *it, const char *key)
{
    size_t l = strlen(key);
    return it->key_len == l && memcmp(it->key, key, l) == 0;
}

#endif
