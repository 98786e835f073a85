/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_review.h — the wire format of the two reviews the webhook server answers:
 * AdmissionReview (admission.k8s.io/v1, k8s.io/api/admission/v1/types.go) and ConversionReview
 * (apiextensions.k8s.io/v1, k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/types.go).
 * Transport-free: a body in, an HTTP status and a body out, so it is tested without sockets.
 *
 * AdmissionReview response (HTTP 200):
 *   {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{
 *      "uid":<request.uid>,"allowed":<bool>,
 *      "status":{"code":<res.code or 403>,"message":<res.message>}     (denied only)
 *      "warnings":[...]                                                 (when any)
 *      "patchType":"JSONPatch","patch":<base64 RFC 6902>}}               (allowed, object changed)
 * The patch is lop_jsonpatch_diff(request.object, res.patched_json); no patch when they are equal.
 * ConversionReview response (HTTP 200):
 *   {"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{
 *      "uid":<request.uid>,"convertedObjects":[... same order ...],"result":{"status":"Success"}}}
 *   or, when any object fails, no convertedObjects and
 *      "result":{"status":"Failure","message":"<reason>"}   (the API server fails the whole review)
 * A body that is not such a review (not JSON, wrong apiVersion/kind, no request object, no uid,
 * for conversion no desiredAPIVersion or objects array) answers 400 with a plain-text message.
 *
 * Thread-safety: pure apart from the dispatcher it calls; safe from any thread.
 */
#ifndef LOP_RUNTIME_WEBHOOK_WEBHOOK_REVIEW_H
#define LOP_RUNTIME_WEBHOOK_WEBHOOK_REVIEW_H

#include "host/runtime/webhook/webhook_server.h"
#include "host/util/buf.h"

#include <stdbool.h>

/* One review's answer: the HTTP status, the body (JSON when json is true, else plain text). */
typedef struct lop_webhook_reply {
    int status;
    bool json;
    lop_buf_t body;
} lop_webhook_reply_t;

/* Answer the AdmissionReview body (len bytes, NUL-terminated) sent to path, through d->admit.
 * Fills *r (its body is the caller's: lop_buf_free). Status 200, 400, 404 or 500. */
void lop_webhook_review_admission(const lop_webhook_dispatch_t *d, const char *path, const char *body, size_t len,
                                  lop_webhook_reply_t *r);

/* Answer the ConversionReview body, through d->convert. Status 200, 400 or 404 (no converter). */
void lop_webhook_review_conversion(const lop_webhook_dispatch_t *d, const char *body, size_t len,
                                   lop_webhook_reply_t *r);

#endif
