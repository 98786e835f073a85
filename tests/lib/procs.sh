# SPDX-License-Identifier: Apache-2.0
# tests/lib/procs.sh — for shell integration tests that start their own processes (source it):
# a temporary directory $TMP (kept and printed when KEEP_TMP is set), the PIDS array whose
# processes are killed and reaped on exit, fail MSG, and wait_file PATH WHAT.

TMP=$(mktemp -d "${TMPDIR:-/tmp}/luaop-test.XXXXXX"); [ -n "${KEEP_TMP:-}" ] && echo "TMP=$TMP"
# kubectl's discovery cache is per host:port and ports are reused across tests: one per test
export KUBECACHEDIR="$TMP/kubecache"
PIDS=()
procs_cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap procs_cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# wait_file PATH WHAT: poll (bounded, 10 s) until PATH is not empty while the last started
# process is alive (a deadline for a condition, not a sleep standing in for one).
wait_file() {
    for _ in $(seq 1 200); do
        [ -s "$1" ] && return 0
        kill -0 "${PIDS[-1]}" 2>/dev/null || fail "$2 exited"
        sleep 0.05
    done
    fail "$2 did not start"
}
