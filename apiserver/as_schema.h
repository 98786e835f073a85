/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_schema.h — a CRD version's structural schema (openAPIV3Schema), compiled once when the CRD
 * is stored, and the validation of a custom resource against it as kube-apiserver does it
 * (k8s.io/apiextensions-apiserver/pkg/apiserver/schema: pruning, defaulting, objectmeta;
 * pkg/apiserver/validation: the kube-openapi validator and its field errors; schema/listtype;
 * schema/cel for x-kubernetes-validations, see as_cel.h).
 *
 * What is checked: type (x-kubernetes-int-or-string: integer or string), nullable, enum,
 * minimum/maximum with exclusiveMinimum/exclusiveMaximum, multipleOf, minLength/maxLength (in
 * Unicode code points), pattern and the string formats kube-apiserver enforces (as_schema_format.h
 * says which, and the regular expression dialect), minItems/maxItems,
 * minProperties/maxProperties, required, x-kubernetes-list-type set/map uniqueness,
 * x-kubernetes-embedded-resource (apiVersion and kind required, metadata pruned to ObjectMeta)
 * and x-kubernetes-validations rules (as_cel.h). Unknown fields are pruned unless a node has
 * x-kubernetes-preserve-unknown-fields; a null for a non-nullable property gets the default or
 * is dropped; `default`s fill absent properties of objects that exist.
 *
 * Ownership: the compiled schema borrows the JSON it was compiled from (the row keeps a
 * reference to it for as long as the compiled schema lives). A compiled schema is not changed by
 * validation; validations of one schema run one at a time (the server's loop thread).
 */
#ifndef LOP_APISERVER_AS_SCHEMA_H
#define LOP_APISERVER_AS_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>

typedef struct as_schema as_schema_t;

/* What one validation produced; the arrays are created by the caller and appended to. */
typedef struct as_schema_result {
    json_t *causes;   /* [{reason, message, field}] in kube-apiserver's wording */
    json_t *pruned;   /* ["spec.junk", ...]: unknown fields removed */
    json_t *warnings; /* ["text", ...]: Warning headers to send (unevaluated rules) */
} as_schema_result_t;

/* Compile schema (borrowed; NULL gives NULL). Never fails: a part that cannot be compiled (a
 * pattern the regex dialect rejects, a rule outside the CEL subset) is kept as a note and
 * reported as a warning on each write instead of being enforced. */
as_schema_t *as_schema_compile(const json_t *schema);
void as_schema_free(as_schema_t *s);
/* Validate, default and prune the custom resource obj in place (apiVersion, kind and metadata
 * are left to the caller; metadata is reduced to ObjectMeta there). old is the stored object on
 * an update (for transition rules, oldSelf), NULL on create. Every problem found is appended to
 * r; returns the number of causes added. */
int as_schema_validate(const as_schema_t *s, json_t *obj, const json_t *old, as_schema_result_t *r);
/* Whether the object's metadata key is a standard ObjectMeta field. */
bool as_schema_objectmeta_field(const char *key);

#endif
