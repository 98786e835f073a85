/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base64.h — RFC 4648 base64, the one implementation luaop uses (kubeconfig *-data fields,
 * ConfigMap binaryData, Secret data, continue tokens).
 *
 * Ownership: results are malloc'd, NUL-terminated, freed by the caller.
 * Thread-safety: pure functions.
 */
#ifndef LOP_UTIL_BASE64_H
#define LOP_UTIL_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* Encode n bytes. url = the URL-safe alphabet ("-_") without padding; else standard with "=". */
char *lop_base64_encode(const void *data, size_t n, bool url);

/* Decode either alphabet; padding optional; ASCII whitespace ignored. Returns NULL on invalid
 * input (a character outside both alphabets, data after padding, a dangling sextet).
 * *len (may be NULL) receives the decoded length. */
char *lop_base64_decode(const char *in, size_t *len);

#endif
