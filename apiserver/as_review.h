/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_review.h — the create-only, never stored review APIs and service-account tokens:
 *   authentication.k8s.io/v1 TokenReview, SelfSubjectReview (`kubectl auth whoami`);
 *   authorization.k8s.io/v1 SubjectAccessReview, SelfSubjectAccessReview (`kubectl auth can-i`),
 *   LocalSubjectAccessReview, SelfSubjectRulesReview (`kubectl auth can-i --list`)
 *   (k8s.io/kubernetes/pkg/registry/authentication and
 *   .../authorization: each answers 201 with the request echoed and its status filled);
 *   POST /api/v1/namespaces/NS/serviceaccounts/NAME/token (TokenRequest, `kubectl create token`).
 *
 * Each handler answers q once. Loop thread only.
 */
#ifndef LOP_APISERVER_AS_REVIEW_H
#define LOP_APISERVER_AS_REVIEW_H

#include "apiserver/as_internal.h"

/* Add the review kinds to the resource table (create_only rows) and the token subresource to
 * serviceaccounts. After as_registry_init. */
void as_review_register(lop_apiserver_t *srv);
/* POST to a create_only resource (q->res) by q->user. */
void as_review_create(as_req_t *q);
/* POST .../serviceaccounts/NAME/token. */
void as_review_token_request(as_req_t *q);

#endif
