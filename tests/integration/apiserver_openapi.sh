#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test: kubectl 1.32 reads the server's OpenAPI documents — `kubectl explain` of a
# built-in field (configmap.data, deployment.spec.replicas, a list of objects) and of a CRD
# (memcached.spec), `kubectl apply --validate=strict` of a custom resource with an unknown field
# failing as on a cluster (kubectl sees fieldValidation in the v3 document and leaves the check
# to the server), client-side apply of a Deployment still patching with the schemas, and the
# v3 index's hash following a CRD change.
set -eu

: "${LUAOP:?LUAOP must point at the luaop binary}"
source "${LUAOP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/procs.sh"
SRC=${LUAOP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}

"$LUAOP" apiserver --listen 127.0.0.1:0 --kubeconfig-out "$TMP/kc" >"$TMP/srv.out" 2>"$TMP/srv.err" &
PIDS+=($!)
wait_file "$TMP/srv.out" "luaop apiserver"
URL=$(sed -n 's/^listening on //p' "$TMP/srv.out")
export KUBECONFIG="$TMP/kc"
export KUBECACHEDIR="$TMP/cache"

has() { # has WHAT FILE LINE: FILE contains LINE (whitespace squeezed, trimmed)
    tr -s ' \t' '  ' <"$2" | sed -E 's/^ +//; s/ +$//' | grep -qxF -- "$3" || fail "$1: no line '$3' in:
$(cat "$2")"
}

echo "== explain built-in fields"
kubectl explain configmap.data >"$TMP/out" 2>&1 || fail "explain configmap.data: $(cat "$TMP/out")"
has "explain configmap.data" "$TMP/out" "KIND: ConfigMap"
has "explain configmap.data" "$TMP/out" "VERSION: v1"
has "explain configmap.data" "$TMP/out" "FIELD: data <map[string]string>"
grep -q "UTF-8 strings" "$TMP/out" || fail "explain configmap.data: no description: $(cat "$TMP/out")"
kubectl explain deployment.spec.replicas >"$TMP/out" 2>&1 || fail "explain deployment.spec.replicas: $(cat "$TMP/out")"
has "explain deployment.spec.replicas" "$TMP/out" "GROUP: apps"
has "explain deployment.spec.replicas" "$TMP/out" "KIND: Deployment"
has "explain deployment.spec.replicas" "$TMP/out" "FIELD: replicas <integer>"
grep -q "How many pods to run (default 1)." "$TMP/out" || fail "explain replicas description: $(cat "$TMP/out")"
kubectl explain pod.spec.containers >"$TMP/out" 2>&1 || fail "explain pod.spec.containers: $(cat "$TMP/out")"
has "explain pod.spec.containers" "$TMP/out" "FIELD: containers <[]Container>"
has "explain pod.spec.containers" "$TMP/out" "name <string> -required-"
has "explain pod.spec.containers" "$TMP/out" "env <[]EnvVar>"
kubectl explain configmap >"$TMP/out" 2>&1 || fail "explain configmap: $(cat "$TMP/out")"
has "explain configmap" "$TMP/out" "metadata <ObjectMeta>"
has "explain configmap" "$TMP/out" "immutable <boolean>"

echo "== explain a CRD"
kubectl apply -f "$SRC/examples/memcached/crd/cache.example.com_memcacheds.yaml" >/dev/null
kubectl wait --for condition=Established crd/memcacheds.cache.example.com --timeout=10s >/dev/null
# v1alpha1 asked for by name (the preferred version is v1; the example's CRD serves both)
kubectl explain memcached.spec --api-version=cache.example.com/v1alpha1 >"$TMP/out" 2>&1 || fail "explain memcached.spec: $(cat "$TMP/out")"
has "explain memcached.spec" "$TMP/out" "GROUP: cache.example.com"
has "explain memcached.spec" "$TMP/out" "KIND: Memcached"
has "explain memcached.spec" "$TMP/out" "VERSION: v1alpha1"
has "explain memcached.spec" "$TMP/out" "FIELD: spec <Object>"
has "explain memcached.spec" "$TMP/out" "MemcachedSpec defines the desired state of Memcached."
has "explain memcached.spec" "$TMP/out" "size <integer> -required-"
kubectl explain memcached.metadata.labels >"$TMP/out" 2>&1 || fail "explain memcached.metadata.labels: $(cat "$TMP/out")"
has "explain memcached.metadata.labels" "$TMP/out" "FIELD: labels <map[string]string>"

echo "== apply --validate=strict of an unknown field"
cat >"$TMP/bad.yaml" <<'YAML'
apiVersion: cache.example.com/v1
kind: Memcached
metadata: {name: bad}
spec: {replicas: 1, bogus: 2}
YAML
kubectl apply --validate=strict -f "$TMP/bad.yaml" >"$TMP/out" 2>&1 && fail "strict apply of an unknown field succeeded"
grep -qF 'Error from server (BadRequest): error when creating "'"$TMP/bad.yaml"'": Memcached in version "v1" cannot be handled as a Memcached: strict decoding error: unknown field "spec.bogus"' "$TMP/out" ||
    fail "strict apply message: $(cat "$TMP/out")"
kubectl get memcached bad >/dev/null 2>&1 && fail "the strict apply stored the object"
kubectl apply --validate=warn -f "$TMP/bad.yaml" >"$TMP/out" 2>&1 || fail "warn apply: $(cat "$TMP/out")"
grep -q 'unknown field "spec.bogus"' "$TMP/out" || fail "warn apply warning: $(cat "$TMP/out")"
[ "$(kubectl get memcached bad -o jsonpath='{.spec}')" = '{"replicas":1}' ] || fail "the unknown field was not pruned"

echo "== client-side apply of a Deployment (strategic merge patch from the schemas)"
cat >"$TMP/dep.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: web, image: nginx:1.25, env: [{name: A, value: "1"}]}
        - {name: side, image: busybox}
YAML
kubectl apply -f "$TMP/dep.yaml" >/dev/null || fail "apply deployment"
sed -i 's/nginx:1.25/nginx:1.27/; s/replicas: 1/replicas: 2/' "$TMP/dep.yaml"
kubectl apply -f "$TMP/dep.yaml" >"$TMP/out" 2>&1 || fail "re-apply deployment: $(cat "$TMP/out")"
[ "$(kubectl get deploy web -o jsonpath='{.spec.replicas} {.spec.template.spec.containers[*].image} {.spec.template.spec.containers[0].env[0].value}')" = "2 nginx:1.27 busybox 1" ] ||
    fail "apply result: $(kubectl get deploy web -o yaml)"

echo "== the v3 index follows CRD changes"
before=$(curl -sf "$URL/openapi/v3" | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["apis/cache.example.com/v1"]["serverRelativeURL"])')
# versions/0 is v1, the preferred version kubectl explain shows
kubectl patch crd memcacheds.cache.example.com --type=json \
    -p '[{"op":"replace","path":"/spec/versions/0/schema/openAPIV3Schema/description","value":"Changed."}]' >/dev/null
after=$(curl -sf "$URL/openapi/v3" | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["apis/cache.example.com/v1"]["serverRelativeURL"])')
[ "$before" != "$after" ] || fail "the hash did not change: $before"
kubectl explain memcached >"$TMP/out" 2>&1 || fail "explain after the change: $(cat "$TMP/out")"
grep -q "Changed." "$TMP/out" || fail "kubectl explain did not see the new schema: $(cat "$TMP/out")"

echo "PASS"
