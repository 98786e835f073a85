#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# luaop.status under concurrent spec updates from kubectl, against the local API server (luaop dev),
# and the operator's Events in `kubectl describe`.
#
# A small operator (written below) reconciles Echo objects (test.luaop.io/v1, namespaced): it copies
# spec.value into status.value with luaop.status.update (observedGeneration, a Ready condition) and
# records an Event per generation. spec.delay makes a reconcile wait that many seconds between its
# read and its status write, so a test can change the spec inside that window.
#
# 1. Race, step by step: a slow reconcile of generation G is caught between read and status write,
#    kubectl changes the spec (G+1), the status write gets 409, is retried on a fresh read, and the
#    status written must not claim G+1 while holding G's value (observedGeneration = G). The next
#    reconcile brings observedGeneration to G+1 with the new value.
# 2. A loop of kubectl patches while the operator reconciles: every observation of the object obeys
#    "observedGeneration == generation => status.value == spec.value"; at the end observedGeneration
#    equals the final generation and status.value is the last value written (no lost update).
# 3. Events: `kubectl describe echo a` lists a's Events (and not b's); a repeated identical event
#    is one Event with a count, shown as "(x2 over ...)".
set -euo pipefail
: "${LUAOP:?}" "${LUAOP_SRC:?}"
source "$LUAOP_SRC/tests/lib/dev.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$LOP_TMP/scripts"
lop_write_crd "$LOP_TMP/crd.yaml" Echo echoes echo
cat >"$LOP_TMP/objects.yaml" <<'YAML'
apiVersion: test.luaop.io/v1
kind: Echo
metadata: {name: a, namespace: default}
spec: {value: 0}
---
apiVersion: test.luaop.io/v1
kind: Echo
metadata: {name: b, namespace: default}
spec: {value: 0}
YAML
cat >"$LOP_TMP/scripts/main.lua" <<'LUA'
local op = require("luaop")
local core = require("luaop.core")
local API, KIND = "test.luaop.io/v1", "Echo"
op.controller {
  name = "echo",
  for_ = { api_version = API, kind = KIND, predicates = { op.predicates.generation_changed } },
  reconcile = function(req)
    local e, err = op.client.get(API, KIND, req.namespace, req.name)
    if not e then
      if op.errors.is_not_found(err) then return op.result.done() end
      return nil, err
    end
    local value, gen = e.spec.value, e.metadata.generation
    local delay = tonumber(e.spec.delay) or 0
    if delay > 0 then
      op.log.info("slow reconcile started", { generation = gen, value = value })
      core.sleep(delay)
    end
    local _, serr, what = op.status.update(e, function(o)
      o.status.value = value
      op.conditions.set(o, { type = "Ready", status = "True", reason = "Echoed",
                             message = "value " .. tostring(value) })
    end)
    if serr then return nil, serr end
    op.log.info("status " .. what, { generation = gen, value = value,
                                     observed = e.status.observedGeneration })
    op.events.record(e, "Normal", "Echoed", string.format("%s generation %d: value %s",
                     req.name, gen, tostring(value)))
    if req.name == "b" then -- the same event every time: aggregated into one Event with a count
      op.events.record(e, "Normal", "Reconciled", "reconciled b")
    end
    return op.result.done()
  end,
}
LUA

lop_start_dev --scripts "$LOP_TMP/scripts" --apply "$LOP_TMP/crd.yaml" --apply "$LOP_TMP/objects.yaml"
log="$LOP_TMP/luaop.log"

# observe NAME -> "generation observedGeneration spec.value status.value"
observe() {
  kubectl get echo "$1" -o 'jsonpath={.metadata.generation} {.status.observedGeneration} {.spec.value} {.status.value}'
}
settled() { # NAME: observedGeneration == generation and the status echoes the spec
  local g o s v
  read -r g o s v <<<"$(observe "$1")"
  [ -n "$o" ] && [ "$g" = "$o" ] && [ "$s" = "$v" ]
}
# invariant NAME: whenever the status claims the current generation, it holds that generation's value
invariant() {
  local g o s v
  read -r g o s v <<<"$(observe "$1")"
  if [ "$g" = "$o" ] && [ "$s" != "$v" ]; then
    fail "$1: status claims generation $g (observedGeneration $o) but has value '$v' for spec value '$s'"
  fi
}
count_log() { grep -c -- "$1" "$log" || true; }

lop_wait_for "a settled" 20 settled a
lop_wait_for "b settled" 20 settled b

echo "1. a status write racing a spec change"
g0=$(kubectl get echo a -o 'jsonpath={.metadata.generation}')
slow_gen=$((g0 + 1)) new_gen=$((g0 + 2))
conflicts_before=$(count_log 'path=/apis/test.luaop.io/v1/namespaces/default/echoes/a/status code=409')
kubectl patch echo a --type=merge -p '{"spec":{"value":1,"delay":3}}'
lop_wait_for "the slow reconcile of generation $slow_gen" 10 \
  grep -q "msg=\"slow reconcile started\".*name=a .*generation=$slow_gen" "$log"
# inside its 3 s window: generation new_gen, slow as well, so its own reconcile waits too
kubectl patch echo a --type=merge -p '{"spec":{"value":2,"delay":3}}'
lop_wait_for "the raced status write of generation $slow_gen" 10 \
  grep -q "msg=\"status updated\".*name=a .*generation=$slow_gen" "$log"
conflicts=$(( $(count_log 'path=/apis/test.luaop.io/v1/namespaces/default/echoes/a/status code=409') - conflicts_before ))
[ "$conflicts" -ge 1 ] || fail "the status write of generation $slow_gen did not conflict (the race was not exercised)"
# The reconcile of new_gen is now in its own 3 s sleep: the stored status is the retried write.
read -r g o s v <<<"$(observe a)"
[ "$g $s" = "$new_gen 2" ] || fail "expected generation $new_gen with spec value 2, got '$g $s'"
[ "$o $v" = "$slow_gen 1" ] || fail "retried status write: observedGeneration/value '$o $v', want '$slow_gen 1' (claimed a generation it had not seen?)"
[ "$(kubectl get echo a -o 'jsonpath={.status.conditions[0].observedGeneration}')" = "$slow_gen" ] \
  || fail "Ready condition observedGeneration is not $slow_gen"
lop_wait_for "a settled on generation $new_gen" 20 settled a
[ "$(observe a)" = "$new_gen $new_gen 2 2" ] || fail "a: $(observe a)"
kubectl patch echo a --type=json -p '[{"op":"remove","path":"/spec/delay"}]'
lop_wait_for "a settled without delay" 20 settled a

echo "2. a loop of kubectl patches while the operator reconciles"
N=15 # with the other steps, under the recorder's per-object burst of 25 events
(
  for i in $(seq 1 "$N"); do
    kubectl patch echo a --type=merge -p "{\"spec\":{\"value\":$((100 + i))}}" >/dev/null
  done
) &
patcher=$!
samples=0
while kill -0 "$patcher" 2>/dev/null; do
  invariant a
  samples=$((samples + 1))
done
wait "$patcher" || fail "a kubectl patch failed"
lop_wait_for "a settled after the loop" 20 settled a
read -r g o s v <<<"$(observe a)"
[ "$s" = $((100 + N)) ] || fail "spec.value is '$s', want $((100 + N))"
[ "$o" = "$g" ] && [ "$v" = "$s" ] || fail "lost update: generation $g observedGeneration $o spec $s status $v"
invariant a
echo "   $N patches, $samples observations, final generation $g, observedGeneration $o, value $v"

echo "3. Events in kubectl describe"
kubectl patch echo b --type=merge -p '{"spec":{"value":7}}'
lop_wait_for "b settled" 20 settled b
desc_a=$(kubectl describe echo a)
desc_b=$(kubectl describe echo b)
grep -Eq "Normal +Echoed .*a generation $g: value $v" <<<"$desc_a" || { echo "$desc_a" >&2; fail "describe a lacks its last event"; }
grep -Eq "Normal +Echoed .*b generation [0-9]+: value 7" <<<"$desc_b" || { echo "$desc_b" >&2; fail "describe b lacks its event"; }
! grep -q "b generation" <<<"$desc_a" || { echo "$desc_a" >&2; fail "describe a shows b's events"; }
! grep -q "a generation" <<<"$desc_b" || { echo "$desc_b" >&2; fail "describe b shows a's events"; }
# b was reconciled twice (create, value 7): its identical Reconciled events are one Event, count 2
rec=$(kubectl get events -n default --field-selector reason=Reconciled,involvedObject.name=b \
  -o 'jsonpath={range .items[*]}{.count}{"\n"}{end}')
[ "$rec" = 2 ] || fail "Reconciled events of b (one count per Event): '$rec', want one Event with count 2"
grep -Eq 'Normal +Reconciled +.*\(x2 over .*reconciled b' <<<"$desc_b" || { echo "$desc_b" >&2; fail "describe b does not show the aggregated event (x2)"; }
# the field selector kubectl sends, answered by the API server
uid_a=$(kubectl get echo a -o 'jsonpath={.metadata.uid}')
n=$(kubectl get events -n default --field-selector "involvedObject.kind=Echo,involvedObject.name=a,involvedObject.uid=$uid_a" \
  -o 'jsonpath={range .items[*]}{.involvedObject.name}{"\n"}{end}' | grep -c '^a$' || true)
[ "$n" -ge 1 ] || fail "no events for a through involvedObject field selectors"

lop_stop_dev
echo "PASS toolkit status concurrency"
