#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: spec updates streaming in while the logic is reloaded several times.

50 Widgets; 2,000 spec updates (spec.n counts up per object, spread round-robin) are written
while five reloads (v2..v6) happen: the stream is cut in six chunks, a reload is written before
each of the last five and installed (debounce 50 ms) while its chunk streams in. At the end every Widget must be reconciled at its latest generation by the newest logic:
status.logic == "v6", status.observedGeneration == metadata.generation and status.n == spec.n ==
the last value written (no update lost); every reload was installed (success counter +5) and the
no object was ever reconciled by two workers at once (four workers; checked from the debug log's
per-reconcile end time and duration). Reconcile errors (status write conflicts after retries) are
reported, and retried by the queue.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reload_common import Check, Dev, WIDGET_CRD, configmap_json, widget_main  # noqa: E402

OBJECTS, UPDATES, RELOADS = 50, 2000, 5
ok = Check()
# A 50 ms debounce so that each reload is installed while its chunk of updates streams in.
# Debug logs: one "reconciled" line per reconcile (end time + duration) to prove no key ran twice
# at once; four workers so that different keys do run concurrently.
dev = Dev("--scripts-configmap", "default/scripts", "--log-level", "debug", crds=[WIDGET_CRD],
          env={"LUAOP_SCRIPTS_DEBOUNCE_MS": "50"})


def logic(v):
    return widget_main(v).replace('name = "widgets",', 'name = "widgets",\n  max_concurrent_reconciles = 4,')


def intervals():
    """(start, end) seconds of every reconcile by object name, from the debug log: the line is
    written after the reconcile returned and before its key is released, so [ts - duration, ts]
    covers it and a second reconcile of the same key can only start after ts."""
    out = {}
    for _, m in dev.log_matches(r'ts=\S+T(\d+):(\d+):([\d.]+)Z level=debug msg=reconciled '
                                r'controller=widgets .* namespace=default name=(\S+) reconcileID=\S+ '
                                r'duration=([\d.e+-]+) '):
        end = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
        out.setdefault(m.group(4), []).append((end - float(m.group(5)), end))  # duration: seconds
    return out
try:
    for i in range(OBJECTS):
        dev.create_widget("s%02d" % i)
    dev.apply(configmap_json({"main.lua": logic("v1")}))
    dev.wait_for("every Widget on v1", 20, lambda: all(
        (w.get("status") or {}).get("logic") == "v1" for w in dev.widgets()))
    reloads0 = dev.metric("luaop_script_reload_total", 'result="success"')
    last = {}
    t0 = time.monotonic()
    chunk = UPDATES // (RELOADS + 1)
    u = 0
    for k in range(RELOADS + 1):
        if k > 0:  # a reload, written just before a chunk of updates streams in
            before = dev.metric("luaop_script_reload_total", 'result="success"')
            dev.set_scripts({"main.lua": logic("v%d" % (k + 1))})
        end = UPDATES if k == RELOADS else u + chunk
        while u < end:
            name = "s%02d" % (u % OBJECTS)
            last[name] = u
            dev.patch("/apis/example.com/v1/namespaces/default/widgets/" + name, {"spec": {"n": u}})
            u += 1
        if k > 0:  # each reload is installed before the next is written (none coalesced)
            dev.wait_for("reload v%d installed" % (k + 1), 10, lambda: dev.metric(
                "luaop_script_reload_total", 'result="success"') == before + 1)
    t1 = time.monotonic()

    def settled():
        for w in dev.widgets():
            st, md = w.get("status") or {}, w["metadata"]
            if (st.get("logic") != "v6" or st.get("observedGeneration") != md["generation"]
                    or st.get("n") != w["spec"]["n"]):
                return False
        return True

    dev.wait_for("every Widget at its latest generation on v6", 40, settled, interval=0.1)
    t2 = time.monotonic()
    print("%d updates over %d objects in %.1f s with %d reloads; settled %.1f s later"
          % (UPDATES, OBJECTS, t1 - t0, RELOADS, t2 - t1), file=sys.stderr)
    items = dev.widgets()
    ok(len(items) == OBJECTS and all(w["spec"]["n"] == last[w["metadata"]["name"]] for w in items)
       and all(w["status"]["n"] == last[w["metadata"]["name"]] for w in items),
       "no update lost: every status.n is the last value written")
    ok(all(w["status"]["logic"] == "v6" for w in items), "every object reconciled by the newest logic")
    ok(dev.metric("luaop_script_reload_total", 'result="success"') == reloads0 + RELOADS,
       "%d reloads installed" % RELOADS)
    iv = intervals()
    overlaps_same = sum(1 for xs in iv.values() for a, b in zip(sorted(xs), sorted(xs)[1:])
                        if b[0] < a[1] - 1e-4)
    flat = sorted(x for xs in iv.values() for x in xs)
    overlaps_any = sum(1 for a, b in zip(flat, flat[1:]) if b[0] < a[1])
    print("%d reconciles logged; %d overlapped another object's reconcile"
          % (len(flat), overlaps_any), file=sys.stderr)
    ok(len(iv) == OBJECTS and overlaps_same == 0,
       "no object reconciled twice concurrently (%d reconciles, 4 workers)" % len(flat))
    errs = dev.metric("controller_runtime_reconcile_errors_total", 'controller="widgets"') or 0
    print("reconcile errors (retried): %d" % errs, file=sys.stderr)
    for _, m in dev.log_matches(r'level=error.*')[:5]:
        print(m.group(0)[:300], file=sys.stderr)
finally:
    rc = dev.stop()
ok(rc == 0, "exit 0 on SIGTERM")
ok.finish("reload_stream")
