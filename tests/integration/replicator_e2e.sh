#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The replicator example end to end against the local API server (luaop dev), driven with kubectl:
# a cluster-scoped ConfigMapReplication copies default/shared-settings into the listed and the
# labelled namespaces; a source change propagates (ConfigMap watch, map function); a namespace
# gaining the label gets a copy and losing it loses the copy (Namespace watch); a copy deleted by
# someone is recreated; a foreign ConfigMap of the same name is left alone (Ready=False); a deleted
# target namespace drops out of the status; Events in `kubectl describe`; deleting the replication
# removes every copy (finalizer), exactly once.
set -euo pipefail
: "${LUAOP:?}" "${LUAOP_SRC:?}"
source "$LUAOP_SRC/tests/lib/dev.sh"
ex="$LUAOP_SRC/examples/replicator"

lop_start_dev --scripts "$ex/scripts" --apply "$ex/crd/replicator.example.com_configmapreplications.yaml" \
  --apply "$ex/samples/source.yaml" --apply "$ex/samples/replication.yaml"

cr=configmapreplication/shared-settings
label=replicator.example.com/replication=shared-settings
fail() { echo "FAIL: $*" >&2; exit 1; }
# copies: the namespaces holding a copy, sorted, space-separated
copies() { kubectl get configmaps -A -l "$label" -o 'jsonpath={range .items[*]}{.metadata.namespace}{" "}{end}' | tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' '; }
copies_are() { [ "$(copies)" = "$1" ]; }
# copy_data_is NS KEY VALUE
copy_data_is() { [ "$(kubectl get configmap -n "$1" shared-settings -o "jsonpath={.data.$2}" 2>/dev/null)" = "$3" ]; }
ready_is() { lop_jsonpath_is "$cr" '{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}' "$1"; }

lop_wait_for "copies in team-a and team-b" 20 copies_are "team-a team-b "
lop_wait_for "status syncedNamespaces" 20 lop_jsonpath_is "$cr" '{.status.syncedNamespaces}' '["team-a","team-b"]'
lop_wait_for "Ready=True/Synced" 20 ready_is "True/Synced"
[ "$(kubectl get "$cr" -o 'jsonpath={.metadata.finalizers[0]}')" = replicator.example.com/cleanup ] || fail "no finalizer"
[ "$(kubectl get "$cr" -o 'jsonpath={.metadata.namespace}')" = "" ] || fail "the replication is not cluster-scoped"
[ "$(kubectl get cm -n team-a shared-settings -o 'jsonpath={.data.region}')" = eu-west-1 ] || fail "copy data"
[ "$(kubectl get cm -n team-a shared-settings -o 'jsonpath={.metadata.annotations.replicator\.example\.com/source}')" = default/shared-settings ] \
  || fail "copy annotation"

echo "source change propagates"
kubectl patch configmap -n default shared-settings --type=merge -p '{"data":{"log_level":"debug"}}'
lop_wait_for "team-a copy updated" 20 copy_data_is team-a log_level debug
lop_wait_for "team-b copy updated" 20 copy_data_is team-b log_level debug
[ "$(kubectl get "$cr" -o 'jsonpath={.metadata.generation}')" = 1 ] || fail "a source change bumped the generation"

echo "a new namespace gets a copy once labelled"
kubectl create namespace team-c
kubectl label namespace team-c replicator.example.com/enabled=true
lop_wait_for "copy in team-c" 20 copies_are "team-a team-b team-c "
lop_wait_for "team-c in status" 20 lop_jsonpath_is "$cr" '{.status.syncedNamespaces}' '["team-a","team-b","team-c"]'
[ "$(kubectl get cm -n team-c shared-settings -o 'jsonpath={.data.log_level}')" = debug ] || fail "team-c copy data"

echo "someone deletes a copy"
kubectl delete configmap -n team-b shared-settings
lop_wait_for "team-b copy recreated" 20 copies_are "team-a team-b team-c "

echo "a namespace losing the label loses the copy"
kubectl label namespace team-c replicator.example.com/enabled-
lop_wait_for "team-c copy removed" 20 copies_are "team-a team-b "
lop_wait_for "team-c out of status" 20 lop_jsonpath_is "$cr" '{.status.syncedNamespaces}' '["team-a","team-b"]'

echo "a foreign ConfigMap of the same name is left alone"
kubectl create namespace team-d
kubectl create configmap -n team-d shared-settings --from-literal=owner=someone-else
kubectl label namespace team-d replicator.example.com/enabled=true
lop_wait_for "Ready=False/TargetConflict" 20 ready_is "False/TargetConflict"
[ "$(kubectl get cm -n team-d shared-settings -o 'jsonpath={.data.owner}/{.data.log_level}')" = "someone-else/" ] \
  || fail "the foreign ConfigMap was overwritten"

echo "a target namespace is deleted"
kubectl delete namespace team-b --wait=false
lop_wait_for "team-b gone" 20 bash -c "! kubectl get namespace team-b"
lop_wait_for "only team-a holds a copy" 20 copies_are "team-a "
lop_wait_for "team-b out of status" 20 lop_jsonpath_is "$cr" '{.status.syncedNamespaces}' '["team-a"]'

echo "Events in kubectl describe"
desc=$(kubectl describe "$cr")
grep -Eq 'Normal +Synced .*copied default/shared-settings into team-a, team-b' <<<"$desc" || { echo "$desc" >&2; fail "no Synced event in describe"; }
grep -Eq 'Warning +TargetConflict ' <<<"$desc" || { echo "$desc" >&2; fail "no TargetConflict event in describe"; }

echo "delete the replication"
kubectl delete "$cr" --wait=false
lop_wait_for "the replication to be gone (finalizer removed)" 20 bash -c "! kubectl get $cr"
lop_wait_for "every copy to be gone" 20 copies_are ""
[ "$(kubectl get cm -n team-d shared-settings -o 'jsonpath={.data.owner}')" = someone-else ] || fail "the foreign ConfigMap was deleted"
[ "$(kubectl get cm -n default shared-settings -o 'jsonpath={.data.log_level}')" = debug ] || fail "the source was touched"
# exactly once: one CleanedUp event, counted once, naming both copies
cleaned=$(kubectl get events -n default --field-selector reason=CleanedUp \
  -o 'jsonpath={range .items[*]}{.count}|{.message}{"\n"}{end}')
[ "$cleaned" = "1|deleted 1 copy of default/shared-settings from team-a" ] \
  || fail "CleanedUp events: '$cleaned'"

lop_stop_dev
echo "PASS replicator end to end"
