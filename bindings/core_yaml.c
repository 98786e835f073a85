/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_yaml.c — luaop.core.yaml.decode (core_yaml.h): host/codec/yaml.c loads the documents into
 * jansson values, they are written as compact JSON and read back through the lossless codec, so
 * a YAML manifest and its JSON form give the same Lua value. The JSON text is malloc'd, so it is
 * decoded inside a protected call and freed before an error is re-raised (STYLE.md habit 4).
 */
#include "bindings/core_yaml.h"

#include "bindings/json_codec.h"
#include "host/codec/yaml.h"

#include <lauxlib.h>

#include <stdlib.h>
#include <string.h>

typedef struct yaml_job {
    const char *text;
    size_t len;
} yaml_job_t;

/* Protected: decode the job's JSON text. Stack: [job] -> [value]. */
static int decode_job(lua_State *L)
{
    const yaml_job_t *j = (const yaml_job_t *)lua_touserdata(L, 1);
    lop_lua_json_decode(L, j->text, j->len);
    return 1;
}

/* core.yaml.decode(s [, origin]) -> array of documents. Raises "yaml: <origin>:<line>:<col>: ...". */
static int yaml_decode(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    const char *origin = luaL_optstring(L, 2, "<string>");
    lua_settop(L, 2);
    /* pushed before any host memory is held: pushing may raise */
    lua_pushcfunction(L, decode_job);
    yaml_job_t job = {0};
    lua_pushlightuserdata(L, &job);

    json_t *docs = NULL;
    lop_err_t err;
    lop_err_clear(&err);
    if (lop_yaml_load_all(s, len, origin, &docs, &err) != LOP_OK) {
        lua_settop(L, 2);
        return luaL_error(L, "yaml: %s", err.message);
    }
    char *text = json_dumps(docs, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(docs);
    if (!text) {
        lua_settop(L, 2);
        return luaL_error(L, "yaml: %s: out of memory writing the documents", origin);
    }
    job.text = text;
    job.len = strlen(text);
    int st = lua_pcall(L, 1, 1, 0);
    free(text);
    if (st != 0) return lua_error(L);
    return 1;
}

void lop_lua_yaml_open(lua_State *L)
{
    lop_lua_json_init(L);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, yaml_decode);
    lua_setfield(L, -2, "decode");
}
