/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_index.c — field indexes in the LuaJIT engine: core.register_index (the spec op.index
 * builds, docs/lua-api.md "Field indexes"), the engine's index_declarations (engine.h), and
 * core.fieldpath, the host's field-path evaluator (host/kube/cache/fieldpath.h) for luaop.testing,
 * so that the fake computes index values with the code the host runs.
 *
 * Context: register_index in load only (indexes exist before the informers start, as
 * controller-runtime's IndexField must be called before the cache starts); fieldpath anywhere.
 */
#include "bindings/engine_internal.h"
#include "bindings/json_codec.h"

#include "host/kube/cache/fieldpath.h"
#include "host/util/buf.h"

#include <lauxlib.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void index_free(lop_index_decl_t *d)
{
    free(d->name);
    free(d->gvk.api_version);
    free(d->gvk.kind);
    free(d->field);
}

void lop_lua_indexes_free(lop_vm_t *vm)
{
    for (size_t i = 0; i < vm->nindexes; i++) index_free(&vm->indexes[i]);
    free(vm->indexes);
    vm->indexes = NULL;
    vm->nindexes = vm->capindexes = 0;
}

void lop_lua_index_declarations(lop_vm_t *vm, const lop_index_decl_t **decls, size_t *n)
{
    *decls = vm->indexes;
    *n = vm->nindexes;
}

/* spec[field] as a non-empty string (on the stack until the call returns), or raises. */
static const char *need_string(lua_State *L, const char *field, const char *example)
{
    lua_getfield(L, 1, field);
    if (lua_type(L, -1) != LUA_TSTRING || lua_objlen(L, -1) == 0)
        luaL_error(L, "op.index: %s must be a non-empty string (e.g. %s)", field, example);
    return lua_tostring(L, -1);
}

static bool valid_name(const char *s)
{
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-' || c == '/'))
            return false;
    }
    return *s != 0;
}

/* core.register_index{name=, api_version=, kind=, field= | extract=} -> nothing. Load only;
 * raises on an invalid spec, a field path that does not compile, both or neither of field and
 * extract, or a name the kind already has. An extract function gets a lua_id (callbacks table). */
int lop_lua_core_register_index(lua_State *L)
{
    lop_vm_t *vm = lop_lua_engine_vm(L);
    if (vm->phase != LOP_LUA_LOAD)
        return luaL_error(L, "op.index may only be called while main.lua loads (indexes are declared before the "
                             "informers start, as controller-runtime's IndexField)");
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    const char *name = need_string(L, "name", "\"secretRef\"");
    if (!valid_name(name))
        return luaL_error(L, "op.index: name '%s' may hold letters, digits, '.', '_', '-' and '/' only", name);
    const char *av = need_string(L, "api_version", "\"apps/v1\"");
    const char *kind = need_string(L, "kind", "\"Deployment\"");
    lua_getfield(L, 1, "extract");
    int extract = lua_gettop(L);
    const char *field = NULL;
    if (lua_isnil(L, extract)) {
        field = need_string(L, "field", "\"spec.template.spec.volumes[*].secret.secretName\"");
        lop_fieldpath_t *p = NULL;
        lop_err_t err;
        lop_err_clear(&err);
        if (lop_fieldpath_compile(field, &p, &err) != LOP_OK)
            return luaL_error(L, "op.index '%s': %s", name, err.message);
        lop_fieldpath_free(p);
    } else {
        lua_getfield(L, 1, "field");
        if (!lua_isfunction(L, extract) || !lua_isnil(L, -1))
            return luaL_error(L, "op.index '%s': declare either field (a path) or extract (a function), not both",
                              name);
        lua_pop(L, 1);
    }
    for (size_t i = 0; i < vm->nindexes; i++) {
        lop_index_decl_t *d = &vm->indexes[i];
        if (strcmp(d->name, name) == 0 && strcmp(d->gvk.api_version, av) == 0 && strcmp(d->gvk.kind, kind) == 0)
            return luaL_error(L, "op.index '%s': declared twice for %s %s (names are unique per kind)", name, av, kind);
    }
    if (vm->nindexes == vm->capindexes) {
        vm->capindexes = vm->capindexes ? vm->capindexes * 2 : 4;
        vm->indexes = lop_xrealloc(vm->indexes, vm->capindexes * sizeof *vm->indexes);
    }
    int lua_id = 0;
    if (!field) {
        char desc[200];
        snprintf(desc, sizeof desc, "index '%.150s' extract", name);
        lua_id = lop_lua_add_callback(L, vm, extract, desc);
    }
    vm->indexes[vm->nindexes++] = (lop_index_decl_t){
        lop_xstrdup(name), {lop_xstrdup(av), lop_xstrdup(kind)}, field ? lop_xstrdup(field) : NULL, lua_id};
    return 0;
}

typedef struct values_job {
    char **vals;
    int n;
} values_job_t;

/* Under lua_pcall: push job's values as an array (a memory error raises here, not past the
 * caller, which still owns and frees the strings). */
static int push_values(lua_State *L)
{
    const values_job_t *job = lua_touserdata(L, 1);
    lua_createtable(L, job->n, 0);
    for (int i = 0; i < job->n; i++) {
        lua_pushstring(L, job->vals[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* core.fieldpath(path, obj) -> array of strings: the values path reaches in obj (a table, encoded
 * through the lossless codec, or a JSON string), in document order. Raises when path does not
 * compile or obj is neither. Any context. Stack: +1. */
static int core_fieldpath(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    size_t len = 0;
    const char *json;
    if (lua_type(L, 2) == LUA_TSTRING)
        json = lua_tolstring(L, 2, &len);
    else if (lua_istable(L, 2))
        json = lop_lua_json_encode(L, 2, &len); /* pushes the text; raises on a table JSON cannot hold */
    else
        return luaL_argerror(L, 2, "an object (table) or a JSON string");
    lop_fieldpath_t *p = NULL;
    lop_err_t err;
    lop_err_clear(&err);
    if (lop_fieldpath_compile(path, &p, &err) != LOP_OK) {
        lua_pushstring(L, err.message);
        return lua_error(L);
    }
    values_job_t job = {NULL, 0};
    job.n = lop_fieldpath_eval(p, json, len, &job.vals);
    lop_fieldpath_free(p);
    if (job.n < 0) return luaL_error(L, "core.fieldpath: the object is not JSON");
    lua_pushcfunction(L, push_values);
    lua_pushlightuserdata(L, &job);
    int st = lua_pcall(L, 1, 1, 0);
    for (int i = 0; i < job.n; i++) free(job.vals[i]);
    free(job.vals);
    if (st != 0) return lua_error(L);
    return 1;
}

void lop_lua_fieldpath_register(lua_State *L, int tidx)
{
    if (tidx < 0 && tidx > LUA_REGISTRYINDEX) tidx = lua_gettop(L) + tidx + 1;
    lua_pushcfunction(L, core_fieldpath);
    lua_setfield(L, tidx, "fieldpath");
}
