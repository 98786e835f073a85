/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lease.h — the coordination.k8s.io/v1 Lease record used for leader election (api
 * coordination/v1/types.go; MicroTime times), its JSON encoding, and the "lease client": the three
 * calls an elector makes on one Lease object (get, create, update). Mirrors client-go's
 * resourcelock.Interface for a LeaseLock.
 *
 * Implementations of the lease client:
 *   - lop_lease_client_memory_new: an in-memory Lease store shared by several handles, with
 *     per-handle fault injection and call counters (unit tests, other engineers' tests);
 *   - lop_lease_client_rest_new (lease_rest.c, when the REST client is available): the real one.
 *
 * Ownership: a lop_lease_record_t owns its holder_identity string (free with
 * lop_lease_record_cleanup). A lease client is owned by whoever created it (lop_lease_client_free).
 *
 * Thread-safety: records are plain data. A lease client handle is used by one thread at a time
 * (the elector's); the in-memory store is internally locked, so many handles (one per elector,
 * on different threads) may share it.
 */
#ifndef LOP_KUBE_LEADERELECTION_LEASE_H
#define LOP_KUBE_LEADERELECTION_LEASE_H

#include "host/util/clock.h"
#include "host/util/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest resourceVersion accepted, NUL included (etcd revisions are at most 20 digits). */
#define LOP_LEASE_RV_MAX 64

/* The Lease spec as leader election uses it (client-go's LeaderElectionRecord). */
typedef struct lop_lease_record {
    char *holder_identity;          /* owned; NULL and "" both mean "no holder" */
    int32_t lease_duration_seconds; /* 0 = absent */
    int64_t acquire_time_ns;        /* Unix wall ns; 0 = absent */
    int64_t renew_time_ns;          /* Unix wall ns; 0 = absent */
    int32_t lease_transitions;
} lop_lease_record_t;

#define LOP_LEASE_RECORD_INIT \
    {                         \
        NULL, 0, 0, 0, 0      \
    }

/* Release the holder string and zero the record. Safe on a zeroed record. */
void lop_lease_record_cleanup(lop_lease_record_t *r);
/* Deep copy src into dst (dst's previous contents are released first). */
void lop_lease_record_copy(lop_lease_record_t *dst, const lop_lease_record_t *src);
/* Replace the holder with a copy of id (NULL = none). */
void lop_lease_record_set_holder(lop_lease_record_t *r, const char *id);
/* The holder, never NULL ("" when none). Borrowed from r. */
const char *lop_lease_record_holder(const lop_lease_record_t *r);
/* True when every field is equal (holder NULL equals ""); what "the record changed" means. */
bool lop_lease_record_equal(const lop_lease_record_t *a, const lop_lease_record_t *b);

/*
 * Encode the record as a Lease spec object: holderIdentity (always, "" when none),
 * leaseDurationSeconds (when > 0), acquireTime/renewTime as MicroTime with exactly six fraction
 * digits (when non-zero), leaseTransitions (always). Returns a new reference.
 */
json_t *lop_lease_spec_to_json(const lop_lease_record_t *r);
/*
 * Encode a whole Lease object {apiVersion, kind, metadata{name, namespace, resourceVersion?}, spec}.
 * rv NULL or "" omits resourceVersion (as a create must). Returns a new reference.
 */
json_t *lop_lease_to_json(const char *ns, const char *name, const char *rv, const lop_lease_record_t *r);

/*
 * Decode a Lease spec object into *out (previous contents released). A NULL or JSON-null spec gives
 * an empty record; absent or null fields are zero. Times are accepted in any RFC 3339 form (the
 * client is lenient in what it reads, strict in what it writes).
 * Errors: LOP_EINVAL with a message naming the field when a field has the wrong type or range or a
 * time does not parse; *out is then empty.
 */
LOP_MUST_CHECK lop_rc_t lop_lease_spec_from_json(const json_t *spec, lop_lease_record_t *out, lop_err_t *err);
/*
 * Decode a whole Lease object: its spec into *out and metadata.resourceVersion into rv
 * (LOP_LEASE_RV_MAX bytes; "" when absent; rv may be NULL). Errors as above, plus LOP_EINVAL when
 * the value is not an object, kind is present and not "Lease", or the resourceVersion is too long.
 */
LOP_MUST_CHECK lop_rc_t lop_lease_from_json(const json_t *obj, lop_lease_record_t *out, char *rv, lop_err_t *err);
/* Same, parsing JSON text of len bytes first (parse errors: LOP_EINVAL naming line and column). */
LOP_MUST_CHECK lop_rc_t lop_lease_from_text(const char *text, size_t len, lop_lease_record_t *out, char *rv,
                                            lop_err_t *err);

/* ------------------------------------------------------------------------------------------ */
/* The lease client: get/create/update on one Lease, bound at construction to namespace/name.  */

typedef struct lop_lease_client_ops {
    /* Read the Lease. LOP_OK: *out and rv (LOP_LEASE_RV_MAX bytes) filled. LOP_ENOTFOUND when it
     * does not exist. Other rcs for transport/API failures, with err filled. */
    lop_rc_t (*get)(void *ud, lop_lease_record_t *out, char *rv, lop_err_t *err);
    /* Create the Lease with rec. LOP_OK: rv_out (LOP_LEASE_RV_MAX bytes) holds the new
     * resourceVersion. LOP_EEXIST when it already exists. */
    lop_rc_t (*create)(void *ud, const lop_lease_record_t *rec, char *rv_out, lop_err_t *err);
    /* Replace the Lease's spec with rec, conditional on resourceVersion rv (never empty). LOP_OK:
     * rv_out holds the new resourceVersion. LOP_ECONFLICT when rv is stale, LOP_ENOTFOUND when the
     * Lease was deleted. */
    lop_rc_t (*update)(void *ud, const lop_lease_record_t *rec, const char *rv, char *rv_out, lop_err_t *err);
    /* Release ud. May be NULL. */
    void (*free)(void *ud);
} lop_lease_client_ops_t;

typedef struct lop_lease_client {
    const lop_lease_client_ops_t *ops;
    void *ud;
    char *description; /* owned, e.g. "leases/ns/name"; used in log lines */
} lop_lease_client_t;

/* Wrap ops/ud into a new client (for other implementations). description is copied. */
lop_lease_client_t *lop_lease_client_new(const lop_lease_client_ops_t *ops, void *ud, const char *description);
/* Calls ops->free(ud) and frees the client. NULL is a no-op. */
void lop_lease_client_free(lop_lease_client_t *c);

LOP_MUST_CHECK static inline lop_rc_t lop_lease_get(lop_lease_client_t *c, lop_lease_record_t *out, char *rv,
                                                    lop_err_t *err)
{
    return c->ops->get(c->ud, out, rv, err);
}
LOP_MUST_CHECK static inline lop_rc_t lop_lease_create(lop_lease_client_t *c, const lop_lease_record_t *rec,
                                                       char *rv_out, lop_err_t *err)
{
    return c->ops->create(c->ud, rec, rv_out, err);
}
LOP_MUST_CHECK static inline lop_rc_t lop_lease_update(lop_lease_client_t *c, const lop_lease_record_t *rec,
                                                       const char *rv, char *rv_out, lop_err_t *err)
{
    return c->ops->update(c->ud, rec, rv, rv_out, err);
}

/* True when s is a valid DNS-1123 subdomain (what Lease names and namespaces must be), which is
 * also safe to put in a URL path unescaped. */
bool lop_lease_name_valid(const char *s);

/* ------------------------------------------------------------------------------------------ */
/* The real lease client over the REST client (rest.h).                                        */

struct lop_rest_client;

/*
 * A lease client for Lease ns/name through rest (borrowed; must outlive the result). Each request
 * is limited to timeout_ms (<= 0: 10 s); pass about the renew deadline so a hung request cannot
 * outlive leadership by much. Creates and updates send fieldManager=luaop-leader-election; an
 * update keeps the metadata of the Lease last read (labels, annotations, ownerReferences).
 * Returns NULL with LOP_EINVAL in err when ns or name is not a valid DNS-1123 subdomain.
 */
lop_lease_client_t *lop_lease_client_rest_new(struct lop_rest_client *rest, const char *ns, const char *name,
                                              long timeout_ms, lop_err_t *err);

/* ------------------------------------------------------------------------------------------ */
/* In-memory Lease store (one Lease), shared by any number of client handles.                 */

typedef struct lop_lease_store lop_lease_store_t;

/* Called (under no lock) after every successful create/update, with the stored record and its
 * new resourceVersion: lets a test feed "watch events" to electors. Borrowed for the call only. */
typedef void (*lop_lease_store_change_fn)(void *ud, const lop_lease_record_t *rec, const char *rv);

/* A new, empty store (the Lease does not exist). Free with lop_lease_store_free after every
 * client handle on it has been freed. */
lop_lease_store_t *lop_lease_store_new(void);
void lop_lease_store_free(lop_lease_store_t *s);
/* Install (or clear, fn NULL) the change hook. */
void lop_lease_store_on_change(lop_lease_store_t *s, lop_lease_store_change_fn fn, void *ud);
/* Copy the stored record into *out and its rv into rv (may be NULL). LOP_ENOTFOUND when absent. */
LOP_MUST_CHECK lop_rc_t lop_lease_store_peek(lop_lease_store_t *s, lop_lease_record_t *out, char *rv);
/* Number of successful writes (creates + updates) so far. */
long lop_lease_store_writes(lop_lease_store_t *s);

/* A client handle on the store (borrowed: the store must outlive the handle). */
lop_lease_client_t *lop_lease_client_memory_new(lop_lease_store_t *s, const char *description);

/* Which calls a fault applies to (bit mask). */
enum { LOP_LEASE_OP_GET = 1, LOP_LEASE_OP_CREATE = 2, LOP_LEASE_OP_UPDATE = 4, LOP_LEASE_OP_ALL = 7 };

/*
 * Make the next `count` calls of this handle matching `ops` fail with rc (count < 0: until
 * cleared with count 0) without touching the store. rc LOP_ECONFLICT on update simulates a lost
 * race; LOP_EAGAIN simulates an unreachable server. c must come from lop_lease_client_memory_new.
 */
void lop_lease_client_memory_fail(lop_lease_client_t *c, int ops, lop_rc_t rc, int count);
/* Calls made through this handle so far (including failed ones), per op. */
typedef struct lop_lease_call_counts {
    long get, create, update;
} lop_lease_call_counts_t;
lop_lease_call_counts_t lop_lease_client_memory_calls(lop_lease_client_t *c);

#endif
