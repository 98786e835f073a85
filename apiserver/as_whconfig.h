/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_whconfig.h — MutatingWebhookConfiguration and ValidatingWebhookConfiguration
 * (admissionregistration.k8s.io/v1) on write: the defaults the API server sets and the shape checks
 * it makes (k8s.io/kubernetes pkg/apis/admissionregistration/v1/defaults.go and
 * pkg/apis/admissionregistration/validation/validation.go; a subset, listed in apiserver/README.md).
 *
 * Loop thread only.
 */
#ifndef LOP_APISERVER_AS_WHCONFIG_H
#define LOP_APISERVER_AS_WHCONFIG_H

#include "apiserver/as_internal.h"

/* True when res is one of the two webhook configuration resources. */
bool as_whconfig_is(const as_res_t *res);
/* Fill, on every webhooks[] entry, what is absent: failurePolicy "Fail", matchPolicy
 * "Equivalent", timeoutSeconds 10, namespaceSelector and objectSelector {}, every rule's scope "*",
 * and on mutating webhooks reinvocationPolicy "Never". Modifies obj in place. */
void as_whconfig_default(const as_res_t *res, json_t *obj);
/* 0 when obj is well formed; else -1 after replying 422 naming the first bad field
 * (webhooks[i].name required and unique, clientConfig with exactly one of url (https) / service,
 * admissionReviewVersions containing "v1", sideEffects None|NoneOnDryRun, failurePolicy
 * Fail|Ignore, matchPolicy Exact|Equivalent, timeoutSeconds 1..30, reinvocationPolicy
 * Never|IfNeeded). */
int as_whconfig_validate(as_req_t *q, const json_t *obj);

#endif
