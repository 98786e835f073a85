/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_gzip.h — gzip Content-Encoding of large responses, as kube-apiserver's response writer does
 * it (k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/writers.go, APIResponseCompression):
 * a body over 128 KiB is compressed (gzip, level 1) when the request's Accept-Encoding names gzip
 * (not with q=0); the reply then carries Content-Encoding: gzip and Vary: Accept-Encoding.
 * Watch streams are never compressed.
 *
 * Loop thread.
 */
#ifndef LOP_APISERVER_AS_GZIP_H
#define LOP_APISERVER_AS_GZIP_H

#include "apiserver/as_internal.h"

#include <event2/buffer.h>

#define AS_GZIP_THRESHOLD (128u * 1024u)

/* True when the Accept-Encoding header value (NULL = none) accepts gzip. */
bool as_accepts_gzip(const char *accept_encoding);
/* Compress body in place and set the headers on q's reply when q accepts gzip and body is larger
 * than AS_GZIP_THRESHOLD; else leave both alone. Call just before sending the reply. */
void as_gzip_reply_body(as_req_t *q, struct evbuffer *body);

#endif
