#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test: the local API server calls admission webhooks (issue 21 part 5), driven by
# kubectl 1.32 against `luaop apiserver`, with a fake HTTPS webhook (fixtures/webhooks/fake_webhook.py)
# whose certificate is a self-signed CA made here by `openssl req`: the configurations' shape checks,
# a mutation visible after create (and its warning), a denial with kube-apiserver's message, dry run,
# Ignore vs Fail on a dead webhook, a timeout, a uid mismatch, a wrong caBundle, namespaceSelector,
# a service reference mapped by --webhook-service, DELETE and UPDATE admission.
set -eu  # no pipefail: `kubectl ... | grep -q` may SIGPIPE kubectl after a match

: "${LUAOP:?LUAOP must point at the luaop binary}"
: "${LUAOP_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
source "${LUAOP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/procs.sh"

echo "== certificates and the fake webhook"
(cd "$TMP" &&
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout wh.key -out wh.crt -days 2 \
    -subj /CN=fake-webhook -addext "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:fake.wh.svc" &&
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout other.key -out other.crt \
    -days 2 -subj /CN=other-ca) >/dev/null 2>&1 || fail "openssl could not make test certificates"
CA=$(base64 -w0 <"$TMP/wh.crt")
OTHER_CA=$(base64 -w0 <"$TMP/other.crt")
/usr/bin/python3 "$LUAOP_SRC/tests/integration/fixtures/webhooks/fake_webhook.py" \
    "$TMP/wh.crt" "$TMP/wh.key" "$TMP/wh.port" "$TMP/wh.log" 2>"$TMP/wh.err" &
PIDS+=($!)
wait_file "$TMP/wh.port" "fake webhook"
WH="https://127.0.0.1:$(cat "$TMP/wh.port")"
# a loopback port nothing listens on (bound and released)
DEAD=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

"$LUAOP" apiserver --listen 127.0.0.1:0 --kubeconfig-out "$TMP/kc" \
    --webhook-service "wh/fake=127.0.0.1:$(cat "$TMP/wh.port")" >"$TMP/srv.out" 2>"$TMP/srv.err" &
PIDS+=($!)
wait_file "$TMP/srv.out" "luaop apiserver"
grep -q '^listening on ' "$TMP/srv.out" || fail "no URL: $(cat "$TMP/srv.out")"
export KUBECONFIG="$TMP/kc"
export KUBECACHEDIR="$TMP/cache"
K() { kubectl "$@"; }

# webhook NAME PATH-OR-URL SELECTOR-LABEL [EXTRA-YAML] : one webhook entry (url, our CA)
webhook() {
    cat <<YAML
- name: $1
  clientConfig: {url: "$2", caBundle: "$CA"}
  rules: [{operations: ["CREATE", "UPDATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["configmaps"]}]
  objectSelector: {matchLabels: {$3}}
  sideEffects: None
  admissionReviewVersions: ["v1"]
${4:-}
YAML
}
# config KIND NAME < webhooks : apply a configuration
config() {
    { printf 'apiVersion: admissionregistration.k8s.io/v1\nkind: %s\nmetadata: {name: %s}\nwebhooks:\n' "$1" "$2"
      cat; } >"$TMP/cfg.yaml"
    K apply -f "$TMP/cfg.yaml" >/dev/null 2>"$TMP/err" || fail "apply $1 $2: $(cat "$TMP/err")"
}

echo "== configurations are served, defaulted and checked"
K api-resources -o name | grep -qx 'validatingwebhookconfigurations.admissionregistration.k8s.io' ||
    fail "validatingwebhookconfigurations not in discovery"
cat >"$TMP/bad.yaml" <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: bad.example.com
  clientConfig: {url: "$WH/allow"}
  admissionReviewVersions: ["v1"]
YAML
K apply -f "$TMP/bad.yaml" 2>"$TMP/err" && fail "a webhook without sideEffects was accepted"
grep -q 'webhooks\[0\].sideEffects: Required value' "$TMP/err" || fail "sideEffects message: $(cat "$TMP/err")"
sed -i 's/  admissionReviewVersions/  sideEffects: None\n  timeoutSeconds: 31\n  admissionReviewVersions/' "$TMP/bad.yaml"
K apply -f "$TMP/bad.yaml" 2>"$TMP/err" && fail "timeoutSeconds 31 was accepted"
grep -q 'webhooks\[0\].timeoutSeconds: Invalid value: 31' "$TMP/err" || fail "timeout message: $(cat "$TMP/err")"
sed -i 's/timeoutSeconds: 31/timeoutSeconds: 5/; s|clientConfig: {url: "[^"]*"}|clientConfig: {}|' "$TMP/bad.yaml"
K apply -f "$TMP/bad.yaml" 2>"$TMP/err" && fail "a clientConfig with neither url nor service was accepted"
grep -q 'exactly one of url or service is required' "$TMP/err" || fail "clientConfig message: $(cat "$TMP/err")"

webhook add-label.example.com "$WH/mutate" "wh: mut" | config MutatingWebhookConfiguration a-mutate
[ "$(K get mutatingwebhookconfiguration a-mutate -o jsonpath='{.webhooks[0].failurePolicy}/{.webhooks[0].timeoutSeconds}/{.webhooks[0].matchPolicy}/{.webhooks[0].reinvocationPolicy}')" = Fail/10/Equivalent/Never ] ||
    fail "defaults: $(K get mutatingwebhookconfiguration a-mutate -o yaml)"

echo "== mutation: the patch is stored, the warning shown"
K create cm m1 --from-literal=k=v >/dev/null || fail "create of an unlabelled cm"
K label cm m1 wh=mut >"$TMP/out" 2>"$TMP/err" || fail "label (an UPDATE): $(cat "$TMP/err")"
[ "$(K get cm m1 -o jsonpath='{.metadata.labels.mutated}')" = yes ] || fail "update not mutated"
grep -q 'Warning: mutated by fake' "$TMP/err" || fail "warning not shown: $(cat "$TMP/err")"
cat >"$TMP/m2.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: m2, labels: {wh: mut}}
data: {k: v}
YAML
K create -f "$TMP/m2.yaml" >/dev/null 2>"$TMP/err" || fail "create m2: $(cat "$TMP/err")"
[ "$(K get cm m2 -o jsonpath='{.metadata.labels.mutated}')" = yes ] || fail "create not mutated"
K create cm plain --from-literal=k=v >/dev/null
K get cm plain -o jsonpath='{.metadata.labels}' | grep -q mutated && fail "objectSelector ignored"

echo "== denial with kube-apiserver's message, through a service reference"
cat <<YAML | config ValidatingWebhookConfiguration deny
- name: deny.example.com
  clientConfig:
    service: {namespace: wh, name: fake, path: /deny}
    caBundle: "$CA"
  rules: [{operations: ["CREATE", "DELETE"], apiGroups: [""], apiVersions: ["v1"], resources: ["configmaps"]}]
  objectSelector: {matchLabels: {deny: "yes"}}
  sideEffects: None
  admissionReviewVersions: ["v1"]
YAML
cat >"$TMP/d1.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: d1, labels: {deny: "yes"}}
YAML
K create -f "$TMP/d1.yaml" 2>"$TMP/err" && fail "denied create succeeded"
grep -q 'admission webhook "deny.example.com" denied the request: no thanks' "$TMP/err" || fail "denial message: $(cat "$TMP/err")"
K get cm d1 2>/dev/null && fail "denied object stored"
K label cm plain deny=yes >/dev/null || fail "UPDATE is not in the deny rule, must pass"
K delete cm plain 2>"$TMP/err" && fail "denied delete succeeded"
grep -q 'denied the request: no thanks' "$TMP/err" || fail "delete denial: $(cat "$TMP/err")"
K get cm plain -o name | grep -qx configmap/plain || fail "denied delete removed the object"

echo "== dry run: webhooks called with dryRun true, nothing stored"
cat >"$TMP/dr.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: dr, labels: {wh: mut}}
YAML
K create -f "$TMP/dr.yaml" --dry-run=server -o jsonpath='{.metadata.labels.mutated}' >"$TMP/out" 2>"$TMP/err" ||
    fail "dry-run create: $(cat "$TMP/err")"
[ "$(cat "$TMP/out")" = yes ] || fail "dry-run not mutated: $(cat "$TMP/out")"
grep -q '"operation": "CREATE", "dryRun": true, "name": "dr"' "$TMP/wh.log" || fail "dryRun not sent: $(cat "$TMP/wh.log")"
K get cm dr 2>/dev/null && fail "dry run stored the object"

echo "== a dead webhook: Ignore goes on, Fail answers 500"
{ webhook dead-ignore.example.com "https://127.0.0.1:$DEAD/x" "dead: ignore" "  failurePolicy: Ignore"
  webhook dead-fail.example.com "https://127.0.0.1:$DEAD/x" "dead: fail"
  webhook slow.example.com "$WH/sleep" "slow: sleep" "  timeoutSeconds: 1"
  webhook bad-uid.example.com "$WH/baduid" "baduid: uid"
  webhook wrong-ca.example.com "$WH/allow" "wrongca: ca" | sed "s|$CA|$OTHER_CA|"
} | config ValidatingWebhookConfiguration failures
mk() { printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, labels: {%s}}\n' "$1" "$2" >"$TMP/$1.yaml"; }
mk ig "dead: ignore"
K create -f "$TMP/ig.yaml" >/dev/null 2>"$TMP/err" || fail "Ignore'd dead webhook failed the request: $(cat "$TMP/err")"
mk fl "dead: fail"
K create -f "$TMP/fl.yaml" 2>"$TMP/err" && fail "a dead Fail webhook let the request through"
grep -q 'Internal error occurred: failed calling webhook "dead-fail.example.com": failed to call webhook: Post' "$TMP/err" ||
    fail "dead webhook message: $(cat "$TMP/err")"

echo "== timeout, uid mismatch, wrong CA"
mk sl "slow: sleep"
start=$(date +%s)
K create -f "$TMP/sl.yaml" 2>"$TMP/err" && fail "a webhook past its timeout let the request through"
grep -q 'failed calling webhook "slow.example.com".*context deadline exceeded' "$TMP/err" || fail "timeout message: $(cat "$TMP/err")"
[ $(($(date +%s) - start)) -lt 3 ] || fail "the call was not bounded by timeoutSeconds=1"
mk bu "baduid: uid"
K create -f "$TMP/bu.yaml" 2>"$TMP/err" && fail "a uid mismatch let the request through"
grep -q 'failed calling webhook "bad-uid.example.com": expected response.uid=' "$TMP/err" || fail "uid message: $(cat "$TMP/err")"
mk wc "wrongca: ca"
K create -f "$TMP/wc.yaml" 2>"$TMP/err" && fail "a certificate from another CA was accepted"
grep -q 'failed calling webhook "wrong-ca.example.com": failed to call webhook: Post.*certificate' "$TMP/err" ||
    fail "wrong CA message: $(cat "$TMP/err")"
K get cm fl sl bu wc 2>/dev/null | grep -q . && fail "a failed admission stored an object"

echo "== namespaceSelector"
K create ns red >/dev/null && K label ns red team=red >/dev/null
cat <<YAML | config ValidatingWebhookConfiguration ns-deny
- name: ns-deny.example.com
  clientConfig: {url: "$WH/deny", caBundle: "$CA"}
  rules: [{operations: ["*"], apiGroups: ["*"], apiVersions: ["*"], resources: ["*"], scope: Namespaced}]
  namespaceSelector: {matchExpressions: [{key: team, operator: In, values: [red]}]}
  sideEffects: NoneOnDryRun
  admissionReviewVersions: ["v1beta1", "v1"]
YAML
K -n red create cm x --from-literal=k=v 2>"$TMP/err" && fail "namespaceSelector did not match"
grep -q 'admission webhook "ns-deny.example.com" denied the request' "$TMP/err" || fail "ns denial: $(cat "$TMP/err")"
K create cm y --from-literal=k=v >/dev/null || fail "namespaceSelector matched the default namespace"
K -n red create secret generic s --from-literal=a=b 2>/dev/null && fail "resources * did not match secrets"
K delete validatingwebhookconfiguration ns-deny >/dev/null || fail "webhook configurations are never admitted"
K -n red create cm x --from-literal=k=v >/dev/null || fail "deleted configuration still called"

echo "== subresources: a things/status rule matches /status writes only"
cat <<'YAML' | K apply -f - >/dev/null || fail "CRD apply"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: things, singular: thing, kind: Thing}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {x: {type: string}}}
          status: {type: object, properties: {phase: {type: string}}}
YAML
K wait --for=condition=Established crd/things.example.com --timeout=10s >/dev/null || fail "CRD established"
cat <<YAML | config ValidatingWebhookConfiguration status-deny
- name: status-deny.example.com
  clientConfig: {url: "$WH/deny", caBundle: "$CA"}
  rules: [{operations: ["UPDATE"], apiGroups: ["example.com"], apiVersions: ["v1"], resources: ["things/status"]}]
  sideEffects: None
  admissionReviewVersions: ["v1"]
YAML
printf 'apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t1}\nspec: {x: a}\n' | K create -f - >/dev/null ||
    fail "create of a thing"
K patch things t1 --type=merge -p '{"spec":{"x":"b"}}' >/dev/null 2>"$TMP/err" || fail "main update denied: $(cat "$TMP/err")"
K patch things t1 --subresource=status --type=merge -p '{"status":{"phase":"Ready"}}' 2>"$TMP/err" &&
    fail "status update not denied"
grep -q 'admission webhook "status-deny.example.com" denied the request: no thanks' "$TMP/err" ||
    fail "status denial: $(cat "$TMP/err")"
grep -q '"path": "/deny", "operation": "UPDATE", "dryRun": false, "name": "t1"' "$TMP/wh.log" || fail "status call not logged"

echo "PASS"
