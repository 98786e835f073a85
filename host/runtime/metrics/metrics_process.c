/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_process.c — process_* families read from /proc/self when /metrics is scraped (see
 * metrics_process.h). */
#include "host/runtime/metrics/metrics_process.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Read a small /proc file into buf (NUL-terminated). False when it cannot be read. */
static bool read_small(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");
    if (!f) return false;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n > 0;
}

/* Fields 14 (utime), 15 (stime), 22 (starttime), 23 (vsize) and 24 (rss) of /proc/self/stat, see
 * proc(5). The command name (field 2) may hold spaces and parentheses, so counting starts after the
 * last ')'. */
typedef struct self_stat {
    unsigned long long utime, stime, starttime, vsize;
    long long rss;
} self_stat_t;

static bool read_self_stat(self_stat_t *st)
{
    char buf[1024];
    if (!read_small("/proc/self/stat", buf, sizeof buf)) return false;
    const char *p = strrchr(buf, ')');
    if (!p) return false;
    p++;
    /* Fields from 3 (state, one character) on, separated by single spaces; the ones before 25 are
     * integers (a few may be negative: priority, nice; strtoull wraps them, and we do not use them). */
    unsigned long long v[25] = {0};
    char *end;
    for (int field = 3; field <= 24; field++) {
        while (*p == ' ') p++;
        if (!*p) return false;
        if (field == 3) {
            while (*p && *p != ' ') p++;
            continue;
        }
        v[field] = strtoull(p, &end, 10);
        if (end == p) return false;
        p = end;
    }
    st->utime = v[14];
    st->stime = v[15];
    st->starttime = v[22];
    st->vsize = v[23];
    st->rss = (long long)v[24];
    return true;
}

/* Boot time since the epoch, seconds ("btime" in /proc/stat), or -1. */
static double boot_time(void)
{
    static double cached = -1; /* cannot change while the machine runs */
    if (cached >= 0) return cached;
    FILE *f = fopen("/proc/stat", "re");
    if (!f) return -1;
    char line[256];
    double bt = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "btime ", 6) == 0) {
            bt = strtod(line + 6, NULL);
            break;
        }
    fclose(f);
    if (bt >= 0) cached = bt;
    return bt;
}

static double count_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return NAN;
    double n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

static double rlimit_cur(int resource)
{
    struct rlimit rl;
    if (getrlimit(resource, &rl) != 0) return NAN;
    if (rl.rlim_cur == RLIM_INFINITY) return 18446744073709551615.0; /* client_golang prints 2^64-1 */
    return (double)rl.rlim_cur;
}

void lop_process_stats_read(lop_process_stats_t *out)
{
    out->open_fds = count_open_fds();
    out->max_fds = rlimit_cur(RLIMIT_NOFILE);
    out->virtual_max_bytes = rlimit_cur(RLIMIT_AS);
    self_stat_t st;
    long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    if (read_self_stat(&st) && tck > 0 && page > 0) {
        out->cpu_seconds = (double)(st.utime + st.stime) / (double)tck;
        out->virtual_bytes = (double)st.vsize;
        out->resident_bytes = (double)st.rss * (double)page;
        double bt = boot_time();
        out->start_time_seconds = bt >= 0 ? bt + (double)st.starttime / (double)tck : NAN;
    } else {
        out->cpu_seconds = out->virtual_bytes = out->resident_bytes = out->start_time_seconds = NAN;
    }
}

/* One callback per family, each picking its figure from a fresh read (a scrape costs a few small
 * /proc reads; the families are rendered one after another, so one shared snapshot would need a
 * lock for no gain). */
#define PROCESS_FN(fname, field)     \
    static double fname(void *ud)    \
    {                                \
        (void)ud;                    \
        lop_process_stats_t st;      \
        lop_process_stats_read(&st); \
        return st.field;             \
    }
PROCESS_FN(p_cpu, cpu_seconds)
PROCESS_FN(p_open_fds, open_fds)
PROCESS_FN(p_max_fds, max_fds)
PROCESS_FN(p_vmem, virtual_bytes)
PROCESS_FN(p_vmem_max, virtual_max_bytes)
PROCESS_FN(p_rss, resident_bytes)
PROCESS_FN(p_start, start_time_seconds)

typedef struct process_def {
    bool counter;
    const char *name;
    const char *help;
    lop_metric_fn fn;
} process_def_t;

static const process_def_t defs[] = {
    {true, "process_cpu_seconds_total", "User and system CPU time this process has used, in seconds.", p_cpu},
    {false, "process_open_fds", "File descriptors this process has open.", p_open_fds},
    {false, "process_max_fds", "The most file descriptors this process may open (RLIMIT_NOFILE).", p_max_fds},
    {false, "process_virtual_memory_bytes", "Size of this process's virtual address space, in bytes.", p_vmem},
    {false, "process_virtual_memory_max_bytes", "The largest virtual address space allowed (RLIMIT_AS), in bytes.",
     p_vmem_max},
    {false, "process_resident_memory_bytes", "Memory of this process resident in RAM, in bytes.", p_rss},
    {false, "process_start_time_seconds", "When this process started, in seconds since the Unix epoch.", p_start},
};

lop_rc_t lop_metrics_process_init(lop_metrics_t *r, lop_err_t *err)
{
    if (!r) return lop_err_set(err, LOP_EINVAL, 0, NULL, "metrics: process families need a registry");
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        lop_metric_family_t *f = defs[i].counter ? lop_metrics_counter(r, defs[i].name, defs[i].help, NULL, err)
                                                 : lop_metrics_gauge(r, defs[i].name, defs[i].help, NULL, err);
        if (!f) return LOP_EINVAL;
        lop_metric_t *m = lop_metric_child(f, NULL, err);
        if (!m) return LOP_EINVAL;
        lop_rc_t rc = lop_metric_set_fn(m, defs[i].fn, NULL);
        if (rc != LOP_OK) return lop_err_set(err, rc, 0, NULL, "metrics: cannot install the %s callback", defs[i].name);
    }
    return LOP_OK;
}
