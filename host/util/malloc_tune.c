/* SPDX-License-Identifier: Apache-2.0 */
/* malloc_tune.c — how the process uses glibc's heap: one arena, and transparent huge pages advised
 * over the heap above a floor as a large cache grows (see malloc_tune.h). lop_malloc_tune runs
 * once on the main thread before any other thread exists; lop_heap_advise runs on the reflector
 * threads building objects (atomics only). No upstream counterpart. */
#include "host/util/malloc_tune.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* the heap's growth step once it is large (M_TOP_PAD): an untouched tail to advise */
#define HEAP_TOP_PAD (16 << 20)
/* requests from this size up are mmapped; below, they come from the (advised) heap */
#define HEAP_MMAP_THRESHOLD (1 << 20)

static size_t huge_size; /* the huge page size; 0: advice off. Set before any thread exists */

static _Atomic uintptr_t heap_floor; /* first block that may be advised; 0 until the first call */
static _Atomic uintptr_t seen_brk;   /* the heap's end at the last advice */
static _Atomic uintptr_t advised;    /* end of the range last advised, [heap_floor, advised) */
static atomic_bool padded;           /* M_TOP_PAD raised */

/* The first line of a sysfs file into buf (NUL-terminated, newline kept); false if unreadable. */
static bool read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "re");
    if (!f) return false;
    bool ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    return ok;
}

/* The PMD huge page size when the kernel gives transparent huge pages to advised memory. */
static size_t thp_size(void)
{
    char line[128];
    if (!read_line("/sys/kernel/mm/transparent_hugepage/enabled", line, sizeof line) ||
        (!strstr(line, "[always]") && !strstr(line, "[madvise]")))
        return 0;
    size_t size = 2u << 20;
    if (read_line("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", line, sizeof line)) {
        unsigned long long v = strtoull(line, NULL, 10);
        if (v >= (1u << 16) && v <= (1ull << 30) && (v & (v - 1)) == 0) size = (size_t)v;
    }
    return size;
}

static bool user_tuned_heap(void)
{
    const char *v = getenv("LUAOP_HEAP_HUGEPAGES");
    if (v && !strcmp(v, "0")) return true;
    const char *t = getenv("GLIBC_TUNABLES");
    if (t && (strstr(t, "glibc.malloc.hugetlb") || strstr(t, "glibc.malloc.top_pad"))) return true;
    return getenv("MALLOC_TOP_PAD_") != NULL;
}

void lop_malloc_tune(void)
{
    const char *t = getenv("GLIBC_TUNABLES");
    if (!getenv("MALLOC_ARENA_MAX") && !(t && strstr(t, "glibc.malloc.arena_max"))) mallopt(M_ARENA_MAX, 1);
    if (!user_tuned_heap()) huge_size = thp_size();
}

void lop_heap_advise(void)
{
    size_t size = huge_size;
    if (!size) return;
    /* sbrk(0) returns glibc's cached end of the heap (no system call); another thread's malloc
     * may move it meanwhile, which at worst leaves the change for the next call. */
    uintptr_t brk = (uintptr_t)sbrk(0);
    uintptr_t last = atomic_load_explicit(&seen_brk, memory_order_relaxed);
    /* A trim and a regrowth between two calls can end the heap where it ended before, with the
     * regrown part not advised: every 4096th call of a thread advises again whatever it sees. */
    static _Thread_local unsigned calls;
    if ((brk == last && (++calls & 4095) != 0) || brk == (uintptr_t)-1) return;
    uintptr_t floor = atomic_load_explicit(&heap_floor, memory_order_relaxed);
    if (!floor) {
        /* the first object built: the heap as the operator needs it without a cache, plus at
         * least a huge page, is never advised */
        uintptr_t want = (brk + 2 * size - 1) & ~(uintptr_t)(size - 1);
        atomic_compare_exchange_strong(&heap_floor, &floor, want);
        floor = atomic_load(&heap_floor);
    }
    if (!atomic_compare_exchange_strong(&seen_brk, &last, brk)) return; /* another thread is on this change */
    /* within a huge page of the floor: from now on the heap grows in large steps, whose blocks
     * are still untouched when they are advised */
    if (brk + size > floor && !atomic_exchange(&padded, true)) {
        mallopt(M_MMAP_THRESHOLD, HEAP_MMAP_THRESHOLD); /* the arena's lock; once */
        mallopt(M_TOP_PAD, HEAP_TOP_PAD);
    }
    uintptr_t end = brk & ~(uintptr_t)(size - 1);
    if (end <= floor) {
        atomic_store_explicit(&advised, floor, memory_order_relaxed);
        return;
    }
    /* All of [floor, end), not just what is new: a trim and a regrowth between two calls leave
     * a mapping without the advice below the end advised before. Idempotent; the kernel merges
     * the advised mappings back into one. */
    if (madvise((void *)floor, end - floor, MADV_HUGEPAGE) == 0)
        atomic_store_explicit(&advised, end, memory_order_relaxed);
    else /* trimmed between the read and the call: the next call tries again */
        atomic_compare_exchange_strong(&seen_brk, &brk, 0);
}

size_t lop_heap_advised_bytes(void)
{
    uintptr_t floor = atomic_load(&heap_floor), end = atomic_load(&advised);
    return floor && end > floor ? end - floor : 0;
}
