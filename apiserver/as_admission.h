/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_admission.h — the admission webhook chain of a write, as kube-apiserver's
 * MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins run it
 * (k8s.io/apiserver pkg/admission/plugin/webhook: mutating/dispatcher.go, validating/dispatcher.go,
 * predicates/rules, predicates/namespace, predicates/object, request/admissionreview.go).
 *
 * The webhooks are those of the stored MutatingWebhookConfigurations / ValidatingWebhookConfigurations
 * (admissionregistration.k8s.io/v1), configurations in name order, webhooks in their order. A webhook
 * is called when one of its rules matches (operations, apiGroups, apiVersions, resources with
 * "<plural>/<sub>", "*" and star-slash-star, scope), its namespaceSelector matches the labels of the object's
 * namespace (cluster-scoped objects always match; a Namespace matches on its own labels) and its
 * objectSelector the labels of the object or of the old object. matchPolicy Equivalent is treated
 * as Exact: this server serves each group/resource in one version per CRD, so no other version of
 * the request's resource can match. The webhook configurations themselves are never admitted.
 *
 * Every call is a blocking HTTPS request on the loop thread, bounded by the webhook's
 * timeoutSeconds (as_webhook.h). Warnings of the responses are added to q's response headers as
 * `Warning: 299 - "<text>"`.
 *
 * Operations are "CREATE", "UPDATE" or "DELETE". Loop thread only.
 */
#ifndef LOP_APISERVER_AS_ADMISSION_H
#define LOP_APISERVER_AS_ADMISSION_H

#include "apiserver/as_internal.h"

/* Run the mutating webhooks on *objp (owned by the caller; replaced by the patched object when a
 * webhook returns a JSONPatch; NULL for DELETE, where patches are ignored); old is the stored object
 * (NULL for CREATE). reinvocationPolicy IfNeeded webhooks are called once more when a later webhook
 * changed the object. Returns true to go on; false once the request was answered: the denial
 * (status.code, default 403, `admission webhook "<name>" denied the request: <message>`), a failed
 * call under failurePolicy Fail (500, `Internal error occurred: failed calling webhook "<name>":
 * <cause>`; Ignore goes on as if allowed), or a dry run (dry) reaching a webhook with side effects
 * (400). */
bool as_admit_mutate(as_req_t *q, const char *op, json_t **objp, const json_t *old, bool dry);
/* Run the validating webhooks, one after another; obj and old are borrowed (either may be NULL as
 * above). Same answers as as_admit_mutate; patches are ignored. */
bool as_admit_validate(as_req_t *q, const char *op, const json_t *obj, const json_t *old, bool dry);

#endif
