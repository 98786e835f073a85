/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_validate.h — validation and defaulting of a write: MicroTime fields, ownerReferences, the
 * events.k8s.io rules and a few defaults of built-in kinds (Secret), and for custom resources the
 * structural schema's checks, defaults and pruning (as_schema.h;
 * k8s.io/apiextensions-apiserver/pkg/apiserver/schema).
 *
 * Loop thread only.
 */
#ifndef LOP_APISERVER_AS_VALIDATE_H
#define LOP_APISERVER_AS_VALIDATE_H

#include "apiserver/as_internal.h"

/* The defaults the server applies to built-ins on every write (a small subset): Secret.type
 * Opaque, Secret.stringData merged into data (base64) and dropped, the webhook configurations
 * defaults (as_whconfig.h). Modifies obj in place. */
void as_default_builtin(as_res_t *res, json_t *obj);
/* Check a built-in object about to be written to q->res: 0 when valid, -1 after replying 422. */
int as_validate_builtin(as_req_t *q, json_t *obj);
/* Validate a custom resource against res->cschema (as_schema.h): metadata reduced to ObjectMeta,
 * unknown fields pruned and defaults applied in place; each pruned field's dotted path is
 * appended to pruned and each Warning text (rules not evaluated) to warnings (arrays). old is the
 * stored object of an update (transition rules), NULL on create. 0 when valid; -1 with *causes a
 * new array of {reason, message, field} (the caller owns it). */
int as_validate_cr(as_res_t *res, json_t *obj, const json_t *old, json_t **causes, json_t *pruned, json_t *warnings);

/* The validation step of a write to q->res: the name of a new object (old NULL), the ObjectMeta
 * and ConfigMap/Secret rules (as_meta_rules.h) and, for custom resources, as_validate_cr (its
 * pruned paths into *pruned, a new array the caller releases, and reported per fieldValidation;
 * rules not evaluated sent as Warnings). true to go on; false after replying (one 422 listing
 * every cause, or the 400 of fieldValidation=Strict). */
bool as_validate_write(as_req_t *q, json_t *obj, const json_t *old, const char *name, json_t **pruned);

#endif
