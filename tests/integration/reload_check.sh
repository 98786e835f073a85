#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `luaop check --scripts DIR` and `luaop check --configmap FILE.yaml`: the offline validation a CI
# job runs before `kubectl apply` (docs/reload.md). No cluster needed.
#  - a good set passes from a directory (with a module in a subdirectory) and from the ConfigMap
#    `kubectl create configmap --from-file --dry-run=client -o yaml` makes of it (flat keys), and
#    both report the same content hash as `luaop run` would;
#  - a binaryData (base64) key works;
#  - rejected with exit 1 and file:line: a syntax error (also in a file nothing requires), an
#    error raised at load, an invalid controller declaration; rejected with a clear message: no main.lua, duplicate controller
#    names, a YAML without a ConfigMap, two ConfigMaps, a missing file, malformed YAML.
set -euo pipefail
: "${LUAOP:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/luaop-check.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$T/good"
cat >"$T/good/main.lua" <<'LUA'
local op = require("luaop")
local util = require("util")
op.controller {
  name = "widgets",
  for_ = { api_version = "example.com/v1", kind = "Widget" },
  reconcile = function(req) return util.done() end,
}
LUA
cat >"$T/good/util.lua" <<'LUA'
return { done = function() return require("luaop").result.done() end }
LUA

out=$("$LUAOP" check --scripts "$T/good") || fail "good dir rejected"
v_dir=$(sed -n 's/.*(version \([0-9a-f]*\)).*/\1/p' <<<"$out")
[ ${#v_dir} -eq 16 ] || fail "no version in: $out"
grep -q "widgets: example.com/v1 Widget" <<<"$out" || fail "controller not listed: $out"
echo "ok   check --scripts on a good set: $out" | head -1

kubectl create configmap scripts -n ops --from-file="$T/good" --dry-run=client -o yaml >"$T/good.yaml"
out=$("$LUAOP" check --configmap "$T/good.yaml") || fail "good ConfigMap rejected"
grep -q "configmap ops/scripts" <<<"$out" || fail "origin not named: $out"
v_cm=$(sed -n 's/.*(version \([0-9a-f]*\)).*/\1/p' <<<"$out")
[ "$v_cm" = "$v_dir" ] || fail "versions differ: dir $v_dir, configmap $v_cm"
echo "ok   check --configmap on the same set: same version $v_cm"

# binaryData and a multi-document file (a Deployment before the ConfigMap)
b64=$(base64 -w0 "$T/good/util.lua")
main_indented=$(sed 's/^/    /' "$T/good/main.lua")
cat >"$T/bin.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: op}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: scripts, namespace: ops}
data:
  main.lua: |
$main_indented
  README.md: not a script
binaryData:
  util.lua: $b64
YAML
out=$("$LUAOP" check --configmap "$T/bin.yaml") || fail "binaryData ConfigMap rejected"
grep -q "(version $v_dir)" <<<"$out" || fail "binaryData set has another version: $out"
echo "ok   binaryData key and non-.lua keys, ConfigMap as second document: same version"

# expect_reject NAME PATTERN ARGS... — exit 1 and stderr matching PATTERN
expect_reject() {
  local what=$1 pattern=$2 rc=0
  shift 2
  "$LUAOP" check "$@" >"$T/out" 2>"$T/err" || rc=$?
  [ $rc -eq 1 ] || fail "$what: exit $rc (want 1); stderr: $(cat "$T/err")"
  grep -Eq "$pattern" "$T/err" || fail "$what: stderr does not match '$pattern': $(cat "$T/err")"
  echo "ok   $what rejected: $(head -1 "$T/err")"
}
cm_of() { # cm_of FILE.lua -> ConfigMap YAML with it as main.lua
  echo "apiVersion: v1"; echo "kind: ConfigMap"; echo "metadata: {name: s, namespace: ops}"
  echo "data:"; echo "  main.lua: |"; sed 's/^/    /' "$1"
}

printf 'local op = require("luaop")\nlocal x = = 1\n' >"$T/syntax.lua"
cm_of "$T/syntax.lua" >"$T/syntax.yaml"
expect_reject "syntax error" "main\.lua:2:" --configmap "$T/syntax.yaml"

# a syntax error in a file nothing requires yet: every file of the set is compiled
mkdir -p "$T/unused"
cp "$T/good/main.lua" "$T/good/util.lua" "$T/unused/"
printf 'return {\n  broken = ,\n}\n' >"$T/unused/later.lua"
expect_reject "syntax error in a file main.lua does not require" "later\.lua:2:" --scripts "$T/unused"

printf 'local op = require("luaop")\n\nerror("no config")\n' >"$T/raise.lua"
cm_of "$T/raise.lua" >"$T/raise.yaml"
expect_reject "error at load" "main\.lua:3: no config" --configmap "$T/raise.yaml"

cat >"$T/decl.lua" <<'LUA'
local op = require("luaop")
op.controller { name = "w", for_ = { api_version = "example.com/v1" }, reconcile = function() end }
LUA
cm_of "$T/decl.lua" >"$T/decl.yaml"
expect_reject "invalid declaration" "main\.lua:2:" --configmap "$T/decl.yaml"

cat >"$T/dup.lua" <<'LUA'
local op = require("luaop")
for _ = 1, 2 do
  op.controller { name = "w", for_ = { api_version = "example.com/v1", kind = "W" },
                  reconcile = function() end }
end
LUA
cm_of "$T/dup.lua" >"$T/dup.yaml"
expect_reject "duplicate controller names" 'declared twice|two controllers are named' --configmap "$T/dup.yaml"

printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata:\n  other.lua: "return 1"\n' >"$T/nomain.yaml"
expect_reject "no main.lua" "no main\.lua" --configmap "$T/nomain.yaml"

printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n' >"$T/secret.yaml"
expect_reject "no ConfigMap" "no ConfigMap in the file" --configmap "$T/secret.yaml"

cat "$T/nomain.yaml" >"$T/two.yaml"; echo "---" >>"$T/two.yaml"; cat "$T/syntax.yaml" >>"$T/two.yaml"
expect_reject "two ConfigMaps" "2 ConfigMaps" --configmap "$T/two.yaml"

expect_reject "missing file" "nope\.yaml" --configmap "$T/nope.yaml"
printf 'kind: ConfigMap\ndata: [unclosed\n' >"$T/bad.yaml"
expect_reject "malformed YAML" "bad\.yaml" --configmap "$T/bad.yaml"
expect_reject "missing directory" "nodir" --scripts "$T/nodir"

echo "PASS luaop check"
