/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_table.h — the meta.k8s.io/v1 (or v1beta1) Table an `Accept: application/json;as=Table;
 * g=meta.k8s.io;v=v1` asks for (what `kubectl get` prints from): columnDefinitions (name, type,
 * format, description, priority) and one row per object (cells, and the object as
 * PartialObjectMetadata, the full object or nothing per `includeObject`).
 *
 * Columns come from where kube-apiserver takes them: the built-in printers of
 * kubernetes/pkg/printers/internalversion/printers.go (cells computed as if `-o wide`: the
 * client hides priority > 0 columns), a CRD version's additionalPrinterColumns
 * (apiextensions-apiserver pkg/registry/customresource/tableconvertor: Name first, then the
 * columns, Age when the version declares none), and for the rest the default convertor of
 * k8s.io/apiserver/pkg/registry/rest/table.go (Name, Created At). Ages are
 * apimachinery/pkg/util/duration.HumanDuration strings relative to the `now` given.
 *
 * Loop thread (reads the CRD store for printer columns); the pure helpers are safe anywhere.
 */
#ifndef LOP_APISERVER_AS_TABLE_H
#define LOP_APISERVER_AS_TABLE_H

#include "apiserver/as_internal.h"

#include <time.h>

/* A Table of the n served objects objs (borrowed) of res. conv says the apiVersion, the row
 * objects and whether to leave the column definitions out. list_meta (borrowed, may be NULL) is
 * the list's metadata to copy (resourceVersion, continue, remainingItemCount); without it the
 * Table carries the first object's resourceVersion. now (seconds since the epoch) dates the
 * ages. Returns a new reference. */
json_t *as_table_new(lop_apiserver_t *srv, const as_res_t *res, const as_conv_t *conv, json_t *const *objs, size_t n,
                     const json_t *list_meta, time_t now);
/* The includeObject query value (NULL, "", "Metadata", "None", "Object") as an as_include_t;
 * false for another value (the API server answers 400 for it). */
bool as_table_include(const char *value, as_include_t *out);

/* apimachinery's HumanDuration of `seconds` ("5s", "3m20s", "2d3h", "<invalid>" below -1 s)
 * into buf (n bytes); returns buf. */
char *as_human_duration(long long seconds, char *buf, size_t n);
/* An RFC 3339 timestamp (metav1.Time or MicroTime: fractional seconds, Z or ±hh:mm) as
 * seconds since the epoch; false when s is not one. */
bool as_parse_time(const char *s, time_t *out);
/* The age of a timestamp string for a cell: HumanDuration since it, "<unknown>" when ts is
 * missing or unparsable. */
char *as_age_cell(const char *ts, time_t now, char *buf, size_t n);

#endif
