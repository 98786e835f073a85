#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The memcached example end to end against the local API server (luaop dev): create → Deployment
# with size replicas; scale; someone deletes the Deployment → recreated; someone edits replicas →
# restored; status conditions with observedGeneration; the webhooks (scripts/webhooks.lua) through
# the API server: defaulting, validation (bounds, an immutable field), a v1alpha1 object stored as
# v1 and read back in both versions; delete the CR → finalizer runs, the Deployment is
# garbage-collected; SIGTERM → exit 0.
set -euo pipefail
: "${LUAOP:?}" "${LUAOP_SRC:?}"
source "$LUAOP_SRC/tests/lib/dev.sh"
ex="$LUAOP_SRC/examples/memcached"

lop_start_dev --scripts "$ex/scripts" --apply "$ex/crd/cache.example.com_memcacheds.yaml" \
  --apply "$ex/samples/memcached.yaml" --metrics-bind-address 127.0.0.1:0

# /metrics during the scenario (the port was picked by the kernel; the log names it). The API
# server answers before the operator's HTTP server is up, so wait for its line first (without this
# the grep below raced the operator's start and failed the script in CI).
lop_wait_for "the metrics server's log line" 20 grep -q 'msg="http server listening".*metrics=true' "$LOP_TMP/luaop.log"
mport=$(grep -m1 'msg="http server listening".*metrics=true' "$LOP_TMP/luaop.log" | sed -E 's/.* port=([0-9]+).*/\1/')
metric() { /usr/bin/python3 "$LUAOP_SRC/tests/lib/metrics.py" "http://127.0.0.1:$mport/metrics" "$1"; }

cr=memcached/memcached-sample
dep=deployment/memcached-sample
lop_wait_for "the Deployment" 20 lop_jsonpath_is "$dep" '{.spec.replicas}' 1
owner=$(kubectl get "$dep" -o 'jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].controller}')
[ "$owner" = "Memcached/true" ] || { echo "FAIL: Deployment owner is '$owner'" >&2; exit 1; }
lop_wait_for "status Available condition" 20 lop_jsonpath_is "$cr" \
  '{.status.conditions[?(@.type=="Available")].observedGeneration}' 1

ok_before=$(metric 'controller_runtime_reconcile_total{controller="memcached",result="success"}')
adds_before=$(metric 'workqueue_adds_total{controller="memcached",name="memcached"}')
[ "$(metric 'luaop_informer_objects{gvr="apps/v1/deployments"}')" = 1 ] || { echo "FAIL: informer objects metric" >&2; exit 1; }
[ "$(metric process_resident_memory_bytes)" -gt 1000000 ] 2>/dev/null || { echo "FAIL: process_resident_memory_bytes missing from /metrics" >&2; exit 1; }
echo "scale to 3"
kubectl patch "$cr" --type=merge -p '{"spec":{"replicas":3}}'
lop_wait_for "3 replicas" 20 lop_jsonpath_is "$dep" '{.spec.replicas}' 3
lop_wait_for "observedGeneration 2" 20 lop_jsonpath_is "$cr" '{.status.observedGeneration}' 2

ok_after=$(metric 'controller_runtime_reconcile_total{controller="memcached",result="success"}')
adds_after=$(metric 'workqueue_adds_total{controller="memcached",name="memcached"}')
[ "$ok_after" -gt "$ok_before" ] && [ "$adds_after" -gt "$adds_before" ] || {
  echo "FAIL: metrics did not move: reconciles $ok_before -> $ok_after, adds $adds_before -> $adds_after" >&2; exit 1; }
echo "metrics: successful reconciles $ok_before -> $ok_after, queue adds $adds_before -> $adds_after"
echo "webhooks: the defaulter set spec.port; the validator refuses bad replicas and a port change"
[ "$(kubectl get "$cr" -o 'jsonpath={.spec.port}')" = 11211 ] || { echo "FAIL: spec.port not defaulted" >&2; exit 1; }
if kubectl patch "$cr" --type=merge -p '{"spec":{"replicas":11}}' 2>"$LOP_TMP/err"; then
  echo "FAIL: replicas 11 was admitted" >&2; exit 1; fi
grep -q 'spec.replicas must be an integer from 0 to 10, got 11' "$LOP_TMP/err" || { echo "FAIL: denial: $(cat "$LOP_TMP/err")" >&2; exit 1; }
if kubectl patch "$cr" --type=merge -p '{"spec":{"port":11311}}' 2>"$LOP_TMP/err"; then
  echo "FAIL: a port change was admitted" >&2; exit 1; fi
grep -q 'spec.port is immutable (was 11211, got 11311)' "$LOP_TMP/err" || { echo "FAIL: denial: $(cat "$LOP_TMP/err")" >&2; exit 1; }

echo "conversion: a v1alpha1 Memcached is stored as v1 and reconciled"
kubectl apply -f "$ex/samples/memcached_v1alpha1.yaml"
[ "$(kubectl get memcacheds.v1.cache.example.com memcached-old -o 'jsonpath={.spec.replicas}/{.spec.port}')" = 2/11211 ] ||
  { echo "FAIL: v1 view: $(kubectl get memcacheds.v1.cache.example.com memcached-old -o json)" >&2; exit 1; }
[ "$(kubectl get memcacheds.v1alpha1.cache.example.com memcached-old -o 'jsonpath={.spec.size}')" = 2 ] ||
  { echo "FAIL: v1alpha1 view: $(kubectl get memcacheds.v1alpha1.cache.example.com memcached-old -o json)" >&2; exit 1; }
lop_wait_for "the v1alpha1 Memcached's Deployment" 20 lop_jsonpath_is deployment/memcached-old '{.spec.replicas}' 2
kubectl delete memcacheds.v1alpha1.cache.example.com memcached-old --wait=false
lop_wait_for "memcached-old to go" 20 bash -c "! kubectl get memcached memcached-old"

echo "someone deletes the Deployment"
uid_before=$(kubectl get "$dep" -o 'jsonpath={.metadata.uid}')
kubectl delete "$dep"
lop_wait_for "the Deployment to be recreated" 20 bash -c \
  "[ \"\$(kubectl get $dep -o 'jsonpath={.metadata.uid}')\" != '' ] && [ \"\$(kubectl get $dep -o 'jsonpath={.metadata.uid}')\" != '$uid_before' ]"
lop_wait_for "3 replicas again" 20 lop_jsonpath_is "$dep" '{.spec.replicas}' 3

echo "someone edits replicas"
kubectl patch "$dep" --type=merge -p '{"spec":{"replicas":7}}'
lop_wait_for "replicas restored to 3" 20 lop_jsonpath_is "$dep" '{.spec.replicas}' 3

echo "delete the Memcached"
kubectl delete "$cr" --wait=false
lop_wait_for "the Memcached to be gone (finalizer removed)" 20 bash -c "! kubectl get $cr"
lop_wait_for "the Deployment to be garbage-collected" 20 bash -c "! kubectl get $dep"

lop_stop_dev
echo "PASS memcached end to end"
