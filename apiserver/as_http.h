/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_http.h — the request entry point: authentication, injected latency and faults, URL routing
 * to discovery, OpenAPI, resources and subresources (kubernetes.io/docs/reference/using-api/api-concepts/),
 * Accept negotiation and verb dispatch.
 *
 * Loop thread only.
 */
#ifndef LOP_APISERVER_AS_HTTP_H
#define LOP_APISERVER_AS_HTTP_H

#include "apiserver/as_internal.h"

/* evhttp's generic callback (arg is the lop_apiserver_t): serves r, after srv->latency_ms when set. */
void as_http_handle(struct evhttp_request *r, void *arg);
/* Free the requests still waiting out srv->latency_ms (their timers with them); the server's loop
 * has stopped. evhttp_free then frees the requests themselves with their connections. */
void as_http_drop_delayed(lop_apiserver_t *srv);

#endif
