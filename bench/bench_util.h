/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_util.h — small helpers shared by the benchmark programs (bench/ programs): monotonic time,
 * process memory (RSS, peak RSS from /proc/self/status), reading a file whole, and a libcurl
 * write callback that appends to a lop-free growable buffer. Header-only (static functions);
 * the benchmark programs are built by bench/run.sh, not by CMake.
 *
 * Thread-safety: every function is reentrant; none keeps state.
 */
#ifndef LOP_BENCH_UTIL_H
#define LOP_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* CPU seconds (user + system) used by this process so far, all threads. */
static inline double bu_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

/* Monotonic seconds. */
static inline double bu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A field of /proc/self/status in kB ("VmRSS", "VmHWM"); -1 when unreadable. */
static inline long bu_status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long v = -1;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, field, fl) && line[fl] == ':') {
            v = strtol(line + fl + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

/* Whole file into a malloc'd NUL-terminated buffer (*len = size); NULL with a message on error. */
static inline char *bu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench: cannot open %s\n", path);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n < 2) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    if (!b) {
        fprintf(stderr, "bench: out of memory reading %s\n", path);
        return NULL;
    }
    b[n] = 0;
    if (len) *len = n;
    return b;
}

/* A growable byte buffer for response bodies. */
typedef struct bu_buf {
    char *p;
    size_t n, cap;
} bu_buf_t;

static inline int bu_buf_add(bu_buf_t *b, const char *d, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1) cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) return -1;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

/* A fixture template (bench/fixtures) as json_micro.lua fills it in: @NS@ -> default,
 * @NAME@ -> obj-1, @I@ -> 1, trailing newlines dropped. malloc'd, NUL-terminated; NULL with a
 * message when the file cannot be read. */
static inline char *bu_fixture(const char *path)
{
    size_t n;
    char *t = bu_read_file(path, &n);
    if (!t) return NULL;
    while (n && t[n - 1] == '\n') t[--n] = 0;
    bu_buf_t b = {0};
    for (const char *p = t; *p;) {
        if (!strncmp(p, "@NS@", 4))
            bu_buf_add(&b, "default", 7), p += 4;
        else if (!strncmp(p, "@NAME@", 6))
            bu_buf_add(&b, "obj-1", 5), p += 6;
        else if (!strncmp(p, "@I@", 3))
            bu_buf_add(&b, "1", 1), p += 3;
        else
            bu_buf_add(&b, p++, 1);
    }
    free(t);
    return b.p;
}

/* libcurl CURLOPT_WRITEFUNCTION appending to a bu_buf_t (CURLOPT_WRITEDATA). */
static inline size_t bu_curl_append(char *d, size_t sz, size_t nm, void *ud)
{
    return bu_buf_add(ud, d, sz * nm) ? 0 : sz * nm;
}

/* libcurl CURLOPT_WRITEFUNCTION that only counts bytes into a size_t (CURLOPT_WRITEDATA). */
static inline size_t bu_curl_count(char *d, size_t sz, size_t nm, void *ud)
{
    (void)d;
    *(size_t *)ud += sz * nm;
    return sz * nm;
}

#endif
