/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leaderelection.h — the Lease-based leader elector (client-go's
 * tools/leaderelection/leaderelection.go), so exactly one replica of an operator reconciles at a time.
 *
 * Algorithm (as client-go, so mixed fleets interoperate):
 *   - candidates try to acquire every retry period, with jitter factor 1.2 (wait in
 *     [retry, 2.2 × retry)); beyond client-go, a standby also tries at the very moment the lease
 *     it observes expires by its clock, so a crashed leader is replaced lease duration after the
 *     standby last saw the record change, not up to 2.2 retry periods later;
 *   - a leader renews every retry period; the fast path PUTs straight from its cached Lease and
 *     falls back to the slow path (GET, then create on 404 or conditional PUT) on any error;
 *   - expiry of someone else's lease is judged ONLY on this replica's monotonic clock, counted
 *     from when this replica last saw the record change: valid while
 *     observed_at + spec.leaseDurationSeconds > now. renewTime is never compared with the local
 *     wall clock, so wall-clock skew neither steals an active lease nor blocks a dead one;
 *   - taking the lease from another holder (or from an empty holder) increments leaseTransitions
 *     and sets acquireTime; a holder renewing its own lease keeps both;
 *   - release (on stop, when release_on_cancel): holderIdentity "", leaseDurationSeconds 1,
 *     acquireTime = renewTime = now, leaseTransitions unchanged; conflicts re-read and retry.
 * Safety, stricter than client-go: the renew deadline counts from the start of the last SUCCESSFUL
 * renew attempt (client-go counts from the start of the current renew round, up to one retry period
 * later). Others cannot see the lease expire before (that start + lease duration), and
 * renew deadline < lease duration, so lop_elector_is_leader() turns false — by the clock, even if
 * the elector thread is stuck in a request — before anyone else can take over.
 *
 * Two ways to drive it:
 *   - lop_elector_start/lop_elector_stop: a thread of its own (production), plus a watchdog thread
 *     that ends leadership (on_stopped_leading) at the renew deadline even while the elector
 *     thread is blocked in a hung request;
 *   - lop_elector_tick: one synchronous step at the clock's current time (tests with a fake
 *     clock; never mix with start).
 * Lease watch events fed through lop_elector_notify_lease_changed make a standby try at once when
 * the lease is released instead of waiting for its next retry.
 *
 * Thread-safety: lop_elector_is_leader, _leader, _identity, _notify_lease_changed, _notify_lease_event,
 * _stats and _lost are safe from any thread at any time. start/stop/tick/free are called from one
 * controlling thread. Callbacks run on the elector's threads (or the thread calling tick/stop).
 * on_started_leading and on_stopped_leading are serialized and strictly alternate (a callback lock
 * is held across them, so the host may block in them, e.g. to drain workers); they may call the
 * query functions but must not call stop/free. on_new_leader runs under no elector lock.
 */
#ifndef LOP_KUBE_LEADERELECTION_LEADERELECTION_H
#define LOP_KUBE_LEADERELECTION_LEADERELECTION_H

#include "host/kube/leaderelection/lease.h"
#include "host/util/clock.h"
#include "host/util/err.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct lop_elector lop_elector_t;

/* What happens when a leader loses the lease (renew deadline passed). */
typedef enum lop_elector_on_loss {
    LOP_ELECTOR_ON_LOSS_EXIT = 0,    /* default: stop campaigning; lop_elector_lost() turns true and
                                        the host exits non-zero (controller-runtime's behaviour) */
    LOP_ELECTOR_ON_LOSS_RESTART = 1, /* step down and campaign again */
} lop_elector_on_loss_t;

typedef struct lop_elector_callbacks {
    /* This replica became leader. Start the workers. */
    void (*on_started_leading)(void *ud);
    /* This replica stopped leading (renew deadline passed, or stop). Called exactly once per
     * on_started_leading, after is_leader() has turned false. Stop the workers. */
    void (*on_stopped_leading)(void *ud);
    /* The holder this replica observes changed (including to itself; "" when released).
     * identity is borrowed for the call. */
    void (*on_new_leader)(void *ud, const char *identity);
    void *ud;
} lop_elector_callbacks_t;

typedef struct lop_elector_config {
    const char *identity;       /* required, non-empty; copied (see lop_elector_identity_new) */
    const char *name;           /* for log lines, e.g. "ns/lease-name"; copied; NULL = client's */
    lop_lease_client_t *client; /* required; borrowed, must outlive the elector */
    const lop_clock_t *clock;   /* NULL = lop_clock_system; borrowed */
    int64_t lease_duration_ns;  /* client-go default 15 s; written as whole seconds (>= 1) */
    int64_t renew_deadline_ns;  /* default 10 s */
    int64_t retry_period_ns;    /* default 2 s */
    bool release_on_cancel;     /* release the lease on stop when leading */
    lop_elector_on_loss_t on_loss;
    lop_elector_callbacks_t callbacks;
    uint64_t jitter_seed; /* 0 = random; set for reproducible tests */
} lop_elector_config_t;

/* Fill *cfg with the defaults (15 s / 10 s / 2 s, release on cancel, exit on loss). */
void lop_elector_config_defaults(lop_elector_config_t *cfg);

/*
 * Check cfg as client-go does: identity non-empty, client present, lease duration >= 1 s,
 * lease duration > renew deadline > 1.2 × retry period, retry period > 0.
 * Returns LOP_OK or LOP_EINVAL with a message naming the values (e.g. "leader election: lease
 * duration (10s) must be greater than renew deadline (10s)").
 */
LOP_MUST_CHECK lop_rc_t lop_elector_config_validate(const lop_elector_config_t *cfg, lop_err_t *err);

/* Validate cfg and create an elector (not yet running). NULL on a bad config, err filled. */
lop_elector_t *lop_elector_new(const lop_elector_config_t *cfg, lop_err_t *err);

/* Stop (as lop_elector_stop) if needed and free. NULL is a no-op. No other thread may still call
 * into e (e.g. a watch feeding notifications): stop those first. */
void lop_elector_free(lop_elector_t *e);

/*
 * Run the elector on a new thread. LOP_EINVAL if already started or stopped; LOP_ERR if the
 * thread cannot be created.
 */
LOP_MUST_CHECK lop_rc_t lop_elector_start(lop_elector_t *e);

/*
 * Stop campaigning: join the thread (if started), then if leading turn is_leader() false, call
 * on_stopped_leading, and (release_on_cancel) release the lease, retrying on conflict while the
 * lease is still ours, for at most a few attempts. Idempotent. Blocks for at most one in-flight
 * lease request plus the release requests.
 */
void lop_elector_stop(lop_elector_t *e);

/*
 * One synchronous step at the clock's current time: check the renew deadline, then (when due, or
 * when a notification asked for it) make one acquire/renew attempt. Returns the monotonic time
 * (ns) at which the next step is due; INT64_MAX once stopped or lost (exit mode).
 * Not to be used together with lop_elector_start.
 */
int64_t lop_elector_tick(lop_elector_t *e);

/*
 * Feed a Lease watch event. rec is the Lease's spec and rv its resourceVersion (both borrowed);
 * rec NULL means the Lease was deleted. A standby records the observation (a change restarts its
 * local expiry timer) and, when the holder is empty (a release), tries to acquire at once (its
 * thread wakes; in tick mode the next lop_elector_tick is due now). A deletion only drops the
 * observation: the Lease is recreated at the next regular attempt, as client-go does (trying at
 * once would shorten the window in which a leader that does not know of the deletion still
 * believes it leads). A leader ignores notifications. Other holders cost no extra request.
 */
void lop_elector_notify_lease_changed(lop_elector_t *e, const lop_lease_record_t *rec, const char *rv);

/*
 * Same, from a watch event on the Lease: type "ADDED", "MODIFIED" or "DELETED" and the Lease object
 * (borrowed). Other types (BOOKMARK, ERROR) are ignored. Returns LOP_EINVAL (err filled, nothing
 * recorded) when the object is not a decodable Lease.
 */
LOP_MUST_CHECK lop_rc_t lop_elector_notify_lease_event(lop_elector_t *e, const char *type, const json_t *obj,
                                                       lop_err_t *err);

/* True while this replica leads and its last successful renew is within the renew deadline. */
bool lop_elector_is_leader(lop_elector_t *e);
/* While this replica leads: ns (on the elector's clock) until its renew deadline, i.e. how much
 * longer it may act as the leader without another successful renew (the deadline is counted from
 * the START of the last successful renew attempt); 0 when it does not lead or the deadline passed. */
int64_t lop_elector_leading_left_ns(lop_elector_t *e);
/* True once leadership was lost in exit mode: the host should exit non-zero. */
bool lop_elector_lost(lop_elector_t *e);
/* This replica's identity. Borrowed, valid until free. */
const char *lop_elector_identity(const lop_elector_t *e);
/* Copy of the last observed holder ("" when none or unknown). Caller frees. */
char *lop_elector_leader(lop_elector_t *e);

/* Counters for tests, metrics and logs. */
typedef struct lop_elector_stats {
    long attempts;     /* acquire/renew attempts */
    long acquisitions; /* times this replica became leader */
    long losses;       /* times it lost leadership by the renew deadline */
    long releases;     /* successful releases */
} lop_elector_stats_t;
lop_elector_stats_t lop_elector_stats(lop_elector_t *e);

/*
 * A new identity "<hostname>_<16 random hex digits>" (hostname "unknown" if unavailable).
 * Caller frees.
 */
char *lop_elector_identity_new(void);

#endif
