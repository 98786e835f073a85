#ifndef LOP_UTIL_HEAP_H
#define LOP_UTIL_HEAP_H

#include <stddef.h>

/*
 * How luaop's process uses glibc's malloc heap.
 *
 * lop_malloc_tune() — call once at the start of main, before any thread is created.
 *
 * One arena for every thread (M_ARENA_MAX = 1): a thread's own arena grows by one mprotect call
 * per 4 KiB page (glibc pads only the main arena's growth, by M_TOP_PAD), which was a system call
 * per page for a reflector filling its cache (12k for a 10k-Pod sync), and each extra arena keeps
 * pages of its own resident; small allocations stay off the arena lock in the per-thread caches
 * (tcache). A MALLOC_ARENA_MAX set in the environment is left as the user set it. Measured in
 * bench/README.md ("One arena").
 *
 * Transparent huge pages for a large heap. Filling a cache is mostly page faults: a 10k-Pod sync
 * touched 15,500 fresh 4 KiB pages, and a fault cost about 10 µs on the benchmark VM, as much as
 * validating the page's worth of JSON. When the kernel offers transparent huge pages
 * (/sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise"), the main heap above a
 * floor — the first huge-page boundary at least one huge page (2 MiB) past the heap's end when
 * lop_malloc_tune runs, so a small operator never holds a whole huge page it barely uses — is
 * advised MADV_HUGEPAGE as it grows: one fault per 2 MiB instead of 512. glibc's
 * glibc.malloc.hugetlb=1 tunable does the same from inside malloc, but a tunable is read only
 * from the environment at exec (re-executing luaop to set it costs ~15 ms of start-up on the
 * benchmark VM); this is the same idea from outside:
 *  - once the heap is within a huge page of the floor, M_TOP_PAD becomes 16 MiB, so the heap
 *    grows in large steps whose untouched blocks can still be advised before they are touched
 *    (this also fixes glibc's mmap threshold at its current value);
 *  - lop_heap_advise() compares the heap's end (sbrk(0), a read of libc's variable, no system
 *    call) with the end advised so far and advises the new whole 2 MiB blocks.
 * The cost is RSS in 2 MiB steps once the heap is that large, up to 16 MiB of freed pages kept
 * at the top of the heap instead of returned (glibc keeps M_TOP_PAD on a trim), and, with
 * .../transparent_hugepage/defrag at its default "madvise", page faults that may compact memory
 * to find a huge page. LUAOP_HEAP_HUGEPAGES=0 in the environment turns it off, as does a
 * GLIBC_TUNABLES that names glibc.malloc.hugetlb or glibc.malloc.top_pad, or MALLOC_TOP_PAD_
 * (the user's own setting is left alone). Measured in bench/README.md ("Huge pages for the heap").
 */
void lop_malloc_tune(void);

/*
 * Advise the heap's new whole 2 MiB blocks MADV_HUGEPAGE (see above). Call where the heap grows
 * for the cache: the object build calls it once per object. Cheap when nothing changed (two
 * loads and a compare); thread-safe; a no-op unless lop_malloc_tune enabled it.
 */
void lop_heap_advise(void);

/* Bytes advised MADV_HUGEPAGE so far (0 when off): for tests and benchmarks. */
size_t lop_heap_advised_bytes(void);

#endif
