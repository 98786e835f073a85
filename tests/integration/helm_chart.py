#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test (issue 24 part 7): charts/luaop.

helm cannot be installed here (not in Debian, not on npm). The chart uses only Go text/template's
own constructs, so it is rendered with Go's text/template itself, compiled to WebAssembly (npm
@evertdespiegeleer/go-template, pinned by tests/integration/fixtures/helm/package-lock.json and
installed with `npm ci` into the build directory); fixtures/helm/render.mjs assembles the
templates and .Values/.Release/.Chart as `helm template` does.

  A. Without a renderer: Chart.yaml (apiVersion v2, name, semver version, appVersion = `luaop
     version`, kubeVersion), values.yaml parses, every .Values path a template reads exists in
     values.yaml, and no template calls a function Go templates lack (sprig, include, toYaml...).
  B. Default values (release "luaop" in luaop-system): every document parses, no "<no value>";
     the ClusterRole's rules are the memcached example's `luaop check --rbac` rules; 2 replicas
     with --leader-elect and a PDB (minAvailable 1) selecting exactly the pods; every flag in the
     Deployment's args is one `luaop run --help` lists.
  C. Every option on (scripts ConfigMap from the example's files, webhook + cert-manager, metrics
     Service + ServiceMonitor, watchNamespace, podLabels, nodeSelector, extraArgs): the Service
     selectors match the pods, 443 -> the webhook-server port, the Certificate's DNS names are the
     webhook Service's and its Secret is the mounted one, the ServiceMonitor selects the metrics
     Service by label and port name, the ConfigMap passes `luaop check --configmap`.
  D. In-image scripts, no leader election, 1 replica, no PDB, rules with resourceNames, an
     external issuer: --scripts PATH, no Lease Role, no scripts Role, the issuerRef passed on.
  E. B and C apply to the local API server (stand-in CRDs for cert-manager and ServiceMonitor;
     the PDB, policy/v1, is not served there and is checked structurally in B), and `luaop run`
     with C's Deployment args (ports made free) reads the chart's ConfigMap and reconciles.
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402
import yaml  # noqa: E402

SRC, LUAOP = h.SRC, h.LUAOP
CHART = os.path.join(SRC, "charts", "luaop")
HELM_FIXTURE = os.path.join(h.FIXTURES, "helm")
STUBS = os.path.join(h.FIXTURES, "deploy", "stub_crds.yaml")
MC = os.path.join(SRC, "examples", "memcached")
# helm's functions that Go's text/template does not have (sprig's and helm's own), as calls
NOT_GO = ["include", "toYaml", "nindent", "indent", "default", "quote", "squote", "required", "tpl", "trunc",
          "trimSuffix", "contains", "toJson", "fromYaml", "lookup", "dict", "list", "merge", "int", "upper", "lower"]


def load(path):
    with open(path) as f:
        return yaml.safe_load(f)


def templates():
    d = os.path.join(CHART, "templates")
    return {f: open(os.path.join(d, f)).read() for f in sorted(os.listdir(d))}


def has_path(values, path):
    cur = values
    for key in path:
        if not isinstance(cur, dict) or key not in cur:
            return False
        cur = cur[key]
    return True


def check_static():
    chart = load(os.path.join(CHART, "Chart.yaml"))
    version = re.match(r"luaop (\S+)", subprocess.run([LUAOP, "version"], capture_output=True, text=True).stdout)
    h.check(chart.get("apiVersion") == "v2" and chart.get("name") == "luaop" and chart.get("type") == "application",
            "A: Chart.yaml apiVersion v2, name luaop, type application")
    h.check(bool(re.match(r"^\d+\.\d+\.\d+$", str(chart.get("version")))), "A: Chart.yaml version is semver")
    h.check(version and chart.get("appVersion") == version.group(1),
            f"A: appVersion {chart.get('appVersion')} is luaop's version")
    h.check(bool(chart.get("description")) and str(chart.get("kubeVersion", "")).startswith(">="),
            "A: description and kubeVersion")
    values = load(os.path.join(CHART, "values.yaml"))
    h.require(isinstance(values, dict), "A: values.yaml parses to a mapping")
    used, missing, foreign = set(), [], []
    for name, text in templates().items():
        for m in re.finditer(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)", text):
            path = m.group(1).strip(".").split(".")
            used.add(".".join(path))
            if not has_path(values, path):
                missing.append(f"{name}: .Values.{'.'.join(path)}")
        for action in re.findall(r"\{\{-?(.*?)-?\}\}", text, re.S):
            if action.strip().startswith("/*"):
                continue
            for fn in NOT_GO:
                if re.search(rf"(^|[\s(|]){fn}(\s|$)", action):
                    foreign.append(f"{name}: {fn}")
    h.check(not missing, f"A: every .Values path the templates read ({len(used)}) is in values.yaml "
            f"(missing: {missing})")
    h.check(not foreign, f"A: no helm/sprig-only functions in the templates ({foreign})")
    return chart, values


def install_renderer():
    """The renderer's node_modules in the build directory; None when node or npm is missing."""
    if not shutil.which("node") or not shutil.which("npm"):
        return None
    d = os.path.join(os.environ.get("LUAOP_BUILD", h.TMP), "helm-render")
    os.makedirs(d, exist_ok=True)
    for f in ("package.json", "package-lock.json", "render.mjs"):
        shutil.copy(os.path.join(HELM_FIXTURE, f), d)
    marker = os.path.join(d, "node_modules", "@evertdespiegeleer", "go-template", "package.json")
    if not os.path.exists(marker) or load(marker).get("version") != "1.0.2":
        p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=d,
                           capture_output=True, text=True, timeout=240)
        h.require(p.returncode == 0, f"npm ci of the renderer ({p.stderr.strip()[-400:]})")
    return d


def merge(base, over):
    """helm's values merge: maps merge key by key, anything else is replaced."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def render(renderer, chart, values, release, namespace):
    meta = {"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"],
            "name": chart["name"]}
    inp = {"chartDir": CHART, "values": values, "chart": meta,
           "release": {"Name": release, "Namespace": namespace, "Service": "Helm", "IsInstall": True}}
    p = subprocess.run(["node", os.path.join(renderer, "render.mjs")], input=json.dumps(inp),
                       capture_output=True, text=True, timeout=120)
    h.require(p.returncode == 0, f"{release}: the chart renders ({p.stderr.strip()[-600:]})")
    h.check("<no value>" not in p.stdout, f"{release}: no '<no value>' in the output")
    try:
        docs = [d for d in yaml.safe_load_all(p.stdout) if d]
    except yaml.YAMLError as e:
        h.require(False, f"{release}: the output is YAML ({e})")
    return docs


def one(docs, kind, suffix=""):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]
    h.require(len(found) == 1, f"one {kind} *{suffix} (got {len(found)})")
    return found[0]


def kinds(docs):
    return sorted(d["kind"] for d in docs)


def manager(docs):
    dep = one(docs, "Deployment", "-controller-manager")
    return dep, dep["spec"]["template"]["spec"]["containers"][0]


def selects(selector, pod_labels):
    return bool(selector) and all(pod_labels.get(k) == v for k, v in selector.items())


def known_flags():
    out = subprocess.run([LUAOP, "run", "--help"], capture_output=True, text=True)
    return set(re.findall(r"--([a-z0-9-]+)", out.stdout + out.stderr))


def check_default(docs):
    rbac = subprocess.run([LUAOP, "check", "--rbac", "--scripts", os.path.join(MC, "scripts"), "--crd",
                           os.path.join(MC, "crd", "cache.example.com_memcacheds.yaml")],
                          capture_output=True, text=True).stdout
    want = [r for d in yaml.safe_load_all(rbac) if d and d["kind"] == "ClusterRole" for r in d["rules"]]
    h.check(one(docs, "ClusterRole")["rules"] == want, "B: ClusterRole rules == memcached's luaop check --rbac")
    dep, c = manager(docs)
    h.check(dep["spec"]["replicas"] == 2 and "--leader-elect" in c["args"], "B: 2 replicas with --leader-elect")
    pdb = one(docs, "PodDisruptionBudget")
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    h.check(pdb["spec"]["minAvailable"] == 1 and selects(pdb["spec"]["selector"]["matchLabels"], pod_labels) and
            pdb["spec"]["selector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"],
            "B: PDB minAvailable 1 selects the Deployment's pods")
    flags = known_flags()
    unknown = [a for a in c["args"] if a.startswith("--") and a[2:].split("=")[0] not in flags]
    h.check(not unknown, f"B: every arg is a luaop run flag (unknown: {unknown})")
    h.check(dep["metadata"]["name"] == "luaop-controller-manager", "B: release luaop names it luaop-controller-manager")
    h.check(not {"Certificate", "Issuer", "ServiceMonitor", "ConfigMap"} & set(kinds(docs)),
            f"B: the opt-in kinds are off by default ({kinds(docs)})")


def full_values(values):
    files = {f: open(os.path.join(MC, "scripts", f)).read() for f in sorted(os.listdir(os.path.join(MC, "scripts")))}
    return merge(values, {
        "scripts": {"configMap": {"name": "mc-scripts", "files": files}},
        "webhook": {"enabled": True, "certManager": {"enabled": True}},
        "metrics": {"service": {"enabled": True}, "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}},
        "watchNamespace": "team-a",
        "podLabels": {"team": "a"},
        "podAnnotations": {"example.com/note": "x"},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "extraArgs": ["--zap-log-level=debug"],
    })


def check_full(docs, ns):
    dep, c = manager(docs)
    pod = dep["spec"]["template"]["spec"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    h.check(labels.get("team") == "a" and pod["nodeSelector"] == {"kubernetes.io/os": "linux"},
            "C: podLabels and nodeSelector reach the pod")
    for a in ("--namespace=team-a", "--zap-log-level=debug", f"--scripts-configmap={ns}/mc-scripts"):
        h.check(a in c["args"], f"C: arg {a}")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    svc = one(docs, "Service", "-webhook-service")
    h.check(selects(svc["spec"]["selector"], labels) and svc["spec"]["ports"][0]["port"] == 443 and
            svc["spec"]["ports"][0]["targetPort"] == "webhook-server" and ports.get("webhook-server") == 9443,
            "C: webhook Service 443 -> the pods' webhook-server port 9443")
    cert, issuer = one(docs, "Certificate"), one(docs, "Issuer")
    name = svc["metadata"]["name"]
    h.check(cert["spec"]["dnsNames"] == [f"{name}.{ns}.svc", f"{name}.{ns}.svc.cluster.local"],
            f"C: Certificate DNS names are the webhook Service's ({cert['spec']['dnsNames']})")
    h.check(cert["spec"]["issuerRef"] == {"kind": "Issuer", "name": issuer["metadata"]["name"]},
            "C: the Certificate uses the chart's Issuer")
    mount = next(m for m in c["volumeMounts"] if m["mountPath"] == "/tmp/k8s-webhook-server/serving-certs")
    vol = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    h.check(vol["secret"]["secretName"] == cert["spec"]["secretName"] and
            "--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs" in c["args"],
            "C: the Certificate's Secret is mounted at --webhook-cert-dir")
    msvc, sm = one(docs, "Service", "-metrics"), one(docs, "ServiceMonitor")
    h.check(selects(msvc["spec"]["selector"], labels) and msvc["spec"]["ports"][0]["targetPort"] == "metrics" and
            "metrics" in ports, "C: metrics Service selects the pods' metrics port")
    ep = sm["spec"]["endpoints"][0]
    h.check(selects(sm["spec"]["selector"]["matchLabels"], msvc["metadata"]["labels"]) and
            ep["port"] == msvc["spec"]["ports"][0]["name"] and sm["metadata"]["labels"].get("release") == "prom",
            "C: ServiceMonitor selects the metrics Service by label and port name, with its extra label")
    cm = one(docs, "ConfigMap")
    path = os.path.join(h.TMP, "chart-cm.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cm, f)
    p = subprocess.run([LUAOP, "check", "--configmap", path], capture_output=True, text=True)
    want = sorted(os.listdir(os.path.join(MC, "scripts")))
    h.check(p.returncode == 0 and sorted(cm["data"]) == want, f"C: the scripts ConfigMap {want} passes luaop check "
            f"({p.stderr.strip()[-300:]})")


def check_minimal(renderer, chart, values):
    v = merge(values, {"scripts": {"source": "image", "path": "/scripts"}, "leaderElection": {"enabled": False},
                       "replicaCount": 1, "podDisruptionBudget": {"enabled": False},
                       "webhook": {"enabled": True, "certSecretName": "my-cert",
                                   "certManager": {"enabled": True, "issuerRef": {"kind": "ClusterIssuer",
                                                                                  "name": "corp-ca"}}},
                       "rbac": {"rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["s1"],
                                           "verbs": ["get"]}]}})
    docs = render(renderer, chart, v, "mini", "mini-ns")
    dep, c = manager(docs)
    h.check("--scripts=/scripts" in c["args"] and not any(a.startswith("--leader-elect") for a in c["args"]) and
            dep["spec"]["replicas"] == 1, "D: --scripts PATH, no leader election, 1 replica")
    h.check(kinds(docs).count("Role") == 0 and "PodDisruptionBudget" not in kinds(docs) and "Issuer" not in kinds(docs),
            f"D: no Lease/scripts Role, no PDB, no chart Issuer ({kinds(docs)})")
    h.check(one(docs, "ClusterRole")["rules"] == v["rbac"]["rules"], "D: rules with resourceNames pass through")
    cert = one(docs, "Certificate")
    h.check(cert["spec"]["issuerRef"] == {"kind": "ClusterIssuer", "name": "corp-ca"} and
            cert["spec"]["secretName"] == "my-cert", "D: the external issuer and Secret name are used")


def apply(kc, docs, ns, tag):
    env = dict(os.environ, KUBECONFIG=kc)
    subprocess.run(["kubectl", "create", "namespace", ns], capture_output=True, env=env)
    served = [d for d in docs if d["kind"] != "PodDisruptionBudget"]
    p = subprocess.run(["kubectl", "apply", "-f", "-"], input=yaml.safe_dump_all(served), capture_output=True,
                       text=True, env=env)
    h.check(p.returncode == 0, f"{tag}: kubectl apply of {len(served)} objects ({p.stderr.strip()[-400:]})")
    n = 0
    for d in served:
        md = d["metadata"]
        group = d["apiVersion"].split("/")[0] if "/" in d["apiVersion"] else ""
        args = ["kubectl", "get", f"{d['kind']}.{group}" if group else d["kind"], md["name"]]
        args += ["-n", md["namespace"]] if "namespace" in md else []
        n += subprocess.run(args, capture_output=True, env=env).returncode == 0
    h.check(n == len(served), f"{tag}: every applied object reads back ({n}/{len(served)})")


def run_chart_args(kc, api, docs, ns):
    """luaop run with the chart's args (ports made free): the chart's ConfigMap is the script set."""
    subprocess.run(["kubectl", "--kubeconfig", kc, "apply", "-f", os.path.join(MC, "crd")], capture_output=True)
    _, c = manager(docs)
    mport, pport = h.free_port(), h.free_port()
    args = ["--webhook-bind-address=0"]  # the set declares webhooks; there is no certificate here
    for a in c["args"]:
        if a.startswith("--metrics-bind-address="):
            a = f"--metrics-bind-address=127.0.0.1:{mport}"
        elif a.startswith("--health-probe-bind-address="):
            a = f"--health-probe-bind-address=127.0.0.1:{pport}"
        elif a.startswith("--webhook-"):
            continue
        args.append(a)
    p = h.spawn("operator", ["run", "--kubeconfig", kc] + args)
    h.wait_for("the operator's /readyz", 30, lambda: _ready(pport), procs=[p])
    h.check(True, "E: luaop run with the chart's args is ready")
    # v1, the storage version: v1alpha1 would need the conversion webhook this run does not serve
    api.ok("POST", "/apis/cache.example.com/v1/namespaces/team-a/memcacheds",
           {"apiVersion": "cache.example.com/v1", "kind": "Memcached",
            "metadata": {"name": "m", "namespace": "team-a"}, "spec": {"replicas": 2, "port": 11211}})
    dep = h.wait_for("the Deployment the chart's scripts make", 30,
                     lambda: api.get("/apis/apps/v1/namespaces/team-a/deployments/m"), procs=[p])
    h.check(dep["spec"]["replicas"] == 2, "E: the scripts from the chart's ConfigMap reconcile a Memcached")
    h.stop(p)


def _ready(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def body():
    chart, values = check_static()
    renderer = install_renderer()
    h.require(renderer is not None, "node and npm are on this machine (make deps installs them): the chart "
              "is rendered by Go's text/template through node")
    docs = render(renderer, chart, values, "luaop", "luaop-system")
    check_default(docs)
    full = render(renderer, chart, full_values(values), "full", "full-ns")
    check_full(full, "full-ns")
    check_minimal(renderer, chart, values)
    _, url, kc = h.start_apiserver()
    api = h.Api(url)
    subprocess.run(["kubectl", "--kubeconfig", kc, "apply", "-f", STUBS], capture_output=True, check=True)
    apply(kc, docs, "luaop-system", "E default")
    apply(kc, full, "full-ns", "E full")
    api.namespace("team-a")
    run_chart_args(kc, api, full, "full-ns")


h.main("helm_chart", body)
