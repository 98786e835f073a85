/* SPDX-License-Identifier: Apache-2.0 */
#ifndef LOP_UTIL_MALLOC_TUNE_H
#define LOP_UTIL_MALLOC_TUNE_H

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
 * (tcache). A MALLOC_ARENA_MAX, or a GLIBC_TUNABLES naming glibc.malloc.arena_max, set in the
 * environment is left as the user set it. Measured in
 * bench/README.md ("One arena").
 *
 * Transparent huge pages for a large heap. Filling a cache is mostly page faults: a 10k-Pod sync
 * touched 15,500 fresh 4 KiB pages, and a fault cost about 10 µs on the benchmark VM, as much as
 * validating the page's worth of JSON. When the kernel offers transparent huge pages
 * (/sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise"), the main heap above a
 * floor is advised MADV_HUGEPAGE as it grows: one fault per 2 MiB instead of 512. The floor is
 * the first huge-page boundary at least one huge page (2 MiB) past the heap's end when the first
 * object is built, so the heap an operator needs without a cache, and the first 2–4 MiB of its
 * cache, stay in 4 KiB pages: a small operator holds no huge page it barely uses. glibc's
 * glibc.malloc.hugetlb=1 tunable does the same from inside malloc, but a tunable is read only
 * from the environment at exec (re-executing luaop to set it costs ~15 ms of start-up on the
 * benchmark VM); this is the same idea from outside:
 *  - once the heap is within a huge page of the floor, M_TOP_PAD becomes 16 MiB, so the heap
 *    grows in large steps whose blocks are still untouched when they are advised, and
 *    M_MMAP_THRESHOLD becomes 1 MiB (setting M_TOP_PAD ends glibc's dynamic threshold: requests
 *    from 1 MiB up are mmapped, smaller ones come from the heap);
 *  - lop_heap_advise() compares the heap's end (sbrk(0), glibc's cached value, no system call)
 *    with its end at the last advice, and when it moved advises all of [floor, end) again (a
 *    trim and a regrowth between two calls leave a mapping without the advice); every 4096th
 *    call of a thread advises even when the end looks unchanged (it may have been trimmed and
 *    regrown to the same end).
 * Costs, all bounded by the 16 MiB step: RSS in 2 MiB steps above the floor (khugepaged may also
 * fill a sparsely used advised block); up to 16 MiB of freed pages kept at the top of the heap
 * instead of returned (glibc keeps M_TOP_PAD on a trim; per arena if MALLOC_ARENA_MAX allows
 * several, whose heaps are not advised); a trim inside a huge page splits it; and, with
 * .../transparent_hugepage/defrag at its default "madvise", a fault in an advised block may
 * compact memory to find a huge page, a latency spike in a reflector or worker on a fragmented
 * node. LUAOP_HEAP_HUGEPAGES=0 in the environment turns the huge pages and the 16 MiB step off,
 * as does a GLIBC_TUNABLES that names glibc.malloc.hugetlb or glibc.malloc.top_pad, or
 * MALLOC_TOP_PAD_ (the user's own setting is left alone). Measured in bench/README.md ("Huge
 * pages for the heap").
 */
void lop_malloc_tune(void);

/*
 * Advise the heap's whole 2 MiB blocks above the floor MADV_HUGEPAGE (see above). Call where the
 * heap grows for the cache: the object build calls it once per object; the first call sets the
 * floor. Cheap when the heap's end did not move (a call to sbrk(0), a load, a compare and a
 * thread-local count); thread-safe; a no-op unless lop_malloc_tune enabled it.
 */
void lop_heap_advise(void);

/* Bytes of [floor, end) at the last advice (0 when off or below the floor): for tests. */
size_t lop_heap_advised_bytes(void);

#endif
