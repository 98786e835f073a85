/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_authz.h — authorization: may this user do this (--authorization-mode).
 *
 * AlwaysAllow allows everything. RBAC is kube-apiserver's chain for it: members of
 * system:masters are allowed everything first (the privileged-groups authorizer), then the RBAC
 * authorizer (k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/rbac.go) walks the stored
 * ClusterRoleBindings, then — for a namespaced request — the RoleBindings of that namespace,
 * and allows when a rule of a bound role matches: verbs ("*"), apiGroups ("*"), resources
 * ("*", "<resource>/<sub>", and "*" followed by "/<sub>"), resourceNames (empty = any), or for non-resource
 * requests nonResourceURLs ("*", exact, or a prefix ending in "*"). Subjects: User (name),
 * Group (one of the user's groups), ServiceAccount (system:serviceaccount:NS:NAME, NS defaulting
 * to the RoleBinding's). A RoleBinding to a ClusterRole grants its rules in that namespace only.
 * A binding whose role is missing adds `<kind>.rbac.authorization.k8s.io "<name>" not found` to
 * the denial's reason. RBAC never denies outright (denial = no rule allowed).
 *
 * The bootstrap policy a cluster is created with is built in rather than stored: every
 * authenticated user may get the discovery/health/version/OpenAPI paths (system:discovery,
 * system:public-info-viewer) and create the self reviews (system:basic-user). Aggregated
 * ClusterRoles (aggregationRule) are not aggregated.
 *
 * Loop thread only (reads the store).
 */
#ifndef LOP_APISERVER_AS_AUTHZ_H
#define LOP_APISERVER_AS_AUTHZ_H

#include "apiserver/as_authn.h"
#include "apiserver/as_reqinfo.h"

typedef struct as_decision {
    bool allowed;
    char reason[1024]; /* "RBAC: allowed by ..." / the missing roles, or "" */
} as_decision_t;

/* Decide whether u may do a under srv's authorization mode. */
void as_authorize(lop_apiserver_t *srv, const as_user_t *u, const as_attrs_t *a, as_decision_t *d);
/* Answer q 403 Forbidden the way kube-apiserver's responsewriters.Forbidden does:
 * `<resource>[.<group>] ["<name>"] is forbidden: User "<u>" cannot <verb> resource "<res>[/<sub>]"
 * in API group "<g>" in the namespace "<ns>"|at the cluster scope[: <reason>]`, or
 * `forbidden: User "<u>" cannot <verb> path "<path>"` for non-resource requests. */
/* SelfSubjectRulesReview's status for u in namespace ns: {resourceRules, nonResourceRules,
 * incomplete, evaluationError?} — the rules of every binding that applies (masters, and
 * AlwaysAllow, get one "*" rule of each kind). New reference. */
json_t *as_authz_rules(lop_apiserver_t *srv, const as_user_t *u, const char *ns);
/* The impersonation filter (k8s.io/apiserver/pkg/endpoints/filters/impersonation.go): with an
 * Impersonate-User header (and any Impersonate-Group headers, an Impersonate-Uid), check that
 * q->user may `impersonate` users/NAME (serviceaccounts/NAME in NS for
 * system:serviceaccount:NS:NAME), groups/G and uids.authentication.k8s.io/U, then make q->user
 * that user: the groups given (a service account without any gets its two), plus
 * system:authenticated. False after answering 403. Under AlwaysAllow every step is allowed. */
bool as_impersonate(as_req_t *q);
void as_reply_forbidden(as_req_t *q, const as_user_t *u, const as_attrs_t *a, const char *reason);

#endif
