/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_util.h — small helpers of the local API server: refcounted blobs, UIDs and generated-name
 * suffixes, timestamps, metadata and dotted-path access, built-in key order, DNS name checks and
 * one-document YAML.
 *
 * No server state; the functions are safe on any thread (the random ones read OpenSSL's RNG).
 */
#ifndef LOP_APISERVER_AS_UTIL_H
#define LOP_APISERVER_AS_UTIL_H

#include "apiserver/as_internal.h"

/* A random (version 4) UUID, NUL-terminated. */
void as_uuid(char out[37]);
/* Five characters of generateName's alphabet (bcdfghjklmnpqrstvwxz2456789), NUL-terminated. */
void as_rand_suffix(char out[6]);
/* Now as RFC 3339 UTC with second precision (metav1.Time) into buf; returns buf. */
char *as_now_time(char *buf, size_t n);
/* obj's metadata object, created when absent (borrowed). */
json_t *as_meta(json_t *obj);
/* metadata.<field> of obj when it is a string (borrowed), else NULL. */
const char *as_meta_str(const json_t *obj, const char *field);
/* The value at a dotted path (".spec.replicas" or "spec.x"; borrowed), or NULL. */
json_t *as_path_get(const json_t *obj, const char *dotted);
/* Set the value at a dotted path, creating (or replacing with) objects on the way; val is
 * stolen. 0, or -1 when a segment is empty or longer than 255 bytes. */
int as_path_set(json_t *obj, const char *dotted, json_t *val);
/* A copy of a built-in object with kind, apiVersion and metadata first (and metadata's members in
 * the API server's order). New reference. */
json_t *as_order_builtin(const json_t *obj);
/* metav1.ObjectMeta's field names, in the API server's order; NULL-terminated. */
extern const char *const as_objectmeta_fields[];
/* RFC 1123 subdomain (at most 253 characters) / label (at most 63), as metadata.name requires. */
bool as_valid_dns_subdomain(const char *s);
bool as_valid_dns_label(const char *s);
/* Kubernetes version priority (apimachinery/pkg/version/helpers.go CompareKubeAwareVersionStrings):
 * >0 when a sorts before (has higher priority than) b, <0 after, 0 equal. GA versions first by
 * major (v2 > v1), then betas, then alphas (each by major, then by the number after the stage:
 * v1beta2 > v1beta1), then anything else in alphabetical order (foo1 < foo10). */
int as_version_priority_cmp(const char *a, const char *b);
/* The one YAML document in data[0..len) as JSON (new reference), or NULL with the reason in
 * errbuf (errlen bytes). */
json_t *as_yaml_parse(const char *data, size_t len, char *errbuf, size_t errlen);

#endif
