/* SPDX-License-Identifier: Apache-2.0 */
/* proc_threads.h — for tests: the number of threads this process has now (the entries of
 * /proc/self/task), or -1 when it cannot be read. Used to prove that thread counts do not grow
 * with the number of informers, watches or Lease watches (issue 19). */
#ifndef LOP_TEST_PROC_THREADS_H
#define LOP_TEST_PROC_THREADS_H

#include <dirent.h>
#include <sched.h>
#include <time.h>

static inline int proc_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* proc_threads() once it equals want, or what it is after 10 s. A joined thread can still be
 * listed for a moment: pthread_join returns when the thread has cleared its tid, before the
 * kernel has released it. So a count that must fall after a join is read through this. */
static inline int proc_threads_settle(int want)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int n = proc_threads();
        if (n == want || n < 0) return n;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 10) return n;
        sched_yield();
    }
}

#endif
