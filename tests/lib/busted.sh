#!/usr/bin/env bash
# Run busted under luajit for one spec directory with the luaop Lua library and the C module
# (build/lua/luaop/core.so) of THIS build on the path. Usage: busted.sh SPEC_DIR
set -euo pipefail
: "${LUAOP_SRC:?}" "${LUAOP_BUILD:?}"
export LUA_PATH="$LUAOP_SRC/scripts/?.lua;$LUAOP_SRC/scripts/?/init.lua;;"
export LUA_CPATH="$LUAOP_BUILD/lua/?.so;;"
cd "$LUAOP_SRC"
exec busted --lua=luajit -o utfTerminal "$1"
