#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: secure metrics like kubebuilder v4 (issue 24 part 2) against
`luaop apiserver --authorization-mode=RBAC` (its TokenReview and SubjectAccessReview).

The operator runs as the ServiceAccount luaop-system/luaop with config/rbac's
metrics_auth_role.yaml applied as shipped (tokenreviews + subjectaccessreviews create) and a Role
for its ConfigMaps; `--metrics-secure` on a free loopback port. Proves:
  - /metrics is HTTPS only (a plain-HTTP request gets no metrics) with a self-signed certificate
    for localhost/127.0.0.1;
  - no token → 401 "Unauthorized", a token the API server does not know → 401, a ServiceAccount
    not bound to config/rbac/metrics_reader_role.yaml → 403 "Authorization denied for user
    system:serviceaccount:monitoring:other", one bound to it → 200 whose body parses with
    python3-prometheus-client and carries controller-runtime's families;
  - the answers are cached: repeated scrapes with the same token send no further TokenReview or
    SubjectAccessReview (the operator's own rest_client_requests_total{method="POST"} stays put);
  - the probes stay plain HTTP on the probe address;
  - --metrics-cert-dir: the files' certificate is served, and a new pair written over them is
    served without a restart (certwatcher).
"""
import http.client
import os
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402

NS = "work"
OP_ROLE = f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: op, namespace: {NS}}}
rules:
- {{apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch", "patch"]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: op, namespace: {NS}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: op}}
subjects: [{{kind: ServiceAccount, name: luaop, namespace: luaop-system}}]
"""


def scrape(port, token=None, path="/metrics"):
    """(status, body) of an HTTPS GET that does not verify the certificate (insecureSkipVerify)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=20, context=ctx) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def served_cert(port):
    """The DER certificate the server presents."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname="localhost") as t:
            return t.getpeercert(binary_form=True)


def cert_subject(der):
    r = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-subject"], input=der,
                       capture_output=True, timeout=20)
    return r.stdout.decode().strip()


def posts(text):
    """The operator's own POSTs so far (rest_client_requests_total{method="POST"}, every code)."""
    n = 0
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "rest_client_requests_total" and s.labels.get("method") == "POST":
                n += s.value
    return n


def make_cert(d, cn):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", os.path.join(d, "tls.key.new"), "-out", os.path.join(d, "tls.crt.new"),
                    "-days", "2", "-subj", f"/CN={cn}", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    os.rename(os.path.join(d, "tls.key.new"), os.path.join(d, "tls.key"))
    os.rename(os.path.join(d, "tls.crt.new"), os.path.join(d, "tls.crt"))


def setup_cluster(kc):
    h.kubectl(kc, "create", "namespace", "luaop-system")
    h.kubectl(kc, "create", "namespace", "monitoring")
    h.kubectl(kc, "create", "namespace", NS)
    h.kubectl(kc, "-n", "luaop-system", "create", "serviceaccount", "luaop")
    h.kubectl(kc, "-n", "monitoring", "create", "serviceaccount", "prometheus")
    h.kubectl(kc, "-n", "monitoring", "create", "serviceaccount", "other")
    for f in ("metrics_auth_role.yaml", "metrics_reader_role.yaml"):
        h.kubectl(kc, "apply", "-f", os.path.join(os.environ["LUAOP_SRC"], "config", "rbac", f))
    h.kubectl(kc, "create", "clusterrolebinding", "prometheus-metrics", "--clusterrole=luaop-metrics-reader",
            "--serviceaccount=monitoring:prometheus")
    h.kubectl(kc, "apply", "-f", "-", stdin=OP_ROLE)


def check_scrapes(srv, op, mport, pport, kc):
    allowed = h.kubectl(kc, "-n", "monitoring", "create", "token", "prometheus").strip()
    other = h.kubectl(kc, "-n", "monitoring", "create", "token", "other").strip()
    code, text = h.wait_for("the metrics server to answer", 20, lambda: scrape(mport, allowed), [srv, op])
    h.check(code == 200, f"an allowed token scrapes 200 (got {code}: {text[:200]})")
    samples = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    h.check("controller_runtime_active_workers" in samples and "workqueue_depth" in samples,
            "the body parses and carries controller-runtime's families")
    before = posts(text)
    h.check(before >= 2, f"the first scrape cost a TokenReview and a SubjectAccessReview (POSTs {before})")
    for _ in range(3):
        code, text = scrape(mport, allowed)
    h.check(code == 200 and posts(text) == before,
            f"repeated scrapes are answered from the caches (POSTs {before} -> {posts(text)})")
    code, text = scrape(mport)
    h.check((code, text) == (401, "Unauthorized\n"), f"no token → 401 Unauthorized (got {code} {text!r})")
    code, text = scrape(mport, "not-a-token")
    h.check((code, text) == (401, "Unauthorized\n"), f"an unknown token → 401 (got {code} {text!r})")
    code, text = scrape(mport, other)
    h.check((code, text) == (403, "Authorization denied for user system:serviceaccount:monitoring:other\n"),
            f"an unbound account → 403 (got {code} {text!r})")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10) as r:
            plain = r.read()
    except (urllib.error.URLError, OSError, http.client.HTTPException):
        plain = b""
    h.check(b"controller_runtime" not in plain, "plain HTTP gets no metrics from the secure port")
    with urllib.request.urlopen(f"http://127.0.0.1:{pport}/readyz", timeout=10) as r:
        h.check(r.status == 200, "the probes stay plain HTTP on their own address")
    h.check("CN = localhost" in cert_subject(served_cert(mport)), "a self-signed certificate for localhost")


def body():
    srv, kc = h.start_rbac_apiserver()
    setup_cluster(kc)
    op_kc = h.token_kubeconfig(kc, "luaop", h.kubectl(kc, "-n", "luaop-system", "create", "token", "luaop").strip())
    scripts = os.path.join(h.FIXTURES, "restricted")
    mport, pport = h.free_port(), h.free_port()
    op = h.spawn("operator", ["run", "--scripts", scripts, "--kubeconfig", op_kc, "--namespace", NS,
                              "--metrics-bind-address", f"127.0.0.1:{mport}", "--metrics-secure",
                              "--health-probe-bind-address", f"127.0.0.1:{pport}"])
    check_scrapes(srv, op, mport, pport, kc)
    h.stop(op)

    # certificates from --metrics-cert-dir, reloaded when they change
    certs = os.path.join(h.TMP, "certs")
    os.mkdir(certs)
    make_cert(certs, "metrics-one")
    mport = h.free_port()
    op2 = h.spawn("operator-certs", ["run", "--scripts", scripts, "--kubeconfig", op_kc, "--namespace", NS,
                                     "--metrics-bind-address", f"127.0.0.1:{mport}", "--metrics-secure=true",
                                     "--metrics-cert-dir", certs, "--health-probe-bind-address", "0"])

    def subject():
        try:
            return cert_subject(served_cert(mport))
        except OSError:
            return ""
    h.wait_for("the files' certificate to be served", 20, lambda: "metrics-one" in subject(), [srv, op2])
    make_cert(certs, "metrics-two")
    h.wait_for("the new certificate to be served", 30, lambda: "metrics-two" in subject(), [srv, op2])
    allowed = h.kubectl(kc, "-n", "monitoring", "create", "token", "prometheus").strip()
    code, _ = scrape(mport, allowed)
    h.check(code == 200, f"an allowed scrape over the reloaded certificate (got {code})")
    h.stop(op2)


if __name__ == "__main__":
    h.main("operator_secure_metrics", body)
