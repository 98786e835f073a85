/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_select.h — label and field selectors of LIST, WATCH and DELETE collection requests
 * (kubernetes.io/docs/concepts/overview/working-with-objects/labels/ and .../field-selectors/):
 * parsing the query parameters, checking the fields a resource supports, and matching objects.
 *
 * Loop thread only (the parse functions reply on the request).
 */
#ifndef LOP_APISERVER_AS_SELECT_H
#define LOP_APISERVER_AS_SELECT_H

#include "apiserver/as_internal.h"

/* Whether obj (NULL: false) is in namespace ns (NULL: any) and matches ls and fs (NULL or empty:
 * everything). Field selectors read string, integer and boolean fields by dotted path. */
bool as_obj_matches(as_res_t *res, const char *ns, lop_label_selector_t *ls, lop_field_selector_t *fs,
                    const json_t *obj);
/* Parse the request's labelSelector and fieldSelector and check that every field is selectable on
 * q->res (metadata.name, metadata.namespace, the built-in extra fields, a CRD's selectableFields).
 * 0 with *ls and *fs set (the caller frees both), or -1 after replying 400 (nothing to free). */
int as_parse_selectors(as_req_t *q, lop_label_selector_t **ls, lop_field_selector_t **fs);

#endif
