/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certrotate.h — when the self-managed webhook certificates must change, and the change
 * (issue 21 part 3b; open-policy-agent/cert-controller's rotator is the reference behaviour, with
 * a CA overlap it does not have). No I/O: the Secret's four PEM values in, new values out, the
 * time passed in (Unix seconds from the caller's injected clock), so tests step a fake clock.
 *
 * The Secret (certrotator.h reads and writes it) holds:
 *   ca.crt   the CA bundle injected as caBundle: the current CA first, then older CAs still valid
 *   ca.key   the current CA's private key
 *   tls.crt  the serving certificate (signed by a CA of the bundle)
 *   tls.key  its private key
 *
 * The rules, checked in this order (lop_certrotate_decide; "lifetime" is notAfter minus the
 * time the certificate was made, notBefore + LOP_CERTGEN_BACKDATE_S):
 *   1. no usable CA (missing, not parsing, ca.key not its key)   -> CREATE: a new CA and serving
 *      certificate, the bundle the new CA alone
 *   2. the CA has less than 1/5 of its lifetime left             -> ROTATE_CA: a new CA at the
 *      head of the bundle, the old one kept behind it; the serving certificate is NOT re-issued
 *      yet, so clients that still trust only the old CA keep working
 *   3. the serving pair is missing or broken, is not for the configured names, has expired, or its
 *      issuer is not a valid CA of the bundle                    -> ISSUE_SERVING (current CA)
 *   4. the serving certificate was signed by an older CA of the bundle, and the current CA has been
 *      in the bundle for the overlap, min(1 h, CA lifetime / 10) -> ISSUE_SERVING; before that the
 *      next check is due when the overlap ends, and rule 5 waits for it too (only the new CA could
 *      sign a renewal, and not every client may trust it yet: only rule 3 overrides the overlap)
 *   5. the serving certificate has less than 1/5 of its lifetime left -> ISSUE_SERVING
 *   6. a CA of the bundle other than the current one has expired -> PRUNE it
 * and otherwise NONE, with the next check due when the first of those thresholds is reached.
 *
 * Thread-safety: no shared state.
 */
#ifndef LOP_RUNTIME_WEBHOOK_CERTROTATE_H
#define LOP_RUNTIME_WEBHOOK_CERTROTATE_H

#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Rotate when less than 1/LOP_CERTROTATE_LOOKAHEAD_DIV of a certificate's lifetime is left. */
#define LOP_CERTROTATE_LOOKAHEAD_DIV 5
/* The longest the serving certificate waits before moving to a new CA (seconds). */
#define LOP_CERTROTATE_OVERLAP_MAX_S 3600

typedef enum lop_certrotate_action {
    LOP_CERTROTATE_NONE = 0,
    LOP_CERTROTATE_CREATE,
    LOP_CERTROTATE_ROTATE_CA,
    LOP_CERTROTATE_ISSUE_SERVING,
    LOP_CERTROTATE_PRUNE,
} lop_certrotate_action_t;

/* "none", "create", "rotate-ca", "issue-serving", "prune". */
const char *lop_certrotate_action_name(lop_certrotate_action_t a);

/* What the decision looks at, all times Unix seconds (lop_certrotate_inspect fills it). */
typedef struct lop_certrotate_state {
    bool ca_ok; /* the bundle's first certificate is a CA and ca.key is its key */
    int64_t ca_made, ca_expires;
    bool tls_ok; /* tls.crt parses, tls.key is its key, and its names are the wanted ones */
    int64_t tls_made, tls_expires;
    bool tls_by_current;        /* signed by the current CA */
    int64_t tls_issuer_expires; /* notAfter of the bundle CA that signed it; 0 = none of them did */
    int64_t old_ca_expires_min; /* the earliest notAfter of the bundle's other CAs; 0 = none */
} lop_certrotate_state_t;

/* What to do at now_s, and in *next_s when to look again (Unix seconds; only meaningful for
 * NONE, and never later than the earliest threshold of the rules above). */
lop_certrotate_action_t lop_certrotate_decide(const lop_certrotate_state_t *st, int64_t now_s, int64_t *next_s);

/* The overlap of rule 4 for a CA of the given lifetime (seconds). */
int64_t lop_certrotate_overlap_s(int64_t ca_lifetime_s);

/* The Secret's values (PEM, malloc'd, NULL = absent). */
typedef struct lop_cert_secret {
    char *ca_crt, *ca_key, *tls_crt, *tls_key;
} lop_cert_secret_t;

void lop_cert_secret_free(lop_cert_secret_t *s);

typedef struct lop_certrotate_config {
    const char *ca_name;     /* the CA's CN ("luaop-webhook-ca" when NULL) */
    const char *cn;          /* the serving certificate's CN (the first DNS name when NULL) */
    const char *sans;        /* "DNS:svc.ns.svc,DNS:svc.ns.svc.cluster.local": required */
    int64_t ca_validity_s;   /* > 0 */
    int64_t cert_validity_s; /* > 0 */
} lop_certrotate_config_t;

/* Fill *st from s for cfg (nothing fails: what does not parse is "not ok"). */
void lop_certrotate_inspect(const lop_certrotate_config_t *cfg, const lop_cert_secret_t *s, lop_certrotate_state_t *st);

/*
 * Bring s up to date at now_s: decide, act, decide again, until NONE (at most a few steps).
 * *changed tells whether s was modified (then write it back); *next_s is when to call again;
 * what (may be NULL) gets the actions taken, comma-separated ("rotate-ca", "create"...).
 * LOP_OK, or the certgen error (s is then left as it was).
 */
LOP_MUST_CHECK lop_rc_t lop_certrotate_apply(const lop_certrotate_config_t *cfg, lop_cert_secret_t *s, int64_t now_s,
                                             bool *changed, int64_t *next_s, char *what, size_t what_len,
                                             lop_err_t *err);

#endif
