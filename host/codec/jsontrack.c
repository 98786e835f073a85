/* SPDX-License-Identifier: Apache-2.0 */
/* jsontrack.c — the end of a JSON value across stream pieces (see jsontrack.h). */
#include "host/codec/jsontrack.h"

#include "host/codec/jsonsimd.h"

void lop_jtrack_begin(lop_jtrack_t *t, char opener)
{
    t->esc = false;
    t->in_str = opener == '"';
    t->depth = 0;
    if (opener == '{' || opener == '[') {
        t->stack[0] = opener == '{' ? '}' : ']';
        t->depth = 1;
    }
}

const char *lop_jtrack_scan(lop_jtrack_t *t, const char *p, size_t n, size_t *ip, bool *done)
{
    size_t i = *ip;
    *done = false;
    for (; i < n; i++) {
        if (t->in_str) {
            if (t->esc) {
                t->esc = false;
                continue;
            }
            i = lop_jsimd_str_stop(p, n, i);
            if (i == n) break;
            if (p[i] == '\\') {
                t->esc = true;
            } else {
                t->in_str = false;
                if (t->depth == 0) {
                    *ip = i + 1;
                    *done = true;
                    return NULL;
                }
            }
            continue;
        }
        i = lop_jsimd_tok_stop(p, n, i);
        if (i == n) break;
        char c = p[i];
        if (c == '"') {
            t->in_str = true;
        } else if (c == '{' || c == '[') {
            if (t->depth >= LOP_JTRACK_MAX_NEST) {
                *ip = i;
                return "nesting too deep";
            }
            t->stack[t->depth++] = c == '{' ? '}' : ']';
        } else {
            if (t->stack[t->depth - 1] != c) {
                *ip = i;
                return "mismatched bracket";
            }
            if (--t->depth == 0) {
                *ip = i + 1;
                *done = true;
                return NULL;
            }
        }
    }
    *ip = n;
    return NULL;
}
