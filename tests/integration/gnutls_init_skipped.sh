#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# integration.gnutls_init_skipped — GnuTLS (loaded only for libcurl's RTMP/LDAP back ends, which
# luaop never uses) asks the program through _gnutls_global_init_skip whether to skip its implicit
# initialisation; the luaop executable answers yes (cmd/main.c, ~1 MB of idle RSS). The answer only
# reaches GnuTLS if the executable exports the symbol and the dynamic loader binds GnuTLS's
# reference to it: check that binding, so a link change (dropping ENABLE_EXPORTS, a renamed hook)
# cannot silently bring the cost back. (What the skip saves is measured by bench startup-idle.)
set -euo pipefail
: "${LUAOP:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! ldd "$LUAOP" | grep -q 'libgnutls\.so'; then
  echo "gnutls_init_skipped: GnuTLS is not loaded by this build's libraries; nothing to skip"
  exit 0
fi
out=$(LD_DEBUG=bindings "$LUAOP" version 2>&1 >/dev/null)
grep -E "binding file [^ ]*libgnutls\.so[^ ]* \[[0-9]+\] to [^ ]*luaop \[[0-9]+\]: normal symbol \`_gnutls_global_init_skip'" \
  <<<"$out" >/dev/null || fail "libgnutls's _gnutls_global_init_skip is not bound to the luaop executable's"
echo "gnutls_init_skipped: ok (GnuTLS's implicit initialisation is skipped)"
