/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssa_internal.h — internal to server-side apply: the decoded managedFields entries shared by
 * ssa.c (apply, update tracking) and ssa_conflict.c (conflict statuses). Not a public contract.
 * Thread-safety: plain data owned by one caller.
 */
#ifndef LOP_APISERVER_SSA_INTERNAL_H
#define LOP_APISERVER_SSA_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

typedef struct as_ssa_mgr {
    char *manager, *operation, *api_version, *time, *subresource; /* "" when absent */
    json_t *set;                                                  /* ssa_fieldset.h form */
} as_ssa_mgr_t;

typedef struct as_ssa_mgrs {
    as_ssa_mgr_t *v;
    size_t n;
} as_ssa_mgrs_t;

void as_ssa_mgrs_free(as_ssa_mgrs_t *ms);

/* The manager as the API server prints it in conflicts: "name" [with subresource "s"]
 * [using <apiVersion> at <time>] (the last part for Update managers). Malloc'd. */
char *as_ssa_print_manager(const as_ssa_mgr_t *m);

/* Build the 409 metav1.Status for conflicts: an array of {"index": manager index in ms,
 * "set": conflicting members}. Returns a new reference. */
json_t *as_ssa_conflict_status(const as_ssa_mgrs_t *ms, const json_t *conflicts);

#endif
