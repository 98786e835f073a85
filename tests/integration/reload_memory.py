#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: nothing from the old VMs leaks across reloads.

`luaop apiserver` and `luaop run --scripts-configmap` as separate processes (so the operator's
resident memory is its own, not the API server's growing history). 200 reload cycles, each a new
script set (a distinct version) that allocates some module-level state at load (a 64 KiB
string table in every VM built from it), each installed (success counter) before the next is
written, while the worker keeps reconciling 5 Widgets (every reload requeues them; the worker
rebuilds its VM whenever it finds a newer set). VmRSS (/proc/PID/status) after cycle 20 is the
baseline; after cycle 200 it must be within 5% of it. Debounce 0 ms so a cycle is one
main-loop tick. In a sanitizer build (make asan / tsan) resident memory says nothing (ASan holds
freed memory in its quarantine): there the leak check is the sanitizer's own at exit, which makes
the SIGTERM exit status non-zero when anything leaked.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reload_common import Check, Dev, WIDGET_CRD, configmap_json, widget_main  # noqa: E402

CYCLES, BASELINE_AT = 200, 20


def sanitizer_build():
    """The build's LUAOP_SANITIZE setting ('' for a plain build), from its CMake cache."""
    try:
        with open(os.path.join(os.environ.get("LUAOP_BUILD", ""), "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("LUAOP_SANITIZE:STRING="):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""


SANITIZER = sanitizer_build()
BALLAST = 'local ballast = {} for i = 1, 16 do ballast[i] = string.rep(string.char(64 + i), 4096) end'
ok = Check()
dev = Dev("--scripts-configmap", "default/scripts", crds=[WIDGET_CRD], separate=True,
          env={"LUAOP_SCRIPTS_DEBOUNCE_MS": "0"})
try:
    for i in range(5):
        dev.create_widget("m%d" % i)
    dev.apply(configmap_json({"main.lua": widget_main("c0", extra=BALLAST)}))
    dev.wait_for("every Widget on c0", 20, lambda: all(
        (w.get("status") or {}).get("logic") == "c0" for w in dev.widgets()))
    samples = []
    t0 = time.monotonic()
    for k in range(1, CYCLES + 1):
        before = dev.metric("luaop_script_reload_total", 'result="success"')
        dev.set_scripts({"main.lua": widget_main("c%d" % k, extra=BALLAST)})
        dev.wait_for("reload %d installed" % k, 10, lambda: dev.metric(
            "luaop_script_reload_total", 'result="success"') == before + 1, interval=0.005)
        samples.append(dev.rss_kb())
    t1 = time.monotonic()
    dev.wait_for("every Widget on the last logic", 10, lambda: all(
        (w.get("status") or {}).get("logic") == "c%d" % CYCLES for w in dev.widgets()))
    base, end = samples[BASELINE_AT - 1], dev.rss_kb()
    print("%d reload cycles in %.1f s; VmRSS after cycle 1 %d kB, after %d %d kB, max %d kB, "
          "after %d %d kB (%+.1f%%)" % (CYCLES, t1 - t0, samples[0], BASELINE_AT, base,
                                         max(samples), CYCLES, end, 100.0 * (end - base) / base),
          file=sys.stderr)
    if SANITIZER:
        print("%s sanitizer build: resident memory not judged; leaks are checked at exit" % SANITIZER,
              file=sys.stderr)
    else:
        ok(end <= base * 1.05, "resident memory after %d reloads within 5%% of its level after %d"
           % (CYCLES, BASELINE_AT))
finally:
    rc = dev.stop()
ok(rc == 0, "exit 0 on SIGTERM")
ok.finish("reload_memory")
