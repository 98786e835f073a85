/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_write_checks.h — checks and clean-ups of the write step: metadata field types, the
 * fieldValidation query parameter and its handling of unknown fields, and the managedFields
 * entries the server never keeps.
 *
 * The int functions return 0 to go on, or -1 after replying (400/422). Loop thread only.
 */
#ifndef LOP_APISERVER_AS_WRITE_CHECKS_H
#define LOP_APISERVER_AS_WRITE_CHECKS_H

#include "apiserver/as_internal.h"

/* metadata members of the wrong JSON type (labels not a string map, finalizers not strings, ...)
 * → 400 like the API server's decoder. */
int as_check_meta_types(as_req_t *q, const json_t *obj);
/* Report the pruned field paths (an array of strings, borrowed) per fieldValidation: Strict →
 * 400 naming them, Warn (the default) → one Warning header each, Ignore → nothing. */
int as_report_unknown_fields(as_req_t *q, json_t *pruned);
/* fieldValidation other than Ignore, Warn or Strict → 422. */
int as_check_field_validation(as_req_t *q);
/* Drop from obj's managedFields the ownership the server never records: .status for managers of
 * the main endpoint when the status subresource is on (has_status), everything but .status for
 * /status managers (status_sub), fields pruning removed (pruned: array of dotted paths, may be
 * NULL); entries left empty go, and managedFields itself when none is left. */
void as_ssa_scrub_managed_fields(json_t *obj, bool has_status, bool status_sub, const json_t *pruned);

#endif
