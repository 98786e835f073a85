/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_jsonpath.h — the small JSONPath subset CRD additionalPrinterColumns use (what
 * k8s.io/client-go/util/jsonpath evaluates for the apiextensions-apiserver table convertor):
 * `.a.b`, `.a[0]`, `.a[-1]`, `.a[*].b`, `.a.*`, `.a['dotted.key']` / `.a["k"]`, and the filter
 * conditions printer columns use on condition lists, `[?(@.type=="Ready")]` (`@.x.y` compared
 * with == or != to a quoted string, a number, true or false), optionally inside one `{...}`
 * (kubectl's template form). No slices, unions, recursive descent or other filter forms.
 *
 * Pure; any thread.
 */
#ifndef LOP_APISERVER_AS_JSONPATH_H
#define LOP_APISERVER_AS_JSONPATH_H

#include <jansson.h>
#include <stdbool.h>

/* True when path is in the subset (a CRD's printer column can be checked with it). */
bool as_jsonpath_valid(const char *path);
/* Evaluate path over obj: a new array of the matched values (borrowed references made owned;
 * empty when nothing matches), or NULL when path is not in the subset. */
json_t *as_jsonpath_eval(const json_t *obj, const char *path);

#endif
