/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_convert.h — custom resources in another version than the one stored
 * (k8s.io/apiextensions-apiserver pkg/apiserver/conversion: nop_converter.go, webhook_converter.go).
 *
 * A CRD with spec.conversion.strategy None (the default) serves one object in every version by
 * rewriting its apiVersion only (as_view.h's as_served_obj; objects are stored in the version
 * they were written in, today's behaviour). With strategy Webhook (res->conv_client set), objects
 * are stored in the CRD's storage version (res->storage_av) and every read, list, watch event and
 * write in another served version is converted by a ConversionReview v1 POSTed to
 * spec.conversion.webhook.clientConfig (as_webhook.h: HTTPS, caBundle, service mapping), one
 * object per review, bounded by AS_CONVERT_TIMEOUT_S (kube-apiserver's 30 s).
 *
 * Loop thread only (the call blocks the loop, as admission calls do).
 */
#ifndef LOP_APISERVER_AS_CONVERT_H
#define LOP_APISERVER_AS_CONVERT_H

#include "apiserver/as_internal.h"

#define AS_CONVERT_TIMEOUT_S 30

/* True when obj (a stored object of res's collection) must go through res's conversion webhook
 * to be shown as to_av. */
bool as_convert_needed(const as_res_t *res, const json_t *obj, const char *to_av);
/* obj as to_av: a new reference (obj itself when no webhook call is needed; the webhook's
 * converted object otherwise), or NULL with msg (n bytes) set to kube-apiserver's message,
 * `conversion webhook for <group>/<version>, Kind=<kind> failed: <cause>` (the answer is 500). */
json_t *as_convert(lop_apiserver_t *srv, const as_res_t *res, const json_t *obj, const char *to_av, char *msg,
                   size_t n);

#endif
