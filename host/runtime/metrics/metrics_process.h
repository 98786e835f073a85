/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_process.h — the process_* families every Prometheus client library exports (client_golang's
 * process collector, which controller-runtime registers; see prometheus/procfs and the Prometheus
 * "Writing client libraries" page, section "Process metrics"), read from /proc/self at scrape time:
 *
 *   process_cpu_seconds_total         counter  user + system CPU time, seconds
 *   process_open_fds                  gauge    open file descriptors (entries of /proc/self/fd)
 *   process_max_fds                   gauge    RLIMIT_NOFILE soft limit
 *   process_virtual_memory_bytes      gauge    virtual memory size, bytes
 *   process_virtual_memory_max_bytes  gauge    RLIMIT_AS soft limit, bytes (2^64-1 when unlimited,
 *                                              as client_golang prints it)
 *   process_resident_memory_bytes     gauge    resident set size, bytes
 *   process_start_time_seconds        gauge    start time since the Unix epoch, seconds
 *
 * A value /proc cannot give (not Linux, /proc not mounted) reads as NaN rather than a made-up 0.
 * Nothing is sampled in the background: each value is read when /metrics is rendered.
 */
#ifndef LOP_RUNTIME_METRICS_METRICS_PROCESS_H
#define LOP_RUNTIME_METRICS_METRICS_PROCESS_H

#include "host/runtime/metrics/metrics.h"

/*
 * Declare the process_* families in r, each with a scrape-time callback. Idempotent like the other
 * declarations. LOP_OK, or LOP_EINVAL with err set when r already holds one of the names with another
 * shape.
 */
LOP_MUST_CHECK lop_rc_t lop_metrics_process_init(lop_metrics_t *r, lop_err_t *err);

/* The figures the families report, read now (NaN for any that cannot be read). For tests and
 * for the families' callbacks. */
typedef struct lop_process_stats {
    double cpu_seconds;
    double open_fds;
    double max_fds;
    double virtual_bytes;
    double virtual_max_bytes;
    double resident_bytes;
    double start_time_seconds;
} lop_process_stats_t;

void lop_process_stats_read(lop_process_stats_t *out);

#endif
