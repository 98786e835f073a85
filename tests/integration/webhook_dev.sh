#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test (issue 21 parts 5, 6): `luaop dev` serves the script set's webhooks on
# loopback with a certificate from a CA it made, installs their configurations in its embedded
# API server, and that server calls them: `kubectl apply` of an invalid ConfigMap is denied with
# the Lua reason, a valid one is stored with the defaulter's label, a warning reaches kubectl,
# and a dry run calls the webhooks without storing anything.
set -euo pipefail
source "$LUAOP_SRC/tests/lib/dev.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

lop_start_dev --scripts "$LUAOP_SRC/tests/integration/fixtures/webhooks"
lop_wait_for "the webhook configurations" 30 kubectl get validatingwebhookconfigurations luaop-dev-validating-webhook-configuration
# (logged just after the configurations are stored: wait for it rather than race it)
lop_wait_for "the 'webhook configurations installed' log line" 20 grep -q 'msg="webhook configurations installed"' "$LOP_TMP/luaop.log"

out=$(kubectl create configmap bad --from-literal=bad=1 2>&1) && fail "an invalid ConfigMap was accepted: $out"
grep -q 'admission webhook "vconfigmap.core.k8s.io" denied the request: data.bad is not allowed' <<<"$out" ||
  fail "the denial does not carry the Lua reason: $out"
echo "ok   kubectl create of an invalid object is denied with the Lua reason"

out=$(kubectl create configmap old --from-literal=old=1 2>&1) || fail "create old: $out"
grep -q 'Warning: data.old is deprecated' <<<"$out" || fail "no warning from the validator: $out"
echo "ok   the validator's warning reaches kubectl"
label=$(kubectl get configmap old -o jsonpath='{.metadata.labels.defaulted-by}')
[ "$label" = luaop ] || fail "the defaulter's label is missing (got '$label')"
echo "ok   the defaulter's change is stored"

out=$(kubectl create configmap dry --from-literal=bad=1 --dry-run=server 2>&1) && fail "dry run of an invalid object accepted: $out"
kubectl create configmap dry2 --from-literal=x=1 --dry-run=server -o name >/dev/null || fail "dry run of a valid object"
kubectl get configmap dry2 >/dev/null 2>&1 && fail "a dry run stored the object"
echo "ok   dry runs are admitted by the webhooks and store nothing"

out=$(kubectl create configmap boom --from-literal=boom=1 2>&1) && fail "a raising webhook allowed the request"
grep -q 'main.lua:10: boom requested' <<<"$out" || fail "the script error does not name main.lua:10: $out"
echo "ok   a raising webhook denies naming main.lua:10; the server keeps serving"
kubectl create configmap after --from-literal=x=1 >/dev/null || fail "the webhooks stopped serving after an error"
echo "PASS webhook_dev"
