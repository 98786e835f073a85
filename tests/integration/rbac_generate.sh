#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `luaop check --rbac`: least-privilege RBAC from a script set.
#  1. config/rbac/role.yaml is exactly what the memcached example generates (`make rbac`);
#  2. the memcached set gets: Memcached read/update/patch, its status and finalizers, Deployments
#     (owns) full write, Events create/patch, the Lease Role, the scripts ConfigMap by resourceNames,
#     and nothing wider (no wildcard, no cluster-wide ConfigMap read);
#  3. the replicator's marker adds ConfigMap writes; watches give Namespaces read only;
#  4. --namespace makes a Role, with cluster-scoped kinds (Namespace) in a separate ClusterRole;
#     a list (--namespace a,b) makes one in each;
#  5. a wildcard or malformed marker fails naming file:line; an unknown kind's guessed plural warns;
#  6. every generated object is accepted by the local API server (kubectl apply).
set -euo pipefail
: "${LUAOP:?}" "${LUAOP_SRC:?}"
cd "$LUAOP_SRC"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/luaop-rbac.XXXXXX")
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$LUAOP" check --rbac --scripts examples/memcached/scripts \
  --crd examples/memcached/crd/cache.example.com_memcacheds.yaml \
  --scripts-configmap luaop-system/luaop-scripts >"$tmp/mc.yaml" 2>"$tmp/mc.err" || { cat "$tmp/mc.err" >&2; fail "memcached"; }
diff -u config/rbac/role.yaml "$tmp/mc.yaml" || fail "config/rbac/role.yaml is stale: run make rbac"
echo "ok   config/rbac/role.yaml is current"

# Rules as "kind/name group resource verbs [names]" lines, for exact checks.
rules() {
  /usr/bin/python3 - "$1" <<'PY'
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if not d or d["kind"] not in ("Role", "ClusterRole"):
        continue
    for r in d["rules"]:
        for g in r["apiGroups"]:
            for res in r["resources"]:
                names = ",".join(r.get("resourceNames", []))
                print(f'{d["kind"]}/{d["metadata"]["name"]} {g or "core"} {res} {",".join(r["verbs"])} {names}'.rstrip())
PY
}
rules "$tmp/mc.yaml" >"$tmp/mc.rules"
cat >"$tmp/mc.want" <<'EOF2'
ClusterRole/luaop-manager core events create,patch
ClusterRole/luaop-manager apps deployments get,list,watch,create,update,patch,delete
ClusterRole/luaop-manager cache.example.com memcacheds get,list,watch,update,patch
ClusterRole/luaop-manager cache.example.com memcacheds/finalizers update
ClusterRole/luaop-manager cache.example.com memcacheds/status get,update,patch
ClusterRole/luaop-manager events.k8s.io events create,patch
Role/luaop-leader-election coordination.k8s.io leases get,list,watch,create,update,patch,delete
Role/luaop-leader-election core events create,patch
Role/luaop-leader-election events.k8s.io events create,patch
Role/luaop-scripts core configmaps get,list,watch luaop-scripts
EOF2
diff -u "$tmp/mc.want" "$tmp/mc.rules" || fail "memcached rules differ"
echo "ok   memcached: exactly the rules its declarations need"

"$LUAOP" check --rbac --scripts examples/replicator/scripts \
  --crd examples/replicator/crd/replicator.example.com_configmapreplications.yaml >"$tmp/rep.yaml" 2>"$tmp/rep.err" ||
  { cat "$tmp/rep.err" >&2; fail "replicator"; }
rules "$tmp/rep.yaml" >"$tmp/rep.rules"
grep -qx 'ClusterRole/luaop-manager core configmaps get,list,watch,create,update,patch,delete' "$tmp/rep.rules" ||
  fail "replicator: the marker's ConfigMap writes are missing: $(cat "$tmp/rep.rules")"
grep -qx 'ClusterRole/luaop-manager core namespaces get,list,watch' "$tmp/rep.rules" || fail "replicator: namespaces read"
grep -q 'warning' "$tmp/rep.err" && fail "replicator: unexpected warning: $(cat "$tmp/rep.err")"
echo "ok   replicator: marker writes, watched kinds read only"

"$LUAOP" check --rbac --namespace team-a --scripts examples/replicator/scripts \
  --crd examples/replicator/crd/replicator.example.com_configmapreplications.yaml >"$tmp/ns.yaml" 2>/dev/null
rules "$tmp/ns.yaml" >"$tmp/ns.rules"
grep -qx 'Role/luaop-manager core configmaps get,list,watch,create,update,patch,delete' "$tmp/ns.rules" || fail "--namespace: Role"
grep -qx 'ClusterRole/luaop-manager-cluster core namespaces get,list,watch' "$tmp/ns.rules" ||
  fail "--namespace: Namespaces (cluster-scoped) must go to a ClusterRole: $(cat "$tmp/ns.rules")"
# the replication kind is cluster-scoped too (its CRD says scope: Cluster)
grep -q '^ClusterRole/luaop-manager-cluster replicator.example.com configmapreplications ' "$tmp/ns.rules" ||
  fail "--namespace: a Cluster-scoped CRD kind must go to the ClusterRole"
echo "ok   --namespace: a Role, cluster-scoped kinds in a ClusterRole"

"$LUAOP" check --rbac --namespace "team-a, team-b" --scripts examples/replicator/scripts \
  --crd examples/replicator/crd/replicator.example.com_configmapreplications.yaml >"$tmp/ns2.yaml" 2>/dev/null
/usr/bin/python3 - "$tmp/ns2.yaml" <<'PY' || fail "--namespace a list: one manager Role and RoleBinding per namespace"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for kind in ("Role", "RoleBinding"):
    got = sorted(d["metadata"]["namespace"] for d in docs if d["kind"] == kind and d["metadata"]["name"] == "luaop-manager")
    assert got == ["team-a", "team-b"], (kind, got)
roles = [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "luaop-manager"]
assert roles[0]["rules"] == roles[1]["rules"], "the namespaces' Roles differ"
assert any(d["kind"] == "ClusterRole" and d["metadata"]["name"] == "luaop-manager-cluster" for d in docs)
PY
echo "ok   --namespace a,b: the manager Role and its binding in each namespace"

mkdir "$tmp/bad"
cat >"$tmp/bad/main.lua" <<'EOF2'
local op = require("luaop")
-- +kubebuilder:rbac:groups=apps,resources=*,verbs=get
op.controller { name = "w", for_ = { api_version = "example.com/v1", kind = "Widget" }, reconcile = function() end }
EOF2
if "$LUAOP" check --rbac --scripts "$tmp/bad" >/dev/null 2>"$tmp/bad.err"; then fail "a wildcard marker was accepted"; fi
grep -q 'main.lua:2: rbac marker: wildcards are refused' "$tmp/bad.err" || fail "wildcard error: $(cat "$tmp/bad.err")"
sed -i 's/resources=\*,verbs=get/resources=deployments,verb=get/' "$tmp/bad/main.lua"
if "$LUAOP" check --rbac --scripts "$tmp/bad" >/dev/null 2>"$tmp/bad.err"; then fail "a malformed marker was accepted"; fi
grep -q 'main.lua:2: rbac marker: unknown key "verb"' "$tmp/bad.err" || fail "malformed error: $(cat "$tmp/bad.err")"
sed -i 's/verb=get/verbs=get/' "$tmp/bad/main.lua"
"$LUAOP" check --rbac --scripts "$tmp/bad" >"$tmp/w.yaml" 2>"$tmp/w.err" || fail "a good marker failed: $(cat "$tmp/w.err")"
grep -q 'example.com/Widget: no CustomResourceDefinition given, plural guessed as "widgets"' "$tmp/w.err" ||
  fail "no warning for a guessed plural: $(cat "$tmp/w.err")"
echo "ok   markers: wildcard and malformed ones fail with file:line; guessed plurals warn"

"$LUAOP" apiserver --listen 127.0.0.1:0 --kubeconfig-out "$tmp/kc" >"$tmp/srv.out" 2>&1 &
srv=$!
for _ in $(seq 1 100); do [ -s "$tmp/kc" ] && kubectl --kubeconfig "$tmp/kc" get namespaces >/dev/null 2>&1 && break; sleep 0.1; done
kubectl --kubeconfig "$tmp/kc" create namespace luaop-system >/dev/null
kubectl --kubeconfig "$tmp/kc" create namespace team-a >/dev/null
kubectl --kubeconfig "$tmp/kc" create namespace team-b >/dev/null
for f in mc rep ns ns2 w; do
  kubectl --kubeconfig "$tmp/kc" apply -f "$tmp/$f.yaml" >"$tmp/apply.out" 2>&1 || { cat "$tmp/apply.out" >&2; fail "apply $f"; }
done
kubectl --kubeconfig "$tmp/kc" get -n luaop-system role/luaop-scripts -o jsonpath='{.rules[0].resourceNames[0]}' |
  grep -qx luaop-scripts || fail "the scripts Role did not round-trip"
echo "ok   the generated objects apply to the local API server"
echo "PASS rbac generate"
