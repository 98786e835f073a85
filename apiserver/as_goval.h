/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_goval.h — values and field errors printed the way kube-apiserver prints them, so a 422's
 * causes read as on a cluster. A field error (k8s.io/apimachinery/pkg/util/validation/field,
 * errors.go) renders as `<type>: <value>: <detail>`: the value with Go's fmt verbs (%q for a
 * string, %v for numbers and booleans, %#v for maps and slices of an unstructured object), left
 * out for Required, Forbidden and Too long.
 *
 * Pure functions; safe on any thread.
 */
#ifndef LOP_APISERVER_AS_GOVAL_H
#define LOP_APISERVER_AS_GOVAL_H

#include "host/util/buf.h"

#include <jansson.h>

/* Append v as Go prints it in a field error: a string %q ("a\"b"), an integer %d, a real %v
 * (shortest form, exponents from 1e+06 on, as strconv.FormatFloat 'g' -1), a boolean, null as
 * `null`; objects and arrays as %#v of map[string]interface {} / []interface {} (keys sorted). */
void as_goval_append(lop_buf_t *b, const json_t *v);
/* Append a float64 as Go's %v prints it (5, 5.5, 100000, 1e+06, 1e-05). */
void as_goval_float(lop_buf_t *b, double d);
/* Append s as Go's %q (strconv.Quote) quotes it. */
void as_goval_quote(lop_buf_t *b, const char *s, size_t n);
/* Append one cause {reason, message, field} to causes (an array). */
void as_cause_add(json_t *causes, const char *reason, const char *field, const char *message);
/* as_cause_add with a printf-formatted message. */
void as_cause_addf(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
