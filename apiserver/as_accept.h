/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_accept.h — Accept header negotiation, as k8s.io/apiserver/pkg/endpoints/handlers/negotiation
 * does it for the endpoints this server has.
 *
 * Pure function; any thread.
 */
#ifndef LOP_APISERVER_AS_ACCEPT_H
#define LOP_APISERVER_AS_ACCEPT_H

#include "apiserver/as_internal.h"

/* Negotiate an Accept header (NULL or blank = no preference) as the API server does: its media
 * ranges are tried by quality (q=0 refuses), then specificity, then order; the first one this
 * server can answer wins. JSON is served for every range but protobuf and CBOR; `stream` must be
 * "watch" when given; `as`/`g`/`v` ask for a conversion, which only a resource endpoint
 * (allow_conv) grants and only into PartialObjectMetadata, PartialObjectMetadataList or Table
 * of meta.k8s.io v1 or v1beta1: a range asking for another one is skipped, so a later plain
 * range is served. *out gets the winner's conversion. False when no
 * range is acceptable (the caller answers 406 NotAcceptable). */
bool as_accept_negotiate(const char *accept, bool allow_conv, as_conv_t *out);

#endif
