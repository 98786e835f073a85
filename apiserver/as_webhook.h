/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_webhook.h — one call of an admission or conversion webhook: the review POSTed as JSON over
 * HTTPS to a clientConfig (k8s.io/apiserver pkg/util/webhook: client.go, authentication.go), with
 * the server certificate verified against clientConfig.caBundle (base64 PEM) or, without one, the
 * system roots.
 *
 * clientConfig.url is used as is; clientConfig.service {namespace, name, port (443), path} becomes
 * https://NAME.NAMESPACE.svc:PORT/PATH, connected to the address the server's webhook_services
 * option maps it to (lop_apiserver_opts_t), the certificate checked for NAME.NAMESPACE.svc.
 *
 * The call is a blocking libcurl easy transfer made on the loop thread, bounded by timeout_s
 * (connect included); no proxy is ever used. Loop thread only.
 */
#ifndef LOP_APISERVER_AS_WEBHOOK_H
#define LOP_APISERVER_AS_WEBHOOK_H

#include "apiserver/as_internal.h"

/* POST body (borrowed) to the webhook. Returns the response body parsed as a JSON object (a new
 * reference) when the webhook answered 200 with one; else NULL with cause (n bytes) saying why,
 * in the API server's words: `failed to call webhook: Post "URL": <transport error>`, `received
 * invalid webhook response: ...`, or `the server responded with status code N`. */
json_t *as_webhook_post(lop_apiserver_t *srv, const json_t *client_config, long timeout_s, const json_t *body,
                        char *cause, size_t n);

#endif
