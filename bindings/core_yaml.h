/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core_yaml.h — luaop.core.yaml: the host's YAML reader (host/codec/yaml.h, libyaml) for Lua, so
 * manifests read in specs (luaop.testing.apply_manifest) and in scripts resolve exactly as the
 * host and kubectl read them: go-yaml v2's YAML 1.1 resolution for plain scalars (`on`, `yes`,
 * `y` are true, `off`, `no`, `n` false, `010` and `0o10` are 8, `0x10` is 16, unquoted dates stay
 * strings; host/codec/yaml.h), quoted
 * scalars are strings, anchors/aliases expanded within the bound yaml.h states, empty documents
 * skipped.
 *
 *   decode(s [, origin]) -> an array (the JSON array marker) of the documents, each the same
 *                           lossless Lua value core.json.decode gives for its JSON (objects are
 *                           plain tables, `[]` stays an array, integers beyond 2^53 are bigints,
 *                           a null member is an absent key, a null element is core.json.null).
 *                           origin (default "<string>") names the input in errors.
 * Errors raise "yaml: <origin>:<line>:<col>: <problem>" (1-based line and column, libyaml's
 * problem text) for a syntax error, or "yaml: <origin>:<line>: alias *<name>: ..." when aliases
 * expand beyond the bound. Any context (host VMs and the busted module). Misuse (s not a
 * string) raises naming the argument.
 *
 * Thread-safety: touches only its own lua_State; the loader has no shared state.
 */
#ifndef LOP_LUA_CORE_YAML_H
#define LOP_LUA_CORE_YAML_H

#include <lua.h>

/* Push the yaml table ({decode = ...}). Stack: +1. Raises (memory). */
void lop_lua_yaml_open(lua_State *L);

#endif
