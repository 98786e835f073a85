#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A watch declared metadata_only (controller-runtime's OnlyMetadata) on the real host (luaop dev):
# its informer asks the API server for metadata only (PartialObjectMetadata; the local server
# serves it, so no fallback to full objects is logged) and caches apiVersion, kind and metadata;
# its map function sees that view with the watched kind (v1 Secret, not meta.k8s.io's
# PartialObjectMetadata) and no `data`, a change of a watched Secret still enqueues the primary,
# and the reconcile's read of the Secret is not served from the metadata-only cache: it gets the
# whole object (live GET).
set -euo pipefail
: "${LUAOP:?}" "${LUAOP_SRC:?}"
source "$LUAOP_SRC/tests/lib/dev.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$LOP_TMP/scripts"
cat >"$LOP_TMP/objects.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: primary, namespace: default, labels: {mo: primary}}
data: {a: b}
YAML
cat >"$LOP_TMP/scripts/main.lua" <<'LUA'
local op = require("luaop")
op.controller {
  name = "mo",
  for_ = { api_version = "v1", kind = "ConfigMap", label_selector = "mo=primary" },
  watches = { { api_version = "v1", kind = "Secret", metadata_only = true,
                map = function(o)
                  op.log.info("MAPPED", { secret = o.metadata.name, has_data = tostring(o.data ~= nil),
                                          gvk = o.apiVersion .. "/" .. o.kind,
                                          has_labels = tostring(o.metadata.labels ~= nil) })
                  return { { namespace = o.metadata.namespace, name = "primary" } }
                end } },
  reconcile = function(req)
    local s = op.client.get("v1", "Secret", req.namespace, "s1")
    op.log.info("RECONCILED", { secret_data = tostring(s and s.data and s.data.k) })
    return op.result.done()
  end,
}
LUA

lop_start_dev --scripts "$LOP_TMP/scripts" --apply "$LOP_TMP/objects.yaml"
log="$LOP_TMP/luaop.log"
lop_wait_for "the metadata-only informer started" 20 grep -q 'informer=/v1/secrets|||metadata' "$log"
kubectl create secret generic s1 --from-literal=k=v
kubectl label secret s1 tier=test
lop_wait_for "a reconcile that read the whole Secret" 20 grep -q 'msg=RECONCILED .*secret_data="\?dg==' "$log"
lop_wait_for "the map function saw the label" 20 grep -q 'msg=MAPPED .*has_labels=true' "$log"
lop_stop_dev
if grep 'msg=MAPPED' "$log" | grep -q 'has_data=true'; then
  grep 'msg=MAPPED' "$log" >&2
  fail "a metadata-only watch showed the Secret's data to its map function"
fi
grep -q 'msg=MAPPED .*secret=s1' "$log" || fail "the Secret's events did not reach the map function"
if grep 'msg=MAPPED' "$log" | grep -v -q 'gvk=v1/Secret'; then
  grep 'msg=MAPPED' "$log" >&2
  fail "a metadata-only watch showed its map function another apiVersion/kind than v1 Secret"
fi
if grep -q 'refused metadata-only responses' "$log"; then
  fail "the local API server refused the metadata-only Accept; the informer fell back to full objects"
fi
echo "PASS operator metadata_only"
