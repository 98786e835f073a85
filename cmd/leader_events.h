/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leader_events.h — Kubernetes Events on the leader-election Lease, as client-go records them
 * (tools/leaderelection/resourcelock/leaselock.go RecordEvent): type Normal, reason
 * "LeaderElection", message "<identity> became leader" or "<identity> stopped leading",
 * involvedObject = the Lease.
 *
 * Posting never blocks the caller (the elector's callbacks must stay quick: a stalled API server
 * must not delay stepping down): events go to a small queue drained by one thread of this unit,
 * which reads the Lease (for its uid and resourceVersion) and writes through the manager's
 * recorder (host/runtime/recorder.h: aggregation, rate limit). When the queue is full (the API
 * server is unreachable and leadership flaps) further events are dropped and logged.
 *
 * Thread-safety: lop_leader_events_post from any thread; new/free from one owner thread.
 */
#ifndef LOP_CMD_LEADER_EVENTS_H
#define LOP_CMD_LEADER_EVENTS_H

#include "host/kube/client/rest.h"
#include "host/runtime/recorder.h"

#include <stdint.h>

typedef struct lop_leader_events lop_leader_events_t;

/*
 * Start the event thread for Lease ns/name. rest and recorder are borrowed and must outlive the
 * result; ns, name and identity are copied. Returns NULL (and logs) if the thread cannot start.
 */
lop_leader_events_t *lop_leader_events_new(lop_rest_client_t *rest, lop_recorder_t *recorder, const char *ns,
                                           const char *name, const char *identity);

/* Queue "<identity> <what>" (what: "became leader" or "stopped leading"). Never blocks on I/O.
 * NULL e is a no-op. */
void lop_leader_events_post(lop_leader_events_t *e, const char *what);

/* Write what is still queued, waiting at most flush_ns (ns) in total, then stop the thread and
 * free. Events still queued after that are dropped (logged). NULL is a no-op. */
void lop_leader_events_free(lop_leader_events_t *e, int64_t flush_ns);

#endif
