/* SPDX-License-Identifier: Apache-2.0 */
/*
 * health.h — named health checks behind /healthz (liveness) and /readyz (readiness), answered the
 * way Kubernetes components answer them:
 *
 *   GET /healthz            200 "ok"                     when every check passes
 *   GET /readyz?verbose     200 "[+]ping ok\n...\nreadyz check passed\n"
 *   (any failure)           500 "[+]ping ok\n[-]informers-synced failed: 2 of 3 synced\n
 *                                readyz check failed\n"   (the listing is always given on failure)
 *   GET /readyz/<name>      200 "ok", or 500 "internal server error: <reason>\n"; 404 if unknown
 *   ?exclude=<name>         (repeatable) skips a check, listed as "[+]<name> excluded: ok"
 *
 * Components register checks by name: readyz "scripts", "informers-synced", ...; healthz
 * "workers-not-stuck", "event-loop", .... A "ping" check that always passes is present in the
 * healthz set from the start.
 *
 * Thread-safety: every function is safe from any thread. Checks run on the calling (HTTP) thread
 * in registration order, with the registry lock held: a check must be quick, must not block and
 * must not call lop_health_* itself. Once lop_health_remove returns, the check is not running and
 * will not run again, so its user data may be freed.
 */
#ifndef LOP_RUNTIME_HEALTH_H
#define LOP_RUNTIME_HEALTH_H

#include "host/util/buf.h"
#include "host/util/clock.h"
#include "host/util/err.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum lop_health_kind {
    LOP_HEALTHZ = 0, /* liveness: failing means restart the process */
    LOP_READYZ = 1,  /* readiness: failing means do not send work yet */
} lop_health_kind_t;

typedef struct lop_health lop_health_t;

/*
 * A check: return true when healthy. On failure write a short one-line reason into reason
 * (reason_len bytes, NUL-terminated; truncate as needed) and return false. ud is the pointer given
 * at registration.
 */
typedef bool (*lop_health_check_fn)(void *ud, char *reason, size_t reason_len);

/* New registry holding only healthz "ping". Never NULL. Free with lop_health_free (NULL ok). */
lop_health_t *lop_health_new(void);
void lop_health_free(lop_health_t *h);

/*
 * Register check fn under name (1..63 bytes of [a-z0-9.-_]) in the kind's set. The name is copied.
 * Errors: LOP_EINVAL for a bad name or NULL fn, LOP_EEXIST when the kind already has that name.
 */
LOP_MUST_CHECK lop_rc_t lop_health_add(lop_health_t *h, lop_health_kind_t kind, const char *name,
                                       lop_health_check_fn fn, void *ud, lop_err_t *err);
/* Unregister a check. LOP_ENOTFOUND when there is none by that name. */
LOP_MUST_CHECK lop_rc_t lop_health_remove(lop_health_t *h, lop_health_kind_t kind, const char *name);

/* "healthz" or "readyz". */
const char *lop_health_kind_name(lop_health_kind_t kind);

/*
 * Answer one probe request, appending the body to out and returning the HTTP status (200, 500,
 * or 404 when only names an unknown check).
 * only: a single check's name (the /readyz/<name> form), or NULL for all checks.
 * verbose: list each check even when all pass. exclude: array of nexclude names to skip
 * (names that match no check are ignored). Runs the checks (see thread-safety above).
 */
int lop_health_run(lop_health_t *h, lop_health_kind_t kind, const char *only, bool verbose, const char *const *exclude,
                   size_t nexclude, lop_buf_t *out);

/* ---------------------------------------------------------------- ready-made checks */

/*
 * A heartbeat: healthy while the component called lop_health_heartbeat_beat within the last
 * timeout_ns of the clock's monotonic time (e.g. "event-loop": the dispatcher beats from a timer;
 * if the loop stalls, the beats stop). Register with
 *   lop_health_add(h, LOP_HEALTHZ, "event-loop", lop_health_heartbeat_check, &hb, err);
 * Beat from any thread (lock-free). The struct is the caller's; it must outlive its registration.
 */
typedef struct lop_health_heartbeat {
    const lop_clock_t *clock; /* borrowed */
    int64_t timeout_ns;
    _Atomic int64_t last_ns;
    char what[64]; /* names the beating component in the failure reason */
} lop_health_heartbeat_t;

/* Start the heartbeat as if it beat now. what is copied (truncated to 63 bytes). */
void lop_health_heartbeat_init(lop_health_heartbeat_t *hb, const lop_clock_t *clock, int64_t timeout_ns,
                               const char *what);
void lop_health_heartbeat_beat(lop_health_heartbeat_t *hb);
/* lop_health_check_fn; ud is the lop_health_heartbeat_t. Reason: "<what> last beat 12.5s ago
 * (limit 10s)". */
bool lop_health_heartbeat_check(void *ud, char *reason, size_t reason_len);

/*
 * A flag another component sets: e.g. readyz "scripts" is set ok once a script set has loaded,
 * with the reason shown while it is not ("no script set loaded yet"). Any thread may set or check.
 * Initialise with lop_health_flag_init, release with lop_health_flag_cleanup.
 */
typedef struct lop_health_flag {
    pthread_mutex_t mu;
    bool ok;
    char reason[256];
} lop_health_flag_t;

void lop_health_flag_init(lop_health_flag_t *f, bool ok, const char *reason);
void lop_health_flag_cleanup(lop_health_flag_t *f);
/* Set the state; reason (copied, may be NULL) is reported while !ok. */
void lop_health_flag_set(lop_health_flag_t *f, bool ok, const char *reason);
/* lop_health_check_fn; ud is the lop_health_flag_t. */
bool lop_health_flag_check(void *ud, char *reason, size_t reason_len);

#endif
