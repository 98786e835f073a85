/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_cel.h — a subset of CEL (the Common Expression Language, github.com/google/cel-spec) for
 * CRD x-kubernetes-validations rules, evaluated over jansson values the way kube-apiserver's
 * k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel does: `self` is the value of the
 * schema node that carries the rule, `oldSelf` its previous value on an update.
 *
 * The subset: literals (int, uint `1u` read as int, double, strings with escapes, raw r"...",
 * triple quotes, bool, null), lists `[..]` and maps `{"k": v}` (string keys), field selection
 * `a.b` and indexing `a[i]`, `a["k"]`; `!`, unary `-`, `* / %`, `+ -` (numbers, string and list
 * concatenation), `< <= > >= == !=` (numbers across int and double, strings, booleans, deep
 * equality of lists and maps), `in` (list membership, map keys), `&&` and `||` with CEL's
 * commutative error absorption, `? :`; `has(a.b)`; the functions size(), int(), double(),
 * string(), bool(); the methods size, startsWith, endsWith, contains, matches (RE2 translated as
 * as_schema_format.h says), lowerAscii, upperAscii, trim; the macros all, exists, exists_one, map
 * (two-argument form) and filter over lists and maps (map keys). Integers are 64-bit with overflow
 * errors; an int and a double mix in arithmetic (CEL would refuse; leniency for schema-less
 * typing). Anything else (bytes, durations, timestamps, the Kubernetes CEL libraries) fails to
 * compile, and the caller warns instead of evaluating. Evaluation has a fixed step budget.
 *
 * Thread-safety: a compiled program is immutable; evaluation allocates per call. Pure.
 */
#ifndef LOP_APISERVER_AS_CEL_H
#define LOP_APISERVER_AS_CEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct as_cel_prog as_cel_prog_t;

/* Compile src (at most 16 KiB); NULL with the reason in err (errlen bytes) when it is outside the
 * subset. */
as_cel_prog_t *as_cel_compile(const char *src, char *err, size_t errlen);
void as_cel_free(as_cel_prog_t *p);
/* Whether the expression mentions oldSelf (a transition rule: evaluated on updates only). */
bool as_cel_uses_old_self(const as_cel_prog_t *p);
/* Evaluate with self (borrowed) and old_self (borrowed, NULL when absent): 1 true, 0 false, -1 an
 * evaluation error or a non-boolean result (reason in err). */
int as_cel_eval_bool(const as_cel_prog_t *p, const json_t *self, const json_t *old_self, char *err, size_t errlen);
/* Evaluate a messageExpression: a new string (malloc'd, the caller frees), or NULL with err. */
char *as_cel_eval_string(const as_cel_prog_t *p, const json_t *self, const json_t *old_self, char *err, size_t errlen);

#endif
