#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/informers.py BUILD [N] [--tls] — issue 19's "30 informers" figure, standalone (not yet a
bench.py row): starts `luaop apiserver` on a free loopback port, creates N namespaces with one
ConfigMap each, runs `luaop run --namespace ns0,...` with a ConfigMap controller (one informer per
namespace, tests/integration/fixtures/namespaces), and reports, once every ConfigMap is reconciled,
the operator's threads (/proc/PID/task), its TCP connections to the server (/proc/PID/fd sockets
matched against /proc/net/tcp), RSS and the time from start to all reconciled."""
import json, os, re, shutil, subprocess, sys, tempfile, time, urllib.request, ssl

build, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 30
tls = "--tls" in sys.argv
# extra `luaop run` flags after "--" (e.g. -- --kube-api-qps -1 to take the client's rate limit out)
extra = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
luaop = os.path.join(build, "luaop")
tmp = tempfile.mkdtemp(prefix="lopbench-inf-")
kc = os.path.join(tmp, "kc")
args = [luaop, "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out", kc] + (["--tls"] if tls else [])
api = subprocess.Popen(args, stdout=open(os.path.join(tmp, "api.log"), "w"), stderr=subprocess.STDOUT)
procs = [api]
try:
    url = None
    for _ in range(200):
        m = re.search(r"listening on (https?://\S+)", open(os.path.join(tmp, "api.log")).read())
        if m and os.path.exists(kc):
            url = m.group(1)
            break
        time.sleep(0.05)
    kctext = open(kc).read()
    tok = re.search(r"token: (\S+)", kctext)
    ctx = ssl._create_unverified_context()

    def req(method, path, body=None):
        r = urllib.request.Request(url + path, method=method, data=json.dumps(body).encode() if body else None)
        r.add_header("Content-Type", "application/json")
        if tok:
            r.add_header("Authorization", "Bearer " + tok.group(1))
        with urllib.request.urlopen(r, context=ctx) as f:
            return json.loads(f.read())

    for i in range(n):
        req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns{i}"}})
        req("POST", f"/api/v1/namespaces/ns{i}/configmaps",
            {"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "1"},
             "metadata": {"name": "c", "namespace": f"ns{i}", "labels": {"ns-test": "yes"}}})
    scripts = os.path.join(tmp, "scripts")
    shutil.copytree(os.path.join(src, "tests/integration/fixtures/namespaces"), scripts)
    t0 = time.monotonic()
    op = subprocess.Popen([luaop, "run", "--scripts", scripts, "--kubeconfig", kc, "--metrics-bind-address", "0",
                           "--health-probe-bind-address", "0", "--namespace", ",".join(f"ns{i}" for i in range(n))] + extra,
                          stdout=open(os.path.join(tmp, "op.log"), "w"), stderr=subprocess.STDOUT)
    procs.append(op)
    while True:
        items = req("GET", "/api/v1/configmaps?labelSelector=ns-test%3Dyes")["items"]
        if sum(1 for o in items if (o.get("data") or {}).get("reconciled") == "yes") == n:
            break
        if op.poll() is not None or time.monotonic() - t0 > 60:
            sys.exit("operator exited or did not reconcile in 60 s; see " + tmp)
        time.sleep(0.02)
    synced = time.monotonic() - t0
    time.sleep(0.5)  # let the informers' watches settle before counting
    threads = len(os.listdir(f"/proc/{op.pid}/task"))
    inodes = set()
    for fd in os.listdir(f"/proc/{op.pid}/fd"):
        try:
            m = re.match(r"socket:\[(\d+)\]", os.readlink(f"/proc/{op.pid}/fd/{fd}"))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    conns = 0
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        f = line.split()
        if f[9] in inodes and int(f[2].split(":")[1], 16) == port and f[3] == "01":
            conns += 1
    rss = int(re.search(r"VmRSS:\s+(\d+)", open(f"/proc/{op.pid}/status").read()).group(1)) / 1024
    print(f"informers={n} scheme={'https' if tls else 'http'} threads={threads} connections={conns} "
          f"rss_mb={rss:.1f} all_reconciled_s={synced:.3f}")
finally:
    for p in reversed(procs):
        p.terminate()
        p.wait()
    shutil.rmtree(tmp, ignore_errors=True)
