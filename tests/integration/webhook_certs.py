#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test (issue 21 part 3b): self-managed webhook certificates in `luaop run`.

The local API server maps the Service luaop-system/luaop-webhook-service to the operator's
loopback port and verifies the caBundle over TLS when it calls the webhook (apiserver/README.md).

  A. `luaop run --webhook-cert-secret luaop-system/luaop-webhook-certs` creates the Secret (ca.crt,
     ca.key, tls.crt, tls.key; the certificate names luaop-webhook-service.luaop-system.svc) and
     injects ca.crt as caBundle into the ValidatingWebhookConfiguration and the conversion CRD.
  B. `kubectl apply` of an invalid ConfigMap is denied through the API server's webhook call, with
     the Lua reason; a valid one is admitted.
  B2. A second replica (both run --leader-elect) is a standby: it does not write, it serves the
     pair from the Secret, and it follows every rotation.
  C. Short lifetimes (--webhook-cert-validity 12s, --webhook-ca-validity 40s) force rotations while a
     bounded stream of admission requests goes through the API server: the serving certificate is
     re-issued (openssl s_client sees a new serial, no restart), the CA is rotated with the old one
     kept in the injected bundle, the serving certificate then moves to the new CA — and no review
     fails.
"""
import base64
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
import sys

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402

NS, SECRET, SVC = "luaop-system", "luaop-webhook-certs", "luaop-webhook-service"
HOST = f"{SVC}.{NS}.svc"
VCFG = "luaop-validating-webhook-configuration"


def kubectl(kc, *args, stdin=None):
    return subprocess.run(["kubectl", "--kubeconfig", kc] + list(args), input=stdin, capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, KUBECACHEDIR=os.path.join(h.TMP, "kcache")))


def served_cert(port):
    """The PEM certificate the webhook server presents on a new connection (openssl s_client)."""
    out = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", HOST],
                         input=b"", capture_output=True, timeout=20).stdout
    pem = subprocess.run(["openssl", "x509"], input=out, capture_output=True).stdout.decode()
    serial = subprocess.run(["openssl", "x509", "-noout", "-serial"], input=out, capture_output=True).stdout.decode()
    return pem, serial.strip().split("=")[-1]


def certs_in(bundle_pem):
    parts = bundle_pem.split("-----END CERTIFICATE-----")
    return [p.strip() + "\n-----END CERTIFICATE-----\n" for p in parts if "BEGIN CERTIFICATE" in p]


def verifies(ca_pem, cert_pem):
    with tempfile.NamedTemporaryFile("w", dir=h.TMP, suffix=".pem", delete=False) as ca, \
            tempfile.NamedTemporaryFile("w", dir=h.TMP, suffix=".pem", delete=False) as c:
        ca.write(ca_pem)
        c.write(cert_pem)
    r = subprocess.run(["openssl", "verify", "-CAfile", ca.name, c.name], capture_output=True)
    return r.returncode == 0


def secret_data(api):
    s = api.get(f"/api/v1/namespaces/{NS}/secrets/{SECRET}")
    if not s or not all(k in s.get("data", {}) for k in ("ca.crt", "ca.key", "tls.crt", "tls.key")):
        return None
    return {k: base64.b64decode(v).decode() for k, v in s["data"].items()}


def injected(api):
    c = api.get(f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{VCFG}")
    b = [w.get("clientConfig", {}).get("caBundle") for w in (c or {}).get("webhooks", [])]
    return base64.b64decode(b[0]).decode() if b and all(x == b[0] for x in b) and b[0] else None


def setup(api, kc):
    api.namespace(NS)
    cfg = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
           "metadata": {"name": VCFG},
           "webhooks": [{"name": "vconfigmap.luaop.test", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                         "failurePolicy": "Fail", "objectSelector": {"matchLabels": {"checked": "yes"}},
                         "clientConfig": {"service": {"namespace": NS, "name": SVC,
                                                      "path": "/validate--v1-configmap"}},
                         "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                    "resources": ["configmaps"]}]}]}
    api.ok("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", cfg)
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                    "conversion": {"strategy": "Webhook", "webhook": {
                        "conversionReviewVersions": ["v1"],
                        "clientConfig": {"service": {"namespace": NS, "name": SVC, "path": "/convert"}}}},
                    "versions": [{"name": v, "served": True, "storage": v == "v1",
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}
                                 for v in ("v1", "v2")]}}
    api.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)


def cm(name, data):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": {"checked": "yes"}}, "data": data}


def body():
    scripts = os.path.join(h.TMP, "scripts")
    shutil.copytree(os.path.join(h.FIXTURES, "webhooks"), scripts)
    port = h.free_port()
    srv, url, kc = h.start_apiserver(extra=["--webhook-service", f"{NS}/{SVC}=127.0.0.1:{port}"])
    api = h.Api(url)
    setup(api, kc)
    common = ["--webhook-cert-secret", f"{NS}/{SECRET}", "--webhook-cert-validity", "12s",
              "--webhook-ca-validity", "40s", "--leader-elect", "--leader-election-id", "luaop-webhook-test",
              "--leader-election-namespace", NS]
    op = h.start_operator("operator", scripts, kc, ["--webhook-bind-address", f"127.0.0.1:{port}"] + common)

    # A. the Secret, the names, the injection
    data = h.wait_for("the Secret with four keys", 30, lambda: secret_data(api), [op])
    h.check(len(certs_in(data["ca.crt"])) == 1 and verifies(data["ca.crt"], data["tls.crt"]),
            "the Secret holds a CA and a serving certificate it signed")
    san = subprocess.run(["openssl", "x509", "-noout", "-ext", "subjectAltName"], input=data["tls.crt"].encode(),
                         capture_output=True).stdout.decode()
    h.check(f"DNS:{HOST}" in san and f"DNS:{HOST}.cluster.local" in san, f"the certificate names {HOST} ({san!r})")
    h.wait_for("the caBundle injected into the ValidatingWebhookConfiguration", 30,
               lambda: injected(api) == secret_data(api)["ca.crt"], [op])
    h.check(True, "caBundle injected into every webhook of the ValidatingWebhookConfiguration")

    def crd_bundle():
        c = api.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
        b = c and c["spec"]["conversion"]["webhook"]["clientConfig"].get("caBundle")
        return b and base64.b64decode(b).decode() == secret_data(api)["ca.crt"]
    h.wait_for("the caBundle injected into the conversion CRD", 30, crd_bundle, [op])
    h.check(True, "caBundle injected into the CRD's spec.conversion.webhook.clientConfig")
    h.wait_for("serving webhooks", 30, lambda: op.oplog.find(msg="serving webhooks"), [op])

    # B. through the API server's webhook call, verified against the injected CA
    path = os.path.join(h.TMP, "bad.yaml")
    with open(path, "w") as f:
        json.dump(cm("bad", {"bad": "1"}), f)
    r = kubectl(kc, "apply", "-f", path)
    h.check(r.returncode != 0 and "data.bad is not allowed" in r.stderr,
            f"kubectl apply of an invalid ConfigMap is denied with the Lua reason ({r.stderr.strip()[-200:]})")
    with open(path, "w") as f:
        json.dump(cm("good", {"fine": "1"}), f)
    r = kubectl(kc, "apply", "-f", path)
    h.check(r.returncode == 0, f"a valid ConfigMap is admitted ({r.stderr.strip()[-200:]})")

    # B2. a standby replica serves the Secret's pair
    h.wait_for("the first replica to lead", 30, lambda: op.oplog.find(msg="became leader; starting workers"), [op])
    port2 = h.free_port()
    op2 = h.start_operator("standby", scripts, kc, ["--webhook-bind-address", f"127.0.0.1:{port2}"] + common)
    h.wait_for("the standby to serve webhooks", 30, lambda: op2.oplog.find(msg="serving webhooks"), [op2])
    h.wait_for("the standby to serve the leader's certificate", 30,
               lambda: served_cert(port2)[1] == served_cert(port)[1], [op, op2])
    h.check(not op2.oplog.find(msg="became leader; starting workers")
            and not op2.oplog.find(msg="webhook certificates written"),
            "the standby serves the Secret's certificate and writes nothing")

    # C. rotations under a bounded stream of admission requests
    first_pem, first_serial = served_cert(port)
    first_ca = certs_in(data["ca.crt"])[0]
    failed, done = [], [0]
    stop = threading.Event()

    def stream():
        mine = h.Api(url)
        n = 0
        while not stop.is_set() and n < 20000:
            n += 1
            code, obj = mine.req("POST", "/api/v1/namespaces/default/configmaps", cm(f"s{n}", {"n": str(n)}))
            if code != 201:
                failed.append((code, obj))
            done[0] = n
    t = threading.Thread(target=stream)
    t.start()
    h.wait_for("reviews flowing", 20, lambda: done[0] >= 10, [op])
    seen = {"serials": {first_serial}, "two_cas": False, "moved": False}

    def progressed():
        pem, serial = served_cert(port)
        seen["serials"].add(serial)
        b = injected(api) or ""
        cas = certs_in(b)
        if len(cas) == 2 and cas[1].strip() == first_ca.strip():
            seen["two_cas"] = True
        if seen["two_cas"] and cas and cas[0].strip() != first_ca.strip() and verifies(cas[0], pem) \
                and not verifies(first_ca, pem):
            seen["moved"] = True
        return seen["moved"]
    h.wait_for("the CA rotated and the serving certificate moved to it", 90, progressed, [op])
    n_at = done[0]
    h.wait_for("reviews after the move", 20, lambda: done[0] >= n_at + 20 or not t.is_alive(), [op])
    stop.set()
    t.join(timeout=30)
    h.check(len(seen["serials"]) >= 2, f"openssl s_client sees new serials without a restart ({sorted(seen['serials'])})")
    h.check(seen["two_cas"], "the new CA was injected with the old one kept behind it")
    h.check(seen["moved"], "the serving certificate moved to the new CA afterwards")
    h.check(not failed and done[0] >= 40, f"{done[0]} admission requests across the rotations, none failed "
                                          f"({failed[:3]})")
    h.check(op.poll() is None and len(op.oplog.find(msg="serving webhooks")) == 1, "no restart: one server throughout")
    final = secret_data(api)["tls.crt"]
    h.wait_for("the standby to serve the rotated certificate", 30,
               lambda: served_cert(port2)[0].strip() == served_cert(port)[0].strip(), [op, op2])
    h.check(not op2.oplog.find(msg="webhook certificates written") and bool(final),
            "the standby followed the rotations without writing the Secret")
    h.stop(op2)
    h.stop(op)


h.main("webhook_certs", body)
