#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test (issue 23 part 2): `luaop check --crd` warns, with file:line and the field path,
# where a script uses a field of its for_ kind that the CRD schema lacks (deliberate typos in a
# script set written here), and stays quiet on correct scripts (both examples) and on what it cannot
# see as the object (another kind's variable, comments, strings). Warnings never fail the check.
set -euo pipefail
cd "${LUAOP_SRC:?}"
source tests/lib/procs.sh
LUAOP="${LUAOP_BUILD:?}/luaop"
CRD=examples/memcached/crd/cache.example.com_memcacheds.yaml

# 1. the examples, as they are: no warning
for ex in memcached replicator; do
  "$LUAOP" check --scripts "examples/$ex/scripts" --crd examples/$ex/crd/*.yaml >/dev/null 2>"$TMP/$ex.err" ||
    { cat "$TMP/$ex.err" >&2; fail "check of examples/$ex"; }
  ! grep -q warning "$TMP/$ex.err" || { cat "$TMP/$ex.err" >&2; fail "examples/$ex: a warning on a correct script"; }
done
echo "ok   the examples' scripts use only fields their CRDs have"

# 2. a script set with typos (the line numbers below are those of this heredoc)
mkdir -p "$TMP/typo"
cat >"$TMP/typo/main.lua" <<'LUA'
local op = require("luaop")
local API, KIND = "cache.example.com/v1", "Memcached"

local function port_of(x)
  return x.spec.portt
end

local function reconcile(req)
  local m, err = op.client.get(API, KIND, req.namespace, req.name)
  if not m then return nil, err end
  local size = m.spec.sise
  local replicas = (m.spec or {}).replica
  local ok_read = m.spec.replicas + (m.status.observedGeneration or 0)
  -- m.spec.incomment is not code
  local s = "m.spec.instring"
  local dep = op.client.get("apps/v1", "Deployment", req.namespace, req.name)
  local other = dep and dep.spec.template
  local p = port_of(m)
  return op.status.update(m, function(o)
    o.status.conditons = {}
    o.status.conditions = {}
  end), size, replicas, ok_read, s, other, p
end

op.controller {
  name = "memcached",
  for_ = { api_version = API, kind = KIND },
  reconcile = reconcile,
}

-- long brackets are skipped too; a name bound again is tracked again
local function later(req)
  local m = op.client.get(API, KIND, req.namespace, req.name)
  --[[ m.spec.inlongcomment ]]
  local t = [==[ m.spec.inlongstring
  ]==]
  return m.status.observedGen, t, m.spec.port.x
end
return later
LUA
"$LUAOP" check --scripts "$TMP/typo" --crd "$CRD" >"$TMP/typo.out" 2>"$TMP/typo.err" ||
  { cat "$TMP/typo.err" >&2; fail "warnings made the check fail"; }
grep -q '^ok: ' "$TMP/typo.out" || fail "no summary on stdout"
D="$TMP/typo/main.lua"
cat >"$TMP/want" <<EOF2
$D:5: warning: Memcached cache.example.com/v1 has no field spec.portt (did you mean port?)
$D:11: warning: Memcached cache.example.com/v1 has no field spec.sise
$D:12: warning: Memcached cache.example.com/v1 has no field spec.replica (did you mean replicas?)
$D:20: warning: Memcached cache.example.com/v1 has no field status.conditons (did you mean conditions?)
$D:37: warning: Memcached cache.example.com/v1 has no field status.observedGen
$D:37: warning: Memcached cache.example.com/v1 has no field spec.port.x
luaop check: 6 fields not in the CRD schemas
EOF2
diff -u "$TMP/want" "$TMP/typo.err" || fail "the warnings differ"
echo "ok   typos warned with file:line and path: through get, (x.spec or {}), a helper's parameter, a mutate function"
echo "ok   quiet on correct fields, another kind's variable, comments and strings (long brackets too); a field of a scalar warned; exit 0"

# 3. without --crd there is nothing to compare with
"$LUAOP" check --scripts "$TMP/typo" >/dev/null 2>"$TMP/nocrd.err" || fail "check without --crd"
[ ! -s "$TMP/nocrd.err" ] || { cat "$TMP/nocrd.err" >&2; fail "warnings without --crd"; }
echo "ok   no field check without --crd"
echo "PASS check_fields"
