#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test: `luaop apiserver --history-bytes` (issue 22 part 8). With a 4 KiB history ring
# and ~1.1 KB ConfigMaps, only the last few events are kept: a watch from an older
# resourceVersion gets one ERROR event with a 410 "too old resource version" Status, a watch from
# a recent one replays the newer events (with a decode cache smaller than one object); a bad size,
# of either, is refused with exit code 2.
set -eu

: "${LUAOP:?LUAOP must point at the luaop binary}"
source "${LUAOP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/procs.sh"

rc=0
"$LUAOP" apiserver --history-bytes 4Xi >/dev/null 2>"$TMP/bad.err" || rc=$?
[ "$rc" = 2 ] || fail "--history-bytes 4Xi: exit $rc, want 2"
grep -q -- "--history-bytes wants a positive size" "$TMP/bad.err" || fail "no message for a bad size: $(cat "$TMP/bad.err")"
rc=0
"$LUAOP" apiserver --decode-cache-bytes 0 >/dev/null 2>"$TMP/bad2.err" || rc=$?
[ "$rc" = 2 ] || fail "--decode-cache-bytes 0: exit $rc, want 2"
grep -q -- "--decode-cache-bytes wants a positive size" "$TMP/bad2.err" || fail "no message for a bad size: $(cat "$TMP/bad2.err")"

"$LUAOP" apiserver --listen 127.0.0.1:0 --history-bytes 4Ki --decode-cache-bytes 2Ki >"$TMP/srv.out" 2>"$TMP/srv.err" &
PIDS+=($!)
wait_file "$TMP/srv.out" "luaop apiserver"
URL=$(sed -n 's/^listening on //p' "$TMP/srv.out")
CM="$URL/api/v1/namespaces/default/configmaps"
PAD=$(head -c 1000 /dev/zero | tr '\0' x)
for i in 0 1 2 3 4 5 6 7; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        --data "{\"metadata\":{\"name\":\"h$i\"},\"data\":{\"v\":\"$PAD\"}}" "$CM")
    [ "$code" = 201 ] || fail "create h$i: HTTP $code"
done
RV=$(curl -s "$CM/h7" | jq -r .metadata.resourceVersion)

# from 6 events back: those events fell out of 4 KiB → the server ends the stream after the ERROR
curl -s --max-time 20 "$CM?watch=1&resourceVersion=$((RV - 6))" >"$TMP/old.json"
[ "$(jq -s length "$TMP/old.json")" = 1 ] || fail "old RV: want one event, got $(cat "$TMP/old.json")"
[ "$(jq -r .type "$TMP/old.json")" = ERROR ] || fail "old RV: not an ERROR event: $(cat "$TMP/old.json")"
[ "$(jq -r .object.code "$TMP/old.json")" = 410 ] || fail "old RV: not 410: $(cat "$TMP/old.json")"
jq -r .object.message "$TMP/old.json" | grep -q "too old resource version" ||
    fail "old RV: message: $(cat "$TMP/old.json")"

# from one event back: h7 replayed, then the watch times out after 1 s
curl -s --max-time 20 "$CM?watch=1&resourceVersion=$((RV - 1))&timeoutSeconds=1" >"$TMP/new.json"
[ "$(jq -r '.type + " " + .object.metadata.name' "$TMP/new.json")" = "ADDED h7" ] ||
    fail "recent RV: want ADDED h7, got $(cat "$TMP/new.json")"
echo "PASS apiserver_history_bytes"
