/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selector.h — label and field selectors, parsed and matched exactly like the API server
 * (apimachinery pkg/labels/selector.go, pkg/fields/selector.go).
 * One implementation serves the local API server, the host's informers and the Lua helpers.
 *
 * Label syntax: comma-separated requirements, ANDed: `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
 * `k notin (a,b)`, `k` (exists), `!k` (does not exist), `k>5`, `k<5`. Whitespace around operators
 * and inside parentheses is allowed; `k=` matches an empty value. `!=` and `notin` match objects
 * lacking the label. Keys and values are validated as Kubernetes label keys/values.
 * Field syntax: `f=v`, `f==v`, `f!=v`, comma-separated, ANDed; `\` escapes `,` `=` `\` in values.
 *
 * Ownership: *_parse returns a new selector the caller frees. Thread-safety: a parsed selector is
 * immutable; matching from many threads at once is safe.
 */
#ifndef LOP_META_SELECTOR_H
#define LOP_META_SELECTOR_H

#include "host/util/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct lop_label_selector lop_label_selector_t;
typedef struct lop_field_selector lop_field_selector_t;

/* Returns the value of key, or NULL when absent. ud is the caller's. */
typedef const char *(*lop_lookup_fn)(void *ud, const char *key);

/* Parse; NULL or "" gives a selector that matches everything. On a syntax error returns LOP_EINVAL
 * with err->code 400, reason "BadRequest", message like the API server's
 * ("unable to parse requirement: ..."). */
LOP_MUST_CHECK lop_rc_t lop_label_selector_parse(const char *s, lop_label_selector_t **out, lop_err_t *err);
bool lop_label_selector_empty(const lop_label_selector_t *sel);
bool lop_label_selector_match(const lop_label_selector_t *sel, lop_lookup_fn lookup, void *ud);
/* labels: a JSON object of string values (metadata.labels) or NULL when the object has none. */
bool lop_label_selector_match_json(const lop_label_selector_t *sel, const json_t *labels);
void lop_label_selector_free(lop_label_selector_t *sel);

/* Parse a field selector. Does not validate field names: the caller checks each with
 * lop_field_selector_field() against what the resource supports (metadata.name,
 * metadata.namespace, selectableFields) and answers 400 "field label not supported: <f>". */
LOP_MUST_CHECK lop_rc_t lop_field_selector_parse(const char *s, lop_field_selector_t **out, lop_err_t *err);
bool lop_field_selector_empty(const lop_field_selector_t *sel);
size_t lop_field_selector_count(const lop_field_selector_t *sel);
const char *lop_field_selector_field(const lop_field_selector_t *sel, size_t i);
/* If the selector pins field to one value with `=`/`==` return it (e.g. metadata.name=x), else NULL. */
const char *lop_field_selector_exact(const lop_field_selector_t *sel, const char *field);
/* lookup receives field paths ("metadata.name"); absent fields compare as "". */
bool lop_field_selector_match(const lop_field_selector_t *sel, lop_lookup_fn lookup, void *ud);
void lop_field_selector_free(lop_field_selector_t *sel);

#endif
