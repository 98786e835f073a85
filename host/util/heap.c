#include "host/util/heap.h"

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

/* Written by lop_malloc_tune before any thread exists, read-only afterwards. */
static size_t huge_size;     /* the huge page size; 0: advice off */
static uintptr_t heap_floor; /* the first block that may be advised (a multiple of huge_size) */

static _Atomic uintptr_t advised; /* end of the advised blocks [heap_floor, advised) */
static atomic_bool padded;        /* M_TOP_PAD raised */

/* The first line of a sysfs file into buf (NUL-terminated, newline kept); false if unreadable. */
static bool read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
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
        if (v >= (1u << 16) && v <= (1ull << 30) && (v & (v - 1)) == 0)
            size = (size_t)v;
    }
    return size;
}

static bool user_tuned_heap(void)
{
    const char *v = getenv("LUAOP_HEAP_HUGEPAGES");
    if (v && !strcmp(v, "0"))
        return true;
    const char *t = getenv("GLIBC_TUNABLES");
    if (t && (strstr(t, "glibc.malloc.hugetlb") || strstr(t, "glibc.malloc.top_pad")))
        return true;
    return getenv("MALLOC_TOP_PAD_") != NULL;
}

void lop_malloc_tune(void)
{
    if (!getenv("MALLOC_ARENA_MAX"))
        mallopt(M_ARENA_MAX, 1);
    if (user_tuned_heap())
        return;
    size_t size = thp_size();
    void *end = sbrk(0);
    if (!size || end == (void *)-1)
        return;
    /* the first whole block at least one huge page above the heap's current end */
    heap_floor = ((uintptr_t)end + 2 * size - 1) & ~(uintptr_t)(size - 1);
    atomic_store_explicit(&advised, heap_floor, memory_order_relaxed);
    huge_size = size;
}

void lop_heap_advise(void)
{
    size_t size = huge_size;
    if (!size)
        return;
    /* sbrk(0) returns glibc's cached end of the heap (no system call); another thread's malloc
     * may move it meanwhile, which at worst leaves a block for the next call. */
    uintptr_t brk = (uintptr_t)sbrk(0);
    if (brk == (uintptr_t)-1)
        return;
    /* within a block of the floor: the next growth is a large step, whose blocks above the floor
     * are still untouched when they are advised */
    if (brk + size > heap_floor && !atomic_load_explicit(&padded, memory_order_relaxed) &&
        !atomic_exchange(&padded, true))
        mallopt(M_TOP_PAD, HEAP_TOP_PAD); /* the arena's lock; once per process */
    uintptr_t end = brk & ~(uintptr_t)(size - 1);
    if (end < heap_floor)
        end = heap_floor;
    uintptr_t done = atomic_load_explicit(&advised, memory_order_relaxed);
    if (end == done || !atomic_compare_exchange_strong(&advised, &done, end))
        return; /* nothing new, or another thread is advising it */
    if (end < done)
        return; /* the heap was trimmed: what grows again above end is a new mapping, advised then */
    if (madvise((void *)done, end - done, MADV_HUGEPAGE) != 0) {
        /* trimmed between the read and the call: let a later call try the range again */
        uintptr_t mine = end;
        atomic_compare_exchange_strong(&advised, &mine, done);
    }
}

size_t lop_heap_advised_bytes(void)
{
    return huge_size ? atomic_load_explicit(&advised, memory_order_relaxed) - heap_floor : 0;
}
