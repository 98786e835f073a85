#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: bad input never crashes the operator (issue 3, "Bad input").

  1. `luaop check` accepts the good sets and rejects each bad one (exit 1) naming file:line;
     `luaop run` on a set that fails to load exits non-zero naming file:line (a syntax error, a
     required module that raises, a misspelled declaration field).
  2. fixtures/faulty against `luaop apiserver` + `luaop run --reconcile-timeout 1s`:
     a. a reconcile that raises is logged with its traceback (file:line) and retried with the
        controller rate limiter's per-item exponential backoff (gaps >= 5 ms * 2^n), while
        another object keeps reconciling; once fixed, it converges;
     b. a reconcile stuck in `while true do end` is interrupted after the 1 s deadline (again
        and again, with backoff), while another object keeps reconciling; once fixed, it
        converges;
     c. a custom resource nested deeper than the codec's depth limit fails its own reconcile
        with the codec's error, while shallow objects of the kind are reconciled;
     the operator exits 0 on SIGTERM.
  3. an API server that is down when `luaop run` starts: the operator keeps retrying, /readyz
     (--health-probe-bind-address on a free loopback port) answers not ready, then ready once
     the server is up on that address, and the operator reconciles; SIGTERM while it is still
     waiting for the server exits 0.
"""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402

NS = "bi"
CM = f"/api/v1/namespaces/{NS}/configmaps"
FAULTY = os.path.join(h.FIXTURES, "faulty")
MIRROR = os.path.join(h.FIXTURES, "watch_faults")
BAD = {  # set -> the file:line its error must name
    "bad_syntax": "main.lua:3:",
    "bad_require": "helper.lua:3:",
    "bad_decl": "main.lua:3:",
}


def check_cli(kc):
    for good in ("faulty", "watch_faults", "burst"):
        r = subprocess.run([h.LUAOP, "check", "--scripts", os.path.join(h.FIXTURES, good)],
                           capture_output=True, text=True, timeout=30)
        h.check(r.returncode == 0 and "ok:" in r.stdout, f"luaop check accepts {good} ({r.returncode})")
    for bad, where in BAD.items():
        r = subprocess.run([h.LUAOP, "check", "--scripts", os.path.join(h.FIXTURES, bad)],
                           capture_output=True, text=True, timeout=30)
        first = (r.stderr.splitlines() or [""])[0]
        h.check(r.returncode == 1 and where in first,
                f"luaop check rejects {bad} naming {where} (rc {r.returncode}: {first!r})")
    r = subprocess.run([h.LUAOP, "check", "--scripts", os.path.join(h.TMP, "no-such-dir")],
                       capture_output=True, text=True, timeout=30)
    h.check(r.returncode != 0 and "no-such-dir" in r.stderr,
            f"luaop check on a missing directory fails naming it (rc {r.returncode})")
    for bad, where in BAD.items():
        p = h.spawn(f"run-{bad}", ["run", "--scripts", os.path.join(h.FIXTURES, bad), "--kubeconfig",
                                   kc, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"])
        rc = p.wait(timeout=30)
        errs = [r.get("error", "") for r in h.OpLog(p.logfile).find(level="error")]
        h.check(rc != 0 and any(e.startswith(where) for e in errs),
                f"luaop run with {bad} exits non-zero ({rc}) naming {where} ({errs[:1]})")


def ts_seconds(ts):
    hh, mm, ss = ts.split("T")[1].rstrip("Z").split(":")
    return int(hh) * 3600 + int(mm) * 60 + float(ss)


def faulty_reconciles(api, kc):
    def src(name, **data):
        api.ok("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name, "labels": {"role": "src"}}, "data": data})

    def set_data(name, **data):
        api.merge_patch(f"{CM}/{name}", {"data": data})

    def out_is(name, v):
        o = api.get(f"{CM}/out-{name}")
        return o is not None and o.get("data", {}).get("v") == v

    with open(os.path.join(FAULTY, "crd_blob.json")) as f:
        api.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json.load(f))
    h.wait_for("the Blob CRD to be served", 10,
               lambda: api.req("GET", f"/apis/test.luaop.dev/v1/namespaces/{NS}/blobs")[0] == 200)
    src("good", v="1")
    src("raiser", mode="raise", v="1")
    op = h.start_operator("operator", FAULTY, kc, ["--reconcile-timeout", "1s"])
    live = [op]
    log = op.oplog
    h.wait_for("out-good v=1", 20, lambda: out_is("good", "1"), live)

    # a. raising reconcile
    def raiser_errors():
        return log.find(msg="reconciler error", name="raiser")
    h.wait_for("8 failed reconciles of raiser", 20, lambda: len(raiser_errors()) >= 8, live)
    errs = raiser_errors()
    first = errs[0].get("error", "")
    with open(os.path.join(FAULTY, "main.lua")) as f:
        line = next(i for i, l in enumerate(f, 1) if l.rstrip().endswith("-- RAISE"))
    h.check(f"main.lua:{line}: boom from raiser" in first and "traceback" in first,
            f"the Lua error is logged with file:line and traceback ({first[:80]!r})")
    times = [ts_seconds(r["ts"]) for r in log.find(msg="saw", name="raiser", mode="raise")]
    gaps = [b - a for a, b in zip(times, times[1:])][:7]
    # controller-runtime's default limiter: max(5 ms * 2^n per item, overall token bucket)
    h.check(len(gaps) >= 7 and all(g >= 0.005 * 2 ** i * 0.9 for i, g in enumerate(gaps)),
            "retries back off exponentially: gaps " + " ".join(f"{g * 1000:.0f}ms" for g in gaps))
    set_data("good", v="2")
    h.wait_for("out-good v=2 while raiser fails", 20, lambda: out_is("good", "2"), live)
    h.check(True, "another object reconciles while one keeps raising")
    set_data("raiser", mode="ok", v="2")
    h.wait_for("out-raiser v=2 once fixed", 20, lambda: out_is("raiser", "2"), live)
    h.check(True, "the raising object converges once fixed (backoff capped by the change event)")

    # b. infinite loop, interrupted by the deadline
    src("looper", mode="loop", v="1")
    h.wait_for("looper interrupted twice", 20,
               lambda: len(log.find(msg="reconciler error", name="looper")) >= 2, live)
    saw = [ts_seconds(r["ts"]) for r in log.find(msg="saw", name="looper", mode="loop")]
    fails = log.find(msg="reconciler error", name="looper")
    took = ts_seconds(fails[0]["ts"]) - saw[0]
    h.check(0.9 <= took < 3.0, f"the first looping reconcile was interrupted after ~1 s ({took:.2f}s)")
    h.check(any(w in fails[0].get("error", "").lower() for w in ("deadline", "timeout", "timed out")),
            f"the interruption names the deadline ({fails[0].get('error', '')[:80]!r})")
    set_data("good", v="3")
    h.wait_for("out-good v=3 while looper loops", 20, lambda: out_is("good", "3"), live)
    h.check(True, "another object reconciles while one loops")
    set_data("looper", mode="ok", v="2")
    h.wait_for("out-looper v=2 once fixed", 20, lambda: out_is("looper", "2"), live)

    # c. an object nested deeper than the codec's limit (200) fails its own reconcile clearly
    blobs = f"/apis/test.luaop.dev/v1/namespaces/{NS}/blobs"

    def blob(name, spec):
        api.ok("POST", blobs, {"apiVersion": "test.luaop.dev/v1", "kind": "Blob",
                               "metadata": {"name": name}, "spec": spec})
    deep = {"leaf": 1}
    for _ in range(600):
        deep = {"x": deep}
    blob("shallow", {"a": {"b": [1, 2]}})
    blob("deep", deep)
    blob("shallow2", {"a": 1})
    for n in ("shallow", "shallow2"):
        h.wait_for(f"blob-{n} recorded", 20, lambda: api.get(f"{CM}/blob-{n}") is not None, live)
    h.wait_for("the deep Blob failing twice", 20,
               lambda: len(log.find(msg="reconciler error", name="deep")) >= 2, live)
    derr = log.find(msg="reconciler error", name="deep")[0].get("error", "")
    h.check("deeper than 200" in derr or "depth" in derr, f"the deep Blob fails with the codec's depth error ({derr[:90]!r})")
    h.check(api.get(f"{CM}/blob-deep") is None, "nothing was recorded for the deep Blob")
    h.check(op.poll() is None, "the operator never exited")
    h.stop(op, 0)


def readyz(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def server_down_at_start():
    port, probe = h.free_port(), h.free_port()
    kc = os.path.join(h.TMP, "down.kubeconfig")
    with open(kc, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: down
  cluster: {{server: "http://127.0.0.1:{port}"}}
users:
- name: down
  user: {{}}
contexts:
- name: down
  context: {{cluster: down, user: down, namespace: default}}
current-context: down
""")
    op = h.start_operator("operator-down", MIRROR, kc, ["--health-probe-bind-address",
                                                        f"127.0.0.1:{probe}"])
    # not ready while the server is down: two failed connection attempts logged (a retry, not a
    # one-off), the process still running, /readyz answering and not 200
    def failed_attempts():
        return [r for r in op.oplog.records() if r.get("level") in ("warn", "error") and
                "connect" in (r.get("error", "") + r.get("msg", "")).lower()]
    h.wait_for("/readyz to answer", 10, lambda: readyz(probe) is not None, [op])
    h.check(readyz(probe) not in (None, 200), "readyz reports not ready while the server is down")
    h.wait_for("two failed connection attempts in the log", 10,
               lambda: len(failed_attempts()) >= 2 or op.poll() is not None, [])
    h.require(op.poll() is None, f"luaop run keeps running while the API server is down "
              f"(exited {op.returncode}: {(op.oplog.find(level='error') or [{}])[0].get('error', '')})")
    h.check(True, f"luaop retries the API server ({failed_attempts()[1].get('msg')})")
    h.check(readyz(probe) not in (None, 200), "readyz still reports not ready")
    srv, url, _ = h.start_apiserver("apiserver-late", f"127.0.0.1:{port}")
    api = h.Api(url)
    api.namespace("wf")
    api.ok("POST", "/api/v1/namespaces/wf/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "late", "labels": {"role": "src"}}, "data": {"v": "1"}})
    h.wait_for("readyz 200 once the server is up", 40, lambda: readyz(probe) == 200, [op, srv])
    h.check(True, "readyz reports ready once the server is up")
    h.wait_for("out-late v=1", 20,
               lambda: (api.get("/api/v1/namespaces/wf/configmaps/out-late") or {}).get("data", {}).get("v") == "1", [op, srv])
    h.check(True, "the operator reconciles once the server is up")
    h.stop(op, 0)
    h.stop(srv, 0)

    # SIGTERM while still waiting for a server that never comes -> clean exit 0
    op2 = h.start_operator("operator-never", MIRROR, kc)
    h.wait_for("a failed connection attempt", 10, lambda: any(
        r.get("level") in ("warn", "error") and "connect" in r.get("error", "").lower()
        for r in op2.oplog.records()) or op2.poll() is not None, [])
    h.require(op2.poll() is None, "luaop run waits for the API server")
    h.stop(op2, 0)


def body():
    srv, url, kc = h.start_apiserver()
    api = h.Api(url)
    api.namespace(NS)
    check_cli(kc)
    faulty_reconciles(api, kc)
    h.stop(srv, 0)
    server_down_at_start()


h.main("operator_bad_input", body)
