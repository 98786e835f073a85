#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The memcached example end to end on the embedded local API server, narrated.
# Usage: examples/memcached/demo.sh [path/to/luaop]   (make demo builds it first)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
LUAOP=${1:-$root/build/luaop}
LUAOP=$(cd "$(dirname "$LUAOP")" && pwd)/$(basename "$LUAOP")
LUAOP_SRC=$root
source "$root/tests/lib/dev.sh"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "luaop dev: local API server + the memcached operator (scripts in examples/memcached/scripts)"
lop_start_dev --scripts "$here/scripts" --apply "$here/crd/cache.example.com_memcacheds.yaml" \
  --apply "$here/samples/memcached.yaml"

say "the sample Memcached (size 1) and the Deployment the reconciler created"
lop_wait_for "the Deployment" 20 lop_jsonpath_is deployment/memcached-sample '{.spec.replicas}' 1
kubectl get memcached,deployments
kubectl get memcached memcached-sample -o \
  'jsonpath={range .status.conditions[*]}{.type}={.status} ({.reason}){"\n"}{end}'

say "scale: kubectl patch memcached memcached-sample spec.replicas=3"
kubectl patch memcached memcached-sample --type=merge -p '{"spec":{"replicas":3}}'
lop_wait_for "3 replicas" 20 lop_jsonpath_is deployment/memcached-sample '{.spec.replicas}' 3
kubectl get deployment memcached-sample -o 'jsonpath={.metadata.name}: {.spec.replicas} replicas{"\n"}'

say "webhooks (scripts/webhooks.lua): the defaulter set spec.port"
kubectl get memcached memcached-sample -o 'jsonpath=spec.port: {.spec.port}{"\n"}'
say "the validator: replicas above 10, and a change of the immutable spec.port, are denied"
kubectl patch memcached memcached-sample --type=merge -p '{"spec":{"replicas":11}}' || true
kubectl patch memcached memcached-sample --type=merge -p '{"spec":{"port":11311}}' || true

say "conversion: a v1alpha1 Memcached (spec.size: 2) is stored as v1 (spec.replicas: 2)"
kubectl apply -f "$here/samples/memcached_v1alpha1.yaml"
kubectl get memcacheds.v1alpha1.cache.example.com memcached-old -o 'jsonpath=v1alpha1: spec.size={.spec.size}{"\n"}'
kubectl get memcacheds.v1.cache.example.com memcached-old \
  -o 'jsonpath=v1:       spec.replicas={.spec.replicas} spec.port={.spec.port}{"\n"}'
lop_wait_for "its Deployment" 20 lop_jsonpath_is deployment/memcached-old '{.spec.replicas}' 2
kubectl delete memcached memcached-old

say "delete the Memcached: the finalizer runs, the Deployment is garbage-collected"
kubectl delete memcached memcached-sample --wait=false
lop_wait_for "the Memcached to go" 20 bash -c "! kubectl get memcached memcached-sample"
lop_wait_for "the Deployment to go" 20 bash -c "! kubectl get deployment memcached-sample"
kubectl get memcached,deployments

say "the Events the reconciler recorded (kubectl get events)"
kubectl get events --sort-by=.lastTimestamp -o \
  'custom-columns=TYPE:.type,REASON:.reason,OBJECT:.involvedObject.kind,MESSAGE:.message'

say "what the operator logged"
grep -E 'created deployment|updated deployment' "$LOP_TMP/luaop.log" | cut -c1-200 || true

say "stop (SIGTERM): graceful shutdown, exit 0"
lop_stop_dev
echo "demo finished"
