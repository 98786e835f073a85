#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test (issue 20 part 4): a Lua predicate that never returns stalls neither the
other controllers nor its own events, under `luaop run` with the default flags.

`luaop apiserver` + `luaop run` with fixtures/predicate_isolation: controller "spinner" has a
predicate on ConfigMaps that loops forever, "sharer" a quick predicate on the same ConfigMaps
(same informer thread), "prompt" a quick predicate on Secrets (another informer). Proves:
  - while the spinner's predicate spins on 5 ConfigMaps, a new Secret is reconciled by "prompt"
    within 2 s (each controller has its own event VM: before, one shared event VM under the 60 s
    reconcile deadline kept every Lua-predicate controller waiting behind the spinner);
  - each spinning predicate is stopped at the predicate deadline (--predicate-timeout, default
    250 ms) and its event is let through: "spinner" reconciles every ConfigMap, "sharer" too
    (behind the spinner on the shared informer thread, by at most its deadline per event);
  - the failure is logged naming the controller, main.lua:line and "predicate deadline exceeded",
    and counted in luaop_lua_event_errors_total{controller="spinner",function="predicate",
    reason="timeout"};
  - the process survives and exits 0 on SIGTERM; --predicate-timeout 0 is refused with a message.
"""
import os
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402

NS = "iso"
N_CM = 5


def body():
    bad = subprocess.run([h.LUAOP, "run", "--scripts", os.path.join(h.FIXTURES, "predicate_isolation"),
                          "--predicate-timeout", "0"], capture_output=True, text=True, timeout=20)
    h.check(bad.returncode == 2 and "--predicate-timeout must be > 0" in bad.stderr,
            f"--predicate-timeout 0 is refused naming the flag (rc {bad.returncode}: {bad.stderr.strip()[:120]})")

    srv, url, kc = h.start_apiserver()
    api = h.Api(url)
    api.namespace(NS)
    mport = h.free_port()
    op = h.start_operator("operator", os.path.join(h.FIXTURES, "predicate_isolation"), kc,
                          ["--metrics-bind-address", f"127.0.0.1:{mport}"])
    live = [srv, op]

    def reconciled(ctrl, key):
        return op.oplog.find(msg="reconciled", ctrl=ctrl, key=key)

    def secret(name):
        api.ok("POST", f"/api/v1/namespaces/{NS}/secrets",
               {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": {"k": "dg=="}})

    # the operator is up and the Secret path works
    secret("s0")
    h.wait_for("prompt to reconcile the first Secret", 20, lambda: reconciled("prompt", "s0"), live)

    for i in range(N_CM):
        api.ok("POST", f"/api/v1/namespaces/{NS}/configmaps",
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm{i}"}, "data": {"i": str(i)}})
    # the spinner is now stuck in its predicate (one event after another, 250 ms each)
    t0 = time.monotonic()
    secret("s1")
    h.wait_for("prompt to reconcile a Secret while the spinner spins", 10, lambda: reconciled("prompt", "s1"), live)
    took = time.monotonic() - t0
    print(f"   the Secret was reconciled {took:.2f}s after its create, during {N_CM} spinning predicates",
          file=sys.stderr)
    h.check(took < 2.0, f"another controller's event is reconciled promptly ({took:.2f}s < 2s)")

    # every spinning predicate ends at its deadline and lets its event through
    for i in range(N_CM):
        h.wait_for(f"spinner and sharer to reconcile cm{i}", 10,
                   lambda: reconciled("spinner", f"cm{i}") and reconciled("sharer", f"cm{i}"), live)
    h.check(True, "a timed-out predicate lets its event through; the same informer's other controller gets it too")

    fails = op.oplog.find(msg="predicate failed; letting the event through", controller="spinner")
    h.check(len(fails) >= N_CM, f"each timed-out predicate is logged ({len(fails)} lines)")
    err = fails[0].get("error", "") if fails else ""
    h.check("predicate deadline exceeded" in err and "main.lua:" in err,
            f"the log names the deadline and main.lua:line ({err[:160]!r})")
    h.check(not op.oplog.find(msg="predicate failed; letting the event through", controller="prompt") and
            not op.oplog.find(msg="predicate failed; letting the event through", controller="sharer"),
            "the other controllers' predicates never failed")

    def metric(name, labels):
        with urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + "{") and labels in line.split("}")[0]:
                    return float(line.split()[-1])
        return None
    n = metric("luaop_lua_event_errors_total", 'controller="spinner",function="predicate",reason="timeout"')
    h.check(n is not None and n >= N_CM, f"luaop_lua_event_errors_total counts the timeouts ({n})")

    # the cost of isolation: one event VM per controller with Lua predicates, next to its workers'
    ev = {c: metric("luaop_lua_memory_bytes", f'vm="{c}/event"') for c in ("spinner", "sharer", "prompt")}
    wk = metric("luaop_lua_memory_bytes", 'vm="prompt/0"')
    print(f"   event VM bytes per controller: {ev}; a worker VM: {wk}", file=sys.stderr)
    h.check(all(v and v > 0 for v in ev.values()), "each controller's event VM reports its memory")
    h.check(op.poll() is None, "the operator survived")
    h.stop(op, 0)
    h.stop(srv, 0)


h.main("operator_predicate_isolation", body)
