#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `luaop init` + `luaop create api` + `luaop create webhook` (issue 23 part 1) in a temp dir, then
# the generated project as its user would run it:
#  1. bad input is refused with a message naming the cause (domain, group, version, kind, a
#     non-empty directory without --force, a file that exists, a webhook before its API);
#  2. every generated file is rendered (no template tag left), main.lua registers both;
#  3. the project's own busted specs pass (`make test`, against this tree's luaop library and
#     build/lua/luaop/core.so), luacheck is clean on its scripts and specs (`make lint`);
#  4. `luaop check --scripts` loads it; config/rbac/role.yaml is what `luaop create manifests`
#     generates, and `kubectl kustomize config/default` builds; with the [cert-manager] lines of
#     config/default on, `make manifests` writes cert-manager.io/inject-ca-from naming the rendered
#     Certificate on every webhook configuration and the conversion CRD (following namespace: and
#     namePrefix:), and none once they are off again; the Certificate's dnsNames are exactly the
#     rendered webhook Service's (config/default's replacements) and every webhook calls that
#     Service, also under namespace: team-a and namePrefix: blue-; a malformed kustomization is
#     refused, naming the file, with no file changed; once no conversion webhook is left, `make
#     manifests` deletes the conversion patch it generated (not one without its header);
#  5. `luaop dev --once` (the local API server, the operator, the CRD and the sample) reconciles
#     the sample and exits 0 (no key whose last reconcile failed).
set -euo pipefail
: "${LUAOP:?}" "${LUAOP_SRC:?}" "${LUAOP_BUILD:?}"
source "$LUAOP_SRC/tests/lib/procs.sh"
P="$TMP/memcached-operator"

expect_fail() { # expect_fail WHAT PATTERN CMD...: CMD fails and its stderr matches PATTERN
  local what=$1 pat=$2; shift 2
  if "$@" >"$TMP/out" 2>"$TMP/err"; then fail "$what: succeeded"; fi
  grep -q -- "$pat" "$TMP/err" || { cat "$TMP/err" >&2; fail "$what: no \"$pat\" in the error"; }
  echo "ok   refused: $what"
}

expect_fail "no --domain" "--domain is required" "$LUAOP" init --repo "$P"
expect_fail "bad domain" "not a DNS-1123 subdomain" "$LUAOP" init --domain Example.COM --repo "$P"
expect_fail "bad project name" "not a DNS-1123 label" "$LUAOP" init --domain example.com --repo "$P" --project-name My_Op
expect_fail "create outside a project" "run \`luaop init" "$LUAOP" create api --group cache --version v1 --kind X --repo "$TMP"

"$LUAOP" init --domain example.com --repo "$P" >"$TMP/init.out" || fail "luaop init"
expect_fail "init over a project" "is not empty" "$LUAOP" init --domain example.com --repo "$P"
cd "$P"
expect_fail "bad version" "is not a Kubernetes version" "$LUAOP" create api --group cache --version 1.0 --kind Memcached
expect_fail "bad kind" "UpperCamelCase" "$LUAOP" create api --group cache --version v1alpha1 --kind memcached
expect_fail "webhook before its api" "run \`luaop create api\`" \
  "$LUAOP" create webhook --group cache --version v1alpha1 --kind Memcached --defaulting
"$LUAOP" create api --group cache --version v1alpha1 --kind Memcached >"$TMP/api.out" || fail "create api"
expect_fail "api twice" "already exists (--force replaces it)" \
  "$LUAOP" create api --group cache --version v1alpha1 --kind Memcached
expect_fail "webhook of no kind" "say which" "$LUAOP" create webhook --group cache --version v1alpha1 --kind Memcached
"$LUAOP" create webhook --group cache --version v1alpha1 --kind Memcached --defaulting --programmatic-validation \
  --conversion >"$TMP/webhook.out" || fail "create webhook"

for f in PROJECT Makefile Dockerfile README.md .luarc.json .luacheckrc .busted scripts/main.lua \
  scripts/memcached_controller.lua scripts/memcached_webhook.lua spec/memcached_controller_spec.lua \
  spec/memcached_webhook_spec.lua config/crd/bases/cache.example.com_memcacheds.yaml \
  config/samples/cache_v1alpha1_memcached.yaml config/rbac/role.yaml config/webhook/manifests.yaml \
  config/crd/patches/webhook_conversion.yaml config/default/kustomization.yaml config/manager/manager.yaml; do
  [ -s "$f" ] || fail "$f was not generated"
done
! grep -rn '{{' . >"$TMP/tags" || { cat "$TMP/tags" >&2; fail "unrendered template tags"; }
grep -qx 'require("memcached_controller").setup()' scripts/main.lua || fail "main.lua does not register the controller"
grep -qx 'require("memcached_webhook").declare()' scripts/main.lua || fail "main.lua does not declare the webhooks"
grep -q '^FROM ${LUAOP_IMAGE}' Dockerfile && grep -q '^COPY scripts/ /operator/scripts/' Dockerfile || fail "Dockerfile"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(".luarc.json")); assert d["runtime.version"]=="LuaJIT", d' ||
  fail ".luarc.json"
grep -qx -- '---@class Memcached' types/memcached_v1alpha1.lua &&
  grep -qx -- '---@field spec? MemcachedSpec The desired state of the Memcached.' types/memcached_v1alpha1.lua &&
  [ -s types/objectmeta.lua ] || fail "create api did not write the LuaLS types of the CRD into types/"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(".luarc.json")); assert "types" in d["workspace.library"], d' ||
  fail ".luarc.json does not list types/"
echo "ok   generated: every file rendered, main.lua registers the controller and the webhooks, types/ has the CRD's classes"

# 3. the generated project's own checks, as its Makefile runs them
mk=(make --no-print-directory LUAOP="$LUAOP" LUAOP_LUA="$LUAOP_SRC/scripts" LUAOP_CPATH="$LUAOP_BUILD/lua")
case "${LUAOP_SANITIZE:-}" in
address) export LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS="detect_leaks=0" ;;
esac
"${mk[@]}" test >"$TMP/test.out" 2>&1 || { cat "$TMP/test.out" >&2; fail "make test"; }
unset LD_PRELOAD
grep -Eq '^[0-9]+ successes / 0 failures / 0 errors / 0 pending' "$TMP/test.out" || { cat "$TMP/test.out" >&2; fail "busted summary"; }
n=$(grep -Eo '^[0-9]+ successes' "$TMP/test.out" | cut -d' ' -f1)
[ "$n" -ge 9 ] || fail "only $n specs ran (5 controller + 4 webhook expected)"
echo "ok   make test: $n specs pass"
"${mk[@]}" lint >"$TMP/lint.out" 2>&1 || { cat "$TMP/lint.out" >&2; fail "make lint (luacheck)"; }
sed 's/\x1b\[[0-9;]*m//g' "$TMP/lint.out" | grep -q '^Total: 0 warnings / 0 errors in 5 files' || { cat "$TMP/lint.out" >&2; fail "luacheck summary"; }
echo "ok   make lint: luacheck clean"

# 4. check, manifests, kustomize
"${mk[@]}" check >"$TMP/check.out" 2>&1 || { cat "$TMP/check.out" >&2; fail "luaop check --scripts"; }
grep -q '1 controller, 3 webhooks' "$TMP/check.out" || { cat "$TMP/check.out" >&2; fail "check summary"; }
! grep -q warning "$TMP/check.out" || { cat "$TMP/check.out" >&2; fail "make check warned on the generated scripts"; }
sed -i 's/(obj.spec or {}).message/(obj.spec or {}).mesage/' scripts/memcached_controller.lua
"${mk[@]}" check >"$TMP/check.out" 2>&1 || { cat "$TMP/check.out" >&2; fail "luaop check with a typo"; }
grep -q '^scripts/memcached_controller.lua:[0-9]*: warning: Memcached cache.example.com/v1alpha1 has no field spec.mesage (did you mean message?)$' \
  "$TMP/check.out" || { cat "$TMP/check.out" >&2; fail "make check did not warn on obj.spec.mesage"; }
sed -i 's/(obj.spec or {}).mesage/(obj.spec or {}).message/' scripts/memcached_controller.lua
echo "ok   make check: no warning on the generated scripts, a typo in a spec field warned with file:line"
cp config/rbac/role.yaml "$TMP/role.before"
"${mk[@]}" manifests >/dev/null || fail "make manifests"
diff -u "$TMP/role.before" config/rbac/role.yaml || fail "role.yaml differs from what make manifests generates"
cp types/memcached_v1alpha1.lua "$TMP/types.before"
"${mk[@]}" types >/dev/null || fail "make types"
diff -u "$TMP/types.before" types/memcached_v1alpha1.lua || fail "types/ differs from what make types generates"
grep -q 'resources: \["memcacheds/finalizers"\]' config/rbac/role.yaml || fail "role.yaml lacks the finalizers grant"
kubectl kustomize config/default >"$TMP/deploy.yaml" || fail "kubectl kustomize config/default"
for k in CustomResourceDefinition Deployment ClusterRole MutatingWebhookConfiguration ValidatingWebhookConfiguration Service; do
  grep -q "^kind: $k\$" "$TMP/deploy.yaml" || fail "kustomize output has no $k"
done
grep -q 'path: /convert' "$TMP/deploy.yaml" || fail "the CRD is not patched for its conversion webhook"
echo "ok   luaop check loads it; role.yaml is current; kustomize builds config/default"

# 4b. cert-manager's CA injection follows config/default's [cert-manager] lines
# inject_in WANT FILE...: every webhook configuration and conversion CRD in the files (and in
# kustomize's output on stdin for "-", whose one Certificate it must name) carries
# cert-manager.io/inject-ca-from = WANT ("" = none)
inject_in() { /usr/bin/python3 "$TMP/inject_in.py" "$@"; }
cat >"$TMP/inject_in.py" <<'PY'
import sys, yaml
want, files = sys.argv[1], sys.argv[2:]
kinds = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "CustomResourceDefinition")
seen = {}
for f in files:
    docs = [d for d in yaml.safe_load_all(sys.stdin if f == "-" else open(f)) if d]
    for d in docs:
        if d["kind"] == "CustomResourceDefinition" and "conversion" not in d.get("spec", {}):
            continue
        if d["kind"] not in kinds:
            continue
        got = (d["metadata"].get("annotations") or {}).get("cert-manager.io/inject-ca-from", "")
        assert got == want, "%s: %s %s: inject-ca-from %r, want %r" % (f, d["kind"], d["metadata"]["name"], got, want)
        seen[d["kind"]] = seen.get(d["kind"], 0) + 1
    if f == "-" and want:  # the annotation names the Certificate the rendering holds
        certs = ["%s/%s" % (d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs if d["kind"] == "Certificate"]
        assert certs == [want], "rendered Certificates %r, the annotation names %r" % (certs, want)
for k in kinds:
    assert seen.get(k), "no %s in %s" % (k, files)
PY
# serving_cert NS SERVICE: in kustomize's rendering on stdin the webhook Service is NS/SERVICE, the
# webhook configurations and the conversion CRD call exactly it, the Certificate's dnsNames are
# exactly its SERVICE.NS.svc and SERVICE.NS.svc.cluster.local, its issuerRef names the rendered
# Issuer, and its Secret is the one the manager mounts
serving_cert() { /usr/bin/python3 "$TMP/serving_cert.py" "$@"; }
cat >"$TMP/serving_cert.py" <<'PY'
import sys, yaml
ns, svc = sys.argv[1:3]
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
def of(kind): return [d for d in docs if d["kind"] == kind]
def ref(md): return "%s/%s" % (md.get("namespace"), md["name"])
svcs = [ref(d["metadata"]) for d in of("Service")]
assert svcs == ["%s/%s" % (ns, svc)], "rendered Services %r, want %s/%s" % (svcs, ns, svc)
calls = []
for k in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
    assert of(k), "no %s" % k
    calls += [(k, w["name"], w["clientConfig"]["service"]) for d in of(k) for w in d["webhooks"]]
calls += [("CustomResourceDefinition", d["metadata"]["name"], d["spec"]["conversion"]["webhook"]["clientConfig"]["service"])
          for d in of("CustomResourceDefinition") if "conversion" in d["spec"]]
assert any(c[0] == "CustomResourceDefinition" for c in calls), "no conversion CRD"
for kind, name, s in calls:
    assert ref(s) == "%s/%s" % (ns, svc), "%s %s calls %s, the Service is %s/%s" % (kind, name, ref(s), ns, svc)
certs, issuers = of("Certificate"), of("Issuer")
assert len(certs) == 1 and len(issuers) == 1, "Certificates %d, Issuers %d" % (len(certs), len(issuers))
c = certs[0]
want = ["%s.%s.svc" % (svc, ns), "%s.%s.svc.cluster.local" % (svc, ns)]
assert c["spec"]["dnsNames"] == want, "dnsNames %r, want %r" % (c["spec"]["dnsNames"], want)
assert c["metadata"]["namespace"] == ns == issuers[0]["metadata"]["namespace"], "Certificate/Issuer namespace"
assert c["spec"]["issuerRef"]["name"] == issuers[0]["metadata"]["name"], \
    "issuerRef %r, the Issuer is %r" % (c["spec"]["issuerRef"]["name"], issuers[0]["metadata"]["name"])
mounts = [v["secret"]["secretName"] for d in of("Deployment") for v in d["spec"]["template"]["spec"].get("volumes", [])
          if "secret" in v]
assert mounts == [c["spec"]["secretName"]], "the manager mounts %r, the Certificate writes %r" % (mounts, c["spec"]["secretName"])
PY
gen=(config/webhook/manifests.yaml config/crd/patches/webhook_conversion.yaml)
inject_in "" "${gen[@]}" || fail "cert-manager off, yet an inject-ca-from annotation"
kubectl kustomize config/default | inject_in "" - || fail "cert-manager off: the rendering has an annotation"
sed -i 's/^#\[cert-manager\] //' config/default/kustomization.yaml
"${mk[@]}" manifests >"$TMP/manifests.out" || fail "make manifests with cert-manager on"
cm="memcached-operator-system/memcached-operator-serving-cert"
grep -qF "cert-manager.io/inject-ca-from: $cm" "$TMP/manifests.out" || { cat "$TMP/manifests.out" >&2; fail "make manifests did not say cert-manager is on"; }
inject_in "$cm" "${gen[@]}" || fail "cert-manager on: the generated manifests lack the annotation"
kubectl kustomize config/default | inject_in "$cm" - || fail "cert-manager on: the rendering"
kubectl kustomize config/default | serving_cert memcached-operator-system memcached-operator-webhook-service ||
  fail "cert-manager on: the Certificate and the webhook Service"
# `create api` regenerates the webhook manifests too: the annotations stay
"$LUAOP" create api --group cache --version v1alpha1 --kind Memcached --force >"$TMP/api2.out" || fail "create api --force"
inject_in "$cm" "${gen[@]}" || fail "create api dropped the cert-manager annotations"
# the namespace and the Certificate's name as kustomize renders them
cp config/default/kustomization.yaml "$TMP/kustomization.on"
sed -i 's/^namespace: .*/namespace: team-a/' config/default/kustomization.yaml
echo 'namePrefix: blue-' >>config/default/kustomization.yaml
"$LUAOP" create manifests >/dev/null || fail "create manifests with namespace: and namePrefix:"
inject_in "team-a/blue-memcached-operator-serving-cert" "${gen[@]}" || fail "namespace:/namePrefix: not followed"
kubectl kustomize config/default | inject_in "team-a/blue-memcached-operator-serving-cert" - ||
  fail "namespace:/namePrefix: the rendering"
kubectl kustomize config/default | serving_cert team-a blue-memcached-operator-webhook-service ||
  fail "namespace:/namePrefix: the Certificate does not follow the webhook Service"
cp "$TMP/kustomization.on" config/default/kustomization.yaml
# a malformed kustomization: refused naming the file, nothing written
sums() { md5sum config/rbac/role.yaml "${gen[@]}"; stat -c '%n inode %i' config/rbac/role.yaml "${gen[@]}"; } # a write renames
sums >"$TMP/sums"
for bad in 'resources: [../crd, ../certmanager' 'resources: ../certmanager' '- ../crd' $'resources: []\n---\nnamespace: x'; do
  printf '%s\n' "$bad" >config/default/kustomization.yaml
  expect_fail "malformed kustomization ($(head -1 config/default/kustomization.yaml))" \
    'config/default/kustomization.yaml' "$LUAOP" create manifests
  sums | diff -u "$TMP/sums" - || fail "a malformed kustomization changed files"
done
cp "$TMP/kustomization.on" config/default/kustomization.yaml
sed -i 's/^kind: Certificate$/kind: NotACertificate/' config/certmanager/certificate.yaml
expect_fail "no Certificate in config/certmanager" 'config/certmanager/kustomization.yaml: no cert-manager.io Certificate' \
  "$LUAOP" create manifests
sed -i 's/^kind: NotACertificate$/kind: Certificate/' config/certmanager/certificate.yaml
# off again: the annotations go
sed -i 's|^- \.\./certmanager$|#[cert-manager] - ../certmanager|' config/default/kustomization.yaml
"${mk[@]}" manifests >/dev/null || fail "make manifests with cert-manager off again"
inject_in "" "${gen[@]}" || fail "cert-manager off again: the annotations stayed"
kubectl kustomize config/default | inject_in "" - || fail "cert-manager off again: the rendering"
echo "ok   make manifests: cert-manager's inject-ca-from on every webhook configuration and the conversion CRD while the [cert-manager] lines are on (namespace:, namePrefix: followed), none once off; a malformed kustomization is refused naming it, nothing written"
echo "ok   cert-manager on: the Certificate's dnsNames are the rendered webhook Service's, which every webhook calls (namespace: team-a, namePrefix: blue- followed); issuerRef and Secret match"

# 4c. no conversion webhook left: make manifests deletes the conversion patch it generated and
# its entry in config/crd; a file of that name it did not generate (no header) stays
patch=config/crd/patches/webhook_conversion.yaml entry='- path: patches/webhook_conversion.yaml'
head -1 "$patch" | grep -q '^# Generated by `luaop create manifests`' || fail "$patch has no generated-file header"
cp scripts/memcached_webhook.lua "$TMP/webhook.lua"
cp "$patch" "$TMP/conversion.generated"
sed -i '/op\.webhook\.conversion {/d' scripts/memcached_webhook.lua
"${mk[@]}" manifests >/dev/null || fail "make manifests without a conversion webhook"
[ ! -e "$patch" ] || fail "the generated $patch stayed with no conversion webhook"
! grep -qF -- "$entry" config/crd/kustomization.yaml || fail "config/crd still lists the conversion patch"
grep -q '+luaop:scaffold:crdkustomizewebhookpatch' config/crd/kustomization.yaml || fail "the marker went with the entry"
kubectl kustomize config/default >"$TMP/deploy.yaml" || fail "kustomize without the conversion patch"
! grep -q 'path: /convert' "$TMP/deploy.yaml" || fail "the CRD still calls a conversion webhook"
grep -q '^kind: ValidatingWebhookConfiguration$' "$TMP/deploy.yaml" || fail "the other webhooks went too"
sed 1d "$TMP/conversion.generated" >"$patch" # the user's own: no header
sed -i "s|^# +luaop:scaffold:crdkustomizewebhookpatch\$|$entry\n&|" config/crd/kustomization.yaml
cp "$patch" "$TMP/conversion.user"
cp config/crd/kustomization.yaml "$TMP/crdk.user"
"${mk[@]}" manifests >/dev/null || fail "make manifests with the user's conversion patch"
cmp -s "$patch" "$TMP/conversion.user" || fail "a conversion patch without the header was changed or deleted"
cmp -s config/crd/kustomization.yaml "$TMP/crdk.user" || fail "the user's conversion patch entry was removed"
cp "$TMP/webhook.lua" scripts/memcached_webhook.lua
"${mk[@]}" manifests >/dev/null || fail "make manifests with the conversion webhook back"
cmp -s "$patch" "$TMP/conversion.generated" || fail "$patch is not regenerated as before"
[ "$(grep -cxF -- "$entry" config/crd/kustomization.yaml)" = 1 ] || fail "config/crd does not list the patch once"
kubectl kustomize config/default | grep -q 'path: /convert' || fail "the CRD does not call its conversion webhook again"
echo "ok   no conversion webhook: make manifests deletes the patch it generated and its entry (kustomize builds, no /convert); a patch without its header stays; back with the webhook"

# 5. luaop dev --once: local API server, operator, CRD, sample
"$LUAOP" dev --scripts scripts --listen 127.0.0.1:0 --apply config/crd/bases/cache.example.com_memcacheds.yaml \
  --apply config/samples/cache_v1alpha1_memcached.yaml --once >"$TMP/dev.out" 2>&1 &
PIDS+=($!)
wait "${PIDS[-1]}" || { cat "$TMP/dev.out" >&2; fail "luaop dev --once exited non-zero"; }
grep -q 'msg="created child".*name=memcached-sample' "$TMP/dev.out" || { cat "$TMP/dev.out" >&2; fail "the sample was not reconciled"; }
echo "ok   luaop dev --once reconciles the sample and exits 0"
echo "PASS scaffold_project"
