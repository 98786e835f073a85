#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fuzz/run.sh BUILD SECONDS [TARGET...] — run each libFuzzer target built in BUILD (by `make fuzz`)
# for SECONDS seconds, starting from a copy of its seeds in fuzz/corpus/<target>/ (the seeds in the
# tree are never rewritten; inputs the run finds are left in the copy). Targets default to every
# fuzz_* program in BUILD/fuzz. A crash, leak, timeout (10 s per input) or an input past 2 GiB of
# RSS is kept as BUILD/fuzz-artifacts/<target>-<kind>-<sha1>; the script names each one and exits 1.
# To keep a crash as a regression seed (replayed by CTest's fuzz.<target> on every `make test`):
#   cp BUILD/fuzz-artifacts/<target>-crash-* fuzz/corpus/<target>/
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: fuzz/run.sh BUILD SECONDS [TARGET...]}
secs=${2:?usage: fuzz/run.sh BUILD SECONDS [TARGET...]}
shift 2
case $secs in '' | *[!0-9]*) echo "fuzz/run.sh: SECONDS must be a whole number, not '$secs'" >&2; exit 2 ;; esac
if [ $# -eq 0 ]; then
  for bin in "$build"/fuzz/fuzz_*; do [ -x "$bin" ] && set -- "$@" "${bin##*/fuzz_}"; done
fi
[ $# -gt 0 ] || { echo "fuzz/run.sh: no fuzz targets in $build/fuzz (run make fuzz first)" >&2; exit 2; }
art="$build/fuzz-artifacts"
mkdir -p "$art"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=()
for t in "$@"; do
  bin="$build/fuzz/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz/run.sh: $bin is not built" >&2; exit 2; }
  mkdir -p "$work/$t"
  cp -R "$here/corpus/$t/." "$work/$t/" 2>/dev/null || true
  printf 'fuzz %-14s %ss ... ' "$t" "$secs"
  before=$(ls "$art" | wc -l)
  if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art/$t-" "$work/$t" >"$work/$t.log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
    echo "ok (${runs:-?} inputs, corpus $(ls "$work/$t" | wc -l) files)"
  else
    echo "FAILED"
    grep -E 'ERROR: |SUMMARY: |runtime error|Test unit written' "$work/$t.log" | head -8 | sed 's/^/    /'
    [ "$(ls "$art" | wc -l)" -gt "$before" ] || tail -20 "$work/$t.log" | sed 's/^/    /'
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz/run.sh: failed: ${failed[*]}; inputs kept in $art" >&2
  exit 1
fi
