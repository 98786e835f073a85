#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Write an Operator Lifecycle Manager bundle (registry+v1 format) for a luaop script set.

usage: deploy/bundle.py --luaop BIN (--example NAME | --scripts DIR [--crd FILE]... [--sample FILE]...)
                        [--out bundle]
                        [--dockerfile bundle.Dockerfile] [--package luaop] [--version X.Y.Z]
                        [--image IMAGE] [--channel alpha] [--manager config/manager/manager.yaml]

`make bundle` runs it on the memcached example (`make bundle BUNDLE_EXAMPLE=replicator` picks
another; --example NAME means examples/NAME/scripts, crd/*.yaml and samples/*.yaml). It writes

  OUT/manifests/PACKAGE.clusterserviceversion.yaml  the ClusterServiceVersion:
      install strategy "deployment" with the Deployment of config/manager (the scripts ConfigMap
        and the Lease in the namespace OLM installs into, through $(POD_NAMESPACE));
      clusterPermissions / permissions: the rules of the ClusterRoles / Roles that
        `luaop check --rbac` generates for the set (the same rules config/rbac gets);
      customresourcedefinitions.owned: each served version of each --crd;
      webhookdefinitions: the set's webhooks, from `luaop check --webhooks`;
      installModes, minKubeVersion, alm-examples (the --sample objects of owned kinds);
  OUT/manifests/<group>_<plural>.yaml                 each CRD, unchanged;
  OUT/manifests/<name>_v1_configmap.yaml              the script set as the ConfigMap the operator
                                                      reads (every *.lua file a key);
  OUT/manifests/<name>_policy_v1_poddisruptionbudget.yaml   config/manager's PDB;
  OUT/metadata/annotations.yaml                       operators.operatorframework.io.bundle.* keys;
  DOCKERFILE                                          the bundle image: FROM scratch, the same keys
                                                      as LABELs, manifests/ and metadata/.

The field names are those of OLM's ClusterServiceVersion (operators.coreos.com/v1alpha1) and
registry+v1 bundle format (operator-framework/api, operator-registry). The output is
deterministic (no timestamps), so a checked-in bundle can be tested for being current.
Needs python3-yaml.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

import yaml

# policy/v1 PodDisruptionBudget (1.21) is the newest API the bundle's objects use; Lease and
# admissionregistration v1 are older.
MIN_KUBE_VERSION = "1.21.0"
WEBHOOK_PORT, WEBHOOK_TARGET_PORT = 443, 9443  # the Service's port, the server's --webhook-bind-address


class Fail(Exception):
    pass


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def luaop_yaml(luaop, args):
    p = subprocess.run([luaop, "check"] + args, capture_output=True, text=True)
    if p.returncode != 0:
        raise Fail(f"luaop check {' '.join(args)}: {p.stderr.strip()}")
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def manager_objects(path):
    """The Deployment and the PodDisruptionBudget of config/manager."""
    docs = []
    for f in sorted(glob.glob(os.path.join(os.path.dirname(path), "*.yaml"))):
        if os.path.basename(f) != "kustomization.yaml":
            docs += load_all(f)
    deps = [d for d in docs if d["kind"] == "Deployment"]
    if len(deps) != 1:
        raise Fail(f"{path}: expected one Deployment, found {len(deps)}")
    pdbs = [d for d in docs if d["kind"] == "PodDisruptionBudget"]
    return deps[0], pdbs


def namespaced_args(args, configmap):
    """The manager's args for the namespace OLM picks: scripts ConfigMap and Lease there."""
    out = []
    for a in args:
        if a.startswith("--scripts-configmap=") or a.startswith("--leader-election-namespace="):
            continue
        out.append(a)
    out.insert(0, f"--scripts-configmap=$(POD_NAMESPACE)/{configmap}")
    if "--leader-elect" in out:
        out.insert(out.index("--leader-elect") + 1, "--leader-election-namespace=$(POD_NAMESPACE)")
    return out


def install_deployment(dep, image, configmap):
    spec = json.loads(json.dumps(dep["spec"]))  # a deep copy
    c = spec["template"]["spec"]["containers"][0]
    if image:
        c["image"] = image
    c["args"] = namespaced_args(c.get("args", []), configmap)
    env = [e for e in c.get("env", []) if e["name"] != "POD_NAMESPACE"]
    env.insert(0, {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}})
    c["env"] = env
    return {"name": dep["metadata"]["name"], "label": dict(dep["metadata"].get("labels", {})), "spec": spec}


def permissions(rbac, sa):
    """clusterPermissions and permissions from the generated ClusterRoles and Roles."""
    cluster, ns = [], []
    for d in rbac:
        if d["kind"] == "ClusterRole":
            cluster += d.get("rules", [])
        elif d["kind"] == "Role":
            ns += d.get("rules", [])
    wrap = lambda rules: [{"serviceAccountName": sa, "rules": rules}] if rules else []  # noqa: E731
    return wrap(cluster), wrap(ns)


def display_name(kind):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", kind)


def owned_crds(crds):
    owned = []
    for crd in crds:
        names = crd["spec"]["names"]
        for v in crd["spec"]["versions"]:
            if not v.get("served", True):
                continue
            desc = ((v.get("schema") or {}).get("openAPIV3Schema") or {}).get("description")
            owned.append({"name": crd["metadata"]["name"], "version": v["name"], "kind": names["kind"],
                          "displayName": display_name(names["kind"]),
                          "description": desc or f"{names['kind']}, reconciled by the operator's Lua scripts"})
    return owned


ADMISSION_TYPES = {"MutatingWebhookConfiguration": "MutatingAdmissionWebhook",
                   "ValidatingWebhookConfiguration": "ValidatingAdmissionWebhook"}
COPIED = ("admissionReviewVersions", "failurePolicy", "matchPolicy", "objectSelector", "reinvocationPolicy",
          "rules", "sideEffects", "timeoutSeconds")


def webhook_definitions(generated, deployment):
    defs = []
    for d in generated:
        if d["kind"] in ADMISSION_TYPES:
            for wh in d["webhooks"]:
                wd = {"type": ADMISSION_TYPES[d["kind"]], "generateName": wh["name"], "deploymentName": deployment,
                      "containerPort": WEBHOOK_PORT, "targetPort": WEBHOOK_TARGET_PORT,
                      "webhookPath": wh["clientConfig"]["service"]["path"]}
                wd.update({k: wh[k] for k in COPIED if k in wh})
                defs.append(wd)
        elif d["kind"] == "CustomResourceDefinition":
            hook = d["spec"]["conversion"]["webhook"]
            defs.append({"type": "ConversionWebhook", "generateName": f"c{d['metadata']['name']}",
                         "deploymentName": deployment, "containerPort": WEBHOOK_PORT,
                         "targetPort": WEBHOOK_TARGET_PORT, "webhookPath": hook["clientConfig"]["service"]["path"],
                         "conversionCRDs": [d["metadata"]["name"]],
                         "admissionReviewVersions": hook.get("conversionReviewVersions", ["v1"]),
                         "sideEffects": "None", "failurePolicy": "Fail"})
    return defs


INSTALL_MODES = [  # luaop watches one namespace or all (--namespace); a list of them is not there yet
    {"type": "OwnNamespace", "supported": False},
    {"type": "SingleNamespace", "supported": False},
    {"type": "MultiNamespace", "supported": False},
    {"type": "AllNamespaces", "supported": True},
]


def csv(a, dep, rbac, crds, generated, samples):
    cluster, ns = permissions(rbac, dep["spec"]["template"]["spec"]["serviceAccountName"])
    install = install_deployment(dep, a.image, a.configmap)
    owned = owned_crds(crds)
    defs = webhook_definitions(generated, install["name"])
    names = {c["name"] for c in owned}
    for d in defs:
        for crd in d.get("conversionCRDs", []):
            if crd not in names:
                raise Fail(f"conversion webhook for {crd}: OLM converts owned CRDs only; pass its --crd")
    image = install["spec"]["template"]["spec"]["containers"][0]["image"]
    spec = {
        "displayName": a.display_name,
        "description": a.description,
        "version": a.version,
        "minKubeVersion": MIN_KUBE_VERSION,
        "maturity": a.channel,
        "provider": {"name": a.provider},
        "keywords": ["luaop", "lua", "operator"],
        "links": [{"name": "luaop", "url": a.url}],
        "maintainers": [{"name": a.provider, "email": a.email}],
        "installModes": INSTALL_MODES,
        "install": {"strategy": "deployment", "spec": {"deployments": [install]}},
        "customresourcedefinitions": {"owned": owned},
    }
    if cluster:
        spec["install"]["spec"]["clusterPermissions"] = cluster
    if ns:
        spec["install"]["spec"]["permissions"] = ns
    if defs:
        spec["webhookdefinitions"] = defs
    ann = {"alm-examples": json.dumps(samples, indent=2), "capabilities": "Basic Install",
           "containerImage": image, "operators.operatorframework.io/builder": "luaop deploy/bundle.py"}
    return {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": f"{a.package}.v{a.version}", "namespace": "placeholder", "annotations": ann},
            "spec": spec}


def annotations(a):
    return {
        "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
        "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
        "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
        "operators.operatorframework.io.bundle.package.v1": a.package,
        "operators.operatorframework.io.bundle.channels.v1": a.channel,
        "operators.operatorframework.io.bundle.channel.default.v1": a.channel,
    }


def dockerfile(a, ann):
    rel = os.path.relpath(a.out, os.path.dirname(os.path.abspath(a.dockerfile)))
    lines = ["# Generated by deploy/bundle.py (make bundle): the OLM bundle image.", "FROM scratch", ""]
    lines += [f"LABEL {k}={v}" for k, v in ann.items()]
    lines += ["", f"COPY {rel}/manifests /manifests/", f"COPY {rel}/metadata /metadata/", ""]
    return "\n".join(lines)


def scripts_configmap(a):
    data = {}
    for f in sorted(glob.glob(os.path.join(a.scripts, "*.lua"))):
        with open(f) as fh:
            data[os.path.basename(f)] = fh.read()
    if "main.lua" not in data:
        raise Fail(f"{a.scripts}: no main.lua")
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": a.configmap}, "data": data}


class Dumper(yaml.SafeDumper):
    pass


def _str(dumper, s):  # multi-line strings (the scripts, alm-examples) as readable blocks
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)


Dumper.add_representer(str, _str)


def write(path, doc, header="# Generated by deploy/bundle.py (make bundle): do not edit by hand.\n"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(header)
        yaml.dump(doc, f, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=100)


def luaop_version(luaop):
    p = subprocess.run([luaop, "version"], capture_output=True, text=True)
    m = re.match(r"luaop (\d+\.\d+\.\d+)", p.stdout)
    if p.returncode != 0 or not m:
        raise Fail(f"{luaop} version: no version in {p.stdout!r}")
    return m.group(1)


def generate(a):
    a.version = a.version or luaop_version(a.luaop)
    dep, pdbs = manager_objects(a.manager)
    crds = [d for f in a.crd for d in load_all(f) if d["kind"] == "CustomResourceDefinition"]
    gvks = {(f"{c['spec']['group']}/{v['name']}", c["spec"]["names"]["kind"])
            for c in crds for v in c["spec"]["versions"]}
    samples = [d for f in a.sample for d in load_all(f) if (d.get("apiVersion"), d.get("kind")) in gvks]
    for s in samples:
        s.get("metadata", {}).pop("namespace", None)  # alm-examples are created where the user says
    rbac_args = ["--rbac", "--scripts", a.scripts, "--scripts-configmap", f"luaop-system/{a.configmap}"]
    for f in a.crd:
        rbac_args += ["--crd", f]
    rbac = luaop_yaml(a.luaop, rbac_args)
    generated = luaop_yaml(a.luaop, ["--webhooks", "--scripts", a.scripts] + rbac_args[5:])
    man = os.path.join(a.out, "manifests")
    if os.path.isdir(man):
        for f in glob.glob(os.path.join(man, "*.yaml")):
            os.remove(f)
    write(os.path.join(man, f"{a.package}.clusterserviceversion.yaml"), csv(a, dep, rbac, crds, generated, samples))
    for crd in crds:
        write(os.path.join(man, f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml"), crd)
    write(os.path.join(man, f"{a.configmap}_v1_configmap.yaml"), scripts_configmap(a))
    for pdb in pdbs:
        pdb = json.loads(json.dumps(pdb))
        pdb["metadata"].pop("namespace", None)
        write(os.path.join(man, f"{pdb['metadata']['name']}_policy_v1_poddisruptionbudget.yaml"), pdb)
    ann = annotations(a)
    write(os.path.join(a.out, "metadata", "annotations.yaml"), {"annotations": ann})
    with open(a.dockerfile, "w") as f:
        f.write(dockerfile(a, ann))


def parse_args(argv):
    p = argparse.ArgumentParser(description="Write an OLM bundle for a luaop script set.")
    p.add_argument("--luaop", required=True, help="the luaop binary (runs `luaop check --rbac/--webhooks`)")
    p.add_argument("--example", help="examples/NAME: its scripts/, crd/*.yaml and samples/*.yaml")
    p.add_argument("--scripts", help="the script set (a directory with main.lua)")
    p.add_argument("--crd", action="append", default=[], help="a CRD file of a kind the set owns (repeatable)")
    p.add_argument("--sample", action="append", default=[], help="a sample object for alm-examples (repeatable)")
    p.add_argument("--manager", default="config/manager/manager.yaml", help="config/manager's Deployment")
    p.add_argument("--out", default="bundle")
    p.add_argument("--dockerfile", default="bundle.Dockerfile")
    p.add_argument("--package", default="luaop")
    p.add_argument("--version", help="the CSV's version (default: what `luaop version` says)")
    p.add_argument("--channel", default="alpha")
    p.add_argument("--image", help="the operator image (default: config/manager's)")
    p.add_argument("--configmap", default="luaop-scripts", help="the scripts ConfigMap's name")
    p.add_argument("--display-name", default="luaop")
    p.add_argument("--description", default="A Kubernetes operator host: the reconcile logic is Lua scripts, "
                   "reloaded from a ConfigMap without a restart.")
    p.add_argument("--provider", default="luaop")
    p.add_argument("--email", default="luaop@example.com")
    p.add_argument("--url", default="https://example.com/luaop")
    a = p.parse_args(argv)
    if a.example:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", a.example)
        if not os.path.isdir(root):
            p.error(f"--example {a.example}: no {root}")
        a.scripts = a.scripts or os.path.join(root, "scripts")
        a.crd = a.crd or sorted(glob.glob(os.path.join(root, "crd", "*.yaml")))
        a.sample = a.sample or sorted(glob.glob(os.path.join(root, "samples", "*.yaml")))
    if not a.scripts:
        p.error("--scripts DIR or --example NAME is required")
    return a


def main(argv):
    a = parse_args(argv)
    try:
        generate(a)
    except (Fail, OSError, yaml.YAMLError, KeyError) as e:
        print(f"bundle: {e}", file=sys.stderr)
        return 1
    print(f"bundle: wrote {a.out}/ and {a.dockerfile}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
