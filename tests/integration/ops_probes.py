#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: probes, metrics, logs and graceful shutdown of `luaop run` against the local
API server (loopback, free ports).

  A. /readyz fails (verbose names the failing check) while the API server is unreachable (the
     server process is frozen with SIGSTOP, so discovery cannot answer) and passes once it answers
     again and the caches sync; /healthz?verbose lists ping, event-loop and workers.
  B. After a reconcile, /metrics has controller_runtime_reconcile_total{...,result="success"},
     workqueue queue/work duration observations, rest_client_requests_total, the Lua memory gauge
     of the worker VM and the script's own luaop.metrics counter; the text parses.
  C. --log-format=json: every line on stderr is one JSON object; luaop.log lines from Lua carry
     controller, namespace, name and reconcileID; at --log-level=debug the kubeconfig's bearer
     token never appears, nor the data of a Secret a script passes to luaop.log.
  D. SIGTERM during a 2 s reconcile: it completes, "shutdown complete", exit 0.
  E. --graceful-shutdown-timeout=1s with a 6 s reconcile: the reconcile is logged as abandoned
     and the process exits 1 after about the timeout.
  F. a second SIGTERM during the graceful wait exits at once with 143 (128 + SIGTERM).
  G. with --lua-jit a JIT-compiled endless loop outlives its 1 s deadline: /healthz fails with
     the "workers" check naming the controller once deadline + grace (1 s) passed.
"""
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

LUAOP = os.environ["LUAOP"]
TOKEN = "luaop-test-bearer-TOKEN-4f1c9a"
failures = []
procs = []

SCRIPT = r'''
local op = require("luaop")
local metrics = require("luaop.metrics")
local seen = metrics.counter{name = "ops_test_reconciles_total", help = "reconciles seen by the ops test",
                             labels = {"namespace"}}
op.controller {
  name = "opstest",
  for_ = { api_version = "v1", kind = "ConfigMap" },
  reconcile = function(req)
    seen:inc({namespace = req.namespace})
    op.log.info("ops test reconcile", {cm = req.name})
    local secret = {apiVersion = "v1", kind = "Secret", metadata = {name = "s", namespace = req.namespace},
                    data = {password = "U0VDUkVULURBVEEtOTk4Nw=="}}
    op.log.info("logging a secret by mistake", {obj = secret, list = {items = {secret}}})
    if req.name == "spin" then
      local x = 0
      while true do x = (x + 1) % 7 end -- JIT-compiled: the deadline hook cannot end it
    end
    local secs = tonumber(req.name:match("^slow(%d+)"))
    if secs then
      op.log.info("slow reconcile starting", {seconds = secs})
      local t0 = require("luaop.core").mono()
      while require("luaop.core").mono() - t0 < secs do require("luaop.core").sleep(0.05) end
      op.log.info("slow reconcile finished", {seconds = secs})
    end
    return op.result.done()
  end,
}
'''


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, file=sys.stderr)
    if not cond:
        failures.append(what)


def http(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except Exception as e:  # connection refused while starting
        return 0, str(e)


def wait_for(what, secs, fn):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.1)  # polling a condition with a deadline, not waiting for time
    check(False, "timed out waiting for " + what)
    return None


class Operator:
    def __init__(self, kc, scripts, *extra, timeout="30s"):
        self.lines = []
        self.cv = threading.Condition()
        self.proc = subprocess.Popen(
            [LUAOP, "run", "--kubeconfig", kc, "--scripts", scripts, "--metrics-bind-address",
             "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0", "--log-format", "json",
             "--log-level", "debug", "--reconcile-timeout", timeout] + list(extra),
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        procs.append(self.proc)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()

    def records(self):
        with self.cv:
            return list(self.lines)

    def find(self, pred):
        for ln in self.records():
            try:
                o = json.loads(ln)
            except ValueError:
                continue
            if pred(o):
                return o
        return None

    def port(self, which):
        o = self.find(lambda o: o.get("msg") == "http server listening" and o.get(which) == "true")
        return o and int(o["port"])


# The families a controller-runtime manager registers besides Go's own (go_*): its metrics
# package (pkg/internal/controller/metrics, pkg/metrics/workqueue.go, client_go_adapter.go,
# leaderelection.go) and client_golang's process collector, with their types. prometheus_client
# names a counter's family without "_total".
CONTROLLER_RUNTIME_FAMILIES = {
    "controller_runtime_active_workers": "gauge",
    "controller_runtime_max_concurrent_reconciles": "gauge",
    "controller_runtime_reconcile_errors": "counter",
    "controller_runtime_reconcile_panics": "counter",
    "controller_runtime_reconcile_time_seconds": "histogram",
    "controller_runtime_reconcile": "counter",
    "controller_runtime_terminal_reconcile_errors": "counter",
    "workqueue_adds": "counter",
    "workqueue_depth": "gauge",
    "workqueue_longest_running_processor_seconds": "gauge",
    "workqueue_queue_duration_seconds": "histogram",
    "workqueue_retries": "counter",
    "workqueue_unfinished_work_seconds": "gauge",
    "workqueue_work_duration_seconds": "histogram",
    "rest_client_requests": "counter",
    "leader_election_master_status": "gauge",
    "process_cpu_seconds": "counter",
    "process_max_fds": "gauge",
    "process_open_fds": "gauge",
    "process_resident_memory_bytes": "gauge",
    "process_start_time_seconds": "gauge",
    "process_virtual_memory_bytes": "gauge",
}
FAMILIES = {}  # name -> type, of the last text parse_prometheus read


def parse_prometheus(text):
    """Minimal exposition-format parser: returns {series: value}; raises on a malformed line."""
    out = {}
    pat = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$')
    for ln in text.splitlines():
        if not ln or ln.startswith("# HELP ") or ln.startswith("# TYPE "):
            continue
        m = pat.match(ln)
        if not m:
            raise ValueError("bad metrics line: " + ln)
        out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    # And Debian's python3-prometheus-client (deps/debian-packages.txt) parses it strictly: every
    # family and sample must come back, histograms with their buckets, _sum and _count.
    from prometheus_client.parser import text_string_to_metric_families
    samples = 0
    FAMILIES.clear()
    for fam in text_string_to_metric_families(text):
        FAMILIES[fam.name] = fam.type
        samples += len(fam.samples)
        if fam.type == "histogram" and fam.samples:
            names = {s.name for s in fam.samples}
            assert {fam.name + "_bucket", fam.name + "_sum", fam.name + "_count"} <= names, fam.name
    assert samples == len(out), "prometheus_client read %d samples, the line parser %d" % (samples, len(out))
    return out


def kubectl(kc, *args):
    return subprocess.run(["kubectl", "--kubeconfig", kc] + list(args), capture_output=True, text=True)


def main():
    tmp = tempfile.mkdtemp()
    kc0 = os.path.join(tmp, "kc0")
    scripts = os.path.join(tmp, "scripts")
    os.mkdir(scripts)
    with open(os.path.join(scripts, "main.lua"), "w") as f:
        f.write(SCRIPT)
    srv = subprocess.Popen([LUAOP, "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out", kc0],
                           stdout=subprocess.PIPE, text=True)
    procs.append(srv)
    line = srv.stdout.readline()
    if not line.startswith("listening on "):
        check(False, f"local API server started (got {line!r})")
        return
    url = line.split()[-1]
    # A token-authenticated kubeconfig (the local server accepts any token).
    kc = os.path.join(tmp, "kc")
    with open(kc, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters: [{{name: local, cluster: {{server: "{url}"}}}}]
users: [{{name: u, user: {{token: "{TOKEN}"}}}}]
contexts: [{{name: c, context: {{cluster: local, user: u, namespace: default}}}}]
current-context: c
""")
    check(kubectl(kc, "create", "namespace", "ops").returncode == 0, "namespace created")

    # ---- A: unreachable API server -> not ready; answering again -> ready
    srv.send_signal(signal.SIGSTOP)
    op = Operator(kc, scripts)
    hp = wait_for("the probe port", 20, lambda: op.port("probes"))
    mp = wait_for("the metrics port", 20, lambda: op.port("metrics"))
    if not hp or not mp:
        srv.send_signal(signal.SIGCONT)
        return
    code, body = http(f"http://127.0.0.1:{hp}/readyz?verbose")
    check(code == 500, f"A: /readyz fails while the API server does not answer ({code})")
    check("[-]scripts failed" in body and "readyz check failed" in body,
          "A: verbose /readyz names the failing check: " + body.replace("\n", " | "))
    # "startup" is registered before the probe server listens (a readyz with no check would pass)
    # and passes once the scripts' and the manager's checks are in: here they are, and fail
    check("[+]startup ok" in body, "A: /readyz has its startup check, passed once the other checks exist")
    code, body = http(f"http://127.0.0.1:{hp}/healthz")
    check(code == 200, f"A: /healthz passes meanwhile ({code})")
    srv.send_signal(signal.SIGCONT)
    check(wait_for("/readyz to pass", 30, lambda: http(f"http://127.0.0.1:{hp}/readyz")[0] == 200) is not None,
          "A: /readyz passes once the API server answers and the caches synced")
    code, body = http(f"http://127.0.0.1:{hp}/readyz?verbose")
    check("[+]informers-synced ok" in body and "[+]scripts ok" in body and "[+]startup ok" in body,
          "A: verbose /readyz lists the checks")
    code, body = http(f"http://127.0.0.1:{hp}/healthz?verbose")
    check(code == 200 and "[+]ping ok" in body and "[+]event-loop ok" in body and "[+]workers ok" in body
          and "healthz check passed" in body, "A: /healthz?verbose lists ping, event-loop, workers: "
          + body.replace("\n", " | "))

    # ---- B: metrics after a reconcile
    check(kubectl(kc, "-n", "ops", "create", "configmap", "one").returncode == 0, "B: configmap created")
    sel = 'controller_runtime_reconcile_total{controller="opstest",result="success"}'

    def scraped():
        code, text = http(f"http://127.0.0.1:{mp}/metrics")
        if code != 200:
            return None
        try:
            series = parse_prometheus(text)
        except ValueError as e:
            check(False, "B: /metrics parses: " + str(e))
            return {}
        return series if series.get(sel, 0) >= 1 else None

    series = wait_for("a successful reconcile in /metrics", 20, scraped) or {}
    check(series.get(sel, 0) >= 1, "B: " + sel + " >= 1")
    wrong = {n: (t, FAMILIES.get(n)) for n, t in CONTROLLER_RUNTIME_FAMILIES.items() if FAMILIES.get(n) != t}
    check(not wrong, "B: every family of controller-runtime's list, with its type, name by name (wrong or "
          "missing: %s)" % wrong)
    check(series.get('workqueue_queue_duration_seconds_count{controller="opstest",name="opstest"}', 0) >= 1,
          "B: workqueue_queue_duration_seconds observed")
    check(series.get('workqueue_work_duration_seconds_count{controller="opstest",name="opstest"}', 0) >= 1,
          "B: workqueue_work_duration_seconds observed")
    rest = [k for k, v in series.items() if k.startswith("rest_client_requests_total{") and 'code="200"' in k
            and 'method="GET"' in k and v >= 1]
    check(len(rest) >= 1, "B: rest_client_requests_total{code=\"200\",method=\"GET\",...} counted")
    check(any(k.startswith("rest_client_request_duration_seconds_count{") for k in series),
          "B: rest_client_request_duration_seconds observed")
    check(series.get('luaop_lua_memory_bytes{vm="opstest/0"}', 0) > 0, "B: luaop_lua_memory_bytes of the worker VM")
    check(series.get('ops_test_reconciles_total{namespace="ops"}', 0) >= 1, "B: the script's own counter")

    # ---- C: logs
    recs = op.records()
    bad = [ln for ln in recs if not ln.startswith("{")]
    parsed = 0
    for ln in recs:
        try:
            if isinstance(json.loads(ln), dict):
                parsed += 1
        except ValueError:
            bad.append(ln)
    check(not bad and parsed == len(recs) and parsed > 5, f"C: {parsed} log lines, each one JSON object (bad: {bad[:2]})")
    # reconcileID is a random UUID (version 4), as controller-runtime's
    uuid4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    lua = op.find(lambda o: o.get("msg") == "ops test reconcile" and o.get("cm") == "one")
    check(lua is not None and lua.get("controller") == "opstest" and lua.get("namespace") == "ops"
          and lua.get("name") == "one" and uuid4.match(lua.get("reconcileID", "")),
          f"C: luaop.log line carries controller, namespace, name, reconcileID: {lua}")
    dbg = op.find(lambda o: o.get("msg") == "reconciled" and o.get("name") == "one")
    check(dbg is not None and uuid4.match(dbg.get("reconcileID", "")) and dbg["reconcileID"] == lua["reconcileID"],
          f"C: the debug reconcile line carries the same reconcileID as the script's line: {dbg}")
    # controller-runtime's keys, with typed values: the object under its Kind, duration a number
    check(dbg is not None and dbg.get("controllerKind") == "ConfigMap" and dbg.get("controllerGroup") == ""
          and dbg.get("ConfigMap") == {"name": "one", "namespace": "ops"}
          and isinstance(dbg.get("duration"), float) and 0 <= dbg["duration"] < 60,
          f"C: controllerGroup, controllerKind, ConfigMap{{name,namespace}}, numeric duration: {dbg}")

    # ---- D: SIGTERM during a reconcile: it completes, exit 0
    check(kubectl(kc, "-n", "ops", "create", "configmap", "slow2").returncode == 0, "D: slow configmap created")
    wait_for("the slow reconcile to start", 20,
             lambda: op.find(lambda o: o.get("msg") == "slow reconcile starting"))
    op.proc.send_signal(signal.SIGTERM)
    rc = op.proc.wait(timeout=30)
    check(rc == 0, f"D: exit status 0 ({rc})")
    check(op.find(lambda o: o.get("msg") == "slow reconcile finished") is not None, "D: the in-flight reconcile completed")
    check(op.find(lambda o: o.get("msg") == "shutdown complete") is not None, "D: shutdown complete logged")
    check(all(TOKEN not in ln for ln in op.records()), "C: the bearer token never appears in the debug log")
    sec = op.find(lambda o: o.get("msg") == "logging a secret by mistake")
    check(sec is not None and sec.get("obj") == "<redacted: holds a Secret>"
          and sec.get("list") == "<redacted: holds a Secret>", f"C: Secret objects in luaop.log fields are redacted: {sec}")
    check(all("U0VDUkVULURBVEEtOTk4Nw==" not in ln for ln in op.records()), "C: Secret data never appears in the log")
    kubectl(kc, "-n", "ops", "delete", "configmap", "slow2")

    # ---- E: grace period shorter than the reconcile: abandoned, exit 1
    op = Operator(kc, scripts, "--graceful-shutdown-timeout", "1s")
    wait_for("/readyz", 30, lambda: op.port("probes") and http(f"http://127.0.0.1:{op.port('probes')}/readyz")[0] == 200)
    check(kubectl(kc, "-n", "ops", "create", "configmap", "slow6").returncode == 0, "E: slow configmap created")
    wait_for("the slow reconcile to start", 20,
             lambda: op.find(lambda o: o.get("msg") == "slow reconcile starting"))
    t0 = time.monotonic()
    op.proc.send_signal(signal.SIGTERM)
    rc = op.proc.wait(timeout=30)
    took = time.monotonic() - t0
    check(rc == 1, f"E: exit status 1 after the grace period ({rc})")
    check(0.8 <= took < 5, f"E: exited after about the 1 s grace period ({took:.2f}s)")
    ab = op.find(lambda o: o.get("msg", "").startswith("graceful shutdown timeout: abandoning"))
    check(ab is not None and ab.get("controller") == "opstest" and ab.get("key") == "ops/slow6",
          f"E: the abandoned reconcile is logged: {ab}")
    check(op.find(lambda o: o.get("msg") == "slow reconcile finished") is None, "E: the reconcile did not finish")
    kubectl(kc, "-n", "ops", "delete", "configmap", "slow6")

    # ---- F: a second signal exits at once
    op = Operator(kc, scripts)
    wait_for("/readyz", 30, lambda: op.port("probes") and http(f"http://127.0.0.1:{op.port('probes')}/readyz")[0] == 200)
    check(kubectl(kc, "-n", "ops", "create", "configmap", "slow9").returncode == 0, "F: slow configmap created")
    wait_for("the slow reconcile to start", 20,
             lambda: op.find(lambda o: o.get("msg") == "slow reconcile starting"))
    op.proc.send_signal(signal.SIGTERM)
    wait_for("shutdown to begin", 10, lambda: op.find(lambda o: o.get("msg") == "shutting down"))
    t0 = time.monotonic()
    op.proc.send_signal(signal.SIGTERM)
    rc = op.proc.wait(timeout=30)
    check(rc == 143, f"F: second SIGTERM exits with 143 ({rc})")
    check(time.monotonic() - t0 < 3, "F: at once")
    check(op.find(lambda o: o.get("msg") == "second signal during shutdown; exiting now") is not None,
          "F: logged")

    kubectl(kc, "-n", "ops", "delete", "configmap", "slow9")

    # ---- G: a stuck worker fails /healthz
    op = Operator(kc, scripts, "--lua-jit", "--graceful-shutdown-timeout", "1s", timeout="1s")
    wait_for("/readyz", 30, lambda: op.port("probes") and http(f"http://127.0.0.1:{op.port('probes')}/readyz")[0] == 200)
    hp = op.port("probes")
    check(http(f"http://127.0.0.1:{hp}/healthz")[0] == 200, "G: /healthz passes before")
    check(kubectl(kc, "-n", "ops", "create", "configmap", "spin").returncode == 0, "G: spinning configmap created")
    t0 = time.monotonic()
    res = wait_for("/healthz to fail", 20, lambda: (lambda r: r if r[0] == 500 else None)(http(f"http://127.0.0.1:{hp}/healthz")))
    took = time.monotonic() - t0
    body = res[1] if res else ""
    check(res is not None and "[-]workers failed: controller opstest" in body and "[+]event-loop ok" in body,
          "G: /healthz fails on the stuck worker: " + body.replace("\n", " | "))
    ran = re.search(r"has run ([0-9.]+)s", body)
    check(ran is not None and float(ran.group(1)) >= 1.95, f"G: reported only past deadline + grace (after {took:.2f}s)")
    op.proc.send_signal(signal.SIGTERM)
    rc = op.proc.wait(timeout=30)
    check(rc == 1, f"G: the stuck reconcile is abandoned at shutdown, exit 1 ({rc})")


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGCONT)
                except Exception:
                    pass
                p.kill()
                p.wait()
    if failures:  # the verdict: every check() must have held
        raise AssertionError(f"{len(failures)} check(s) failed: " + "; ".join(failures))
    print("PASS ops probes/metrics/logs/shutdown", file=sys.stderr)
