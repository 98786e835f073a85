/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssa_fieldset.h — internal to server-side apply: field sets and their algebra.
 *
 * A set is a JSON object tree. Keys are FieldsV1 path elements: "f:<field>", "k:<json object of
 * key fields>" (associative list item), "v:<json value>" (set item), "i:<index>". The key "."
 * marks the node itself as a member. So `{"f:spec":{"f:replicas":{".":{}}}}` holds one member,
 * .spec.replicas. Unlike FieldsV1 (where a bare `{}` is a member), an empty object here is the
 * empty set; the converters below translate. Sets never hold empty children.
 *
 * All functions return new references the caller owns and never modify their inputs, except
 * as_ssa_fs_remove. Thread-safety: pure functions.
 */
#ifndef LOP_APISERVER_SSA_FIELDSET_H
#define LOP_APISERVER_SSA_FIELDSET_H

#include <jansson.h>
#include <stdbool.h>

typedef struct as_ssa_fs_schema {
    bool builtin;     /* true: lists follow patch_schema.h; false: every list is atomic */
    const char *kind; /* for built-in list lookup */
    bool mark_maps;   /* true: built-in map fields (labels, annotations, data, ...) are members
                         themselves, as the API server records for Update operations */
} as_ssa_fs_schema_t;

json_t *as_ssa_fs_from_fieldsv1(const json_t *fieldsv1);
json_t *as_ssa_fs_to_fieldsv1(const json_t *set);

bool as_ssa_fs_empty(const json_t *set);
json_t *as_ssa_fs_union(const json_t *a, const json_t *b);
json_t *as_ssa_fs_diff(const json_t *a, const json_t *b);
json_t *as_ssa_fs_intersect(const json_t *a, const json_t *b);

/*
 * The members of obj: every leaf value, every item of an associative list or set, atomic lists
 * as one leaf. Top-level apiVersion/kind and the server-owned metadata fields (name, namespace,
 * uid, resourceVersion, generation, creationTimestamp, deletionTimestamp,
 * deletionGracePeriodSeconds, selfLink, managedFields) are left out. If only_top is non-NULL only
 * that top-level field is considered (e.g. "status" for the status subresource).
 */
json_t *as_ssa_fs_of_object(const json_t *obj, const as_ssa_fs_schema_t *sc, const char *only_top);

/* The members of set whose value differs between a and b (either may be NULL = absent): leaves
 * compare deeply; list items compare by presence (their fields are members of their own). */
json_t *as_ssa_fs_changed(const json_t *set, const json_t *a, const json_t *b);

/* Remove the members of set from obj in place: leaves by deleting the field, items by removing
 * the list element. */
void as_ssa_fs_remove(json_t *obj, const json_t *set);

/* Append each member's path (".spec.containers[name=\"a\"].image") to the string array out. */
void as_ssa_fs_paths(const json_t *set, json_t *out);

#endif
