/* SPDX-License-Identifier: Apache-2.0 */
/* rand.c — per-thread xorshift64* and version 4 UUIDs (see rand.h). */
#include "host/util/rand.h"

#include "host/util/clock.h"

#include <sys/random.h>

static __thread uint64_t t_state;

uint64_t lop_rand_u64(void)
{
    if (t_state == 0) {
        uint64_t seed = 0;
        if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
            seed = (uint64_t)lop_clock_mono(&lop_clock_system) ^ (uint64_t)(uintptr_t)&t_state;
        t_state = seed ? seed : 0x9e3779b97f4a7c15ull; /* xorshift's state must not be 0 */
    }
    t_state ^= t_state >> 12;
    t_state ^= t_state << 25;
    t_state ^= t_state >> 27;
    return t_state * 0x2545f4914f6cdd1dull;
}

char *lop_uuid4(char *out)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t b[16];
    uint64_t hi = lop_rand_u64(), lo = lop_rand_u64();
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(hi >> (8 * i));
        b[8 + i] = (uint8_t)(lo >> (8 * i));
    }
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* variant 10 */
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
        *p++ = hex[b[i] >> 4];
        *p++ = hex[b[i] & 15];
    }
    *p = '\0';
    return out;
}
