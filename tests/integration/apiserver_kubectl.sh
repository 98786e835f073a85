#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test: kubectl 1.32 (a client nobody here wrote) against `luaop apiserver`, default
# flags: create/apply (client-side and --server-side)/get (-o yaml|json, -w)/patch (merge, json,
# --subresource=status)/replace/scale/delete/wait, CRDs, errors, and TLS + token auth.
set -eu  # no pipefail: `kubectl ... | grep -q` may SIGPIPE kubectl after a match

: "${LUAOP:?LUAOP must point at the luaop binary}"
source "${LUAOP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/procs.sh"

# start_server NAME ARGS... : starts a server, sets URL_<NAME>
start_server() {
    local name=$1
    shift
    "$LUAOP" apiserver --listen 127.0.0.1:0 "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
    PIDS+=($!)
    for _ in $(seq 1 200); do
        grep -q '^listening on ' "$TMP/$name.out" 2>/dev/null && break
        kill -0 "${PIDS[-1]}" 2>/dev/null || fail "server $name exited: $(cat "$TMP/$name.err")"
        sleep 0.05
    done
    local url
    url=$(sed -n 's/^listening on //p' "$TMP/$name.out")
    [ -n "$url" ] || fail "server $name printed no URL"
    printf -v "URL_$name" '%s' "$url"
}

start_server main --kubeconfig-out "$TMP/kc" --enable-fault-control
export KUBECONFIG="$TMP/kc"
export KUBECACHEDIR="$TMP/cache" # ports are reused across runs: never share discovery caches
K() { kubectl "$@"; }

echo "== discovery and namespaces"
K get ns -o name | grep -qx 'namespace/default' || fail "default namespace missing"
K version -o json | grep -q '"minor": "32"' || fail "version"
K api-resources -o name | grep -qx 'leases.coordination.k8s.io' || fail "api-resources"

echo "== create / get / apply / patch / replace on a ConfigMap"
cat >"$TMP/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  labels: {tier: web}
data:
  mode: fast
EOF
K create -f "$TMP/cm.yaml" | grep -q 'configmap/app created' || fail "create -f"
K create -f "$TMP/cm.yaml" 2>"$TMP/err" && fail "second create succeeded"
grep -q 'AlreadyExists\|already exists' "$TMP/err" || fail "AlreadyExists message: $(cat "$TMP/err")"
K get cm app -o yaml | grep -q 'mode: fast' || fail "get -o yaml"
K get cm app -o json | grep -q '"resourceVersion"' || fail "get -o json"
sed -i 's/mode: fast/mode: slow/' "$TMP/cm.yaml"
K apply -f "$TMP/cm.yaml" >/dev/null 2>&1 || fail "client-side apply"
[ "$(K get cm app -o jsonpath='{.data.mode}')" = slow ] || fail "apply did not update"
sed -i 's/mode: slow/mode: ssa/' "$TMP/cm.yaml"
K apply --server-side --force-conflicts -f "$TMP/cm.yaml" | grep -q 'serverside-applied' || fail "server-side apply"
[ "$(K get cm app -o jsonpath='{.data.mode}')" = ssa ] || fail "SSA did not update"
K get cm app -o jsonpath='{.metadata.managedFields[*].manager}' | grep -q kubectl || fail "managedFields"
K patch cm app --type=merge -p '{"data":{"extra":"1"}}' >/dev/null || fail "merge patch"
K patch cm app --type=json -p '[{"op":"replace","path":"/data/extra","value":"2"}]' >/dev/null || fail "json patch"
K patch cm app -p '{"data":{"smp":"yes"}}' >/dev/null || fail "strategic patch"
[ "$(K get cm app -o jsonpath='{.data.extra}/{.data.smp}')" = 2/yes ] || fail "patch results"
K patch cm app --type=json -p '[{"op":"test","path":"/data/extra","value":"nope"}]' 2>"$TMP/err" && fail "failing test op accepted"
grep -q 'rejected our request' "$TMP/err" || fail "json patch test failure message: $(cat "$TMP/err")"
K get cm app -o yaml | sed 's/extra: "2"/extra: "3"/' | K replace -f - >/dev/null || fail "replace"
[ "$(K get cm app -o jsonpath='{.data.extra}')" = 3 ] || fail "replace result"
RV=$(K get cm app -o jsonpath='{.metadata.resourceVersion}')
K patch cm app --type=merge -p '{"data":{"extra":"3"}}' >/dev/null
[ "$(K get cm app -o jsonpath='{.metadata.resourceVersion}')" = "$RV" ] || fail "no-op patch changed the RV (Q.6)"
K get cm -l tier=web -o name | grep -qx configmap/app || fail "label selector"
K get cm -l 'tier!=web' -o name | grep -q . && fail "!= selector"
K get cm nope 2>"$TMP/err" && fail "get of a missing object succeeded"
grep -q 'configmaps "nope" not found' "$TMP/err" || fail "NotFound message"

echo "== get -w sees changes"
K get cm -w --output-watch-events -o json >"$TMP/watch.out" 2>&1 &
WPID=$!
PIDS+=($WPID)
for _ in $(seq 1 100); do grep -q '"ADDED"' "$TMP/watch.out" && break; sleep 0.05; done
K patch cm app --type=merge -p '{"data":{"w":"1"}}' >/dev/null
K delete cm app >/dev/null
for _ in $(seq 1 100); do grep -q '"DELETED"' "$TMP/watch.out" && break; sleep 0.05; done
kill "$WPID" 2>/dev/null || true
grep -q '"MODIFIED"' "$TMP/watch.out" || fail "watch: no MODIFIED: $(cat "$TMP/watch.out")"
grep -q '"DELETED"' "$TMP/watch.out" || fail "watch: no DELETED: $(cat "$TMP/watch.out")"

echo "== CRD, custom resource, status and scale subresources, wait"
cat >"$TMP/crd.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wg]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
              conditions:
                type: array
                items: {type: object, x-kubernetes-preserve-unknown-fields: true}
EOF
K apply -f "$TMP/crd.yaml" >/dev/null || fail "CRD apply"
K wait --for=condition=Established crd/widgets.example.com --timeout=10s >/dev/null || fail "CRD established"
cat >"$TMP/w.yaml" <<'EOF'
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {replicas: 1}
status: {replicas: 99}
EOF
K apply -f "$TMP/w.yaml" >/dev/null || fail "CR apply"
[ -z "$(K get wg w1 -o jsonpath='{.status}')" ] || fail "status kept on create (Q.5)"
K patch widget w1 --subresource=status --type=merge \
  -p '{"status":{"replicas":1,"conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null || fail "status patch"
K wait --for=condition=Ready widget/w1 --timeout=10s >/dev/null || fail "wait condition"
[ "$(K get widget w1 -o jsonpath='{.metadata.generation}')" = 1 ] || fail "status write bumped generation"
K scale widget w1 --replicas=4 >/dev/null || fail "scale"
[ "$(K get widget w1 -o jsonpath='{.spec.replicas}/{.metadata.generation}')" = 4/2 ] || fail "scale result"
K patch widget w1 -p '{"spec":{"replicas":2}}' 2>"$TMP/err" && fail "strategic patch on a CR accepted"
grep -qi 'unknown format\|UnsupportedMediaType\|not supported' "$TMP/err" || fail "SMP on CR: $(cat "$TMP/err")"
K apply --server-side -f "$TMP/w.yaml" >/dev/null 2>&1 && fail "SSA conflict expected (replicas owned by kubectl-scale? or patch)"
K delete widget w1 >/dev/null || fail "delete CR"
K get widgets -o name | grep -q . && fail "CR still listed"

echo "== built-in workloads and delete with finalizers"
cat >"$TMP/deploy.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: c, image: nginx}
EOF
K apply -f "$TMP/deploy.yaml" >/dev/null || fail "deployment apply"
K set image deployment/web c=nginx:2 >/dev/null || fail "set image (strategic merge on containers)"
[ "$(K get deploy web -o jsonpath='{.spec.template.spec.containers[0].image}')" = nginx:2 ] || fail "image"
[ "$(K get deploy web -o jsonpath='{.metadata.generation}')" = 2 ] || fail "deployment generation"
sed 's/replicas: 2/replicas: 4/' "$TMP/deploy.yaml" >"$TMP/deploy4.yaml"
K apply --dry-run=server -f "$TMP/deploy4.yaml" | grep -q 'server dry run' || fail "server dry run"
[ "$(K get deploy web -o jsonpath='{.spec.replicas}')" = 2 ] || fail "dry run persisted"
K diff -f "$TMP/deploy4.yaml" >"$TMP/diff" && fail "kubectl diff saw no change"
grep -q '^+  replicas: 4' "$TMP/diff" || fail "kubectl diff output: $(cat "$TMP/diff")"
K get all -o name | grep -qx 'deployment.apps/web' || fail "get all (categories)"
echo "== generator commands (protobuf request bodies)"
K create ns scratch >/dev/null || fail "create ns"
K -n scratch create configmap gen --from-literal=a=b >/dev/null || fail "create configmap"
K -n scratch create secret generic gen --from-literal=a=b >/dev/null || fail "create secret"
[ "$(K -n scratch get secret gen -o jsonpath='{.type}/{.data.a}')" = Opaque/Yg== ] || fail "secret defaults"
K -n scratch create serviceaccount gen >/dev/null || fail "create serviceaccount"
K -n scratch create deployment gen --image=nginx --replicas=2 >/dev/null || fail "create deployment"
[ "$(K -n scratch get deploy gen -o jsonpath='{.spec.template.spec.containers[0].image}')" = nginx ] || fail "deployment body"
K -n scratch scale deployment gen --replicas=5 >/dev/null || fail "scale deployment"
K -n scratch expose deployment gen --port=80 --target-port=8080 >/dev/null || fail "expose"
K -n scratch create job gen --image=busybox -- echo hi >/dev/null || fail "create job"
[ "$(K -n scratch get job gen -o jsonpath='{.spec.template.spec.containers[0].command}')" = '["echo","hi"]' ] ||
  fail "job body: $(K -n scratch get job gen -o json)"
[ "$(K -n scratch get svc gen -o jsonpath='{.spec.ports[0].port}/{.spec.ports[0].targetPort}')" = 80/8080 ] || fail "service ports"
[ "$(K -n scratch get deploy gen -o jsonpath='{.spec.replicas}')" = 5 ] || fail "deployment scale"
K get ns scratch -o jsonpath='{.status.phase}' | grep -qx Active || fail "namespace phase"
K delete ns scratch >/dev/null || fail "namespace delete"
K get ns scratch 2>/dev/null && fail "namespace still there"

echo "== fault control over HTTP (through kubectl --raw: no curl binary needed)"
echo '{}' | K create --raw "/luaop-fault/fail?code=503&count=1&verb=list" -f - | grep -q '"ok":true' ||
  fail "fault endpoint"
K get --raw /api/v1/namespaces/default/configmaps >/dev/null 2>"$TMP/err" && fail "injected 503 not served"
grep -q 'ServiceUnavailable' "$TMP/err" || fail "injected 503: $(cat "$TMP/err")"
K get --raw /api/v1/namespaces/default/configmaps >/dev/null || fail "fault did not clear after one request"

echo "== TLS with a generated certificate and bearer tokens"
printf 'secret-token,admin,1\n' >"$TMP/tokens"
start_server tls --tls --token-file "$TMP/tokens" --kubeconfig-out "$TMP/kc-tls"
case "$URL_tls" in https://*) ;; *) fail "TLS URL: $URL_tls" ;; esac
KUBECONFIG="$TMP/kc-tls" kubectl get ns default -o name | grep -qx namespace/default || fail "kubectl over TLS"
sed 's/secret-token/wrong-token/' "$TMP/kc-tls" >"$TMP/kc-bad"
KUBECONFIG="$TMP/kc-bad" kubectl get ns default </dev/null 2>"$TMP/err" && fail "wrong token accepted"
grep -qi 'unauthorized\|must be logged in' "$TMP/err" || fail "401: $(cat "$TMP/err")"

echo "== client certificates (--client-ca)"
(cd "$TMP" &&
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt \
    -subj /CN=test-ca -days 2 &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout c.key -out c.csr -subj /CN=alice &&
  openssl x509 -req -in c.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out c.crt -days 2) >/dev/null 2>&1 ||
  fail "openssl could not make test certificates"
start_server cc --client-ca "$TMP/ca.crt" --kubeconfig-out "$TMP/kc-cc"
KUBECONFIG="$TMP/kc-cc" kubectl get ns default </dev/null 2>"$TMP/err" && fail "no client cert accepted"
KUBECONFIG="$TMP/kc-cc" kubectl config set-credentials luaop --client-certificate="$TMP/c.crt" \
  --client-key="$TMP/c.key" --embed-certs >/dev/null || fail "kubectl config set-credentials"
KUBECONFIG="$TMP/kc-cc" kubectl get ns default -o name | grep -qx namespace/default || fail "kubectl with a client cert"

echo "PASS apiserver_kubectl"
