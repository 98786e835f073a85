/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_proto.h — Kubernetes protobuf request bodies ("k8s\0" + runtime.Unknown,
 * k8s.io/apimachinery/pkg/runtime/serializer/protobuf/protobuf.go) of the few built-in kinds
 * kubectl's generator commands send, decoded into JSON.
 *
 * Pure function; any thread.
 */
#ifndef LOP_APISERVER_AS_PROTO_H
#define LOP_APISERVER_AS_PROTO_H

#include <jansson.h>
#include <stddef.h>

/* Decode body[0..len). Returns the object as JSON (new reference), or NULL with the reason in
 * errbuf (errlen bytes): not a Kubernetes protobuf message, malformed, or a kind not decoded
 * here (the caller answers 415). */
json_t *as_proto_decode(const char *body, size_t len, char *errbuf, size_t errlen);

#endif
