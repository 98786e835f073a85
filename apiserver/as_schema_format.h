/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_schema_format.h — the string checks of a structural schema that need more than a compare:
 * `format` values and `pattern` regular expressions.
 *
 * Formats (k8s.io/apiextensions-apiserver/pkg/apiserver/validation/formats.go and kube-openapi's
 * strfmt.Default): enforced on strings only, as kube-apiserver does (int32, int64, float and
 * double on numbers are accepted and not range-checked there either). Checked here: hostname,
 * ipv4, ipv6, cidr, mac, uuid, uuid3, uuid4, uuid5, byte (standard base64), date, date-time
 * (datetime), duration, email, uri, hexcolor, rgbcolor, bsonobjectid, ssn. isbn, isbn10, isbn13,
 * creditcard, password and unknown formats are accepted without a check.
 *
 * Patterns: kube-apiserver uses Go's RE2 (an unanchored search). Here a pattern is translated to
 * a POSIX extended regular expression (regcomp REG_EXTENDED, UTF-8 locale-free): the escapes
 * \d \D \w \W \s \S (also inside brackets for the positive ones), \. and other escaped
 * punctuation, and (?:...) groups are rewritten; lazy quantifiers (*?, +?, ??), lookarounds,
 * backreferences, \b, Unicode classes (\p{...}), stacked quantifiers (a++), counts above 1000 and
 * a count on a group holding a count ((a{9}){9}: glibc would expand it) are not supported — such
 * a pattern is not enforced and each write names it in a Warning (as_schema.c).
 *
 * Pure functions; thread-safe.
 */
#ifndef LOP_APISERVER_AS_SCHEMA_FORMAT_H
#define LOP_APISERVER_AS_SCHEMA_FORMAT_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether s (n bytes) is valid for format; true for formats not checked. */
bool as_format_valid(const char *format, const char *s, size_t n);
/* Compile an ECMA-262/RE2-style pattern into re: 0, or -1 when it uses what the translation does
 * not support (re untouched). */
int as_pattern_compile(regex_t *re, const char *pattern);
/* Whether s (NUL-terminated) contains a match of re. */
bool as_pattern_match(const regex_t *re, const char *s);

#endif
