/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_authn.h — authentication: who a request is (k8s.io/apiserver/pkg/authentication).
 *
 * Identities come from
 *   - the --token-file, kube-apiserver's static token CSV `token,user,uid[,"group1,group2"]`
 *     (k8s.io/apiserver/plugin/pkg/authenticator/token/tokenfile); a line holding only a token is
 *     the user "admin" in system:masters (this server's older one-token-per-line format);
 *   - service-account tokens this server mints (TokenRequest, as_review.c): opaque random strings
 *     kept in memory (no JWT), valid until their expiry while their ServiceAccount exists with
 *     the uid it had; the user is system:serviceaccount:NS:NAME in system:serviceaccounts and
 *     system:serviceaccounts:NS (k8s.io/apiserver/pkg/authentication/serviceaccount);
 *   - a client certificate verified against --client-ca: CN the user, each O a group
 *     (k8s.io/apiserver/pkg/authentication/request/x509);
 *   - in RBAC mode without a token file holding a system:masters token, a random admin token
 *     made at start (the one the written kubeconfig carries).
 * Every authenticated user is also in system:authenticated (kube-apiserver's group adder). When
 * no credentials are configured (no token file, no client CA, AlwaysAllow) every request is
 * accepted: a known service-account token still names its account, anything else is "admin" in
 * system:masters.
 *
 * Tokens are valid for audiences: static and admin tokens for the API server's own audience
 * (AS_API_AUDIENCE, kube-apiserver's default --api-audiences), minted ones for those they were
 * requested for (that one when none were).
 *
 * Loop thread only (srv->authn is built before the thread starts and freed after it stopped).
 */
#ifndef LOP_APISERVER_AS_AUTHN_H
#define LOP_APISERVER_AS_AUTHN_H

#include "apiserver/as_internal.h"

#define AS_API_AUDIENCE "https://kubernetes.default.svc.cluster.local"

/* user.Info: a user name, uid ("" when none) and groups. Owned by whoever got it from _new. */
typedef struct as_user {
    char *name, *uid;
    char **groups;
    size_t ngroups;
} as_user_t;

as_user_t *as_user_new(const char *name, const char *uid);
void as_user_add_group(as_user_t *u, const char *group);
bool as_user_in_group(const as_user_t *u, const char *group);
void as_user_free(as_user_t *u);
/* {"username", "uid" (left out when empty), "groups"} as TokenReview's status.user and
 * SelfSubjectReview's status.userInfo show it. New reference. */
json_t *as_user_json(const as_user_t *u);

/* Build srv->authn: read token_file (NULL for none; LOP_EINVAL when unreadable or empty) and,
 * when rbac, make the admin token unless the file has a system:masters token. */
LOP_MUST_CHECK lop_rc_t as_authn_init(lop_apiserver_t *srv, const char *token_file, bool rbac, lop_err_t *err);
void as_authn_free(lop_apiserver_t *srv);
/* The token the written kubeconfig carries (borrowed), or NULL when none is needed. */
const char *as_authn_kubeconfig_token(const lop_apiserver_t *srv);
/* Whether a request must carry valid credentials (else 401). */
bool as_authn_required(const lop_apiserver_t *srv);

/* The user of request q (new, the caller frees it), or NULL when it must be answered 401. */
as_user_t *as_authn_request(as_req_t *q);
/* TokenReview: the user token is valid for (new), or NULL. audiences (borrowed JSON array of
 * strings, NULL or empty = the API server's audience) are those asked for; *auds_out (when not
 * NULL) gets the ones the token is valid for among them (new reference; set only on success). */
as_user_t *as_authn_token(lop_apiserver_t *srv, const char *token, const json_t *audiences, json_t **auds_out);
/* Mint a service-account token for ns/name (the account's uid sa_uid) valid for audiences
 * (borrowed array; NULL or empty = the API server's audience) until now + expiration_s seconds
 * (*expires_out: unix seconds). Returns the token (borrowed; valid while srv lives). */
const char *as_authn_mint_sa(lop_apiserver_t *srv, const char *ns, const char *name, const char *sa_uid,
                             const json_t *audiences, int64_t expiration_s, int64_t *expires_out);

#endif
