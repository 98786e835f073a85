/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_auth.h — authentication and authorization of metrics scrapes through the API server,
 * as controller-runtime's filters.WithAuthenticationAndAuthorization does for secure metrics
 * (pkg/metrics/filters; k8s.io/apiserver's delegating authenticator and authorizer):
 *   1. the request's `Authorization: Bearer <token>` goes to a TokenReview
 *      (POST /apis/authentication.k8s.io/v1/tokenreviews, no audiences: the API server's own);
 *      no token or not authenticated → 401 "Unauthorized", the review failing → 401
 *      "Authentication failed";
 *   2. the user it names (username, uid, groups) goes to a SubjectAccessReview for
 *      nonResourceAttributes {path: the request path, verb: the lower-case method}; the review
 *      failing → 500 "Authorization for user <u> failed", not allowed → 403 "Authorization
 *      denied for user <u>".
 * Answers are cached as the delegating configs controller-runtime builds cache them: a
 * TokenReview answer (either way) for LOP_METRICS_AUTH_TOKEN_TTL_S, an allowed SAR for
 * LOP_METRICS_AUTH_ALLOW_TTL_S, a denied one for LOP_METRICS_AUTH_DENY_TTL_S; failed calls are
 * not cached. So a scrape every 15 s costs one TokenReview a minute and one SAR per five minutes.
 * Tokens are cached by their SHA-256, never as written. Each call is bounded by
 * LOP_METRICS_AUTH_TIMEOUT_MS (controller-runtime's 10 s review timeouts): a check blocks its
 * caller (the metrics server's loop) at most that long per review, and the probes, served by
 * their own server, are never behind it.
 *
 * Thread-safety: lop_metrics_auth_check may be called from any thread (a mutex guards the caches;
 * it is not held during the API calls). Time comes from the injected clock's monotonic reading.
 */
#ifndef LOP_RUNTIME_METRICS_AUTH_H
#define LOP_RUNTIME_METRICS_AUTH_H

#include "host/kube/client/rest.h"
#include "host/util/clock.h"

#include <stddef.h>

#define LOP_METRICS_AUTH_TOKEN_TTL_S 60  /* DelegatingAuthenticatorConfig.CacheTTL */
#define LOP_METRICS_AUTH_ALLOW_TTL_S 300 /* DelegatingAuthorizerConfig.AllowCacheTTL */
#define LOP_METRICS_AUTH_DENY_TTL_S  30  /* DelegatingAuthorizerConfig.DenyCacheTTL */
#define LOP_METRICS_AUTH_TIMEOUT_MS  10000
#define LOP_METRICS_AUTH_MAX_ENTRIES 1024 /* per cache; the oldest goes first */

typedef struct lop_metrics_auth lop_metrics_auth_t;

/* New filter calling through rest (borrowed; must outlive the filter) on clock (borrowed; NULL =
 * the system clock). Never fails. */
lop_metrics_auth_t *lop_metrics_auth_new(lop_rest_client_t *rest, const lop_clock_t *clock);
void lop_metrics_auth_free(lop_metrics_auth_t *a);

/*
 * Decide one request: authorization is its Authorization header (NULL when absent), method its
 * HTTP method ("GET"), path its URL path. Returns the HTTP status to answer — 0 when the request
 * may be served, else 401, 403 or 500 with the plain-text reason in msg (n bytes).
 */
int lop_metrics_auth_check(lop_metrics_auth_t *a, const char *authorization, const char *method, const char *path,
                           char *msg, size_t n);

/* TokenReviews and SubjectAccessReviews sent so far (tests: the caches work). Any thread. */
long lop_metrics_auth_reviews(lop_metrics_auth_t *a);

#endif
