#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run busted under luajit for one spec directory with the luaop Lua library and the C module
# (build/lua/luaop/core.so) of THIS build on the path. Usage: busted.sh SPEC_DIR
set -euo pipefail
: "${LUAOP_SRC:?}" "${LUAOP_BUILD:?}"
export LUA_PATH="$LUAOP_SRC/scripts/?.lua;$LUAOP_SRC/scripts/?/init.lua;;"
export LUA_CPATH="$LUAOP_BUILD/lua/?.so;;"
cd "$LUAOP_SRC"
# An ASan build's core.so needs its runtime loaded first into the (uninstrumented) luajit;
# the interpreter's own allocations at exit are not ours to report, so leak checking is off.
# A TSan build's core.so is built without TSan (CMakeLists.txt says why): nothing to preload.
case "${LUAOP_SANITIZE:-}" in
address) export LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" ;;
esac
exec busted --lua=luajit -o utfTerminal "$1"
