#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test (issue 24 part 6): LICENSE is the Apache License 2.0 and every tracked source
# file (C, Lua, shell, Python, CMake, Makefile) carries its SPDX identifier.
set -euo pipefail
cd "${LUAOP_SRC:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q "Apache License" LICENSE && grep -q "Version 2.0, January 2004" LICENSE || fail "LICENSE is not the Apache License 2.0"
command -v git >/dev/null && [ -d .git ] || { echo "ok   no git checkout: only LICENSE checked"; echo "PASS license_headers"; exit 0; }
missing=$(git ls-files -- '*.c' '*.h' '*.lua' '*.sh' '*.py' '*CMakeLists.txt' Makefile .ci/run ':!fuzz/corpus' |
  while read -r f; do [ -f "$f" ] && ! grep -q "SPDX-License-Identifier: Apache-2.0" "$f" && echo "$f"; done || true)
[ -z "$missing" ] || fail "files without 'SPDX-License-Identifier: Apache-2.0':
$missing"
echo "ok   every source file carries the SPDX identifier"
echo "PASS license_headers"
