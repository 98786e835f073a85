/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_write.h — create (POST), update (PUT) and the write step every write ends in: system
 * metadata, the status subresource rules, generation, finalizer rules, no-op detection, dry run
 * and the commit (k8s.io/apiserver/pkg/registry/rest/create.go and update.go).
 *
 * Each function answers q once. Loop thread only.
 */
#ifndef LOP_APISERVER_AS_WRITE_H
#define LOP_APISERVER_AS_WRITE_H

#include "apiserver/as_internal.h"

/* POST to a collection. */
void as_handle_create(as_req_t *q);
/* PUT of one object, its /status or its /scale. */
void as_handle_update(as_req_t *q);
/* The request body as a JSON object (JSON, YAML or the protobuf kinds as_proto.h decodes).
 * Returns a new reference, or NULL after replying (400 malformed, 413 too large, 415 format). */
json_t *as_parse_body(as_req_t *q);
/* Finish a create (old == NULL) or an update of old (borrowed) to obj (stolen): validate, set the
 * system fields, record the managedFields entry (unless managed_done: server-side apply did) and
 * commit, answering code_ok with the stored object, or the error. */
void as_finish_write(as_req_t *q, const json_t *old, json_t *obj, int code_ok, bool managed_done);

#endif
