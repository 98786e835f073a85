/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsontrack.h — finds where a JSON value ends in a byte stream that arrives in pieces: tracks
 * strings, escapes and bracket nesting (brackets must match) across calls, without validating
 * anything else. Shared by the watch decoder (events) and the list decoder (items, members).
 *
 * Thread-safety: none; one stream, one thread.
 */
#ifndef LOP_CODEC_JSONTRACK_H
#define LOP_CODEC_JSONTRACK_H

#include <stdbool.h>
#include <stddef.h>

/* Kubernetes' own JSON nesting limit (sigs.k8s.io/json): anything the API server stores must
 * pass, so that one deep object fails only its reconcile (the Lua codec's limit), never a watch
 * or a list of its whole kind. */
#define LOP_JTRACK_MAX_NEST 10000

typedef struct lop_jtrack {
    int depth;
    bool in_str, esc;
    char stack[LOP_JTRACK_MAX_NEST]; /* expected closers */
} lop_jtrack_t;

/* Start tracking a value whose first byte (already consumed) is opener: '{', '[' or '"'. */
void lop_jtrack_begin(lop_jtrack_t *t, char opener);
/*
 * Advance from *ip through p[0..n). When the value ends in this piece, sets *done and *ip one
 * past its last byte; else *ip = n. Returns NULL, or the cause of a structural error
 * ("mismatched bracket", "nesting too deep") with *ip at the offending byte.
 */
const char *lop_jtrack_scan(lop_jtrack_t *t, const char *p, size_t n, size_t *ip, bool *done);

#endif
