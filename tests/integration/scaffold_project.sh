#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `luaop init` + `luaop create api` + `luaop create webhook` (issue 23 part 1) in a temp dir, then
# the generated project as its user would run it:
#  1. bad input is refused with a message naming the cause (domain, group, version, kind, a
#     non-empty directory without --force, a file that exists, a webhook before its API);
#  2. every generated file is rendered (no template tag left), main.lua registers both;
#  3. the project's own busted specs pass (`make test`, against this tree's luaop library and
#     build/lua/luaop/core.so), luacheck is clean on its scripts and specs (`make lint`);
#  4. `luaop check --scripts` loads it; config/rbac/role.yaml is what `luaop create manifests`
#     generates, and `kubectl kustomize config/default` builds;
#  5. `luaop dev --once` (the local API server, the operator, the CRD and the sample) reconciles
#     the sample and exits 0 (no key whose last reconcile failed).
set -euo pipefail
: "${LUAOP:?}" "${LUAOP_SRC:?}" "${LUAOP_BUILD:?}"
source "$LUAOP_SRC/tests/lib/procs.sh"
P="$TMP/memcached-operator"

expect_fail() { # expect_fail WHAT PATTERN CMD...: CMD fails and its stderr matches PATTERN
  local what=$1 pat=$2; shift 2
  if "$@" >"$TMP/out" 2>"$TMP/err"; then fail "$what: succeeded"; fi
  grep -q -- "$pat" "$TMP/err" || { cat "$TMP/err" >&2; fail "$what: no \"$pat\" in the error"; }
  echo "ok   refused: $what"
}

expect_fail "no --domain" "--domain is required" "$LUAOP" init --repo "$P"
expect_fail "bad domain" "not a DNS-1123 subdomain" "$LUAOP" init --domain Example.COM --repo "$P"
expect_fail "bad project name" "not a DNS-1123 label" "$LUAOP" init --domain example.com --repo "$P" --project-name My_Op
expect_fail "create outside a project" "run \`luaop init" "$LUAOP" create api --group cache --version v1 --kind X --repo "$TMP"

"$LUAOP" init --domain example.com --repo "$P" >"$TMP/init.out" || fail "luaop init"
expect_fail "init over a project" "is not empty" "$LUAOP" init --domain example.com --repo "$P"
cd "$P"
expect_fail "bad version" "is not a Kubernetes version" "$LUAOP" create api --group cache --version 1.0 --kind Memcached
expect_fail "bad kind" "UpperCamelCase" "$LUAOP" create api --group cache --version v1alpha1 --kind memcached
expect_fail "webhook before its api" "run \`luaop create api\`" \
  "$LUAOP" create webhook --group cache --version v1alpha1 --kind Memcached --defaulting
"$LUAOP" create api --group cache --version v1alpha1 --kind Memcached >"$TMP/api.out" || fail "create api"
expect_fail "api twice" "already exists (--force replaces it)" \
  "$LUAOP" create api --group cache --version v1alpha1 --kind Memcached
expect_fail "webhook of no kind" "say which" "$LUAOP" create webhook --group cache --version v1alpha1 --kind Memcached
"$LUAOP" create webhook --group cache --version v1alpha1 --kind Memcached --defaulting --programmatic-validation \
  --conversion >"$TMP/webhook.out" || fail "create webhook"

for f in PROJECT Makefile Dockerfile README.md .luarc.json .luacheckrc .busted scripts/main.lua \
  scripts/memcached_controller.lua scripts/memcached_webhook.lua spec/memcached_controller_spec.lua \
  spec/memcached_webhook_spec.lua config/crd/bases/cache.example.com_memcacheds.yaml \
  config/samples/cache_v1alpha1_memcached.yaml config/rbac/role.yaml config/webhook/manifests.yaml \
  config/crd/patches/webhook_conversion.yaml config/default/kustomization.yaml config/manager/manager.yaml; do
  [ -s "$f" ] || fail "$f was not generated"
done
! grep -rn '{{' . >"$TMP/tags" || { cat "$TMP/tags" >&2; fail "unrendered template tags"; }
grep -qx 'require("memcached_controller").setup()' scripts/main.lua || fail "main.lua does not register the controller"
grep -qx 'require("memcached_webhook").declare()' scripts/main.lua || fail "main.lua does not declare the webhooks"
grep -q '^FROM ${LUAOP_IMAGE}' Dockerfile && grep -q '^COPY scripts/ /operator/scripts/' Dockerfile || fail "Dockerfile"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(".luarc.json")); assert d["runtime.version"]=="LuaJIT", d' ||
  fail ".luarc.json"
grep -qx -- '---@class Memcached' types/memcached_v1alpha1.lua &&
  grep -qx -- '---@field spec? MemcachedSpec The desired state of the Memcached.' types/memcached_v1alpha1.lua &&
  [ -s types/objectmeta.lua ] || fail "create api did not write the LuaLS types of the CRD into types/"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(".luarc.json")); assert "types" in d["workspace.library"], d' ||
  fail ".luarc.json does not list types/"
echo "ok   generated: every file rendered, main.lua registers the controller and the webhooks, types/ has the CRD's classes"

# 3. the generated project's own checks, as its Makefile runs them
mk=(make --no-print-directory LUAOP="$LUAOP" LUAOP_LUA="$LUAOP_SRC/scripts" LUAOP_CPATH="$LUAOP_BUILD/lua")
case "${LUAOP_SANITIZE:-}" in
address) export LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS="detect_leaks=0" ;;
esac
"${mk[@]}" test >"$TMP/test.out" 2>&1 || { cat "$TMP/test.out" >&2; fail "make test"; }
unset LD_PRELOAD
grep -Eq '^[0-9]+ successes / 0 failures / 0 errors / 0 pending' "$TMP/test.out" || { cat "$TMP/test.out" >&2; fail "busted summary"; }
n=$(grep -Eo '^[0-9]+ successes' "$TMP/test.out" | cut -d' ' -f1)
[ "$n" -ge 9 ] || fail "only $n specs ran (5 controller + 4 webhook expected)"
echo "ok   make test: $n specs pass"
"${mk[@]}" lint >"$TMP/lint.out" 2>&1 || { cat "$TMP/lint.out" >&2; fail "make lint (luacheck)"; }
sed 's/\x1b\[[0-9;]*m//g' "$TMP/lint.out" | grep -q '^Total: 0 warnings / 0 errors in 5 files' || { cat "$TMP/lint.out" >&2; fail "luacheck summary"; }
echo "ok   make lint: luacheck clean"

# 4. check, manifests, kustomize
"${mk[@]}" check >"$TMP/check.out" 2>&1 || { cat "$TMP/check.out" >&2; fail "luaop check --scripts"; }
grep -q '1 controller, 3 webhooks' "$TMP/check.out" || { cat "$TMP/check.out" >&2; fail "check summary"; }
! grep -q warning "$TMP/check.out" || { cat "$TMP/check.out" >&2; fail "make check warned on the generated scripts"; }
sed -i 's/(obj.spec or {}).message/(obj.spec or {}).mesage/' scripts/memcached_controller.lua
"${mk[@]}" check >"$TMP/check.out" 2>&1 || { cat "$TMP/check.out" >&2; fail "luaop check with a typo"; }
grep -q '^scripts/memcached_controller.lua:[0-9]*: warning: Memcached cache.example.com/v1alpha1 has no field spec.mesage (did you mean message?)$' \
  "$TMP/check.out" || { cat "$TMP/check.out" >&2; fail "make check did not warn on obj.spec.mesage"; }
sed -i 's/(obj.spec or {}).mesage/(obj.spec or {}).message/' scripts/memcached_controller.lua
echo "ok   make check: no warning on the generated scripts, a typo in a spec field warned with file:line"
cp config/rbac/role.yaml "$TMP/role.before"
"${mk[@]}" manifests >/dev/null || fail "make manifests"
diff -u "$TMP/role.before" config/rbac/role.yaml || fail "role.yaml differs from what make manifests generates"
cp types/memcached_v1alpha1.lua "$TMP/types.before"
"${mk[@]}" types >/dev/null || fail "make types"
diff -u "$TMP/types.before" types/memcached_v1alpha1.lua || fail "types/ differs from what make types generates"
grep -q 'resources: \["memcacheds/finalizers"\]' config/rbac/role.yaml || fail "role.yaml lacks the finalizers grant"
kubectl kustomize config/default >"$TMP/deploy.yaml" || fail "kubectl kustomize config/default"
for k in CustomResourceDefinition Deployment ClusterRole MutatingWebhookConfiguration ValidatingWebhookConfiguration Service; do
  grep -q "^kind: $k\$" "$TMP/deploy.yaml" || fail "kustomize output has no $k"
done
grep -q 'path: /convert' "$TMP/deploy.yaml" || fail "the CRD is not patched for its conversion webhook"
echo "ok   luaop check loads it; role.yaml is current; kustomize builds config/default"

# 5. luaop dev --once: local API server, operator, CRD, sample
"$LUAOP" dev --scripts scripts --listen 127.0.0.1:0 --apply config/crd/bases/cache.example.com_memcacheds.yaml \
  --apply config/samples/cache_v1alpha1_memcached.yaml --once >"$TMP/dev.out" 2>&1 &
PIDS+=($!)
wait "${PIDS[-1]}" || { cat "$TMP/dev.out" >&2; fail "luaop dev --once exited non-zero"; }
grep -q 'msg="created child".*name=memcached-sample' "$TMP/dev.out" || { cat "$TMP/dev.out" >&2; fail "the sample was not reconciled"; }
echo "ok   luaop dev --once reconciles the sample and exits 0"
echo "PASS scaffold_project"
