/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay_main.c — the main() that turns a libFuzzer target into a plain program for the normal
 * (gcc) build: every argument is a corpus file, or a directory whose regular files are read in
 * name order, and each file's bytes are passed once to LLVMFuzzerTestOneInput. CTest runs it as
 * fuzz.<target> over fuzz/corpus/<target>/, so the seeds and every crash kept as a regression
 * are replayed on each `make test`; `make fuzz` links the same targets with libFuzzer instead.
 * Exit status: 0 when every input returned, 2 when a file cannot be read (a crash is a crash).
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

/* Reads path whole and runs it through the target; returns 0, or 2 naming the cause on stderr. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return 2;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) abort();
    size_t n;
    while ((n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap && !(buf = realloc(buf, cap *= 2))) abort();
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: %s: read error\n", path);
        free(buf);
        return 2;
    }
    /* an exact-size copy, so a sanitizer build catches a read one past the input */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) abort();
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static int replay_dir(const char *dir, int *count)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, by_name);
    if (n < 0) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(path)) rc = 2;
            (*count)++;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (replay_dir(argv[i], &count)) rc = 2;
        } else {
            if (replay_file(argv[i])) rc = 2;
            count++;
        }
    }
    if (count == 0) {
        fprintf(stderr, "replay: no input files (usage: %s FILE|DIR...)\n", argv[0]);
        return 2;
    }
    printf("replayed %d input(s)\n", count);
    return rc;
}
