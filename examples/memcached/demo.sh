#!/usr/bin/env bash
# The memcached example end to end on the embedded local API server. Usage: demo.sh path/to/luaop
set -euo pipefail
LUAOP=${1:-build/luaop}
echo "demo: not available in this build yet (needs luaop apiserver and luaop dev)" >&2
"$LUAOP" version
