/* Unit tests for host/util/heap.c: huge-page advice for the brk heap. lop_malloc_tune is once per
 * process, so each scenario runs in a child process of its own (fork before any thread). */
#include "host/util/heap.h"
#include "t.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1u << 20)
#define BLOCK 4000 /* below the mmap threshold: served by the heap, as cached objects are */
#define GROW (48 * MiB)
#define NBLOCKS (GROW / BLOCK)

/* Whether the kernel gives transparent huge pages to advised memory on this machine. */
static bool thp_offered(void)
{
    char line[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return false;
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    return ok && (strstr(line, "[always]") || strstr(line, "[madvise]"));
}

/* The VmFlags of the mapping holding p (from /proc/self/smaps) contain "hg" (MADV_HUGEPAGE).
 * Read with read(2) into a static buffer: a FILE's malloc'd buffer would sit at the top of the
 * heap (kept in the thread's cache when freed) and stop the trim this test checks. */
static bool mapping_advised(const void *p)
{
    static char text[1 << 20];
    int fd = open("/proc/self/smaps", O_RDONLY);
    if (fd < 0)
        return false;
    size_t n = 0;
    ssize_t r;
    while (n < sizeof text - 1 && (r = read(fd, text + n, sizeof text - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    text[n] = 0;
    uintptr_t a = (uintptr_t)p;
    bool in = false;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            in = a >= lo && a < hi;
        else if (in && !strncmp(line, "VmFlags:", 8))
            return strstr(line, " hg") != NULL;
        if (!nl)
            break;
        line = nl + 1;
    }
    return false;
}

/* Allocate GROW bytes in BLOCK pieces, advising after each as the object build does. */
static char **grow(void)
{
    char **v = malloc(NBLOCKS * sizeof *v);
    for (size_t i = 0; i < NBLOCKS; i++) {
        v[i] = malloc(BLOCK);
        v[i][0] = 1;
        lop_heap_advise();
    }
    return v;
}

static void release(char **v)
{
    for (size_t i = 0; i < NBLOCKS; i++)
        free(v[i]);
    free(v);
}

static int in_child(void (*scenario)(void), const char *env)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        t_failed_checks = 0; /* this child's checks only */
        if (env)
            putenv((char *)env);
        scenario();
        fflush(NULL);
        _exit(t_failed_checks ? 1 : 0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A growing heap is advised block by block; a small one never is; a trimmed one is advised again
 * when it grows back. */
static void scenario_default(void)
{
    lop_malloc_tune();
    bool offered = thp_offered();
    char *small = malloc(MiB / 2);
    lop_heap_advise();
    T_EQ_INT(lop_heap_advised_bytes(), 0); /* a small heap keeps 4 KiB pages */
    free(small);

    char **v = grow();
    size_t grown = lop_heap_advised_bytes();
    if (!offered) {
        T_EQ_INT(grown, 0);
        release(v);
        return;
    }
    /* everything but the first few MiB of the heap and its last partial step */
    T_CHECK(grown >= GROW - 24 * MiB);
    T_CHECK(grown <= GROW + 16 * MiB);
    T_CHECK(mapping_advised(v[NBLOCKS / 2]));
    T_CHECK(mapping_advised(v[NBLOCKS - 1 - (16 * MiB) / BLOCK]));

    release(v);
    malloc_trim(0);
    lop_heap_advise();
    T_CHECK(lop_heap_advised_bytes() < grown / 2); /* the trimmed blocks are no longer counted */

    v = grow(); /* the regrown heap is a new mapping: advised again */
    T_CHECK(lop_heap_advised_bytes() >= GROW - 24 * MiB);
    T_CHECK(mapping_advised(v[NBLOCKS / 2]));
    release(v);
}

static void scenario_off(void)
{
    lop_malloc_tune();
    char **v = grow();
    T_EQ_INT(lop_heap_advised_bytes(), 0);
    T_CHECK(!mapping_advised(v[NBLOCKS / 2]));
    release(v);
}

static void test_large_heap_advised(void)
{
    T_EQ_INT(in_child(scenario_default, NULL), 0);
}

static void test_opt_out(void)
{
    T_EQ_INT(in_child(scenario_off, "LUAOP_HEAP_HUGEPAGES=0"), 0);
    /* the user's own glibc setting wins */
    T_EQ_INT(in_child(scenario_off, "GLIBC_TUNABLES=glibc.malloc.hugetlb=0"), 0);
    T_EQ_INT(in_child(scenario_off, "MALLOC_TOP_PAD_=131072"), 0);
}

int main(void)
{
    unsetenv("LUAOP_HEAP_HUGEPAGES");
    T_RUN(test_large_heap_advised);
    T_RUN(test_opt_out);
    return T_DONE();
}
