# SPDX-License-Identifier: Apache-2.0
# tests/lib/dev.sh — helpers for shell integration tests and the demo (source it).
# Starts `luaop dev` (local API server + operator) on a free loopback port, waits until its
# kubeconfig is written and the API answers, and stops it on exit. Requires LUAOP (binary path).

# kubectl drives every step; without it the wait below would time out with a misleading message.
if ! command -v kubectl >/dev/null 2>&1; then
  echo "FAIL: kubectl not found on PATH: the demo and the shell integration tests use it" >&2
  echo "      (kubectl 1.32 is what they are tested with; Debian 12's kubernetes-client is 1.20)" >&2
  exit 1
fi

LOP_TMP=$(mktemp -d "${TMPDIR:-/tmp}/luaop-test.XXXXXX")
LOP_PID=""
export KUBECONFIG="$LOP_TMP/kubeconfig"
# kubectl caches discovery per host:port under ~/.kube/cache; ports are reused across tests and
# runs, and a cache from another server (other CRDs, other versions) misleads kubectl: never share it
export KUBECACHEDIR="$LOP_TMP/kubecache"

lop_cleanup() {
  local rc=$?
  if [ -n "$LOP_PID" ] && kill -0 "$LOP_PID" 2>/dev/null; then
    kill -TERM "$LOP_PID" 2>/dev/null || true
    wait "$LOP_PID" 2>/dev/null || true
  fi
  if [ $rc -ne 0 ] && [ -f "$LOP_TMP/luaop.log" ]; then
    echo "---- luaop log (last 60 lines) ----" >&2
    tail -n 60 "$LOP_TMP/luaop.log" >&2
  fi
  rm -rf "$LOP_TMP"
  return $rc
}
trap lop_cleanup EXIT

# lop_start_dev ARGS... — start `luaop dev ARGS` in the background.
lop_start_dev() {
  "$LUAOP" dev --kubeconfig-out "$KUBECONFIG" --metrics-bind-address 0 \
    --health-probe-bind-address 0 "$@" >"$LOP_TMP/luaop.log" 2>&1 &
  LOP_PID=$!
  lop_wait_for "the API server to answer" 30 kubectl get namespaces
}

# lop_wait_for WHAT SECONDS CMD... — run CMD until it succeeds, at most SECONDS (a deadline for a
# condition, not a sleep standing in for one).
lop_wait_for() {
  local what=$1 secs=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ -n "$LOP_PID" ] && ! kill -0 "$LOP_PID" 2>/dev/null; then
      echo "FAIL: luaop exited while waiting for $what" >&2
      return 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "FAIL: timed out after ${secs}s waiting for $what" >&2
      return 1
    fi
    sleep 0.1
  done
}

# lop_jsonpath_is KIND/NAME JSONPATH VALUE — true when kubectl get shows VALUE at JSONPATH.
lop_jsonpath_is() {
  [ "$(kubectl get "$1" -o "jsonpath=$2" 2>/dev/null)" = "$3" ]
}

# lop_stop_dev — SIGTERM and expect a clean exit 0.
lop_stop_dev() {
  kill -TERM "$LOP_PID"
  local rc=0
  wait "$LOP_PID" || rc=$?
  LOP_PID=""
  if [ $rc -ne 0 ]; then
    echo "FAIL: luaop dev exited with $rc after SIGTERM" >&2
    return 1
  fi
}

# lop_write_crd FILE KIND PLURAL SINGULAR — a namespaced test.luaop.io/v1 CRD with the status
# subresource and a schema that keeps every field.
lop_write_crd() {
  cat >"$1" <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: $3.test.luaop.io
spec:
  group: test.luaop.io
  names: {kind: $2, listKind: $2List, plural: $3, singular: $4}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
YAML
}
