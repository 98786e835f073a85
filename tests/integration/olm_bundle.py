#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test (issue 24 part 8): `make bundle` (deploy/bundle.py) writes a valid OLM bundle.

No OLM tooling runs here, so the bundle is checked structurally against the registry+v1 format and
the ClusterServiceVersion's required fields, for the memcached example (make's default), the
replicator (a cluster-scoped kind) and the webhook fixture (admission and conversion webhooks):

  A. the CSV: apiVersion/kind, metadata.name PACKAGE.vVERSION with VERSION = `luaop version`,
     displayName, description, provider, maturity, semver minKubeVersion, the four installModes,
     install.strategy "deployment" whose Deployment is config/manager's (same spec but the
     namespace-bound args, which name $(POD_NAMESPACE), defined from the downward API);
  B. permissions and clusterPermissions equal to the rules of the Roles and ClusterRoles that
     `luaop check --rbac` prints for the set, bound to the Deployment's service account;
  C. every owned CRD (name, version, kind, displayName) is a file of the bundle with that served
     version and kind, and every CRD file is owned; alm-examples are of owned kinds;
  D. webhookdefinitions: one per declared webhook (type, path, rules) on the Deployment, with
     OLM's required fields; a conversion webhook names owned CRDs only (else the script fails);
  E. metadata/annotations.yaml has the operators.operatorframework.io.bundle.* keys, and
     bundle.Dockerfile carries them as LABELs and copies manifests/ and metadata/;
  F. the scripts ConfigMap holds every *.lua file of the set unchanged and passes
     `luaop check --configmap`; the CRDs and the ConfigMap apply to the local API server.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402
import yaml  # noqa: E402

SRC, LUAOP = h.SRC, h.LUAOP
BUNDLE = os.path.join(SRC, "deploy", "bundle.py")
SEMVER = re.compile(r"^\d+\.\d+\.\d+$")
BUNDLE_KEYS = {
    "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
    "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
    "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
}
WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
             "versions": [{"name": v, "served": True, "storage": v == "v1",
                           "schema": {"openAPIV3Schema": {"type": "object"}}} for v in ("v1", "v2")]},
}


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def luaop(args):
    p = subprocess.run([LUAOP] + args, capture_output=True, text=True, cwd=SRC)
    h.require(p.returncode == 0, f"luaop {' '.join(args[:2])} exits 0 ({p.stderr.strip()[-400:]})")
    return p


def make_bundle(tag, args):
    out = os.path.join(h.TMP, tag)
    p = subprocess.run(["/usr/bin/python3", BUNDLE, "--luaop", LUAOP, "--out", os.path.join(out, "bundle"),
                        "--dockerfile", os.path.join(out, "bundle.Dockerfile")] + args,
                       capture_output=True, text=True, cwd=SRC)
    h.require(p.returncode == 0, f"{tag}: deploy/bundle.py exits 0 ({p.stderr.strip()[-400:]})")
    return out


def manifests(out):
    man = os.path.join(out, "bundle", "manifests")
    return {f: load_all(os.path.join(man, f))[0] for f in sorted(os.listdir(man))}


def manager_deployment():
    docs = load_all(os.path.join(SRC, "config", "manager", "manager.yaml"))
    return next(d for d in docs if d["kind"] == "Deployment")


def check_csv_fields(tag, csv):
    version = re.match(r"luaop (\S+)", luaop(["version"]).stdout).group(1)
    h.check(csv["apiVersion"] == "operators.coreos.com/v1alpha1" and csv["kind"] == "ClusterServiceVersion",
            f"{tag} A: apiVersion/kind")
    spec = csv["spec"]
    h.check(csv["metadata"]["name"] == f"luaop.v{version}" and spec["version"] == version,
            f"{tag} A: name luaop.v{version}, version {version} (got {csv['metadata']['name']}, {spec.get('version')})")
    missing = [k for k in ("displayName", "description", "maturity", "minKubeVersion") if not spec.get(k)]
    h.check(not missing and spec.get("provider", {}).get("name"),
            f"{tag} A: required fields present (missing {missing})")
    h.check(bool(SEMVER.match(spec.get("minKubeVersion", ""))), f"{tag} A: minKubeVersion is semver")
    modes = {m["type"]: m["supported"] for m in spec["installModes"]}
    h.check(set(modes) == {"OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"} and
            all(isinstance(v, bool) for v in modes.values()) and any(modes.values()),
            f"{tag} A: the four installModes, one supported at least ({modes})")
    h.check(spec["install"]["strategy"] == "deployment", f"{tag} A: install strategy deployment")


def check_deployment(tag, csv):
    deps = csv["spec"]["install"]["spec"]["deployments"]
    h.require(len(deps) == 1, f"{tag} A: one Deployment in the install strategy")
    got, want = json.loads(json.dumps(deps[0]["spec"])), json.loads(json.dumps(manager_deployment()["spec"]))
    h.check(deps[0]["name"] == manager_deployment()["metadata"]["name"], f"{tag} A: the Deployment's name")
    gc, wc = got["template"]["spec"]["containers"][0], want["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in gc.pop("env", [])}
    args = gc.pop("args")
    wargs = wc.pop("args")
    h.check(got == want, f"{tag} A: the Deployment spec is config/manager's (args and env aside)")
    ns_bound = ("--scripts-configmap=", "--leader-election-namespace=")
    h.check([a for a in args if not a.startswith(ns_bound)] == [a for a in wargs if not a.startswith(ns_bound)],
            f"{tag} A: the other args are config/manager's ({args})")
    h.check("--scripts-configmap=$(POD_NAMESPACE)/luaop-scripts" in args and
            "--leader-election-namespace=$(POD_NAMESPACE)" in args, f"{tag} A: scripts and Lease in OLM's namespace")
    refs = set(re.findall(r"\$\((\w+)\)", " ".join(args)))
    h.check(all(r in env for r in refs) and
            env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace",
            f"{tag} A: every $(VAR) in args is defined (POD_NAMESPACE from the downward API)")
    return deps[0]


def rules_of(docs, kind):
    return sorted(json.dumps(r, sort_keys=True) for d in docs if d["kind"] == kind for r in d.get("rules", []))


def check_permissions(tag, csv, dep, rbac_args):
    rbac = [d for d in yaml.safe_load_all(luaop(["check", "--rbac"] + rbac_args).stdout) if d]
    ispec = csv["spec"]["install"]["spec"]
    sa = dep["spec"]["template"]["spec"]["serviceAccountName"]
    for key, kind in (("clusterPermissions", "ClusterRole"), ("permissions", "Role")):
        entries = ispec.get(key, [])
        got = sorted(json.dumps(r, sort_keys=True) for e in entries for r in e["rules"])
        h.check(got == rules_of(rbac, kind) and got, f"{tag} B: {key} == the {kind} rules of luaop check --rbac")
        h.check(all(e["serviceAccountName"] == sa for e in entries), f"{tag} B: {key} bound to {sa}")


def check_crds(tag, csv, files, inputs):
    owned = csv["spec"]["customresourcedefinitions"]["owned"]
    crds = {d["metadata"]["name"]: d for d in files.values() if d["kind"] == "CustomResourceDefinition"}
    for o in owned:
        crd = crds.get(o["name"])
        ok = crd and crd["spec"]["names"]["kind"] == o["kind"] and o.get("displayName") and any(
            v["name"] == o["version"] and v.get("served") for v in crd["spec"]["versions"])
        h.check(bool(ok), f"{tag} C: owned {o['name']} {o['version']} {o['kind']} is in the bundle")
    h.check(set(crds) == {o["name"] for o in owned}, f"{tag} C: every CRD file is owned ({sorted(crds)})")
    for path in inputs:
        for d in load_all(path):
            h.check(crds.get(d["metadata"]["name"]) == d, f"{tag} C: {d['metadata']['name']} copied unchanged")
    gvks = {(f"{c['spec']['group']}/{v['name']}", c["spec"]["names"]["kind"]) for c in crds.values()
            for v in c["spec"]["versions"]}
    examples = json.loads(csv["metadata"]["annotations"]["alm-examples"])
    h.check(all((e["apiVersion"], e["kind"]) in gvks for e in examples), f"{tag} C: alm-examples are of owned kinds")
    return examples


def declared_webhooks(scripts):
    """(name, type, path) of each webhook, from luaop check's summary lines."""
    out = luaop(["check", "--scripts", scripts]).stdout
    found = sorted(re.findall(r"^  webhook (\S+): (\w+) (\S+)$", out, re.M))
    n = re.search(r"^ok: .* (\d+) webhooks?$", out, re.M)
    h.require(len(found) == (int(n.group(1)) if n else 0), f"luaop check lists each declared webhook ({found})")
    return found


def check_webhooks(tag, csv, dep, scripts, owned_names):
    defs = csv["spec"].get("webhookdefinitions", [])
    types = {"validating": "ValidatingAdmissionWebhook", "mutating": "MutatingAdmissionWebhook",
             "conversion": "ConversionWebhook"}
    want = sorted((types[t], p) for _, t, p in declared_webhooks(scripts))
    h.check(sorted((d["type"], d["webhookPath"]) for d in defs) == want, f"{tag} D: webhookdefinitions {want}")
    for d in defs:
        req = all(k in d for k in ("generateName", "admissionReviewVersions", "sideEffects", "containerPort"))
        h.check(req and d["deploymentName"] == dep["name"] and d["targetPort"] == 9443,
                f"{tag} D: {d['type']} {d['webhookPath']} has OLM's fields and targets the Deployment's 9443")
        if d["type"] == "ConversionWebhook":
            h.check(d["conversionCRDs"] and set(d["conversionCRDs"]) <= owned_names,
                    f"{tag} D: conversion names owned CRDs ({d['conversionCRDs']})")
        else:
            h.check(bool(d.get("rules")), f"{tag} D: {d['webhookPath']} carries its rules")


def check_metadata(tag, out, csv):
    with open(os.path.join(out, "bundle", "metadata", "annotations.yaml")) as f:
        ann = yaml.safe_load(f)["annotations"]
    for k, v in BUNDLE_KEYS.items():
        h.check(ann.get(k) == v, f"{tag} E: annotations {k}: {v} (got {ann.get(k)})")
    pkg = ann.get("operators.operatorframework.io.bundle.package.v1")
    h.check(csv["metadata"]["name"].startswith(f"{pkg}.v"), f"{tag} E: package {pkg} names the CSV")
    channels = (ann.get("operators.operatorframework.io.bundle.channels.v1") or "").split(",")
    h.check(ann.get("operators.operatorframework.io.bundle.channel.default.v1") in channels,
            f"{tag} E: the default channel is one of {channels}")
    with open(os.path.join(out, "bundle.Dockerfile")) as f:
        lines = f.read().splitlines()
    h.check("FROM scratch" in lines, f"{tag} E: bundle.Dockerfile is FROM scratch")
    labels = dict(line[len("LABEL "):].split("=", 1) for line in lines if line.startswith("LABEL "))
    h.check(labels == ann, f"{tag} E: bundle.Dockerfile LABELs == annotations.yaml")
    copies = {dst: src for _, src, dst in (line.split() for line in lines if line.startswith("COPY "))}
    ok = all(os.path.isdir(os.path.join(out, copies.get(f"/{d}/", "?"))) for d in ("manifests", "metadata"))
    h.check(ok, f"{tag} E: bundle.Dockerfile copies manifests/ and metadata/ ({copies})")


def check_configmap(tag, out, files, scripts):
    name, cm = next(((n, d) for n, d in files.items() if d["kind"] == "ConfigMap"), (None, None))
    h.require(cm is not None, f"{tag} F: the scripts ConfigMap is in the bundle")
    want = {}
    for f in sorted(os.listdir(scripts)):
        if f.endswith(".lua"):
            with open(os.path.join(scripts, f)) as fh:
                want[f] = fh.read()
    h.check(cm["metadata"]["name"] == "luaop-scripts" and cm["data"] == want,
            f"{tag} F: ConfigMap luaop-scripts holds {sorted(want)} unchanged")
    luaop(["check", "--configmap", os.path.join(out, "bundle", "manifests", name)])
    h.check(True, f"{tag} F: luaop check --configmap accepts the bundle's ConfigMap")


def apply(tag, kc, files):
    docs = [d for d in files.values() if d["kind"] in ("CustomResourceDefinition", "ConfigMap")]
    for d in docs:
        d = json.loads(json.dumps(d))
        if d["kind"] == "ConfigMap":
            d["metadata"]["namespace"] = "default"
        p = subprocess.run(["kubectl", "--kubeconfig", kc, "apply", "-f", "-"], input=yaml.safe_dump(d),
                           capture_output=True, text=True)
        h.check(p.returncode == 0, f"{tag} F: {d['kind']} {d['metadata']['name']} applies ({p.stderr.strip()})")


def check_bundle(tag, args, scripts, crds, kc, rbac_extra=()):
    out = make_bundle(tag, args)
    files = manifests(out)
    csvs = [d for d in files.values() if d["kind"] == "ClusterServiceVersion"]
    h.require(len(csvs) == 1 and "luaop.clusterserviceversion.yaml" in files,
              f"{tag}: bundle/manifests/luaop.clusterserviceversion.yaml is the one CSV")
    csv = csvs[0]
    check_csv_fields(tag, csv)
    dep = check_deployment(tag, csv)
    rbac_args = ["--scripts", scripts, "--scripts-configmap", "luaop-system/luaop-scripts"]
    for c in crds:
        rbac_args += ["--crd", c]
    check_permissions(tag, csv, dep, rbac_args)
    check_crds(tag, csv, files, crds)
    owned = {o["name"] for o in csv["spec"]["customresourcedefinitions"]["owned"]}
    check_webhooks(tag, csv, dep, scripts, owned)
    check_metadata(tag, out, csv)
    check_configmap(tag, out, files, scripts)
    apply(tag, kc, files)
    return csv


def body():
    _, _, kc = h.start_apiserver()
    ex = os.path.join(SRC, "examples")
    mc = os.path.join(ex, "memcached")
    csv = check_bundle("memcached", ["--example", "memcached"], os.path.join(mc, "scripts"),
                       [os.path.join(mc, "crd", "cache.example.com_memcacheds.yaml")], kc)
    h.check(json.loads(csv["metadata"]["annotations"]["alm-examples"])[0]["kind"] == "Memcached",
            "memcached: the sample is the alm-example")
    rep = os.path.join(ex, "replicator")
    check_bundle("replicator", ["--example", "replicator"], os.path.join(rep, "scripts"),
                 [os.path.join(rep, "crd", "replicator.example.com_configmapreplications.yaml")], kc)

    fixture = os.path.join(h.FIXTURES, "webhooks")
    widget = os.path.join(h.TMP, "widgets.yaml")
    with open(widget, "w") as f:
        yaml.safe_dump(WIDGET_CRD, f)
    csv = check_bundle("webhooks", ["--scripts", fixture, "--crd", widget], fixture, [widget], kc)
    h.check(len(csv["spec"].get("webhookdefinitions", [])) == 3, "webhooks: 3 webhook definitions")

    p = subprocess.run(["/usr/bin/python3", BUNDLE, "--luaop", LUAOP, "--scripts", fixture,
                        "--out", os.path.join(h.TMP, "bad", "bundle"),
                        "--dockerfile", os.path.join(h.TMP, "bad", "bundle.Dockerfile")],
                       capture_output=True, text=True, cwd=SRC)
    h.check(p.returncode == 1 and "widgets.example.com: OLM converts owned CRDs only" in p.stderr,
            f"a conversion webhook for a CRD the bundle does not own fails, naming it ({p.stderr.strip()})")


h.main("olm_bundle", body)
