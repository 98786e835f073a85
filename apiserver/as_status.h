/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_status.h — responses: JSON bodies, stored objects (their commit-time bytes reused when they
 * fit), metav1.Status errors with the message and details shapes of
 * k8s.io/apimachinery/pkg/api/errors/errors.go, request query helpers and the one log line
 * written per rejected request.
 *
 * Every as_reply_* sends exactly one reply on q and takes ownership of the json_t it is given.
 * Loop thread only.
 */
#ifndef LOP_APISERVER_AS_STATUS_H
#define LOP_APISERVER_AS_STATUS_H

#include "apiserver/as_internal.h"

/* A metav1.Status {kind, apiVersion, metadata:{}, status, message, reason, details, code}: status
 * "Success" below 400 (then no code), else "Failure"; empty message/reason and empty details are
 * left out. details is stolen (may be NULL). Returns a new reference. */
json_t *as_status_new(int code, const char *reason, const char *message, json_t *details);
/* A Status details object {name, group, kind}, leaving out NULL or empty members. New reference. */
json_t *as_details(const char *name, const char *group, const char *kind);
/* Reply code with body (stolen) as compact JSON plus a newline, keys sorted when asked. When the
 * request negotiated a metadata-only view (q->conv) and body is not a Status, the body is sent
 * as that view, or 406 when the view does not fit it. */
void as_reply_json(as_req_t *q, int code, json_t *body, bool sort_keys);
/* Reply code with len bytes of body (copied) as content type ctype. */
void as_reply_raw(as_req_t *q, int code, const char *ctype, const char *body, size_t len);
/* Reply with a Status whose message is printf(fmt, ...) (details stolen, may be NULL; a
 * details.retryAfterSeconds also sets Retry-After). Codes >= 400 log the rejection. */
void as_reply_status(as_req_t *q, int code, const char *reason, json_t *details, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Reply with err's code (500 when 0), reason and message as a Status. */
void as_reply_err(as_req_t *q, const lop_err_t *err);
/* Reply with a stored object as served by res, reusing wire (its commit-time serialization, may
 * be NULL) when the apiVersion matches; obj and wire are borrowed. */
void as_reply_stored(as_req_t *q, int code, as_res_t *res, const json_t *obj, as_blob_t *wire);
/* 404 NotFound: `<plural>[.<group>] "<name>" not found`, details.kind the plural. */
void as_reply_notfound(as_req_t *q, as_res_t *res, const char *name);
/* "<plural>[.<group>]" into buf (n bytes, truncated). */
void as_qualified_resource(const as_res_t *res, char *buf, size_t n);
/* "<Kind>[.<group>]" into buf (n bytes, truncated). */
void as_qualified_kind(const as_res_t *res, char *buf, size_t n);
/* A 422 Invalid on kind_qual/name with one cause {cause_reason, detail, field}; the message
 * reads `<kind_qual> "<name>" is invalid: <field>: <detail>`; details {name, group, kind: dkind}. */
void as_reply_invalid(as_req_t *q, const char *kind_qual, const char *dkind, const char *group, const char *name,
                      const char *cause_reason, const char *field, const char *detail);
/* 406 for a conversion that does not fit the response: PartialObjectMetadata of a list
 * (is_list), or PartialObjectMetadataList of one object (the API server decides this after
 * negotiation, so no later Accept range is tried). */
void as_reply_not_acceptable_conv(as_req_t *q, bool is_list);
/* The query parameter key (decoded; borrowed from q), or NULL. */
const char *as_query(as_req_t *q, const char *key);
/* True for the spellings of true that Go's strconv.ParseBool accepts ("true", "1", "t", ...). */
bool as_query_bool(const char *s);
/* Add a `Warning: 299 - "<text>"` header to q's response (quotes and backslashes escaped, control
 * characters dropped), as kube-apiserver sends warnings (k8s.io/apiserver/pkg/warning). */
void as_add_warning(as_req_t *q, const char *text);
/* Log `request rejected method=... path=... code=... reason=...` at info level. */
void as_log_reject(as_req_t *q, int code, const char *reason);

#endif
