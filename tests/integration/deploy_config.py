#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test (issue 24 part 8, issue 21 part 3c): config/ in kubebuilder v4's layout.

  A. config/default as shipped renders with `kubectl kustomize`: the Deployment (2 replicas,
     --leader-elect) and a PodDisruptionBudget (policy/v1, minAvailable 1 < replicas, selecting
     exactly the Deployment's pods); no webhook or cert-manager objects (they are opt-in);
     config/webhook/manifests.yaml is what `luaop check --webhooks` prints for the example.
  B. The variant with every [webhook] and [cert-manager] line enabled (as docs/deploying.md says:
     strip the prefixes), the webhook fixture's configurations in config/webhook/manifests.yaml, a
     CRD with the generated conversion patch, and the namespace changed to "ops": the Service
     maps 443 to the container's 9443; the manager mounts the Certificate's Secret at the default
     --webhook-cert-dir; the Certificate's DNS names are the Service's in "ops" and its issuerRef
     the Issuer; every webhook configuration and the CRD carry
     cert-manager.io/inject-ca-from: ops/luaop-serving-cert; the webhooks name the Service.
  C. The webhook-only variant ([webhook] lines only): Service and mount, no cert-manager kinds and
     no inject-ca-from annotation.
  D. Each rendering applies to the local API server (`kubectl apply`, then every object read back),
     with stand-in CRDs for cert-manager's kinds (fixtures/deploy/stub_crds.yaml). The local
     server does not serve policy/v1 (nor networking.k8s.io), so PodDisruptionBudgets (and
     NetworkPolicies) are left out of the apply; any other kind it does not serve fails the test.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402
import yaml  # noqa: E402

SRC, LUAOP = h.SRC, h.LUAOP
STUBS = os.path.join(h.FIXTURES, "deploy", "stub_crds.yaml")
CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"  # --webhook-cert-dir's default in the image
WIDGET_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""


def run(args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    what = " ".join(os.path.basename(a) for a in args[:3])
    if p.returncode != 0:
        h.require(False, f"{what} ... exits 0 (stderr: {p.stderr.strip()[-600:]})")
    return p.stdout


def render(root):
    return [d for d in yaml.safe_load_all(run(["kubectl", "kustomize", os.path.join(root, "config", "default")])) if d]


def one(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    h.require(len(found) == 1, f"exactly one {kind} {name or ''} in the rendering (got {len(found)})")
    return found[0]


def annotation(d):
    return (d["metadata"].get("annotations") or {}).get("cert-manager.io/inject-ca-from")


def check_default(docs):
    dep = one(docs, "Deployment", "luaop-controller-manager")
    spec = dep["spec"]
    c = spec["template"]["spec"]["containers"][0]
    h.check(spec["replicas"] == 2 and "--leader-elect" in c["args"], "A: 2 replicas with --leader-elect")
    pdb = one(docs, "PodDisruptionBudget", "luaop-controller-manager")
    h.check(pdb["apiVersion"] == "policy/v1", f"A: PDB is policy/v1 (got {pdb['apiVersion']})")
    h.check(pdb["metadata"]["namespace"] == dep["metadata"]["namespace"], "A: PDB in the Deployment's namespace")
    m = pdb["spec"].get("minAvailable")
    h.check(m == 1 and m < spec["replicas"], f"A: PDB minAvailable 1, below replicas {spec['replicas']} (got {m})")
    h.check("maxUnavailable" not in pdb["spec"], "A: PDB sets minAvailable only")
    sel = pdb["spec"]["selector"]["matchLabels"]
    labels = spec["template"]["metadata"]["labels"]
    h.check(sel == spec["selector"]["matchLabels"] and all(labels.get(k) == v for k, v in sel.items()),
            f"A: PDB selects the Deployment's pods ({sel})")
    kinds = {d["kind"] for d in docs}
    extra = kinds & {"Certificate", "Issuer", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    h.check(not extra, f"A: no webhook/cert-manager objects by default (got {sorted(extra)})")
    h.check(not any(v.get("name") == "webhook-certs" for v in spec["template"]["spec"].get("volumes", [])),
            "A: no certificate mount by default")
    gen = subprocess.run([LUAOP, "check", "--webhooks", "--scripts", "examples/memcached/scripts"], cwd=SRC,
                         capture_output=True, text=True)
    out = os.path.join(h.TMP, "manifests.yaml")
    split = subprocess.run(["/usr/bin/python3", os.path.join(SRC, "deploy", "split_webhooks.py"), out],
                           input=gen.stdout, capture_output=True, text=True)
    with open(os.path.join(SRC, "config", "webhook", "manifests.yaml")) as f, open(out) as g:
        h.check(gen.returncode == 0 and split.returncode == 0 and g.read() == f.read(),
                "A: config/webhook/manifests.yaml is current (make webhooks)")


def make_variant(root, webhook, cert_manager, namespace):
    """A copy of config/ with the [webhook] / [cert-manager] lines enabled as the docs say."""
    shutil.copytree(os.path.join(SRC, "config"), os.path.join(root, "config"))
    kpath = os.path.join(root, "config", "default", "kustomization.yaml")
    with open(kpath) as f:
        text = f.read()
    if webhook:
        text = text.replace("#[webhook] ", "")
    if cert_manager:
        text = text.replace("#[cert-manager] ", "")
    text = text.replace("namespace: luaop-system\n", f"namespace: {namespace}\n")
    # as make webhooks does: configurations into config/webhook, the CRD conversion stanza into the
    # overlay for CRDs the docs describe (the CRD plus that stanza as a patch)
    crd_dir = os.path.join(root, "config", "crd")
    os.makedirs(crd_dir)
    gen = run([LUAOP, "check", "--webhooks", "--scripts", os.path.join(h.FIXTURES, "webhooks")])
    run(["/usr/bin/python3", os.path.join(SRC, "deploy", "split_webhooks.py"),
         os.path.join(root, "config", "webhook", "manifests.yaml"), os.path.join(crd_dir, "conversion_widgets.yaml")],
        input=gen)
    configs = [d for d in yaml.safe_load_all(open(os.path.join(root, "config", "webhook", "manifests.yaml"))) if d]
    patches = [d for d in yaml.safe_load_all(open(os.path.join(crd_dir, "conversion_widgets.yaml"))) if d]
    h.require(len(configs) == 2 and len(patches) == 1 and patches[0]["kind"] == "CustomResourceDefinition",
              "the fixture's output splits into 2 configurations and 1 CRD patch")
    with open(os.path.join(crd_dir, "widgets.yaml"), "w") as f:
        f.write(WIDGET_CRD)
    with open(os.path.join(crd_dir, "kustomization.yaml"), "w") as f:
        f.write("resources:\n- widgets.yaml\npatches:\n- path: conversion_widgets.yaml\n")
    text = text.replace("- ../rbac\n", "- ../rbac\n- ../crd\n")
    with open(kpath, "w") as f:
        f.write(text)
    return render(root)


def check_webhook_parts(docs, tag, namespace):
    svc = one(docs, "Service", "luaop-webhook-service")
    dep = one(docs, "Deployment", "luaop-controller-manager")
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    port = svc["spec"]["ports"][0]
    h.check(port["port"] == 443 and port["targetPort"] == 9443, f"{tag}: Service 443 -> 9443")
    h.check(any(p["containerPort"] == 9443 for p in c["ports"]), f"{tag}: the manager exposes 9443")
    labels = dep["spec"]["template"]["metadata"]["labels"]
    h.check(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()), f"{tag}: Service selects the pods")
    mounts = [m for m in c.get("volumeMounts", []) if m["mountPath"] == CERT_DIR]
    h.require(len(mounts) == 1, f"{tag}: the certificate Secret is mounted at {CERT_DIR}")
    vol = next(v for v in pod["volumes"] if v["name"] == mounts[0]["name"])
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for wh in one(docs, kind)["webhooks"]:
            ref = wh["clientConfig"]["service"]
            h.check((ref["namespace"], ref["name"], ref["port"]) == (namespace, "luaop-webhook-service", 443),
                    f"{tag}: {kind} {wh['name']} calls the Service ({ref})")
    crd = one(docs, "CustomResourceDefinition", "widgets.example.com")
    conv = crd["spec"].get("conversion", {})
    ref = conv.get("webhook", {}).get("clientConfig", {}).get("service", {})
    h.check(conv.get("strategy") == "Webhook" and ref.get("path") == "/convert" and ref.get("namespace") == namespace,
            f"{tag}: the CRD's conversion webhook calls the Service's /convert ({conv})")
    h.check(len(crd["spec"]["versions"]) == 2, f"{tag}: the conversion patch kept the CRD's versions")
    return vol["secret"]["secretName"]


def check_cert_manager(docs, secret, namespace):
    cert = one(docs, "Certificate", "luaop-serving-cert")
    issuer = one(docs, "Issuer")
    svc = one(docs, "Service", "luaop-webhook-service")
    want = [f"{svc['metadata']['name']}.{namespace}.svc", f"{svc['metadata']['name']}.{namespace}.svc.cluster.local"]
    h.check(cert["spec"]["dnsNames"] == want, f"B: Certificate DNS names {cert['spec']['dnsNames']} == {want}")
    h.check(cert["spec"]["issuerRef"] == {"kind": "Issuer", "name": issuer["metadata"]["name"]},
            "B: the Certificate's issuerRef is the Issuer")
    h.check("selfSigned" in issuer["spec"], "B: the Issuer is self-signed")
    h.check(cert["spec"]["secretName"] == secret, f"B: the manager mounts the Certificate's Secret ({secret})")
    want_ann = f"{namespace}/{cert['metadata']['name']}"
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "CustomResourceDefinition"):
        got = annotation(one(docs, kind))
        h.check(got == want_ann, f"B: {kind} has cert-manager.io/inject-ca-from: {want_ann} (got {got})")


# Kubernetes kinds the local API server does not serve (and no CRD can stand in for: their groups
# have no dot or are Kubernetes' own): left out of the apply, checked structurally above.
NOT_SERVED = {"PodDisruptionBudget", "NetworkPolicy"}


def served_kinds(env):
    """The KIND column of `kubectl api-resources` (its last)."""
    out = run(["kubectl", "api-resources", "--no-headers"], env=env)
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def apply(docs, kc, tag):
    """kubectl apply the rendering (kinds the server does not serve aside) and read each object back."""
    env = dict(os.environ, KUBECONFIG=kc)
    kinds = served_kinds(env)
    skipped = sorted({d["kind"] for d in docs if d["kind"] not in kinds})
    h.check(set(skipped) <= NOT_SERVED, f"{tag}: only {sorted(NOT_SERVED)} left out of the apply (left out: {skipped})")
    served = [d for d in docs if d["kind"] in kinds]
    run(["kubectl", "apply", "-f", "-"], input=yaml.safe_dump_all(served), env=env)
    missing = []
    for d in served:
        md = d["metadata"]
        group = d["apiVersion"].split("/")[0] if "/" in d["apiVersion"] else ""
        res = f"{d['kind']}.{group}" if group else d["kind"]
        args = ["kubectl", "get", res, md["name"], "-o", "name"]
        args += ["-n", md["namespace"]] if "namespace" in md else []
        if subprocess.run(args, capture_output=True, env=env).returncode != 0:
            missing.append(f"{d['kind']}/{md['name']}")
    h.check(not missing, f"{tag}: {len(served)} objects applied to the local API server and read back "
            f"(missing: {missing})")


def body():
    _, _, kc = h.start_apiserver()
    run(["kubectl", "--kubeconfig", kc, "apply", "-f", STUBS])
    docs = render(SRC)
    check_default(docs)
    apply(docs, kc, "A")

    root = os.path.join(h.TMP, "full")
    docs = make_variant(root, webhook=True, cert_manager=True, namespace="ops")
    secret = check_webhook_parts(docs, "B", "ops")
    check_cert_manager(docs, secret, "ops")
    apply(docs, kc, "B")

    # a second API server: B's webhook configurations would send C's writes to a Service that
    # does not answer here
    _, _, kc2 = h.start_apiserver("apiserver2")
    run(["kubectl", "--kubeconfig", kc2, "apply", "-f", STUBS])
    root = os.path.join(h.TMP, "webhook-only")
    docs = make_variant(root, webhook=True, cert_manager=False, namespace="luaop-system")
    check_webhook_parts(docs, "C", "luaop-system")
    kinds = {d["kind"] for d in docs}
    h.check(not kinds & {"Certificate", "Issuer"}, "C: no cert-manager kinds without the [cert-manager] lines")
    h.check(not any(annotation(d) for d in docs), "C: no inject-ca-from annotation without cert-manager")
    apply(docs, kc2, "C")


h.main("deploy_config", body)
