/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: host/codec/jsonscan (byte-level JSON navigation) on arbitrary bytes — every
 * value skipped, every object and array walked recursively (checked and trusted variants on the
 * bytes the checked pass accepted), and lop_jscan_find for a few Kubernetes keys. */
#include "fuzz.h"
#include "host/codec/jsonscan.h"

static void walk(const char *p, size_t n, size_t at, int depth)
{
    if (depth > 64) return;
    size_t s, e;
    if (lop_jscan_value(p, n, at, &s, &e) != 0) return;
    if (e > n || s >= e) abort(); /* the span must lie inside the bytes */
    lop_jscan_iter_t it;
    if (p[s] == '{' && lop_jscan_object_begin(&it, p, n, s) == 0) {
        int r;
        while ((r = lop_jscan_object_next(&it)) == 1) {
            if (it.val_end > n || it.key + it.key_len > p + n) abort();
            walk(p, n, it.val_start, depth + 1);
        }
        size_t vs, ve;
        lop_jscan_find(p, n, s, "metadata", &vs, &ve);
        lop_jscan_find(p, n, s, "items", &vs, &ve);
        if (lop_jscan_object_begin_trusted(&it, p, e, s) == 0)
            while (lop_jscan_object_next(&it) == 1)
                if (it.val_end > e) abort();
    } else if (p[s] == '[' && lop_jscan_array_begin(&it, p, n, s) == 0) {
        while (lop_jscan_array_next(&it) == 1) walk(p, n, it.val_start, depth + 1);
        if (lop_jscan_array_begin_trusted(&it, p, e, s) == 0)
            while (lop_jscan_array_next(&it) == 1)
                if (it.val_end > e) abort();
    }
    if (lop_jscan_skip_trusted(p, e, s) > e) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size heap copy: ASan catches a read one past the end */
    char *p = malloc(size ? size : 1);
    if (!p) abort();
    memcpy(p, data, size);
    walk(p, size, 0, 0);
    free(p);
    return 0;
}
