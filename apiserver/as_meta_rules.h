/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_meta_rules.h — the ObjectMeta rules every write passes (k8s.io/apimachinery/pkg/api/
 * validation/objectmeta.go: label keys and values, annotation keys and their 256 KiB total,
 * finalizer names, generateName) and the data rules of ConfigMaps and Secrets
 * (k8s.io/kubernetes/pkg/apis/core/validation/validation.go: key names, the 1 MiB total,
 * `immutable`, kubernetes.io/tls keys, Secret type immutability), with kube-apiserver's field
 * errors. Qualified names follow k8s.io/apimachinery/pkg/util/validation IsQualifiedName.
 *
 * Causes are appended to a caller-owned array as {reason, message, field}. Loop thread only.
 */
#ifndef LOP_APISERVER_AS_META_RULES_H
#define LOP_APISERVER_AS_META_RULES_H

#include "apiserver/as_internal.h"

/* metadata.labels, metadata.annotations, metadata.finalizers and metadata.generateName of obj. */
void as_meta_rules_check(const json_t *obj, json_t *causes);
/* The data rules of a ConfigMap or Secret (other kinds: nothing); old is the stored object on an
 * update, else NULL. */
void as_data_rules_check(const as_res_t *res, const json_t *obj, const json_t *old, json_t *causes);
/* The decoder's view of ConfigMap/Secret data (before defaulting): ConfigMap data values strings,
 * binaryData and Secret data values standard base64. 0, or -1 after replying 400 as the API
 * server's decoder does. */
int as_data_decode_check(as_req_t *q, const json_t *obj);
/* The messages of IsQualifiedName(s) ("name part must be non-empty", ...), each appended to msgs
 * (an array of strings); returns how many. */
int as_qualified_name_errors(const char *s, json_t *msgs);

#endif
