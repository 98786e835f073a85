#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Container/deploy checks without a container engine:
#  1. the Dockerfile's build steps run another way: `cmake --install` of this build into a temp
#     prefix, then <prefix>/bin/luaop check on the memcached example from another directory; a
#     marker planted in the installed library proves the installed share/luaop/lua is the copy
#     that is read (not the source tree);
#  2. the Dockerfile's structure: two stages on a pinned Debian 12 base, non-root numeric USER,
#     the entrypoint, .dockerignore; 2b. the runtime stage installs the package of every library
#     luaop links (checked with objdump/ldd/dpkg -S) and lua-cjson, the build section covers every
#     pkg-config module CMake needs, config/manager's memory limit covers its Lua VM caps;
#  3. every package the Dockerfile installs exists in Debian (apt-cache policy) — only when apt
#     lists are present on this machine; otherwise that part is reported as not checked;
#  4. `kubectl kustomize config/default` renders the expected kinds and Deployment settings, and
#     the rendered manifests apply to the local API server (all but the PodDisruptionBudget:
#     policy/v1 is not served there; tests/integration/deploy_config.py checks it structurally).
set -euo pipefail
: "${LUAOP:?}" "${LUAOP_SRC:?}" "${LUAOP_BUILD:?}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/luaop-install.XXXXXX")
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

echo "1. install layout"
cmake --install "$LUAOP_BUILD" --prefix "$tmp/prefix" >/dev/null
[ -x "$tmp/prefix/bin/luaop" ] || fail "bin/luaop not installed"
[ -f "$tmp/prefix/share/luaop/lua/luaop/init.lua" ] || fail "share/luaop/lua/luaop/init.lua not installed"
for m in "$LUAOP_SRC"/scripts/luaop/*.lua; do
  [ -f "$tmp/prefix/share/luaop/lua/luaop/$(basename "$m")" ] || fail "library module $(basename "$m") not installed"
done
mkdir "$tmp/elsewhere"
(cd "$tmp/elsewhere" && env -u LUAOP_LUA_PATH "$tmp/prefix/bin/luaop" check --scripts "$LUAOP_SRC/examples/memcached/scripts") \
  >"$tmp/check.out" 2>&1 || { cat "$tmp/check.out" >&2; fail "installed luaop check failed"; }
grep -q "^ok: " "$tmp/check.out" || fail "luaop check did not report ok"
# Plant a marker in the installed library: the installed binary must now fail with it.
printf 'error("INSTALLED-LIBRARY-MARKER")\n' >"$tmp/prefix/share/luaop/lua/luaop/init.lua"
if (cd "$tmp/elsewhere" && env -u LUAOP_LUA_PATH "$tmp/prefix/bin/luaop" check \
      --scripts "$LUAOP_SRC/examples/memcached/scripts") >"$tmp/check2.out" 2>&1; then
  fail "the installed binary did not read the installed library"
fi
grep -q "INSTALLED-LIBRARY-MARKER" "$tmp/check2.out" || { cat "$tmp/check2.out" >&2; fail "marker not seen"; }
echo "ok   the installed binary reads <prefix>/share/luaop/lua"

echo "2. Dockerfile structure"
df="$LUAOP_SRC/Dockerfile"
grep -Eq '^ARG DEBIAN_TAG=bookworm-[0-9]{8}(-slim)?$' "$df" || fail "the base is not pinned to a dated bookworm tag (ARG DEBIAN_TAG)"
grep -Eq '^FROM debian:\$\{DEBIAN_TAG\} AS build$' "$df" || fail "build stage is not FROM debian:\${DEBIAN_TAG} AS build"
[ "$(grep -c '^FROM debian:${DEBIAN_TAG}' "$df")" = 2 ] || fail "not two stages on the pinned Debian 12 base"
grep -Eq '^RUN cmake -S /src -B /build .*-DLUAOP_BUILD_TESTS=OFF' "$df" || fail "no cmake configure step with the tests off"
grep -q 'cmake --install /build --prefix /opt/luaop' "$df" || fail "no cmake --install step"
grep -Eq '^USER [1-9][0-9]*(:[1-9][0-9]*)?$' "$df" || fail "USER is not a numeric non-root id"
grep -Fxq 'ENTRYPOINT ["luaop", "run"]' "$df" || fail "ENTRYPOINT is not [\"luaop\", \"run\"]"
grep -q 'packages.sh build)' "$df" || fail "build stage does not install the build section of deps/debian-packages.txt"
for x in .git 'build*/' bench/results/; do
  grep -Fxq "$x" "$LUAOP_SRC/.dockerignore" || fail ".dockerignore does not exclude $x"
done
echo "ok   Dockerfile stages, pinned base, user, entrypoint, .dockerignore"

echo "2b. image packages against the binary and the build"
# The runtime stage: the words after "install -y --no-install-recommends" up to "&&" in the last stage.
runtime=$(awk '/^FROM /{buf=""} {buf=buf" "$0} END{print buf}' "$df" | tr '\\' ' ' |
          sed -n 's/.*install -y --no-install-recommends \([^&]*\)&&.*/\1/p')
[ -n "$runtime" ] || fail "cannot find the runtime stage's package list"
runtime_lines=$(tr ' ' '\n' <<<"$runtime" | sed '/^$/d')
pkg_of() { { dpkg -S "$1" 2>/dev/null || dpkg -S "${1#/usr}" 2>/dev/null || true; } | head -1 | cut -d: -f1; }
# In every Debian base image, slim included: the essential set's own dependencies.
in_base() { case $1 in libc6|libgcc-s1|libstdc++6|zlib1g) return 0;; *) return 1;; esac; }
# A sanitizer build (make asan / make tsan) links the sanitizer runtime, which no image ships.
sanitizer_lib() { [ -n "${LUAOP_SANITIZE:-}" ] && case $1 in libasan.so*|libubsan.so*|libtsan.so*) return 0;; esac; return 1; }
# every shared library luaop links directly (ELF NEEDED) comes from a runtime-stage package
for lib in $(objdump -p "$LUAOP" | awk '/NEEDED/{print $2}'); do
  sanitizer_lib "$lib" && continue
  # ldd prints "lib => path (addr)", or the dynamic loader as "path (addr)"
  path=$(ldd "$LUAOP" | awk -v l="$lib" '$1 == l {print $3} $2 != "=>" && index($1, "/" l) {print $1}' | head -1)
  [ -n "$path" ] || fail "ldd cannot resolve $lib"
  pkg=$(pkg_of "$(readlink -f "$path")"); [ -n "$pkg" ] || pkg=$(pkg_of "$path")
  [ -n "$pkg" ] || fail "no Debian package owns $path ($lib)"
  grep -qx "$pkg" <<<"$runtime_lines" || in_base "$pkg" ||
    fail "luaop links $lib from package $pkg, which the Dockerfile's runtime stage does not install"
done
# scripts' require("cjson") (docs/lua-api.md)
grep -qx lua-cjson <<<"$runtime_lines" || fail "the runtime stage lacks lua-cjson (scripts' require(\"cjson\"))"
# every pkg-config module the top-level CMakeLists.txt requires is in the build section
build=$(sh "$LUAOP_SRC/deps/packages.sh" build)
mods=$(sed -n 's/.*pkg_check_modules([A-Z_]* *REQUIRED IMPORTED_TARGET \(.*\))/\1/p' "$LUAOP_SRC/CMakeLists.txt")
[ -n "$mods" ] || fail "no pkg_check_modules found in CMakeLists.txt"
for m in $mods; do
  pc=$(pkg-config --path "$m") || fail "pkg-config cannot find $m"
  pkg=$(pkg_of "$pc")
  grep -qx "$pkg" <<<"$build" || fail "CMake needs $m ($pkg), which is not in the build section"
done
# config/manager's memory limit covers its Lua VMs: 64 MiB for the process plus --lua-memory-limit
# for each of 3 VMs (one reconcile worker, the event VM, the previous event VM during a reload)
mi() { case $1 in *Mi) echo "${1%Mi}";; *Gi) echo $(( ${1%Gi} * 1024 ));; *) fail "unexpected quantity $1";; esac; }
man="$LUAOP_SRC/config/manager/manager.yaml"
cap=$(sed -n 's/.*--lua-memory-limit=\([0-9]*[MG]i\).*/\1/p' "$man")
[ -n "$cap" ] || fail "config/manager sets no --lua-memory-limit (the 64Mi default per VM)"
limit=$(sed -n 's/.*limits: *{[^}]*memory: *\([0-9]*[MG]i\).*/\1/p' "$man")
[ -n "$limit" ] || fail "config/manager sets no memory limit"
need=$(( 64 + 3 * $(mi "$cap") ))
[ "$(mi "$limit")" -ge "$need" ] || fail "memory limit $limit < 64Mi + 3 x $cap = ${need}Mi"
echo "ok   runtime packages cover luaop's libraries and cjson; build section covers CMake; memory $limit >= ${need}Mi"

echo "3. Debian packages"
pkgs=$(sh "$LUAOP_SRC/deps/packages.sh")
if compgen -G "/var/lib/apt/lists/*Packages*" >/dev/null; then
  # One apt-cache call: "pkg:" header lines followed by "  Candidate: x".
  apt-cache policy $pkgs $runtime 2>/dev/null | awk '
    /^[^ ].*:$/ { sub(/:$/, ""); p = $0 }
    /^  Candidate:/ { if ($2 != "(none)") ok[p] = 1 }
    END { for (k in ok) print k }' | sort >"$tmp/found"
  for p in $pkgs $runtime; do
    grep -Fxq "$p" "$tmp/found" || fail "Debian package $p not found (apt-cache policy)"
  done
  echo "ok   $(echo $pkgs $runtime | wc -w) packages exist in the configured Debian archive"
else
  echo "NOTE package existence not checked: no apt lists on this machine (run apt-get update)"
fi

echo "4. deploy manifests"
kubectl kustomize "$LUAOP_SRC/config/default" >"$tmp/rendered.yaml" || fail "kubectl kustomize config/default failed"
python3 - "$tmp/rendered.yaml" <<'PY' || fail "rendered manifests"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = sorted({d["kind"] for d in docs})
want = ["ClusterRole", "ClusterRoleBinding", "Deployment", "Namespace", "PodDisruptionBudget", "Role", "RoleBinding",
        "ServiceAccount"]
missing = [k for k in want if k not in kinds]
assert not missing, f"missing kinds {missing} (got {kinds})"
dep = next(d for d in docs if d["kind"] == "Deployment")
spec = dep["spec"]
assert spec["replicas"] == 2, spec["replicas"]
pod = spec["template"]["spec"]
c = pod["containers"][0]
assert "--leader-elect" in c["args"], c["args"]
assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
assert c["securityContext"]["readOnlyRootFilesystem"] is True
assert c["securityContext"]["allowPrivilegeEscalation"] is False
assert pod["securityContext"]["runAsNonRoot"] is True
assert "limits" in c["resources"] and "requests" in c["resources"]
rules = [r for d in docs if d["kind"] in ("Role", "ClusterRole") for r in d.get("rules", [])]
assert any("leases" in r.get("resources", []) for r in rules), "no Lease permission"
assert not any("*" in r.get("verbs", []) or "*" in r.get("resources", []) for r in rules), "wildcard RBAC"
# secure metrics (issue 24 part 2): :8443 behind TokenReview/SAR, its Service, the roles
assert "--metrics-bind-address=:8443" in c["args"], c["args"]
svc = next(d for d in docs if d["kind"] == "Service" and d["metadata"]["name"].endswith("metrics-service"))
assert svc["spec"]["ports"][0]["port"] == 8443, svc["spec"]
assert any(r.get("resources") == ["tokenreviews"] and r["verbs"] == ["create"] for r in rules), "no tokenreviews create"
assert any(r.get("resources") == ["subjectaccessreviews"] for r in rules), "no subjectaccessreviews create"
assert any(r.get("nonResourceURLs") == ["/metrics"] and r["verbs"] == ["get"] for r in rules), "no metrics reader"
print("ok   kinds", ", ".join(kinds), "; Deployment: 2 replicas, leader election, probes, securityContext, secure metrics")
PY
"$LUAOP" apiserver --listen 127.0.0.1:0 --kubeconfig-out "$tmp/kc" >"$tmp/srv.out" 2>&1 &
srv=$!
for _ in $(seq 1 100); do [ -s "$tmp/kc" ] && kubectl --kubeconfig "$tmp/kc" get namespaces >/dev/null 2>&1 && break; sleep 0.1; done
# `kubectl kustomize config/default | kubectl apply -f -`, default flags, less the kinds the local
# API server does not serve (policy/v1 PodDisruptionBudget).
python3 -c 'import sys, yaml; yaml.safe_dump_all([d for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] != "PodDisruptionBudget"], sys.stdout)' \
  <"$tmp/rendered.yaml" >"$tmp/served.yaml"
kubectl --kubeconfig "$tmp/kc" apply -f "$tmp/served.yaml" >"$tmp/apply.out" 2>&1 || {
  cat "$tmp/apply.out" >&2; fail "kubectl kustomize config/default | kubectl apply -f -"; }
for obj in -n\ luaop-system\ deployment/luaop-controller-manager -n\ luaop-system\ serviceaccount/luaop \
           clusterrole/luaop-manager clusterrolebinding/luaop-manager \
           -n\ luaop-system\ role/luaop-leader-election -n\ luaop-system\ rolebinding/luaop-leader-election; do
  # shellcheck disable=SC2086
  kubectl --kubeconfig "$tmp/kc" get $obj >/dev/null || fail "not created: $obj"
done
echo "ok   rendered manifests apply to the local API server"
echo "PASS ops install/deploy"
