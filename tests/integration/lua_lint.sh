#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Lua side's checks (issue 23 part 3): luacheck (.luacheckrc) is clean on the library, the
# examples, the specs, the tools and the generated LuaLS stubs; LDoc (config.ld) builds the
# library's reference with no warning (a param named unlike its argument, an undocumented one...).
set -euo pipefail
cd "${LUAOP_SRC:?}"
source tests/lib/procs.sh
luacheck --no-color --formatter plain . >"$TMP/luacheck.out" 2>&1 || { cat "$TMP/luacheck.out" >&2; fail "luacheck"; }
[ ! -s "$TMP/luacheck.out" ] || { cat "$TMP/luacheck.out" >&2; fail "luacheck warnings"; }
for d in scripts/luaop examples/memcached/scripts examples/replicator/scripts spec types/luaop tools; do
  luacheck --no-color --formatter plain "$d" >/dev/null || fail "luacheck on $d"
done
echo "ok   luacheck: no warning in scripts/, examples/*/scripts, spec/, types/, tools/"
ldoc --dir "$TMP/doc" . >"$TMP/ldoc.out" 2>&1 || { cat "$TMP/ldoc.out" >&2; fail "ldoc"; }
if grep -v -e '^reading configuration from config.ld$' -e '^output written to ' "$TMP/ldoc.out" >"$TMP/ldoc.warn"; then
  cat "$TMP/ldoc.warn" >&2
  fail "ldoc warnings"
fi
for m in luaop.conditions luaop.testing luaop.webhook; do
  grep -q "$m" "$TMP/doc/index.html" || fail "the reference has no $m"
done
echo "ok   ldoc: the reference builds with no warning"
echo "PASS lua_lint"
