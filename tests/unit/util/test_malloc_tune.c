/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/util/malloc_tune.c: huge-page advice for the brk heap. lop_malloc_tune is once per
 * process, and its opt-outs are read from the environment, so each scenario runs in a fresh run
 * of this program (`test_heap SCENARIO`, spawned with its environment), which asserts and reports
 * like any test run; the parent asserts that run's exit status. */
#include "host/util/malloc_tune.h"
#include "t.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB     (1u << 20)
#define BLOCK   4000 /* below the mmap threshold: served by the heap, as cached objects are */
#define GROW    (48 * MiB)
#define NBLOCKS (GROW / BLOCK)

/* Whether the kernel gives transparent huge pages to advised memory on this machine. */
static bool thp_offered(void)
{
    char line[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return false;
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    return ok && (strstr(line, "[always]") || strstr(line, "[madvise]"));
}

/* /proc/self/smaps, read with read(2) into a static buffer: a FILE's malloc'd buffer would sit at
 * the top of the heap (kept in the thread's cache when freed) and stop the trim this test checks. */
static char *read_smaps(void)
{
    static char text[1 << 20];
    int fd = open("/proc/self/smaps", O_RDONLY);
    if (fd < 0) return NULL;
    size_t n = 0;
    ssize_t r;
    while (n < sizeof text - 1 && (r = read(fd, text + n, sizeof text - 1 - n)) > 0) n += (size_t)r;
    close(fd);
    text[n] = 0;
    return text;
}

/* The VmFlags of the mapping holding p contain "hg" (MADV_HUGEPAGE). */
static bool mapping_advised(const void *p)
{
    char *text = read_smaps();
    if (!text) return false;
    uintptr_t a = (uintptr_t)p;
    bool in = false;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            in = a >= lo && a < hi;
        else if (in && !strncmp(line, "VmFlags:", 8))
            return strstr(line, " hg") != NULL;
        if (!nl) break;
        line = nl + 1;
    }
    return false;
}

/* kB of huge pages in the heap's mappings (AnonHugePages in /proc/self/smaps) */
static long heap_huge_kb(void)
{
    char *text = read_smaps();
    if (!text) return -1;
    long kb = 0;
    bool heap = false;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned long lo, hi;
        long v;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            heap = strstr(line, "[heap]") != NULL;
        else if (heap && sscanf(line, "AnonHugePages: %ld kB", &v) == 1)
            kb += v;
    }
    return kb;
}

/* Allocate n blocks of BLOCK bytes; advise after each, as the object build does, when advise. */
static char **grow_n(size_t n, bool advise)
{
    char **v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[i] = malloc(BLOCK);
        v[i][0] = 1;
        if (advise) lop_heap_advise();
    }
    return v;
}

static char **grow(void) { return grow_n(NBLOCKS, true); }

static void release_n(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

static void release(char **v) { release_n(v, NBLOCKS); }

extern char **environ;

/* Run `test_heap scenario` with env (NAME=VALUE or NULL) added to the environment; its exit
 * status (0: every check of that run passed), or -1 when it could not run. */
static int run_scenario(const char *scenario, const char *env)
{
    size_t n = 0;
    while (environ[n]) n++;
    char **envp = calloc(n + 2, sizeof *envp);
    memcpy(envp, environ, n * sizeof *envp);
    envp[n] = (char *)env;
    char *argv[] = {"test_heap", (char *)scenario, NULL};
    fflush(NULL);
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, envp);
    free(envp);
    int st = 0;
    if (rc != 0 || waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A growing heap is advised block by block; a small one never is; a trimmed one is advised again
 * when it grows back, also when it regrew with no call in between. */
static void scenario_default(void)
{
    lop_malloc_tune();
    bool offered = thp_offered();
    if (!offered)
        fprintf(stderr, "note: this kernel offers no transparent huge pages: checking that nothing is advised\n");
    /* the first call sets the floor; a cache of 1 MiB more stays below it */
    size_t nsmall = MiB / BLOCK;
    char **small = grow_n(nsmall, true);
    T_CHECK(!mapping_advised(small[nsmall - 1]));
    T_EQ_INT(heap_huge_kb(), 0); /* no huge page held */

    uintptr_t before = (uintptr_t)sbrk(0);
    char **v = grow();
    size_t grown = lop_heap_advised_bytes();
    if ((uintptr_t)sbrk(0) < before + GROW / 2) {
        /* a sanitizer's malloc (make asan) does not use the brk heap: nothing to advise */
        fprintf(stderr, "note: malloc does not grow the brk heap here: checking that nothing is advised\n");
        T_EQ_INT(grown, 0);
        release(v);
        release_n(small, nsmall);
        return;
    }
    if (!offered) {
        T_EQ_INT(grown, 0);
        T_CHECK(!mapping_advised(v[NBLOCKS / 2]));
        release(v);
        release_n(small, nsmall);
        return;
    }
    /* everything but the first few MiB and the last partial step */
    T_CHECK(grown >= GROW - 24 * MiB);
    T_CHECK(grown <= GROW + 16 * MiB);
    T_CHECK(mapping_advised(v[NBLOCKS / 2]));
    T_CHECK(mapping_advised(v[NBLOCKS - 1 - (16 * MiB) / BLOCK]));
    T_CHECK(!mapping_advised(small[0]));

    release(v);
    malloc_trim(0);
    lop_heap_advise();
    T_CHECK(lop_heap_advised_bytes() < grown / 2); /* the trimmed blocks are gone */

    v = grow(); /* the regrown heap is a new mapping: advised again */
    T_CHECK(lop_heap_advised_bytes() >= GROW - 24 * MiB);
    T_CHECK(mapping_advised(v[NBLOCKS / 2]));
    release(v);

    /* trimmed and regrown with no call in between: the next call advises all of it */
    malloc_trim(0);
    v = grow_n(NBLOCKS + NBLOCKS / 8, false);
    T_CHECK(!mapping_advised(v[NBLOCKS / 2]));
    lop_heap_advise();
    T_CHECK(mapping_advised(v[NBLOCKS / 2]));
    T_CHECK(mapping_advised(v[(NBLOCKS * 3) / 4]));
    release_n(v, NBLOCKS + NBLOCKS / 8);

    /* ... also when it ends exactly where it ended before: within 4096 calls */
    malloc_trim(0);
    lop_heap_advise();
    v = grow();
    release(v);
    malloc_trim(0);
    v = grow_n(NBLOCKS, false);
    T_CHECK(!mapping_advised(v[NBLOCKS / 2]));
    for (int i = 0; i < 4096; i++) lop_heap_advise();
    T_CHECK(mapping_advised(v[NBLOCKS / 2]));
    release(v);
    release_n(small, nsmall);
}

static void scenario_off(void)
{
    lop_malloc_tune();
    char **v = grow();
    T_EQ_INT(lop_heap_advised_bytes(), 0);
    T_CHECK(!mapping_advised(v[NBLOCKS / 2]));
    release(v);
}

static void test_large_heap_advised(void) { T_EQ_INT(run_scenario("default", NULL), 0); }

static void test_opt_out(void)
{
    T_EQ_INT(run_scenario("off", "LUAOP_HEAP_HUGEPAGES=0"), 0);
    /* the user's own glibc setting wins */
    T_EQ_INT(run_scenario("off", "GLIBC_TUNABLES=glibc.malloc.hugetlb=0"), 0);
    T_EQ_INT(run_scenario("off", "MALLOC_TOP_PAD_=131072"), 0);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "default")) { /* a scenario's own run */
        T_RUN(scenario_default);
        return T_DONE();
    }
    if (argc == 2 && !strcmp(argv[1], "off")) {
        T_RUN(scenario_off);
        return T_DONE();
    }
    unsetenv("LUAOP_HEAP_HUGEPAGES");
    T_RUN(test_large_heap_advised);
    T_RUN(test_opt_out);
    return T_DONE();
}
