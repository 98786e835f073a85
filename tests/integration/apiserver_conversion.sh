#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test: CRD conversion webhooks in the local API server (issue 21 part 5). kubectl 1.32
# against `luaop apiserver`, the fake HTTPS webhook of fixtures/webhooks/fake_webhook.py converting
# Gizmo v1alpha1 spec.size <-> v1 spec.replicas: objects stored as v1alpha1 (the storage version),
# read, listed, watched and written as v1; a round trip lossless both ways; a dead webhook → 500.
set -eu  # no pipefail: `kubectl ... | grep -q` may SIGPIPE kubectl after a match

: "${LUAOP:?LUAOP must point at the luaop binary}"
: "${LUAOP_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
source "${LUAOP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/procs.sh"

(cd "$TMP" && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout wh.key -out wh.crt \
    -days 2 -subj /CN=fake-webhook -addext "subjectAltName=IP:127.0.0.1,DNS:localhost") >/dev/null 2>&1 ||
    fail "openssl could not make test certificates"
CA=$(base64 -w0 <"$TMP/wh.crt")
/usr/bin/python3 "$LUAOP_SRC/tests/integration/fixtures/webhooks/fake_webhook.py" \
    "$TMP/wh.crt" "$TMP/wh.key" "$TMP/wh.port" "$TMP/wh.log" 2>"$TMP/wh.err" &
PIDS+=($!)
wait_file "$TMP/wh.port" "fake webhook"
WH="https://127.0.0.1:$(cat "$TMP/wh.port")"
DEAD=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

"$LUAOP" apiserver --listen 127.0.0.1:0 --kubeconfig-out "$TMP/kc" >"$TMP/srv.out" 2>"$TMP/srv.err" &
PIDS+=($!)
wait_file "$TMP/srv.out" "luaop apiserver"
export KUBECONFIG="$TMP/kc"
export KUBECACHEDIR="$TMP/cache"
K() { kubectl "$@"; }

# crd PLURAL KIND URL : a CRD with v1alpha1 (storage, spec.size) and v1 (spec.replicas)
crd() {
    cat <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: $1.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: $1, singular: ${1%s}, kind: $2, listKind: ${2}List}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ["v1"]
      clientConfig: {url: "$3", caBundle: "$CA"}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}, color: {type: string}}}
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {replicas: {type: integer}, color: {type: string}}}
YAML
}
crd gizmos Gizmo "$WH/convert" | K apply -f - >/dev/null || fail "CRD apply"
K wait --for=condition=Established crd/gizmos.example.com --timeout=10s >/dev/null || fail "CRD established"

echo "== a watch on v1 of objects stored as v1alpha1"
K get gizmos.v1.example.com -w --output-watch-events -o json >"$TMP/watch.out" 2>"$TMP/watch.err" &
PIDS+=($!)
# the watch is established once kubectl's initial list is done: poll for its connection (bounded)
for _ in $(seq 1 200); do grep -q 'GET.*/apis/example.com/v1/namespaces/default/gizmos' "$TMP/srv.err" 2>/dev/null && break; sleep 0.05; done

echo "== create v1alpha1, read as v1 and back, lossless"
cat >"$TMP/g1.yaml" <<'YAML'
apiVersion: example.com/v1alpha1
kind: Gizmo
metadata: {name: g1, labels: {app: demo}}
spec: {size: 3, color: blue}
YAML
K create -f "$TMP/g1.yaml" >/dev/null 2>"$TMP/err" || fail "create v1alpha1: $(cat "$TMP/err")"
[ "$(K get gizmos.v1.example.com g1 -o jsonpath='{.apiVersion}/{.spec.replicas}/{.spec.color}/{.metadata.labels.app}')" = \
  example.com/v1/3/blue/demo ] || fail "get as v1: $(K get gizmos.v1.example.com g1 -o yaml 2>&1)"
K get gizmos.v1.example.com g1 -o jsonpath='{.spec}' | grep -q size && fail "v1 shows the v1alpha1 field"
[ "$(K get gizmos.v1alpha1.example.com g1 -o jsonpath='{.apiVersion}/{.spec.size}/{.spec.color}')" = example.com/v1alpha1/3/blue ] ||
    fail "get back as v1alpha1"
K get gizmos.v1alpha1.example.com g1 -o json >"$TMP/a.json"
# v1 -> v1alpha1 lossless: the v1 object written back unchanged is a no-op (same bytes, same RV)
K get gizmos.v1.example.com g1 -o json | K replace -f - >/dev/null 2>"$TMP/err" || fail "replace as v1: $(cat "$TMP/err")"
K get gizmos.v1alpha1.example.com g1 -o json >"$TMP/b.json"
cmp -s "$TMP/a.json" "$TMP/b.json" || fail "round trip through v1 changed the object: $(diff "$TMP/a.json" "$TMP/b.json")"

echo "== write as v1: stored as v1alpha1"
K patch gizmos.v1.example.com g1 --type=merge -p '{"spec":{"replicas":4}}' >/dev/null 2>"$TMP/err" ||
    fail "merge patch as v1: $(cat "$TMP/err")"
[ "$(K get gizmos.v1alpha1.example.com g1 -o jsonpath='{.spec.size}')" = 4 ] || fail "patch as v1 not stored"
cat >"$TMP/g2.yaml" <<'YAML'
apiVersion: example.com/v1
kind: Gizmo
metadata: {name: g2}
spec: {replicas: 5}
YAML
K create -f "$TMP/g2.yaml" -o jsonpath='{.apiVersion}/{.spec.replicas}' >"$TMP/out" 2>"$TMP/err" ||
    fail "create as v1: $(cat "$TMP/err")"
[ "$(cat "$TMP/out")" = example.com/v1/5 ] || fail "create as v1 answered $(cat "$TMP/out")"
[ "$(K get gizmos.v1alpha1.example.com g2 -o jsonpath='{.spec.size}')" = 5 ] || fail "v1 create not stored as v1alpha1"
K apply --server-side -f "$TMP/g2.yaml" >/dev/null 2>"$TMP/err" || fail "server-side apply as v1: $(cat "$TMP/err")"
[ "$(K get gizmos.v1.example.com -o jsonpath='{.items[*].spec.replicas}')" = "4 5" ] || fail "list as v1"
[ "$(K get gizmos.v1alpha1.example.com -o jsonpath='{.items[*].spec.size}')" = "4 5" ] || fail "list as v1alpha1"

echo "== the watch saw v1 objects"
for _ in $(seq 1 200); do grep -Eq '"replicas": ?5' "$TMP/watch.out" && break; sleep 0.05; done
grep -Eq '"replicas": ?5' "$TMP/watch.out" || fail "watch: $(cat "$TMP/watch.out" "$TMP/watch.err")"
grep -Eq '"replicas": ?3' "$TMP/watch.out" || fail "watch missed g1: $(cat "$TMP/watch.out")"
grep -Eq '"size": ?[0-9]' "$TMP/watch.out" && fail "the v1 watch showed a v1alpha1 object"
grep -Eq '"object": ?\{"apiVersion": ?"example.com/v1alpha1"' "$TMP/watch.out" && fail "the v1 watch showed v1alpha1"
[ "$(grep -c '"object"' "$TMP/watch.out")" -ge 3 ] || fail "watch events: $(cat "$TMP/watch.out")"

echo "== a dead conversion webhook answers 500 with kube-apiserver's message"
crd widgets Widget "https://127.0.0.1:$DEAD/convert" | K apply -f - >/dev/null || fail "CRD apply"
K wait --for=condition=Established crd/widgets.example.com --timeout=10s >/dev/null || fail "CRD established"
printf 'apiVersion: example.com/v1alpha1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 1}\n' | K create -f - >/dev/null ||
    fail "create in the storage version needs no conversion"
K get widgets.v1.example.com w1 2>"$TMP/err" && fail "a dead conversion webhook converted"
grep -q 'conversion webhook for example.com/v1alpha1, Kind=Widget failed: failed to call webhook: Post' "$TMP/err" ||
    fail "conversion failure message: $(cat "$TMP/err")"
printf 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2}\nspec: {replicas: 1}\n' | K create -f - 2>"$TMP/err" &&
    fail "a write needing a dead conversion webhook succeeded"
grep -q 'conversion webhook for example.com/v1, Kind=Widget failed' "$TMP/err" || fail "write message: $(cat "$TMP/err")"
echo "== delete as v1, CRD conversion checks"
K delete gizmos.v1.example.com g2 >/dev/null 2>"$TMP/err" || fail "delete as v1: $(cat "$TMP/err")"
K get gizmos.v1alpha1.example.com g2 2>/dev/null && fail "delete as v1"
crd bad Bad "$WH/convert" | sed 's/conversionReviewVersions: \["v1"\]/conversionReviewVersions: ["v1beta1"]/' |
    K apply -f - 2>"$TMP/err" && fail "a conversion webhook without v1 reviews was accepted"
grep -q 'spec.conversion.webhook.conversionReviewVersions' "$TMP/err" || fail "CRD conversion check: $(cat "$TMP/err")"
echo "PASS"
