#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test: authentication and authorization in the local API server (issue 22 part 7),
# driven by kubectl 1.32 and curl against `luaop apiserver --authorization-mode=RBAC`: identities
# from the static token file and minted service-account tokens (`kubectl auth whoami`, `kubectl
# create token`), TokenReview (valid, invalid, service account, audiences), `kubectl auth can-i`
# yes/no through Roles, ClusterRoles and both kinds of binding (User, Group and ServiceAccount
# subjects, resourceNames, subresources, nonResourceURLs), SubjectAccessReview and
# LocalSubjectAccessReview, the request-info verbs (list, watch, a named watch, deletecollection),
# impersonation (--as, --as-group),
# kube-apiserver's exact 403 messages, and 401 without credentials.
set -eu # no pipefail: `kubectl ... | grep -q` may SIGPIPE kubectl after a match

: "${LUAOP:?LUAOP must point at the luaop binary}"
source "${LUAOP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/procs.sh"

cat >"$TMP/tokens" <<'EOF'
root-token,root,0,system:masters
alice-token,alice,alice-uid,"dev,ops"
bob-token,bob,bob-uid
EOF
"$LUAOP" apiserver --listen 127.0.0.1:0 --kubeconfig-out "$TMP/kc" --token-file "$TMP/tokens" \
    --authorization-mode RBAC >"$TMP/srv.out" 2>"$TMP/srv.err" &
PIDS+=($!)
wait_file "$TMP/srv.out" "luaop apiserver"
URL=$(sed -n 's/^listening on //p' "$TMP/srv.out")
case "$URL" in https://*) ;; *) fail "RBAC mode must serve HTTPS (kubectl sends tokens only over TLS): $URL" ;; esac
export KUBECONFIG="$TMP/kc"
export KUBECACHEDIR="$TMP/cache"
grep -q 'token: root-token' "$TMP/kc" || fail "the kubeconfig carries the system:masters token"
K() { kubectl "$@"; }
# expect_eq WHAT GOT WANT
expect_eq() { [ "$2" = "$3" ] || fail "$1: got [$2], want [$3]"; }
# forbidden WANT-MESSAGE CMD... : the command fails with exactly that server message
forbidden() {
    local want=$1
    shift
    if "$@" >/dev/null 2>"$TMP/err"; then fail "allowed: $*"; fi
    expect_eq "403 of $*" "$(cat "$TMP/err")" "Error from server (Forbidden): $want"
}
# can TOKEN ARGS... : kubectl auth can-i's answer
can() {
    local tok=$1
    shift
    K --token "$tok" auth can-i "$@" 2>&1 || true
}

echo "== whoami"
K auth whoami -o json >"$TMP/who.json"
expect_eq "admin user" "$(jq -r .status.userInfo.username "$TMP/who.json")" root
expect_eq "admin groups" "$(jq -c .status.userInfo.groups "$TMP/who.json")" '["system:masters","system:authenticated"]'
K --token alice-token auth whoami -o json >"$TMP/who.json"
expect_eq "alice" "$(jq -c '.status.userInfo|[.username,.uid,.groups]' "$TMP/who.json")" \
    '["alice","alice-uid",["dev","ops","system:authenticated"]]'

echo "== 401 without or with a bad token"
code=$(curl -sk -o "$TMP/body" -w '%{http_code}' "$URL/api/v1/namespaces")
expect_eq "no token" "$code" 401
code=$(curl -sk -o "$TMP/body" -w '%{http_code}' -H 'Authorization: Bearer nope' "$URL/api/v1/namespaces")
expect_eq "bad token" "$code" 401
expect_eq "401 body" "$(jq -r .reason "$TMP/body")" Unauthorized

echo "== kube-apiserver's 403 messages"
K create namespace ns >/dev/null
K -n ns create configmap x --from-literal=k=v >/dev/null
forbidden 'configmaps "x" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "ns"' \
    K --token alice-token -n ns get configmap x
forbidden 'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "ns"' \
    K --token alice-token -n ns get configmaps
forbidden 'deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API group "apps" at the cluster scope' \
    K --token alice-token get deployments -A
forbidden 'namespaces "ns" is forbidden: User "bob" cannot delete resource "namespaces" in API group "" in the namespace "ns"' \
    K --token bob-token delete namespace ns
code=$(curl -sk -o "$TMP/body" -w '%{http_code}' -H 'Authorization: Bearer bob-token' "$URL/luaop-fault/reset" -X POST)
expect_eq "non-resource 403" "$code" 403
expect_eq "non-resource message" "$(jq -r .message "$TMP/body")" \
    'forbidden: User "bob" cannot post path "/luaop-fault/reset"'
expect_eq "403 details" "$(K --token alice-token -n ns get configmap x -v=0 2>/dev/null; curl -sk \
    -H 'Authorization: Bearer alice-token' "$URL/api/v1/namespaces/ns/configmaps/x" | jq -c '[.code,.reason,.details]')" \
    '[403,"Forbidden",{"name":"x","kind":"configmaps"}]'
# discovery, version and health are open to every authenticated user (system:discovery)
K --token bob-token api-resources >/dev/null 2>"$TMP/err" || fail "bob cannot read discovery: $(cat "$TMP/err")"
K --token bob-token version >/dev/null 2>"$TMP/err" || fail "bob cannot read /version: $(cat "$TMP/err")"

echo "== Roles and bindings"
cat <<'EOF' | K apply -f - >/dev/null
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-reader, namespace: ns}
rules:
- {apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"]}
- {apiGroups: [""], resources: ["secrets"], resourceNames: ["only-this"], verbs: ["get", "watch", "list"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: devs-read, namespace: ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}
subjects: [{kind: Group, name: dev, apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: scaler}
rules:
- {apiGroups: ["apps"], resources: ["*/scale"], verbs: ["*"]}
- {apiGroups: [""], resources: ["pods/status"], verbs: ["patch"]}
- {nonResourceURLs: ["/metrics", "/logs/*"], verbs: ["get"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-scales}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: scaler}
subjects: [{kind: User, name: bob, apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-scales-in-ns, namespace: ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit-ish}
subjects: [{kind: User, name: bob, apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: edit-ish}
rules: [{apiGroups: ["", "apps"], resources: ["*"], verbs: ["*"]}]
EOF
expect_eq "alice get cm in ns" "$(can alice-token get configmaps -n ns)" yes
expect_eq "alice list cm in ns" "$(can alice-token list configmaps -n ns)" yes
expect_eq "alice watch cm in ns" "$(can alice-token watch configmaps -n ns)" no
expect_eq "alice delete cm in ns" "$(can alice-token delete configmaps -n ns)" no
expect_eq "alice get cm in default" "$(can alice-token get configmaps -n default)" no
expect_eq "alice get cm everywhere" "$(can alice-token get configmaps -A)" no
expect_eq "alice get secret only-this" "$(can alice-token get secrets/only-this -n ns)" yes
expect_eq "alice get secret other" "$(can alice-token get secrets/other -n ns)" no
expect_eq "bob scale deploys anywhere" "$(can bob-token update deployments.apps --subresource=scale -n default)" yes
expect_eq "bob update deploys in default" "$(can bob-token update deployments.apps -n default)" no
expect_eq "bob patch pod status" "$(can bob-token patch pods --subresource=status -n default)" yes
expect_eq "bob get /metrics" "$(can bob-token get /metrics)" yes
expect_eq "bob get /logs/x" "$(can bob-token get /logs/kubelet.log)" yes
expect_eq "bob get /logsx" "$(can bob-token get /logsx)" no
# a RoleBinding to a ClusterRole grants it in that namespace only
expect_eq "bob delete cm in ns" "$(can bob-token delete configmaps -n ns)" yes
expect_eq "bob delete cm in default" "$(can bob-token delete configmaps -n default)" no
K --token alice-token -n ns get configmap x >/dev/null 2>"$TMP/err" || fail "alice cannot get x: $(cat "$TMP/err")"

echo "== request-info verbs: list is not watch, a named watch, deletecollection"
code=$(curl -sk -o "$TMP/body" -w '%{http_code}' -H 'Authorization: Bearer alice-token' \
    "$URL/api/v1/namespaces/ns/configmaps?watch=true&timeoutSeconds=1")
expect_eq "alice watch → 403" "$code" 403
expect_eq "watch message" "$(jq -r .message "$TMP/body")" \
    'configmaps is forbidden: User "alice" cannot watch resource "configmaps" in API group "" in the namespace "ns"'
code=$(curl -sk -o "$TMP/body" -w '%{http_code}' -H 'Authorization: Bearer alice-token' \
    "$URL/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Donly-this")
expect_eq "alice list secrets named only-this" "$code" 200
code=$(curl -sk -o "$TMP/body" -w '%{http_code}' -H 'Authorization: Bearer alice-token' "$URL/api/v1/namespaces/ns/secrets")
expect_eq "alice list all secrets → 403" "$code" 403
code=$(curl -sk -o "$TMP/body" -w '%{http_code}' -X DELETE -H 'Authorization: Bearer alice-token' \
    "$URL/api/v1/namespaces/ns/configmaps")
expect_eq "deletecollection → 403" "$code" 403
expect_eq "deletecollection message" "$(jq -r .message "$TMP/body")" \
    'configmaps is forbidden: User "alice" cannot deletecollection resource "configmaps" in API group "" in the namespace "ns"'

echo "== a binding to a missing role is named in the reason"
K create clusterrolebinding dangling --clusterrole=nope --user=alice >/dev/null
expect_eq "can-i with a dangling binding" "$(can alice-token get pods -n default)" \
    'no - RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found'
K delete clusterrolebinding dangling >/dev/null

echo "== service-account tokens and TokenReview"
K -n ns create serviceaccount robot >/dev/null
SA_TOKEN=$(K -n ns create token robot)
K --token "$SA_TOKEN" auth whoami -o json >"$TMP/who.json"
expect_eq "sa user" "$(jq -c '.status.userInfo|[.username,.groups]' "$TMP/who.json")" \
    '["system:serviceaccount:ns:robot",["system:serviceaccounts","system:serviceaccounts:ns","system:authenticated"]]'
expect_eq "sa uid" "$(jq -r .status.userInfo.uid "$TMP/who.json")" "$(K -n ns get sa robot -o jsonpath='{.metadata.uid}')"
expect_eq "sa cannot get cm" "$(can "$SA_TOKEN" get configmaps -n ns)" no
K -n ns create rolebinding robot-read --role=cm-reader --serviceaccount=ns:robot >/dev/null
expect_eq "sa can get cm after binding" "$(can "$SA_TOKEN" get configmaps -n ns)" yes
# tokenreview TOKEN [AUDIENCES-JSON] : the status as compact JSON
tokenreview() {
    printf '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"%s","audiences":%s}}' \
        "$1" "${2:-null}" | K create -f - -o json | jq -c .status
}
expect_eq "review of alice" "$(tokenreview alice-token)" \
    '{"audiences":["https://kubernetes.default.svc.cluster.local"],"authenticated":true,"user":{"groups":["dev","ops","system:authenticated"],"uid":"alice-uid","username":"alice"}}'
expect_eq "review of a bad token" "$(tokenreview not-a-token)" '{"user":{}}'
expect_eq "review of the sa token" "$(tokenreview "$SA_TOKEN" | jq -c '[.authenticated,.user.username]')" \
    '[true,"system:serviceaccount:ns:robot"]'
AUD_TOKEN=$(K -n ns create token robot --audience=metrics --audience=other)
expect_eq "audience asked for" "$(tokenreview "$AUD_TOKEN" '["metrics"]' | jq -c '[.authenticated,.audiences]')" \
    '[true,["metrics"]]'
expect_eq "audience not granted" "$(tokenreview "$AUD_TOKEN" | jq -c .authenticated)" null
code=$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $AUD_TOKEN" "$URL/api")
expect_eq "a token for other audiences is not the API server's" "$code" 401
K -n ns create token nobody >/dev/null 2>"$TMP/err" && fail "token for a missing account"
grep -q 'serviceaccounts "nobody" not found' "$TMP/err" || fail "missing account: $(cat "$TMP/err")"
K -n ns create token robot --duration=1m >/dev/null 2>"$TMP/err" && fail "a 1m token was made"
grep -q 'may not specify a duration less than 10 minutes' "$TMP/err" || fail "short duration: $(cat "$TMP/err")"
# a deleted (or re-created) account's tokens stop working
K -n ns delete serviceaccount robot >/dev/null
K -n ns create serviceaccount robot >/dev/null
expect_eq "token of a deleted account" "$(tokenreview "$SA_TOKEN")" '{"user":{}}'

echo "== SubjectAccessReview and LocalSubjectAccessReview"
# sar KIND SPEC-JSON [NS] : the status as compact JSON
sar() {
    local meta='{}'
    [ -n "${3:-}" ] && meta="{\"namespace\":\"$3\"}"
    printf '{"apiVersion":"authorization.k8s.io/v1","kind":"%s","metadata":%s,"spec":%s}' "$1" "$meta" "$2" |
        K create -f - -o json 2>&1 | jq -c .status 2>/dev/null || true
}
expect_eq "SAR allowed by a group" \
    "$(sar SubjectAccessReview '{"user":"carol","groups":["dev"],"resourceAttributes":{"namespace":"ns","verb":"get","resource":"configmaps"}}')" \
    '{"allowed":true,"reason":"RBAC: allowed by RoleBinding \"devs-read/ns\" of Role \"cm-reader\" to Group \"dev\""}'
expect_eq "SAR denied" \
    "$(sar SubjectAccessReview '{"user":"carol","resourceAttributes":{"namespace":"ns","verb":"get","resource":"configmaps"}}')" \
    '{"allowed":false}'
expect_eq "SAR non-resource" \
    "$(sar SubjectAccessReview '{"user":"bob","nonResourceAttributes":{"path":"/metrics","verb":"get"}}')" \
    '{"allowed":true,"reason":"RBAC: allowed by ClusterRoleBinding \"bob-scales\" of ClusterRole \"scaler\" to User \"bob\""}'
expect_eq "SAR masters" \
    "$(sar SubjectAccessReview '{"user":"x","groups":["system:masters"],"resourceAttributes":{"verb":"delete","resource":"nodes"}}')" \
    '{"allowed":true}'
printf '{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"resourceAttributes":{"verb":"get"}}}' |
    K create -f - 2>"$TMP/err" >/dev/null && fail "SAR without a user accepted"
grep -q 'spec.user: Invalid value: "": at least one of user or group must be specified' "$TMP/err" ||
    fail "SAR without user: $(cat "$TMP/err")"
printf '{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"ns"},"spec":{"user":"bob","resourceAttributes":{"namespace":"ns","verb":"delete","resource":"configmaps"}}}' |
    K create -f - -o json | jq -e '.status.allowed == true' >/dev/null || fail "LSAR bob delete cm in ns"
printf '{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"ns"},"spec":{"user":"bob","resourceAttributes":{"namespace":"default","verb":"get","resource":"configmaps"}}}' |
    K create -f - 2>"$TMP/err" >/dev/null && fail "LSAR for another namespace accepted"
grep -q 'spec.resourceAttributes.namespace: Invalid value: "default": must match metadata.namespace' "$TMP/err" ||
    fail "LSAR namespace: $(cat "$TMP/err")"
# the review kinds are create-only and never stored
code=$(curl -sk -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer root-token' \
    "$URL/apis/authorization.k8s.io/v1/subjectaccessreviews")
expect_eq "GET a review kind" "$code" 405
K get --raw /apis/authorization.k8s.io/v1 | jq -c '[.resources[]|[.name,.namespaced,.verbs]]' >"$TMP/disc"
expect_eq "discovery" "$(cat "$TMP/disc")" \
    '[["subjectaccessreviews",false,["create"]],["selfsubjectaccessreviews",false,["create"]],["selfsubjectrulesreviews",false,["create"]],["localsubjectaccessreviews",true,["create"]]]'
K get --raw /api/v1 | jq -e '.resources[]|select(.name=="serviceaccounts/token")|.kind=="TokenRequest"' >/dev/null ||
    fail "serviceaccounts/token in discovery"

echo "== impersonation (kubectl --as / --as-group)"
expect_eq "can-i as alice" "$(K auth can-i get configmaps -n ns --as alice --as-group dev 2>&1 || true)" yes
expect_eq "can-i as alice without the group" "$(K auth can-i get configmaps -n ns --as alice 2>&1 || true)" no
K auth whoami --as system:serviceaccount:ns:robot -o json >"$TMP/who.json"
expect_eq "as a service account" "$(jq -c '.status.userInfo|[.username,.groups]' "$TMP/who.json")" \
    '["system:serviceaccount:ns:robot",["system:serviceaccounts","system:serviceaccounts:ns","system:authenticated"]]'
forbidden 'users "root" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope' \
    K --token alice-token get configmaps -n ns --as root
K create clusterrole impersonate-bob --verb=impersonate --resource=users --resource-name=bob >/dev/null
K create clusterrolebinding bob-impersonates-bob --clusterrole=impersonate-bob --user=bob >/dev/null
expect_eq "bob as bob" "$(K --token bob-token auth whoami --as bob -o jsonpath='{.status.userInfo.username}')" bob
forbidden 'groups "system:masters" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope' \
    K --token bob-token get configmaps -n ns --as bob --as-group system:masters

echo "== kubectl auth can-i --list"
K --token alice-token auth can-i --list -n ns >"$TMP/list"
grep -Eq '^configmaps +\[\] +\[\] +\[get list\]' "$TMP/list" || fail "can-i --list: $(cat "$TMP/list")"
grep -Eq '^secrets +\[\] +\[only-this\] +\[get watch list\]' "$TMP/list" || fail "can-i --list: $(cat "$TMP/list")"

echo "PASS apiserver_authz"
