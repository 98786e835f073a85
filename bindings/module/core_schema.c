/* SPDX-License-Identifier: Apache-2.0 */
/* core_schema.c — luaop.core.schema: the API server's CRD validator for busted specs
 * (core_schema.h). */
#include "bindings/module/core_schema.h"

#include "apiserver/as_schema.h"
#include "apiserver/as_validate.h"
#include "bindings/json_codec.h"

#include <lauxlib.h>

#include <stdlib.h>
#include <string.h>

#define SCHEMA_MT "luaop.core.schema.validator"

typedef struct schema_version {
    const char *name;     /* borrowed from crd */
    as_schema_t *cschema; /* borrows crd's openAPIV3Schema */
} schema_version_t;

typedef struct lua_schema {
    json_t *crd; /* owned: the compiled schemas borrow it */
    const char *group;
    schema_version_t *v;
    size_t n;
} lua_schema_t;

static int schema_gc(lua_State *L)
{
    lua_schema_t *s = (lua_schema_t *)luaL_checkudata(L, 1, SCHEMA_MT);
    for (size_t i = 0; i < s->n; i++) as_schema_free(s->v[i].cschema);
    free(s->v);
    json_decref(s->crd);
    s->v = NULL;
    s->n = 0;
    s->crd = NULL;
    return 0;
}

/* The value at idx (a table, encoded by the lossless codec, or JSON text) as a new jansson value;
 * raises with what on malformed input. */
static json_t *to_json(lua_State *L, int idx, const char *what)
{
    size_t len;
    const char *text;
    if (lua_type(L, idx) == LUA_TSTRING) {
        text = lua_tolstring(L, idx, &len);
        lua_pushvalue(L, idx);
    } else {
        text = lop_lua_json_encode(L, idx, &len); /* +1; raises on a value it cannot encode */
    }
    json_error_t jerr;
    json_t *j = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
    lua_pop(L, 1);
    if (!j) luaL_error(L, "%s: not JSON: %s", what, jerr.text);
    return j;
}

/* core.schema.compile(crd) -> validator */
static int schema_compile(lua_State *L)
{
    luaL_argcheck(L, lua_istable(L, 1) || lua_type(L, 1) == LUA_TSTRING, 1, "a CRD table or JSON text expected");
    lua_schema_t *s = (lua_schema_t *)lua_newuserdata(L, sizeof *s);
    memset(s, 0, sizeof *s);
    luaL_getmetatable(L, SCHEMA_MT);
    lua_setmetatable(L, -2);
    s->crd = to_json(L, 1, "core.schema.compile");
    json_t *spec = json_object_get(s->crd, "spec");
    json_t *versions = json_object_get(spec, "versions");
    s->group = json_string_value(json_object_get(spec, "group"));
    if (!s->group || !json_is_string(json_object_get(json_object_get(spec, "names"), "kind")) ||
        !json_is_array(versions))
        return luaL_error(L, "core.schema.compile: not a CustomResourceDefinition (spec.group, spec.names.kind "
                             "and spec.versions required)");
    s->v = (schema_version_t *)calloc(json_array_size(versions) + 1, sizeof *s->v);
    if (!s->v) return luaL_error(L, "core.schema.compile: out of memory");
    size_t i;
    json_t *v;
    json_array_foreach(versions, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        json_t *schema = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
        if (!name || !json_is_object(schema)) continue;
        s->v[s->n].name = name;
        s->v[s->n].cschema = as_schema_compile(schema); /* as as_crd.c does, once per version */
        s->n++;
    }
    return 1;
}

/* The compiled version an apiVersion names; raises when there is none. */
static const schema_version_t *version_of(lua_State *L, const lua_schema_t *s, const char *av)
{
    const char *slash = av ? strchr(av, '/') : NULL;
    if (!slash || (size_t)(slash - av) != strlen(s->group) || strncmp(av, s->group, (size_t)(slash - av)) != 0)
        luaL_error(L, "validator:validate: apiVersion \"%s\" is not of group %s", av ? av : "", s->group);
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].name, slash + 1) == 0) return &s->v[i];
    luaL_error(L, "validator:validate: the CRD has no schema for %s", av);
    return NULL;
}

/* validator:validate(obj [, old]) -> causes, result, pruned, warnings */
static int schema_validate(lua_State *L)
{
    lua_schema_t *s = (lua_schema_t *)luaL_checkudata(L, 1, SCHEMA_MT);
    luaL_checktype(L, 2, LUA_TTABLE);
    if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    /* everything that may raise first (version, encoding), then the jansson values, which no
     * raise can leak until they are freed */
    lua_getfield(L, 2, "apiVersion");
    const schema_version_t *ver = version_of(L, s, lua_tostring(L, -1));
    size_t olen, plen = 0;
    /* members in key order: the validator reports causes in member order (as the server does for
     * the order a client sent), so a spec gets the same causes in the same order on every run */
    const char *otext = lop_lua_json_encode_ex(L, 2, LOP_LUA_JSON_SORT_KEYS, &olen);
    const char *ptext = lua_isnil(L, 3) ? NULL : lop_lua_json_encode_ex(L, 3, LOP_LUA_JSON_SORT_KEYS, &plen);
    json_t *obj = json_loadb(otext, olen, 0, NULL);
    json_t *old = ptext ? json_loadb(ptext, plen, 0, NULL) : NULL;
    json_t *causes = NULL, *pruned = json_array(), *warnings = json_array();
    char *text = NULL;
    if (obj && (old || !ptext) && pruned && warnings) {
        as_res_t res;
        memset(&res, 0, sizeof res);
        res.cschema = ver->cschema;
        if (as_validate_cr(&res, obj, old, &causes, pruned, warnings) == 0) causes = json_array();
        json_t *out = json_pack("[OOOO]", causes, obj, pruned, warnings);
        text = out ? json_dumps(out, JSON_COMPACT) : NULL;
        json_decref(out);
    }
    json_decref(causes);
    json_decref(obj);
    json_decref(old);
    json_decref(pruned);
    json_decref(warnings);
    if (!text)
        return luaL_error(
            L, "validator:validate: the object cannot be validated (out of memory, or an integer beyond 64 bits)");
    lua_pushstring(L, text);
    free(text);
    size_t len;
    const char *t = lua_tolstring(L, -1, &len);
    lop_lua_json_decode(L, t, len);
    int tidx = lua_gettop(L);
    for (int k = 1; k <= 4; k++) lua_rawgeti(L, tidx, k);
    return 4;
}

/* validator:versions() -> {name...} */
static int schema_versions(lua_State *L)
{
    lua_schema_t *s = (lua_schema_t *)luaL_checkudata(L, 1, SCHEMA_MT);
    lua_createtable(L, (int)s->n, 0);
    for (size_t i = 0; i < s->n; i++) {
        lua_pushstring(L, s->v[i].name);
        lua_rawseti(L, -2, (int)i + 1);
    }
    return 1;
}

void lop_lua_schema_register(lua_State *L, int tidx)
{
    if (tidx < 0) tidx = lua_gettop(L) + tidx + 1;
    static const luaL_Reg methods[] = {{"validate", schema_validate}, {"versions", schema_versions}, {NULL, NULL}};
    if (luaL_newmetatable(L, SCHEMA_MT)) {
        lua_createtable(L, 0, 2);
        luaL_register(L, NULL, methods);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, schema_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_pop(L, 1);
    lop_lua_json_init(L);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, schema_compile);
    lua_setfield(L, -2, "compile");
    lua_setfield(L, tidx, "schema");
}
