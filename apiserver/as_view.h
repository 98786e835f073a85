/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_view.h — how a stored object is shown to a client: in the apiVersion of the endpoint that
 * serves it (core/v1 and events.k8s.io/v1 Events are two views of one store), and as the
 * metadata-only PartialObjectMetadata an `as=` Accept parameter asks for
 * (k8s.io/apimachinery/pkg/apis/meta/v1/types.go), and the Scale a /scale subresource shows.
 *
 * Pure functions over immutable stored objects; loop thread or any thread (no server state).
 */
#ifndef LOP_APISERVER_AS_VIEW_H
#define LOP_APISERVER_AS_VIEW_H

#include "apiserver/as_internal.h"

/* obj as served by res: the same reference (incremented) when its apiVersion already is res's,
 * else a copy with apiVersion rewritten (and, for the other Event API, its fields renamed).
 * Returns a new reference the caller owns. */
json_t *as_served_obj(const as_res_t *res, const json_t *obj);
/* as_served_obj serialized compactly (keys sorted when res's collection sorts them). Returns a
 * malloc'd string of *len bytes ("{}" if encoding fails); never NULL. */
char *as_dump_obj(const as_res_t *res, const json_t *obj, size_t *len);

/* The span [*ms, *me) of the "metadata" object member of the serialized object json[0..len).
 * False when there is none (or it is not an object). */
bool as_partial_meta_span(const char *json, size_t len, size_t *ms, size_t *me);
/* Append {"kind":"PartialObjectMetadata","apiVersion":<conv's>,"metadata": (the caller appends
 * the metadata bytes and the closing brace). */
void as_partial_head(lop_buf_t *b, const as_conv_t *conv);
/* Append the PartialObjectMetadata of the serialized object json[0..len): its metadata bytes
 * as they are (an empty object when it has none). */
void as_partial_from_json(lop_buf_t *b, const as_conv_t *conv, const char *json, size_t len);

/* The autoscaling/v1 Scale of obj for a resource with a scale subresource: metadata (name,
 * namespace, uid, resourceVersion, creationTimestamp) copied, spec.replicas and status.replicas
 * read from res's paths (0 when absent), status.selector when it is a string (for a built-in
 * workload: its spec.selector as a selector string). New reference. */
json_t *as_scale_view(as_res_t *res, const json_t *obj);

#endif
