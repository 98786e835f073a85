/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_crd.h — CustomResourceDefinitions (k8s.io/apiextensions-apiserver): the checks and defaults
 * of a CRD write, and the registry rows its served versions get once it is committed (names
 * accepted and Established at once, as a single API server does).
 *
 * Loop thread only.
 */
#ifndef LOP_APISERVER_AS_CRD_H
#define LOP_APISERVER_AS_CRD_H

#include "apiserver/as_internal.h"

/* Validate a CRD about to be written (group, names, scope, versions, structural schemas) and
 * fill its defaults and status (acceptedNames, NamesAccepted, Established). crd is stolen.
 * Returns the object to store (a new reference), or NULL with err (422 Invalid). */
json_t *as_crd_finish_create(lop_apiserver_t *srv, json_t *crd, lop_err_t *err);
/* After a commit on a CRD (crd borrowed): install its custom resources' rows, or remove them
 * (and end their watches) when deleted. */
void as_crd_changed(lop_apiserver_t *srv, const json_t *crd, bool deleted);

#endif
