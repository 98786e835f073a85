/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_schema.h — luaop.core.schema (busted module only): a CustomResourceDefinition's
 * openAPIV3Schema compiled by the local API server's own validator (apiserver/as_schema.h, called
 * through as_validate_cr in apiserver/as_validate.h), so luaop.testing's fake rejects, defaults
 * and prunes a custom resource exactly as the API server does on a create, update or patch
 * (k8s.io/apiextensions-apiserver/pkg/apiserver/schema and pkg/apiserver/validation).
 *
 *   core.schema.compile(crd) -> validator
 *       crd: a CustomResourceDefinition (apiextensions.k8s.io/v1) as a decoded table or as JSON
 *       text. Every version with spec.versions[].schema.openAPIV3Schema is compiled once.
 *       Raises when crd is not a CRD (no spec.group, spec.names.kind or spec.versions).
 *   validator:validate(obj [, old]) -> causes, result, pruned, warnings
 *       obj: the custom resource about to be written (its apiVersion picks the version; not
 *       modified); old: the stored object on an update (transition rules, CEL oldSelf), nil on a
 *       create. causes: array of {reason=, message=, field=} in kube-apiserver's wording, the
 *       details.causes of the 422 Invalid the API server would answer (empty when valid), in the
 *       order the server gives for the object's members sent in key order (the server follows the
 *       member order of the request body; here the members are sorted, so the order is stable from
 *       run to run whatever Lua's table order); result: a new table, obj after metadata is reduced to ObjectMeta, defaults are
 *       applied and unknown fields pruned (what the server would store); pruned: array of the
 *       dotted paths removed; warnings: array of Warning texts (rules not evaluated).
 *       Raises on misuse (obj not a table, an apiVersion of another group or of a version the CRD
 *       lacks) and on a value the JSON codec cannot encode.
 *   validator:versions() -> array of the compiled version names, in the CRD's order
 *
 * Not checked here (the fake does them or the server alone does): metadata.name's format,
 * ObjectMeta rules, built-in kinds. Contexts: busted (plain luajit) only; the validator belongs to
 * the lua_State that made it; it holds no lock and no thread.
 */
#ifndef LOP_LUA_MODULE_CORE_SCHEMA_H
#define LOP_LUA_MODULE_CORE_SCHEMA_H

#include <lua.h>

/* Add `schema` to the table at tidx. Stack: unchanged. Raises (memory). */
void lop_lua_schema_register(lua_State *L, int tidx);

#endif
