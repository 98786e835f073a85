#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/run.sh [BUILD_DIR] [BENCHMARK ...] — luaop's benchmark suite (see bench/README.md).
#   ./bench/run.sh build                 every benchmark
#   ./bench/run.sh build sync            one benchmark, or several (apiserver sync sync-crs cache-rss
#                                        watch-ingest reconcile-noop startup-idle informers hot-reload
#                                        leader-failover write-path lazy-decode sync-paged relist-peak
#                                        burst json-micro)
#   BENCH_SCALE=0.1 ./bench/run.sh build smaller sizes (the smoke test uses 0.01)
# Builds the benchmark programs from bench/*.c against BUILD_DIR's libraries (cc + pkg-config),
# installs the client-node peer into bench/peers/ with `npm ci` (lockfile pinned; skipped when
# BENCH_PEER_INSTALL=0 or already installed), then runs bench/bench.py.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
build=$(cd "$build" && pwd) || { echo "bench: build dir missing; run make build" >&2; exit 1; }
[ -x "$build/luaop" ] || { echo "bench: $build/luaop missing; run make build" >&2; exit 1; }
/usr/bin/python3 "$here/bench.py" --check-names "$@" || exit 2 # before building and npm

bin="$build/bench"
mkdir -p "$bin"
warn="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wno-unused-parameter -Wvla -Wpointer-arith -fno-common -Werror"
cflags="-O2 -g -std=c11 -D_GNU_SOURCE $warn -I$(dirname "$here")"
# A sanitizer build's libraries need the same runtime in the programs that link them.
case $(sed -n 's/^LUAOP_SANITIZE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null) in
  address) cflags="$cflags -fsanitize=address,undefined -fno-omit-frame-pointer"
    # luajit itself is not instrumented: the runtime must come first to load core.so (bench.py)
    LOPBENCH_LUA_PRELOAD=$(cc -print-file-name=libasan.so)
    export LOPBENCH_LUA_PRELOAD ;;
  # a TSan build's core.so is built without TSan (CMakeLists.txt): luajit needs nothing preloaded
  thread) cflags="$cflags -fsanitize=thread" ;;
esac
# kube_libs: the cache and client layers with what they stand on (the order the linker needs)
# cc_prog NAME SRC LIBS... — rebuild when the source, bench_util.h or a library is newer.
cc_prog() {
  local name=$1 src=$2 out="$bin/lopbench-$1"
  shift 2
  if [ ! -x "$out" ] || [ "$here/$src" -nt "$out" ] || [ "$here/bench_util.h" -nt "$out" ] ||
     { [ -f "$build/liblop_cache.a" ] && [ "$build/liblop_cache.a" -nt "$out" ]; } ||
     { [ -f "$build/liblop_client.a" ] && [ "$build/liblop_client.a" -nt "$out" ]; }; then
    # shellcheck disable=SC2086
    cc $cflags -o "$out" "$here/$src" "$@"
  fi
}
curl_libs=$(pkg-config --cflags --libs libcurl)
cc_prog load load.c $curl_libs
cc_prog ceiling ceiling.c $curl_libs
cc_prog jansson jansson.c $(pkg-config --cflags --libs jansson)
cc_prog luaop sync.c "$build/liblop_workqueue.a" "$build/liblop_cache.a" "$build/liblop_meta.a" "$build/liblop_client.a" "$build/liblop_codec.a" "$build/liblop_util.a" \
  $(pkg-config --cflags --libs libcurl zlib jansson yaml-0.1 openssl) -lpthread -lm
# webhook: the webhook server with a C dispatcher (the ceiling), the load generator, certificates
cc_prog webhook webhook.c "$build/liblop_runtime.a" "$build/liblop_cache.a" "$build/liblop_workqueue.a" "$build/liblop_meta.a" "$build/liblop_client.a" "$build/liblop_codec.a" "$build/liblop_util.a" \
  $(pkg-config --cflags --libs libcurl zlib libevent_openssl libevent_pthreads libevent jansson yaml-0.1 openssl) -lpthread -lm
# startup-idle's floor: the luaop executable's shared libraries, every one loaded (--no-as-needed),
# and luaop's own transport for its one GET
cc_prog floor floor.c -rdynamic "$build/liblop_cache.a" "$build/liblop_meta.a" "$build/liblop_client.a" "$build/liblop_codec.a" "$build/liblop_util.a" -Wl,--no-as-needed -lm -lpthread \
  $(pkg-config --cflags --libs libcurl zlib libevent_openssl libevent_pthreads libevent jansson yaml-0.1 openssl luajit)

# The peer: @kubernetes/client-node pinned by bench/peers/package-lock.json.
if [ "${BENCH_PEER_INSTALL:-1}" = 1 ] && [ "${BENCH_NO_PEER:-0}" != 1 ] &&
   [ ! -d "$here/peers/node_modules/@kubernetes/client-node" ]; then
  if command -v npm >/dev/null; then
    (cd "$here/peers" && npm ci --no-audit --no-fund --loglevel=error) ||
      echo "bench: npm ci failed; the client-node column will be skipped" >&2
  else
    echo "bench: npm not found; the client-node column will be skipped" >&2
  fi
fi

exec /usr/bin/python3 "$here/bench.py" "$build" "$bin" "$@"
