#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Print the Debian packages of the named sections of deps/debian-packages.txt (all sections when
# none is named), one per line. Used by the Makefile (`make deps`) and the Dockerfile.
# Exit 2 naming the section when one asked for does not exist.
list="$(dirname "$0")/debian-packages.txt"
[ $# -eq 0 ] && set -- $(sed -n 's/^## *//p' "$list")
for want in "$@"; do
  grep -q "^## *$want\$" "$list" || { echo "deps/packages.sh: no section \"$want\" in $list" >&2; exit 2; }
done
awk -v want=" $* " '
  /^## */ { sec = $2; next }
  { sub(/#.*/, ""); gsub(/[[:space:]]+/, "") }
  $0 != "" && index(want, " " sec " ") { print }
' "$list"
