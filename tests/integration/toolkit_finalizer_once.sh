#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# luaop.finalizers.finalize against the local API server (luaop dev): the cleanup runs exactly once
# per deletion, even when the object is requeued while its last finalizer is being removed.
#
# The Guard operator (written below) watches Guards without predicates, so its own status write in
# the cleanup requeues the object while the reconcile is still running; the reconcile right after the
# finalizer removal must not see the object (read-your-writes after the update that deleted it:
# the server answers with the object as submitted, old resourceVersion, and watchers see only a
# DELETED event) — otherwise it finds the stale finalizer and runs the cleanup again. The reconcile
# also reads the object back from the cache right after finalize: it must be gone (g1) or show our
# finalizer removed (g2).
# Also: another controller's finalizer survives ours being removed, and the object goes only when
# that one is removed too.
set -euo pipefail
: "${LUAOP:?}" "${LUAOP_SRC:?}"
source "$LUAOP_SRC/tests/lib/dev.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$LOP_TMP/scripts"
lop_write_crd "$LOP_TMP/crd.yaml" Guard guards guard
cat >"$LOP_TMP/objects.yaml" <<'YAML'
apiVersion: test.luaop.io/v1
kind: Guard
metadata: {name: g1, namespace: default}
spec: {}
---
apiVersion: test.luaop.io/v1
kind: Guard
metadata: {name: g2, namespace: default, finalizers: [other.example.com/keep]}
spec: {}
YAML
cat >"$LOP_TMP/scripts/main.lua" <<'LUA'
local op = require("luaop")
local API, KIND, FIN = "test.luaop.io/v1", "Guard", "test.luaop.io/cleanup"
op.controller {
  name = "guard",
  for_ = { api_version = API, kind = KIND },
  reconcile = function(req)
    local g, err = op.client.get(API, KIND, req.namespace, req.name)
    if not g then
      if op.errors.is_not_found(err) then return op.result.done() end
      return nil, err
    end
    local deleting, ferr = op.finalizers.finalize(g, FIN, function(obj)
      op.log.info("cleanup ran", { guard = obj.metadata.name })
      op.events.record(obj, "Normal", "CleanedUp", "cleanup of " .. obj.metadata.name)
      local _, serr = op.status.update(obj, function(o) o.status.phase = "Finalizing" end)
      return serr == nil or op.errors.is_not_found(serr), serr
    end)
    if ferr then return nil, ferr end
    if deleting then
      -- read-your-writes: the cache must not show the finalizer we just removed
      local again = op.client.get(API, KIND, req.namespace, req.name)
      if again and op.finalizers.has(again, FIN) then
        op.log.warn("stale cache after the finalizer removal", { rv = again.metadata.resourceVersion })
      end
      return op.result.done()
    end
    local _, serr = op.status.update(g, function(o) o.status.phase = "Guarding" end)
    if serr then return nil, serr end
    return op.result.done()
  end,
}
LUA

lop_start_dev --scripts "$LOP_TMP/scripts" --apply "$LOP_TMP/crd.yaml" --apply "$LOP_TMP/objects.yaml"
log="$LOP_TMP/luaop.log"
for g in g1 g2; do
  lop_wait_for "$g guarded" 20 lop_jsonpath_is "guard/$g" '{.status.phase}' Guarding
done
[ "$(kubectl get guard g2 -o 'jsonpath={.metadata.finalizers}')" = '["other.example.com/keep","test.luaop.io/cleanup"]' ] \
  || fail "g2 finalizers: $(kubectl get guard g2 -o 'jsonpath={.metadata.finalizers}')"

echo "delete g1: cleanup once, then gone"
kubectl delete guard g1 --wait=false
lop_wait_for "g1 gone" 20 bash -c "! kubectl get guard g1"
echo "delete g2: cleanup once, our finalizer removed, the other one kept"
kubectl delete guard g2 --wait=false
lop_wait_for "our finalizer removed from g2" 20 lop_jsonpath_is guard/g2 '{.metadata.finalizers}' '["other.example.com/keep"]'
kubectl patch guard g2 --type=json -p '[{"op":"remove","path":"/metadata/finalizers/0"}]'
lop_wait_for "g2 gone" 20 bash -c "! kubectl get guard g2"

# every reconcile queued by the deletions has run once the queue is empty; stop, then count
lop_stop_dev
if grep -q "stale cache after the finalizer removal" "$log"; then
  grep "stale cache" "$log" >&2
  fail "a cache read right after the finalizer removal still showed the finalizer"
fi
for g in g1 g2; do
  n=$(grep -c "msg=\"cleanup ran\".*name=$g " "$log" || true)
  [ "$n" = 1 ] || { grep "cleanup ran\|$g" "$log" >&2; fail "the cleanup of $g ran $n times"; }
done
echo "PASS toolkit finalizer once"
