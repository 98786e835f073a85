#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# integration.bench_smoke — the benchmark suite still runs and prints its tables (bench/run.sh at
# BENCH_SCALE=0.01: a few dozen objects, well under a minute). No network: the client-node peer is
# used only if bench/peers/node_modules is already installed; otherwise only its column is
# skipped, and the output must say so. The luaop side must have run in every benchmark.
set -euo pipefail
: "${LUAOP:?}" "${LUAOP_SRC:?}" "${LUAOP_BUILD:?}"
out=$(mktemp "${TMPDIR:-/tmp}/bench-smoke.XXXXXX")
trap 'rm -f "$out"' EXIT

rc=0
BENCH_SCALE=0.01 BENCH_PEER_INSTALL=0 BENCH_RESULTS=0 \
  timeout 240 "$LUAOP_SRC/bench/run.sh" "$LUAOP_BUILD" >"$out" 2>&1 || rc=$?
fail() { echo "FAIL: $*" >&2; echo "---- bench output ----" >&2; cat "$out" >&2; exit 1; }
[ $rc -eq 0 ] || fail "bench/run.sh exited with $rc"

# Every benchmark printed its table.
for title in "### apiserver" "### sync — LIST+WATCH of" "### sync — LIST+WATCH of .* custom resources" \
             "### cache-rss" "### watch-ingest" "### reconcile-noop" "### startup-idle" "### informers" "### hot-reload" "### leader-failover" "### write-path" "### lazy-decode" "### sync-paged" "### relist-peak" "### burst" "### json-micro" "### webhook"; do
  grep -q "^$title" "$out" || fail "no table for \"$title\""
done
# The luaop rows carry numbers: sync (pods and custom resources), watch-ingest, relist-peak;
# then cache-rss.
num='[0-9][0-9.,]*'
[ "$(grep -cE "^\| luaop \| $num \| $num \| $num \| $num \|" "$out")" -eq 4 ] ||
  fail "expected 4 luaop rows with figures (sync pods, sync custom resources, watch-ingest, relist-peak)"
grep -qE "^\| luaop, managedFields stripped \(default\) \| $num \|" "$out" || fail "no luaop cache-rss row"
# sync-paged: the paged row really paged, the watch-list row synced by watch-list
grep -qE "^\| luaop, LIST limit=$num \+ continue \| $num \|.* \| (1[0-9]|2[0-9]) \| 0 \|" "$out" || fail "no paged sync-paged row"
grep -qE "^\| luaop, watch-list \(sendInitialEvents\) \| $num \|.* \| 0 \| 1 \|" "$out" || fail "no watch-list sync-paged row"
grep -qE "^\| ceiling \(C\) \| $num \|" "$out" || fail "no ceiling rows"
for doc in pod configmap list; do
  grep -qE "^\| $doc \| $num \| $num \| $num \|" "$out" || fail "no json-micro row for $doc"
done
grep -qE "LIST $num ConfigMaps .* \| $num ms \|" "$out" || fail "no apiserver LIST figure"
# The operator benchmarks ran `luaop run` (1 and 2 workers, JIT on) and timed its start.
[ "$(grep -cE "^\| luaop run( --lua-jit)? \| [12] \| $num \|" "$out")" -eq 3 ] || fail "expected 3 luaop run rows in reconcile-noop"
# startup-idle: ConfigMaps, start → ready, RSS, file-backed, PSS, private dirty (HTTP at 0 and 1,000
# objects, HTTPS at 0); and the floor's memory over HTTP and HTTPS.
[ "$(grep -cE "^\| luaop run, HTTP \| $num \| $num \| $num \| $num \| $num \| $num \| +\| +\|$" "$out")" -eq 2 ] || fail "expected 2 luaop run, HTTP rows in startup-idle"
grep -qE "^\| luaop run, HTTPS \| 0 \| $num \| $num \| $num \| $num \| $num \| +\| +\|$" "$out" || fail "no luaop run, HTTPS row in startup-idle"
for s in HTTP HTTPS; do
  grep -qE "^\| floor \(C\), $s:[^|]* \| 0 \| +\| $num \| $num \| $num \| $num \|" "$out" || fail "no startup-idle $s floor row"
done
# informers: luaop's rows over plain HTTP (threads, connections, RSS, synced, reconciled); through
# nghttpx when it is installed, and then h2 carries every watch on 1 connection.
[ "$(grep -cE "^\| luaop run \| HTTP/1.1, [^|]* \| $num \| $num \| $num \| $num \| $num \|" "$out")" -eq 2 ] ||
  fail "expected 2 luaop run rows over HTTP/1.1 in informers"
if command -v nghttpx >/dev/null; then
  grep -qE "^\| luaop run \| h2 via nghttpx \(TLS\), limiter off \| $num \| 1 \| $num \|" "$out" ||
    fail "no informers h2 row with 1 connection"
else
  grep -q "h2 rows skipped: nghttpx" "$out" || fail "nghttpx missing but the informers table does not say so"
fi
# Reloads were installed (directory and ConfigMap) and the follower took over in both ways.
[ "$(grep -cE "^\| (directory|directory, debounce 1 ms|ConfigMap) \| 3 \| $num \| $num \|" "$out")" -eq 3 ] ||
  fail "expected 3 hot-reload rows"
grep -qE "^\| crash \(SIGKILL\) \| $num \|" "$out" || fail "no crash failover figure"
grep -qE "^\| graceful \(SIGTERM\) \| $num \|" "$out" || fail "no graceful failover figure"
# write-path: run, client, workers, objects, seconds, writes/s, CPU s, CPU ms per write, errors
grep -qE "^\| client limiter off \| luaop run \| 2 \| $num \| $num \| $num \| $num \| $num \| 0 \|" "$out" ||
  fail "no write-path figure (or reconcile errors)"
[ "$(grep -cE "^\| [12] \| obj-[0-9]+ \| $num \| $num \| $num \|" "$out")" -eq 3 ] || fail "expected 3 lazy-decode rows (1 + 2 workers)"
grep -qE "^\| luaop \| $num \| $num \| $num \| $num \| $num \| $num \| $num \| $num× \| +\| +\| +\|$" "$out" ||
  fail "no relist-peak figure"
# burst: the real operator (live) and the bench tool (replay) ran, dedup held, no update was lost
# (bench.py also fails the run when a luaop row breaks an invariant).
for who in "luaop run, live patches" "luaop \(informer \+ workqueue\), replay"; do
  grep -qE "^\| $who \| $num \| $num \| $num \| $num \| $num \| $num \($num keys\) \|.* \| 0 \|" "$out" ||
    fail "no burst row for $who (or lost updates)"
done
# webhook: both servers answered reviews, none failed
for who in "server, C dispatcher \(no Lua\)" "luaop run, Lua validator"; do
  grep -qE "^\| $who \| $num \| $num \| $num \| $num \| $num \| $num \| 0 \|" "$out" || fail "no webhook row for $who (or failed reviews)"
done
if grep -q "FAILED" "$out"; then fail "a benchmark reported FAILED"; fi

# The peer: present → its rows ran; absent → said so, and nothing else is missing.
if [ -d "$LUAOP_SRC/bench/peers/node_modules/@kubernetes/client-node" ] && command -v node >/dev/null; then
  [ "$(grep -cE "^\| client-node \| $num \|" "$out")" -ge 3 ] || fail "client-node installed but its rows are missing"
  # write-path (both rows, with the ratios to luaop) and relist-peak (with its ratios)
  for run in "client limiter off" "20 QPS, burst 30"; do
    grep -qE "^\| $run \| client-node \| 2 \| $num \| $num \| $num \| $num \| $num \| 0 \| $num× \|" "$out" ||
      fail "client-node installed but its write-path row \"$run\" is missing (or had reconcile errors)"
  done
  grep -qE "^\| client-node \| $num \| $num \| 0 \| $num \| $num \| $num \| $num \| $num× \| $num× \| $num× \| $num× \|$" "$out" ||
    fail "client-node installed but its relist-peak row is missing"
  echo "bench_smoke: client-node peer ran"
else
  grep -q "client-node column skipped" "$out" || fail "peer missing but the output does not say it was skipped"
  echo "bench_smoke: client-node peer not installed; its column was skipped (luaop side ran)"
fi
echo "bench_smoke: ok"
