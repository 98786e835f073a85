/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonpatch_diff.h — compute an RFC 6902 JSON Patch that turns one JSON document into another,
 * for the mutating admission response (AdmissionResponse.patch, patchType "JSONPatch").
 *
 * The diff is simple and always correct rather than minimal:
 *   - objects are compared key by key: a key only in `from` is "remove"d, a key only in `to` is
 *     "add"ed, a key in both whose values differ is recursed into when both are objects and
 *     "replace"d otherwise;
 *   - arrays that differ in any way are replaced whole (no element moves);
 *   - any other pair of unequal values (or a type change) is one "replace".
 * Paths are RFC 6901 JSON Pointers: "~" is written "~0" and "/" is written "~1" in each token.
 * Removes and adds are emitted in `from`'s / `to`'s key order; no "test", "move" or "copy".
 * If `from` and `to` are equal (json_equal) the result is an empty array.
 *
 * Thread-safety: pure; safe from any thread. Inputs are never modified.
 */
#ifndef LOP_RUNTIME_WEBHOOK_JSONPATCH_DIFF_H
#define LOP_RUNTIME_WEBHOOK_JSONPATCH_DIFF_H

#include "host/util/buf.h"

#include <jansson.h>

/* The operations (a new JSON array the caller owns: json_decref) that turn `from` into `to`.
 * Both are borrowed. A NULL `from` or `to` is treated as JSON null. NULL only when out of memory. */
json_t *lop_jsonpatch_diff(const json_t *from, const json_t *to);

/* Append one RFC 6901 reference token to the JSON Pointer in b: "/" + token with "~" written
 * "~0" and "/" written "~1". */
void lop_json_pointer_append(lop_buf_t *b, const char *token);

#endif
