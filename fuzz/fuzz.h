/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz.h — shared helpers of the libFuzzer targets under fuzz/ (make fuzz; fuzz/README.md).
 * Each target defines LLVMFuzzerTestOneInput(data, size): the input bytes, owned by libFuzzer,
 * valid for the call only. Targets split one input into parts at the byte sequence "\n--\n" so a
 * corpus file stays readable text.
 */
#ifndef LOP_FUZZ_FUZZ_H
#define LOP_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated copy of data[0..n) (the input itself has no terminator); free() it. */
static inline char *fuzz_strndup(const uint8_t *data, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) abort();
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/* The next part of the input (data, size) up to the separator "\n--\n" (or the end): sets part and plen and
 * advances past the separator. Returns 0 when nothing is left. */
static inline int fuzz_next_part(const uint8_t **data, size_t *size, const uint8_t **part, size_t *plen)
{
    if (!*data) return 0;
    const uint8_t *p = *data;
    size_t n = *size;
    *part = p;
    for (size_t i = 0; i + 4 <= n; i++) {
        if (p[i] == '\n' && p[i + 1] == '-' && p[i + 2] == '-' && p[i + 3] == '\n') {
            *plen = i;
            *data = p + i + 4;
            *size = n - i - 4;
            return 1;
        }
    }
    *plen = n;
    *data = NULL;
    *size = 0;
    return 1;
}

#endif
