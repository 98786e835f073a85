/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lease_watch.h — a watch on one Lease that feeds its events to an elector
 * (lop_elector_notify_lease_event), so a standby sees a release at once instead of at its next
 * poll. The watch is only a hint: the elector stays correct (if slower) when it is down.
 *
 * Runs as a task of the shared dispatcher for its clock (host/util/dispatcher.h: no thread of its
 * own; the stream is lop_rest_stream_start's, pumped when the transport says bytes arrived):
 * WATCH .../namespaces/<ns>/leases?fieldSelector=metadata.name=<name> (from "now": the server
 * first sends the Lease as ADDED), splits the stream into events, reconnects when the stream
 * ends, and backs off after failures (0.8 s doubling to 30 s, jitter 1.0, reset after a stream
 * that delivered events), the waits being dispatcher timers on the injected clock. The elector
 * is notified on a dispatcher thread.
 *
 * Thread-safety: start/stop from one controlling thread. Stop the watch before freeing the
 * elector it feeds.
 */
#ifndef LOP_KUBE_LEADERELECTION_LEASE_WATCH_H
#define LOP_KUBE_LEADERELECTION_LEASE_WATCH_H

#include "host/kube/leaderelection/leaderelection.h"
#include "host/util/clock.h"
#include "host/util/err.h"

#include <stdbool.h>
#include <stdint.h>

struct lop_rest_client;
typedef struct lop_lease_watch lop_lease_watch_t;

/*
 * Start watching Lease ns/name through rest (borrowed; must outlive the watch; a client of its
 * own is best, so the watch does not share the elector's rate limit) and feed elector (borrowed).
 * clock NULL = system clock. Returns NULL with LOP_EINVAL for an invalid ns/name, LOP_ERR when the
 * dispatcher's threads cannot be created.
 */
lop_lease_watch_t *lop_lease_watch_start(struct lop_rest_client *rest, const char *ns, const char *name,
                                         lop_elector_t *elector, const lop_clock_t *clock, lop_err_t *err);

/* Events delivered so far (for tests and logs). */
long lop_lease_watch_events(lop_lease_watch_t *w);
/* Wait until at least n events were delivered (the first one means the watch is connected) or
 * timeout_ns passed on the watch's clock. Returns true when they were. */
bool lop_lease_watch_wait_events(lop_lease_watch_t *w, long n, int64_t timeout_ns);

/* Cancel the stream, wait until the task has let go of it, free. Not from a dispatcher thread.
 * NULL is a no-op. */
void lop_lease_watch_stop(lop_lease_watch_t *w);

#endif
