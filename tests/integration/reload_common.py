#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Shared helpers of the reload_* integration tests, and (run as a test) the start-up wait:

`luaop dev --scripts-configmap default/scripts` before the ConfigMap exists -> /readyz fails with
"scripts failed: configmap default/scripts not found; waiting for it", nothing reconciles; once
the ConfigMap is created the set loads (Normal ScriptsLoaded Event on the ConfigMap), /readyz
passes and names the active version; a ConfigMap without main.lua first -> still not ready, a
Warning Event; SIGTERM while waiting exits 0.

The helpers start `luaop dev` (its own local API server on a free loopback port, metrics and
probes on free loopback ports read back from its log), talk to it with kubectl, and wait for
conditions with deadlines (polling, never sleeping in place of a condition).
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

LUAOP = os.environ.get("LUAOP", "")

CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %(plural)s.example.com
spec:
  group: example.com
  names: {kind: %(kind)s, listKind: %(kind)sList, plural: %(plural)s, singular: %(singular)s}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"""

# A controller for Widgets that writes status.logic = LOGIC and status.n = spec.n (plus
# observedGeneration, which luaop.status.update sets). %(extra)s goes before the controller (e.g. an error at load),
# %(body)s into reconcile before the status write (e.g. raise on some objects).
WIDGET_MAIN = """local op = require("luaop")
local LOGIC = %(logic)s
%(extra)s
op.controller {
  name = "widgets",
  for_ = { api_version = "example.com/v1", kind = "Widget",
           predicates = { op.predicates.generation_changed } },
  reconcile = function(req)
    local w, err = op.client.get("example.com/v1", "Widget", req.namespace, req.name)
    if not w then
      if op.errors.is_not_found(err) then return op.result.done() end
      return nil, err
    end
%(body)s
    local _, serr = op.status.update(w, function(o)
      o.status.logic = LOGIC
      o.status.n = (o.spec or {}).n
    end)
    if serr then return nil, serr end
    return op.result.done()
  end,
}
"""


def widget_main(logic, extra="", body=""):
    return WIDGET_MAIN % {"logic": json.dumps(logic), "extra": extra, "body": body}


def version_of(files):
    """The content hash luaop computes for a script set (host/runtime/scripts.h)."""
    h = hashlib.sha256()
    for name in sorted(files):
        data = files[name].encode()
        h.update(name.encode())
        h.update((":%d:" % len(data)).encode())
        h.update(data)
    return h.hexdigest()[:16]


def configmap_json(files, name="scripts", ns="default", extra_data=None):
    data = dict(files)
    data.update(extra_data or {})
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": name, "namespace": ns}, "data": data})


class Check:
    def __init__(self):
        self.failures = []

    def __call__(self, cond, what):
        print(("ok   " if cond else "FAIL ") + what, file=sys.stderr, flush=True)
        if not cond:
            self.failures.append(what)
        return cond

    def finish(self, name):
        """The verdict: AssertionError naming every failed check, or PASS."""
        if self.failures:
            print("FAILED %s: %s" % (name, "; ".join(self.failures)), file=sys.stderr)
            raise AssertionError("%s: %d check(s) failed: %s" % (name, len(self.failures), "; ".join(self.failures)))
        print("PASS " + name, file=sys.stderr)


class Dev:
    """One `luaop dev` process with its own local API server."""

    def __init__(self, *args, crds=(), env=None, separate=False):
        """separate=True: `luaop apiserver` and `luaop run` as two processes (so the operator's
        memory is its own); self.proc is the operator either way."""
        self.tmp = tempfile.TemporaryDirectory(prefix="luaop-reload-")
        self.kc = os.path.join(self.tmp.name, "kubeconfig")
        self.env = dict(os.environ, KUBECONFIG=self.kc)
        proc_env = dict(os.environ, **(env or {}))
        applies = []
        for i, crd in enumerate(crds):
            p = os.path.join(self.tmp.name, "crd%d.yaml" % i)
            with open(p, "w") as f:
                f.write(crd)
            applies += ["--apply", p]
        self.lines = []
        self.cv = threading.Condition()
        self.apiserver = None
        common = ["--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"]
        if separate:
            self.apiserver = subprocess.Popen(
                [LUAOP, "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out", self.kc],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            first = self.apiserver.stdout.readline()
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", first)
            if not m:
                raise AssertionError("luaop apiserver did not start: %r" % first)
            self.api = m.group(1)
            self.wait_for("the kubeconfig", 20, lambda: os.path.exists(self.kc))
            for crd in applies[1::2]:
                self.kubectl("apply", "-f", crd)
            cmd = [LUAOP, "run", "--kubeconfig", self.kc] + common + list(args)
        else:
            cmd = [LUAOP, "dev", "--kubeconfig-out", self.kc] + common + applies + list(args)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, env=proc_env)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.metrics_port = int(self.wait_log(r'http server listening.*port=(\d+) metrics=true', 20).group(1))
        self.probe_port = int(self.wait_log(r'http server listening.*port=(\d+) metrics=false probes=true', 20).group(1))
        if not separate:
            self.api = self.wait_log(r'url=(http://127\.0\.0\.1:\d+)', 20).group(1)
            self.wait_for("the kubeconfig", 20, lambda: os.path.exists(self.kc))

    def request(self, method, path, body=None, ctype="application/json"):
        """One request to the local API server; returns (status, decoded JSON or None)."""
        data = body.encode() if isinstance(body, str) else body
        req = urllib.request.Request(self.api + path, data=data, method=method,
                                     headers={"Content-Type": ctype} if data else {})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, None

    def create_widget(self, name, n=0, ns="default"):
        code, _ = self.request("POST", "/apis/example.com/v1/namespaces/%s/widgets" % ns,
                               widget_json(name, n, ns))
        if code != 201:
            raise AssertionError("create widget %s: HTTP %d" % (name, code))

    def patch(self, path, patch):
        code, obj = self.request("PATCH", path, json.dumps(patch), "application/merge-patch+json")
        if code != 200:
            raise AssertionError("PATCH %s: HTTP %d %s" % (path, code, obj))
        return obj

    def widget(self, name, ns="default"):
        code, obj = self.request("GET", "/apis/example.com/v1/namespaces/%s/widgets/%s" % (ns, name))
        return obj if code == 200 else None

    def widgets(self, ns="default"):
        return self.request("GET", "/apis/example.com/v1/namespaces/%s/widgets" % ns)[1]["items"]

    def set_scripts(self, files, name="scripts", ns="default"):
        """Write the script ConfigMap's data (merge patch, creating it first when missing)."""
        path = "/api/v1/namespaces/%s/configmaps/%s" % (ns, name)
        code, obj = self.request("PATCH", path, json.dumps({"data": files}),
                                 "application/merge-patch+json")
        if code == 404:
            code, obj = self.request("POST", "/api/v1/namespaces/%s/configmaps" % ns,
                                     configmap_json(files, name, ns))
        if code not in (200, 201):
            raise AssertionError("write configmap: HTTP %d %s" % (code, obj))

    def _read(self):
        for line in self.proc.stderr:
            with self.cv:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def log_matches(self, pattern, after=0.0):
        rx = re.compile(pattern)
        with self.cv:
            return [(t, m) for t, l in self.lines if t >= after for m in [rx.search(l)] if m]

    def wait_log(self, pattern, timeout, after=0.0):
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for t, l in self.lines:
                    m = rx.search(l)
                    if t >= after and m:
                        return m
                if time.monotonic() >= deadline or self.proc.poll() is not None:
                    self.dump()
                    raise AssertionError("no log line matching %r within %ss" % (pattern, timeout))
                self.cv.wait(0.1)

    def wait_for(self, what, timeout, fn, interval=0.02):
        deadline = time.monotonic() + timeout
        while True:
            v = fn()
            if v:
                return v
            if getattr(self, "proc", None) and self.proc.poll() is not None:
                self.dump()
                raise AssertionError("luaop exited while waiting for " + what)
            if time.monotonic() >= deadline:
                self.dump()
                raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
            time.sleep(interval)  # polling interval of a deadline-bounded wait

    def dump(self, n=60):
        with self.cv:
            tail = self.lines[-n:]
        print("---- luaop log (last %d lines) ----" % n, file=sys.stderr)
        for _, l in tail:
            print(l, file=sys.stderr)

    def kubectl(self, *args, input=None, check=True):
        r = subprocess.run(["kubectl"] + list(args), env=self.env, input=input, text=True,
                           capture_output=True)
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s: %s" % (" ".join(args), r.stderr.strip()))
        return r

    def apply(self, obj_json):
        return self.kubectl("apply", "-f", "-", input=obj_json)

    def get(self, kind, name, ns="default"):
        r = self.kubectl("get", kind, name, "-n", ns, "-o", "json", check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def list(self, kind, ns="default"):
        return json.loads(self.kubectl("get", kind, "-n", ns, "-o", "json").stdout)["items"]

    def events(self, ns="default"):
        return self.list("events", ns)

    def http(self, port, path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics(self):
        return self.http(self.metrics_port, "/metrics")[1]

    def metric(self, name, labels=""):
        """The value of one sample (labels as printed, e.g. 'result="success"'), or None."""
        want = name + ("{" + labels + "}" if labels else "")
        for line in self.metrics().splitlines():
            if line.startswith(want + " "):
                return float(line.split()[-1])
        return None

    def readyz(self):
        return self.http(self.probe_port, "/readyz?verbose")

    def rss_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return None

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        if rc != 0:  # say why: the log's last lines (a sanitizer's report ends up there too)
            if getattr(self, "reader", None):
                self.reader.join(5)
            print("luaop exited with status %s" % rc, file=sys.stderr)
            self.dump(200)
        if self.apiserver:
            self.apiserver.send_signal(signal.SIGTERM)
            try:
                self.apiserver.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.apiserver.kill()
                self.apiserver.wait()
        self.tmp.cleanup()
        return rc


def widget_json(name, n=0, ns="default"):
    return json.dumps({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": name, "namespace": ns}, "spec": {"n": n}})


WIDGET_CRD = CRD % {"plural": "widgets", "kind": "Widget", "singular": "widget"}


def main():
    ok = Check()
    dev = Dev("--scripts-configmap", "default/scripts", crds=[WIDGET_CRD])
    try:
        dev.wait_log(r'waiting for the script ConfigMap', 20)
        # The log line can precede the readyz detail by a moment: poll for it (never ready meanwhile).
        deadline = time.time() + 5
        while True:
            code, body = dev.readyz()
            if code != 500 or "configmap default/scripts not found" in body or time.time() > deadline:
                break
            time.sleep(0.05)
        ok(code == 500 and "[-]scripts failed: configmap default/scripts not found" in body,
           "not ready while the ConfigMap is missing (%d: %s)" % (code, body.strip().replace("\n", " | ")))
        dev.apply(widget_json("w1"))

        # A ConfigMap without main.lua: still not ready, a Warning Event names the cause.
        dev.apply(configmap_json({"helper.lua": "return 1\n"}))
        dev.wait_for("a Warning Event about the missing main.lua", 20, lambda: any(
            e["reason"] == "ScriptReloadFailed" and "no main.lua" in e["message"]
            for e in dev.events()))
        code, body = dev.readyz()
        ok(code == 500 and "no main.lua" in body, "still not ready without main.lua")
        ok((dev.get("widget", "w1").get("status") or {}).get("logic") is None, "nothing reconciled yet")

        files = {"main.lua": widget_main("v1")}
        dev.apply(configmap_json(files))
        dev.wait_for("w1 reconciled by v1", 20,
                     lambda: (dev.get("widget", "w1").get("status") or {}).get("logic") == "v1")
        code, body = dev.readyz()
        v = version_of(files)
        ok(code == 200 and "[+]scripts-active-%s ok" % v in body,
           "ready, /readyz?verbose names the active version %s" % v)
        ok(dev.metric("luaop_script_active_version", 'version="%s"' % v) == 1,
           "luaop_script_active_version{version=%s} 1" % v)
        dev.wait_for("a Normal ScriptsLoaded Event", 20, lambda: any(
            e["reason"] == "ScriptsLoaded" and e["type"] == "Normal" and v in e["message"]
            and e["involvedObject"]["kind"] == "ConfigMap" for e in dev.events()))
        ok(True, "Normal ScriptsLoaded Event on the ConfigMap names the version")
    finally:
        rc = dev.stop()
    ok(rc == 0, "exit 0 on SIGTERM (got %s)" % rc)

    # SIGTERM while still waiting for the ConfigMap: a clean exit.
    dev = Dev("--scripts-configmap", "default/never")
    dev.wait_log(r'waiting for the script ConfigMap', 20)
    ok(dev.stop() == 0, "exit 0 on SIGTERM while waiting for the ConfigMap")
    ok.finish("reload_common (start-up wait)")


if __name__ == "__main__":
    main()
