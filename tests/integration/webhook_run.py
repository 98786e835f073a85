#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test (issue 21 parts 2, 3a, 8): `luaop run` serves the script set's webhooks over
HTTPS, on a certificate directory laid out as kubelet projects a Secret.

  A. Without the certificate files `luaop run` exits 1 naming the missing file; with
     --webhook-bind-address=0 the same set runs (no webhook server).
  B. AdmissionReview v1 to the validator: denied with the Lua reason (403) and the uid echoed;
     allowed with a warning; a raising script is denied with 500 naming main.lua:line.
     To the defaulter: allowed with a JSONPatch adding the label. A ConversionReview: objects
     converted in order, and back again without loss. Unknown path 404, GET 405.
  C. The scripts are edited: the next review answers with the new reason (no restart).
  D. The certificate is rotated with kubelet's atomic ..data symlink swap while reviews keep
     coming: no review fails, and `openssl s_client` sees the new serial without a restart.
  E. /metrics has controller_runtime_webhook_requests_total{webhook=...,code="200"} and the
     latency histogram.
"""
import base64
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402

VALIDATE = "/validate--v1-configmap"
MUTATE = "/mutate--v1-configmap"


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True)


def make_ca(d):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.crt",
            "-days", "2", "-subj", "/CN=luaop-test-ca")


def make_serving(d, out, serial):
    """A serving certificate for 127.0.0.1 signed by the CA, with the given serial, into out/."""
    os.makedirs(out)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{out}/tls.key", "-out", f"{out}/tls.csr",
            "-subj", "/CN=luaop-webhook")
    ext = f"{out}/ext.cnf"
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", f"{out}/tls.csr", "-CA", f"{d}/ca.crt", "-CAkey", f"{d}/ca.key",
            "-set_serial", str(serial), "-days", "2", "-extfile", ext, "-out", f"{out}/tls.crt")


def project(certdir, version):
    """kubelet's layout: certdir/..<version>/ holds the files, ..data -> it, tls.* -> ..data/tls.*;
    a new version replaces ..data by renaming a fresh symlink over it (atomic)."""
    tmp = os.path.join(certdir, "..data_tmp")
    os.symlink(version, tmp)
    os.rename(tmp, os.path.join(certdir, "..data"))
    for f in ("tls.crt", "tls.key"):
        p = os.path.join(certdir, f)
        if not os.path.lexists(p):
            os.symlink(os.path.join("..data", f), p)


class Client:
    def __init__(self, port, cafile):
        self.port = port
        self.ctx = ssl.create_default_context(cafile=cafile)

    def post(self, path, body, ctype="application/json", method="POST"):
        c = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=10)
        try:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            c.request(method, path, body=data, headers={"Content-Type": ctype})
            r = c.getresponse()
            raw = r.read()
            return r.status, (json.loads(raw) if raw[:1] == b"{" else raw.decode(errors="replace"))
        finally:
            c.close()


def review(uid, obj, op="CREATE"):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": op, "namespace": "default", "name": obj["metadata"]["name"],
                        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
                        "userInfo": {"username": "tester"}, "object": obj, "dryRun": False}}


def cm(name, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": data}


def serial_seen(port):
    out = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost"],
                         input=b"", capture_output=True, timeout=20).stdout
    x = subprocess.run(["openssl", "x509", "-noout", "-serial"], input=out, capture_output=True).stdout.decode()
    return x.strip().split("=")[-1]


def body():
    certs = os.path.join(h.TMP, "certs")
    os.makedirs(certs)
    make_ca(h.TMP)
    scripts = os.path.join(h.TMP, "scripts")
    shutil.copytree(os.path.join(h.FIXTURES, "webhooks"), scripts)
    srv, url, kc = h.start_apiserver()

    # A. no certificates yet: a clear error; bind 0 serves none
    r = subprocess.run([h.LUAOP, "run", "--scripts", scripts, "--kubeconfig", kc, "--metrics-bind-address", "0",
                        "--health-probe-bind-address", "0", "--webhook-bind-address", "127.0.0.1:0",
                        "--webhook-cert-dir", certs], capture_output=True, text=True, timeout=30)
    h.check(r.returncode == 1 and "tls.crt" in r.stderr and "cannot start the webhook server" in r.stderr,
            f"missing certificates: exit 1 naming tls.crt (rc {r.returncode}: {r.stderr.strip()[-200:]})")
    off = h.start_operator("no-webhooks", scripts, kc, ["--webhook-bind-address", "0"])
    h.wait_for("the operator without webhooks to sync", 20, lambda: off.oplog.find(msg="caches synced; ready"), [off])
    h.check(not off.oplog.find(msg="serving webhooks"), "--webhook-bind-address=0: no webhook server")
    h.stop(off)

    make_serving(h.TMP, os.path.join(certs, "..v1"), 1001)
    project(certs, "..v1")
    port, mport = h.free_port(), h.free_port()
    op = h.start_operator("operator", scripts, kc, ["--webhook-bind-address", f"127.0.0.1:{port}",
                                                    "--webhook-cert-dir", certs,
                                                    "--metrics-bind-address", f"127.0.0.1:{mport}"])
    h.wait_for("serving webhooks", 20, lambda: op.oplog.find(msg="serving webhooks"), [op])
    c = Client(port, os.path.join(h.TMP, "ca.crt"))

    # B. reviews
    code, resp = c.post(VALIDATE, review("u-deny", cm("a", {"bad": "1"})))
    rr = resp.get("response", {}) if isinstance(resp, dict) else {}
    h.check(code == 200 and rr.get("uid") == "u-deny" and rr.get("allowed") is False
            and rr.get("status", {}).get("code") == 403 and rr["status"].get("message") == "data.bad is not allowed",
            f"validator denies with the Lua reason (got {code} {resp})")
    code, resp = c.post(VALIDATE, review("u-warn", cm("b", {"old": "1"})))
    rr = resp.get("response", {}) if isinstance(resp, dict) else {}
    h.check(rr.get("allowed") is True and rr.get("warnings") == ["data.old is deprecated"],
            f"validator allows with a warning (got {resp})")
    code, resp = c.post(VALIDATE, review("u-boom", cm("c", {"boom": "1"})))
    rr = resp.get("response", {}) if isinstance(resp, dict) else {}
    msg = rr.get("status", {}).get("message", "")
    h.check(rr.get("allowed") is False and rr["status"].get("code") == 500 and "main.lua:10: boom requested" in msg,
            f"a raising validator is denied with 500 naming main.lua:10 (got {resp})")
    code, resp = c.post(MUTATE, review("u-mut", cm("d", {})))
    rr = resp.get("response", {}) if isinstance(resp, dict) else {}
    patch = json.loads(base64.b64decode(rr.get("patch", ""))) if rr.get("patch") else []
    h.check(rr.get("allowed") is True and rr.get("patchType") == "JSONPatch"
            and any(p.get("op") == "add" and "labels" in p.get("path", "") for p in patch),
            f"defaulter answers a JSONPatch adding the label (got {resp} {patch})")
    conv = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "c-1", "desiredAPIVersion": "example.com/v2",
                        "objects": [{"apiVersion": "example.com/v1", "kind": "Widget",
                                     "metadata": {"name": f"w{i}"}, "spec": {"size": i}} for i in range(3)]}}
    code, resp = c.post("/convert", conv)
    objs = resp.get("response", {}).get("convertedObjects", []) if isinstance(resp, dict) else []
    h.check(code == 200 and resp["response"].get("result", {}).get("status") == "Success"
            and [o["spec"]["replicas"] for o in objs] == [0, 1, 2]
            and all(o["apiVersion"] == "example.com/v2" and o["metadata"]["name"] == f"w{i}" for i, o in enumerate(objs)),
            f"conversion in order (got {resp})")
    back = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "c-2", "desiredAPIVersion": "example.com/v1", "objects": objs}}
    code, resp = c.post("/convert", back)
    h.check([o.get("spec") for o in resp.get("response", {}).get("convertedObjects", [])] == [{"size": i} for i in range(3)],
            f"and back without loss (got {resp})")
    code, _ = c.post("/validate-nothing", review("u-x", cm("x", {})))
    h.check(code == 404, f"an unknown path is 404 (got {code})")
    code, _ = c.post(VALIDATE, b"", method="GET")
    h.check(code == 405, f"GET is 405 (got {code})")

    # C. reload: the next review answers with the new code
    path = os.path.join(scripts, "main.lua")
    with open(path) as f:
        src = f.read()
    with open(path, "w") as f:
        f.write(src.replace('"data.bad is not allowed"', '"data.bad is refused since the reload"'))

    def reloaded():
        _, r = c.post(VALIDATE, review("u-r", cm("r", {"bad": "1"})))
        return "since the reload" in json.dumps(r)
    h.wait_for("a review answered by the reloaded scripts", 20, reloaded, [op])
    h.check(True, "an edited script set answers the next reviews (no restart)")

    # D. rotation under a bounded stream of reviews
    before = serial_seen(port)
    h.check(before.upper() in ("03E9", "3E9"), f"openssl s_client sees serial 1001 (0x3E9) first (got {before})")
    failed, done = [], [0]
    stop = threading.Event()

    def stream():
        n = 0
        while not stop.is_set() and n < 2000:
            n += 1
            try:
                code, r = c.post(VALIDATE, review(f"s-{n}", cm(f"s{n}", {})))
                if code != 200 or r["response"]["allowed"] is not True:
                    failed.append((code, r))
            except Exception as e:  # noqa: BLE001
                failed.append(repr(e))
            done[0] = n
    t = threading.Thread(target=stream)
    t.start()
    h.wait_for("reviews flowing", 20, lambda: done[0] >= 20, [op])
    make_serving(h.TMP, os.path.join(certs, "..v2"), 2002)
    project(certs, "..v2")
    after = h.wait_for("the new serial on a new connection", 30,
                       lambda: (lambda s: s if s.upper() in ("07D2", "7D2") else None)(serial_seen(port)), [op])
    h.wait_for("reviews after the rotation", 20, lambda: done[0] >= 60 or not t.is_alive(), [op])
    stop.set()
    t.join(timeout=30)
    h.check(after is not None, f"openssl s_client sees serial 2002 (0x7D2) after the swap (got {after})")
    h.check(not failed and done[0] >= 40, f"{done[0]} reviews across the rotation, none failed ({failed[:3]})")
    h.check(bool(op.oplog.find(msg="serving webhooks")) and op.poll() is None, "no restart: the same process serves")

    # E. metrics
    with urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10) as r:
        text = r.read().decode()
    h.check(f'controller_runtime_webhook_requests_total{{webhook="{VALIDATE}",code="200"}}' in text
            or f'controller_runtime_webhook_requests_total{{code="200",webhook="{VALIDATE}"}}' in text,
            "controller_runtime_webhook_requests_total counts the validator's 200s")
    h.check("controller_runtime_webhook_latency_seconds_bucket" in text, "the webhook latency histogram is exported")
    h.stop(op)


h.main("webhook_run", body)
