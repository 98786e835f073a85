#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build and run the API server benchmark against the libraries of an existing build directory
# (default: build/, made by the README's cmake commands). Usage: bench/apiserver/run.sh [objects] [events] [watches]
# or bench/apiserver/run.sh mem [configmaps] [pods] (bytes per stored object, LIST of the ConfigMaps).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=${BUILD:-$SRC/build}
OUT=$B/bench_apiserver
cc -std=c11 -O2 -D_GNU_SOURCE -I"$SRC" "$SRC/bench/apiserver/bench_apiserver.c" -o "$OUT" \
  "$B/liblop_apisrv.a" "$B/liblop_meta.a" "$B/liblop_codec.a" "$B/liblop_util.a" \
  $(pkg-config --libs libevent libevent_openssl libevent_pthreads jansson yaml-0.1 openssl libcurl zlib) -lpthread -lm
ulimit -n 4096 2>/dev/null || true
BENCH_FIXTURES=$SRC/bench/fixtures "$OUT" "$@"
