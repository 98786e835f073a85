/* SPDX-License-Identifier: Apache-2.0 */
/* proc_threads.h — for tests: the number of threads this process has now (the entries of
 * /proc/self/task), or -1 when it cannot be read. Used to prove that thread counts do not grow
 * with the number of informers, watches or Lease watches (issue 19). */
#ifndef LOP_TEST_PROC_THREADS_H
#define LOP_TEST_PROC_THREADS_H

#include <dirent.h>

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

#endif
