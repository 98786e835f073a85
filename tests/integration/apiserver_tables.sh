#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test: kubectl 1.32 prints the server's Tables (as=Table;g=meta.k8s.io) as on a
# cluster — `kubectl get` and `-o wide` columns and values for a Deployment, a ConfigMap,
# Events and a CRD with additionalPrinterColumns (a filter JSONPath, a priority-1 column), plus
# `kubectl get -w` (a Table per event) and `-A` (the NAMESPACE column from the row objects).
set -eu

: "${LUAOP:?LUAOP must point at the luaop binary}"
source "${LUAOP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/procs.sh"
SRC=${LUAOP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}

"$LUAOP" apiserver --listen 127.0.0.1:0 --kubeconfig-out "$TMP/kc" >"$TMP/srv.out" 2>"$TMP/srv.err" &
PIDS+=($!)
wait_file "$TMP/srv.out" "luaop apiserver"
export KUBECONFIG="$TMP/kc"
export KUBECACHEDIR="$TMP/cache"

# squeeze the column padding, and mask ages of a few seconds (the test's own runtime)
norm() { tr -s ' ' | sed -E 's/(^| )[0-9]{1,2}s( |$)/\1AGE\2/g; s/ +$//'; }
expect() { # expect WHAT WANT (the normalized output on stdin)
    local got
    got=$(norm)
    [ "$got" = "$2" ] || fail "$1: got
$got
want
$2"
}

echo "== Deployment"
kubectl create deployment web --image=nginx:1.25 --image=redis:7 --replicas=3 >/dev/null
kubectl patch deployment web --subresource=status --type=merge \
    -p '{"status":{"replicas":3,"readyReplicas":2,"updatedReplicas":3,"availableReplicas":2}}' >/dev/null
kubectl get deployment web | expect "get deployment" "NAME READY UP-TO-DATE AVAILABLE AGE
web 2/3 3 2 AGE"
kubectl get deployments -o wide | expect "get deployments -o wide" \
    "NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR
web 2/3 3 2 AGE nginx,redis nginx:1.25,redis:7 app=web"

echo "== ConfigMap"
kubectl create configmap app --from-literal=a=1 --from-literal=b=2 >/dev/null
kubectl get cm app | expect "get configmap" "NAME DATA AGE
app 2 AGE"
kubectl get cm app -o wide | expect "get configmap -o wide" "NAME DATA AGE
app 2 AGE"
kubectl get cm -A --field-selector metadata.name=app | expect "get -A" "NAMESPACE NAME DATA AGE
default app 2 AGE"

echo "== Events"
ts() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }
cat <<YAML | kubectl create -f - >/dev/null
apiVersion: v1
kind: Event
metadata: {name: web.17a, namespace: default}
involvedObject: {kind: Deployment, name: web, namespace: default, apiVersion: apps/v1}
reason: ScalingReplicaSet
message: Scaled up replica set web-5d4 to 3
type: Normal
source: {component: deployment-controller}
firstTimestamp: "$(ts '-30 hours')"
lastTimestamp: "$(ts '-10 hours')"
count: 4
YAML
kubectl get events | expect "get events" "LAST SEEN TYPE REASON OBJECT MESSAGE
10h Normal ScalingReplicaSet deployment/web Scaled up replica set web-5d4 to 3"
kubectl get events -o wide | expect "get events -o wide" \
    "LAST SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE FIRST SEEN COUNT NAME
10h Normal ScalingReplicaSet deployment/web deployment-controller Scaled up replica set web-5d4 to 3 30h 4 web.17a"

echo "== a CRD with printer columns"
kubectl apply -f "$SRC/examples/memcached/crd/cache.example.com_memcacheds.yaml" >/dev/null
kubectl wait --for condition=Established crd/memcacheds.cache.example.com --timeout=10s >/dev/null
kubectl apply -f "$SRC/examples/memcached/samples/memcached.yaml" >/dev/null
NAME=$(kubectl get memcacheds -o jsonpath='{.items[0].metadata.name}')
kubectl patch memcached "$NAME" --type=merge -p '{"spec":{"port":11211}}' >/dev/null # no defaulter here
SIZE=$(kubectl get memcacheds -o jsonpath='{.items[0].spec.replicas}')
kubectl get memcacheds | expect "get memcacheds" "NAME REPLICAS AVAILABLE AGE
$NAME $SIZE AGE"
kubectl patch memcached "$NAME" --subresource=status --type=merge -p '{"status":{"conditions":[
    {"type":"Progressing","status":"False","reason":"Done","message":"m","lastTransitionTime":"2024-01-01T00:00:00Z"},
    {"type":"Available","status":"True","reason":"Reconciled","message":"m","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}' >/dev/null
kubectl get memcacheds | expect "get memcacheds (status)" "NAME REPLICAS AVAILABLE AGE
$NAME $SIZE True AGE"
kubectl get memcacheds -o wide | expect "get memcacheds -o wide" "NAME REPLICAS PORT AVAILABLE REASON AGE
$NAME $SIZE 11211 True Reconciled AGE"
kubectl get crd | expect "get crd" "NAME CREATED AT
memcacheds.cache.example.com $(kubectl get crd memcacheds.cache.example.com -o jsonpath='{.metadata.creationTimestamp}')"

echo "== get -w: a Table per event"
kubectl get cm -w >"$TMP/watch.out" 2>&1 &
WPID=$!
PIDS+=($WPID)
for _ in $(seq 1 200); do grep -q '^app ' "$TMP/watch.out" && break; sleep 0.05; done
kubectl create configmap later --from-literal=x=1 >/dev/null
for _ in $(seq 1 200); do grep -q '^later ' "$TMP/watch.out" && break; sleep 0.05; done
kill $WPID 2>/dev/null || true
norm <"$TMP/watch.out" | grep -qx 'NAME DATA AGE' || fail "watch header: $(cat "$TMP/watch.out")"
norm <"$TMP/watch.out" | grep -qx 'later 1 AGE' || fail "watch row: $(cat "$TMP/watch.out")"
[ "$(grep -c '^NAME' "$TMP/watch.out")" = 1 ] || fail "the watch printed the header twice: $(cat "$TMP/watch.out")"

echo "PASS"
