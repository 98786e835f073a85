#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A/B comparison of builds of the same benchmark program (bench/sync.c, `lopbench-luaop`) against ONE
local API server, in one invocation, rounds interleaved (order reversed every other round), so each
build sees the same server, data and machine load. Used to judge whether a change (e.g. issue 18's
renovation) moved the client's cost: compile bench/sync.c against each commit's build (bench/run.sh's
cc_prog line of that commit) and pass the programs.

  bench/ab.py BUILD {sync|watch} NAME=PROGRAM [NAME=PROGRAM ...]   (ROUNDS=7 by default)

BUILD is the build dir whose `luaop apiserver` and `bench/lopbench-load` serve the data (run
bench/run.sh BUILD once to compile lopbench-load). sync: 10,000 Pods listed and cached ("strip"),
figure = objects per CPU-second. watch: 50,000 MODIFIED events of 1,000 ConfigMaps replayed from
history, figure = events per CPU-second. Prints each run and the median per build with its ratio
to the first build. Asserts nothing."""
import json
import os
import statistics
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402


def main():
    if len(sys.argv) < 4 or sys.argv[2] not in ("sync", "watch"):
        sys.exit(__doc__)
    build, mode = os.path.abspath(sys.argv[1]), sys.argv[2]
    progs = [a.split("=", 1) for a in sys.argv[3:]]
    load, fix = os.path.join(build, "bench", "lopbench-load"), os.path.join(HERE, "fixtures")
    nobj, m = (10000, 0) if mode == "sync" else (1000, 50000)
    srv = bench.Server(os.path.join(build, "luaop"), max(20000, m + nobj + 1000))
    try:
        bench.run([load, "create", srv.url, "/api/v1/namespaces", os.path.join(fix, "namespace.json"), "10", "0", "4"])
        if mode == "sync":
            bench.run([load, "create", srv.url, "/api/v1/namespaces/@NS@/pods", os.path.join(fix, "pod.json"),
                       str(nobj), "10", "4"])
            argv, key = ["sync", srv.kubeconfig, "v1", "Pod", "strip"], "objects"
        else:
            bench.run([load, "create", srv.url, "/api/v1/namespaces/@NS@/configmaps",
                       os.path.join(fix, "configmap.json"), str(nobj), "10", "4"])
            with urllib.request.urlopen(srv.url + "/api/v1/configmaps?limit=1") as r:
                rv = json.load(r)["metadata"]["resourceVersion"]
            bench.run([load, "patch", srv.url, "/api/v1/namespaces/@NS@/configmaps/@NAME@", str(nobj), "10", str(m), "4"])
            argv, key = ["watch", srv.kubeconfig, "v1", "ConfigMap", rv, str(m)], "events"
        res = {n: [] for n, _ in progs}
        for i in range(int(os.environ.get("ROUNDS", "7"))):
            for n, prog in (progs if i % 2 == 0 else progs[::-1]):
                r = bench.run([prog] + argv)
                per = float(r[key]) / float(r["cpu_s"])
                res[n].append(per)
                print("round %d %-12s %s=%s cpu_s=%s per CPU-s %.0f  load %s" % (
                    i, n, key, r[key], r["cpu_s"], per, open("/proc/loadavg").read().split()[0]), flush=True)
        base = statistics.median(res[progs[0][0]])
        for n, v in res.items():
            print("%-12s median %.0f %s per CPU-s (min %.0f, max %.0f): %.3f x %s" % (
                n, statistics.median(v), key, min(v), max(v), statistics.median(v) / base, progs[0][0]))
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
