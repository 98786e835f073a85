#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The installable Lua package (issue 23 part 5): an operator kept in its own repository runs its
# busted specs with nothing but the installed package.
#  1. `cmake --install --component lua --prefix P` installs the library under P/share/lua/5.1 and
#     luaop/core.so under P/lib/lua/5.1;
#  2. examples/memcached and examples/replicator, copied out of the repository, pass their specs
#     (the fake-based ones and the envtest ones against luaop.testing.apiserver()) with
#     LUA_PATH/LUA_CPATH naming P only (plus the system's own paths for busted itself), and
#     luaop / luaop.core resolve to P, not to the repository;
#  3. `luarocks make --tree T` (luaop-scm-1.rockspec) builds and installs the same package into T,
#     and the copied memcached example passes its specs with T only.
set -euo pipefail
: "${LUAOP_SRC:?}" "${LUAOP_BUILD:?}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/luaop-package.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$LUAOP_BUILD" --component lua --prefix "$tmp/prefix" >"$tmp/install.log" ||
  { cat "$tmp/install.log" >&2; fail "cmake --install --component lua"; }
[ -f "$tmp/prefix/lib/lua/5.1/luaop/core.so" ] || fail "core.so is not under lib/lua/5.1/luaop"
[ -f "$tmp/prefix/share/lua/5.1/luaop/testing/apiserver.lua" ] || fail "the library is not under share/lua/5.1"
echo "ok   cmake --install --component lua: share/lua/5.1/luaop and lib/lua/5.1/luaop/core.so"

# The installed executable scaffolds projects that find the installed core.so and library
cmake --install "$LUAOP_BUILD" --prefix "$tmp/prefix" >"$tmp/install-all.log" ||
  { cat "$tmp/install-all.log" >&2; fail "cmake --install (every component)"; }
"$tmp/prefix/bin/luaop" init --domain example.com --repo "$tmp/scaffolded" >"$tmp/init.log" 2>&1 ||
  { cat "$tmp/init.log" >&2; fail "the installed luaop init"; }
grep -qxF "LUAOP_CPATH ?= $(cd "$tmp/prefix/lib/lua/5.1" && pwd -P)" "$tmp/scaffolded/Makefile" ||
  { grep -n LUAOP_CPATH "$tmp/scaffolded/Makefile" >&2; fail "the installed luaop init does not point LUAOP_CPATH at <prefix>/lib/lua/5.1"; }
echo "ok   the installed luaop init points the project at <prefix>/lib/lua/5.1 for luaop/core.so"

# run_specs NAME TREE [LMOD CMOD]: copy examples/NAME out of the repository and run its specs with
# only TREE's module directories on the Lua paths.
run_specs() {
  local name=$1 tree=$2 lmod=${3:-share/lua/5.1} cmod=${4:-lib/lua/5.1}
  local op="$tmp/op-$name-$(basename "$tree")"
  cp -r "$LUAOP_SRC/examples/$name" "$op"
  (
    cd "$op"
    unset LUAOP_SRC LUAOP_BUILD LUAOP LUA_INIT
    export LUA_PATH="$tree/$lmod/?.lua;$tree/$lmod/?/init.lua;;"
    export LUA_CPATH="$tree/$cmod/?.so;;"
    where=$(luajit -e 'io.write(package.searchpath("luaop.core", package.cpath) or "none", " ",
                                package.searchpath("luaop.testing", package.path) or "none")')
    case "$where" in
    "$tree/$cmod/luaop/core.so $tree/$lmod/luaop/testing/init.lua") ;;
    *) echo "FAIL: luaop resolves to $where, not to $tree" >&2; exit 1 ;;
    esac
    busted --lua=luajit -o utfTerminal spec >"$op.log" 2>&1 || { cat "$op.log" >&2; exit 1; }
  ) || fail "examples/$name copied out of the repository fails its specs with $tree only"
  grep -E "[0-9]+ successes / 0 failures / 0 errors" "$op.log" || fail "examples/$name: no summary line"
  echo "ok   examples/$name copied out of the repository passes its specs with only $tree"
}

# An ASan build's core.so needs its runtime first in the (uninstrumented) luajit (tests/lib/busted.sh)
(
  case "${LUAOP_SANITIZE:-}" in
  address) export LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS="detect_leaks=0" ;;
  esac
  run_specs memcached "$tmp/prefix"
  run_specs replicator "$tmp/prefix"
)

# luarocks make from the checkout, into a private tree (the rock's own CMake build dir is ROCK_BUILD).
# Under `make asan` the variables of the calling make (CMAKEFLAGS=-DLUAOP_SANITIZE=address, BUILD)
# reach the rockspec's `make rock` through MAKEFLAGS and the environment (make exports command-line
# variables); a user's `luarocks make` has none of them.
command -v luarocks >/dev/null || fail "luarocks is not installed (deps/debian-packages.txt lists it: make deps)"
(
  cd "$LUAOP_SRC"
  unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES CMAKEFLAGS BUILD BUILDTYPE
  ROCK_BUILD="$tmp/rock-build" JOBS=2 luarocks make --tree "$tmp/tree" luaop-scm-1.rockspec >"$tmp/rock.log" 2>&1
) || { tail -40 "$tmp/rock.log" >&2; fail "luarocks make --tree"; }
[ -f "$tmp/tree/lib/lua/5.1/luaop/core.so" ] || fail "luarocks make did not deploy core.so into the tree"
echo "ok   luarocks make --tree builds luaop.core and installs the Lua modules"
run_specs memcached "$tmp/tree"
