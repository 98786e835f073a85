#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: malformed watch streams restart the watch, are logged, never crash.

`luaop run` (fixtures/watch_faults, the ConfigMap mirror) talks to `luaop apiserver` through
opharness.FaultProxy, a loopback proxy that corrupts watch streams on demand. Proves that for
  1. garbage at the start of a watch (a document that is not JSON),
  2. a non-object document injected into an established watch,
  3. an event whose object has no metadata,
  4. a stream that ends inside an event,
the operator logs the malformed stream, re-watches (without losing the events sent meanwhile:
a change made right after the corruption is reconciled), never exits, and exits 0 on SIGTERM.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402

NS = "wf"
CM = f"/api/v1/namespaces/{NS}/configmaps"


def body():
    srv, url, _ = h.start_apiserver()
    api = h.Api(url)
    api.namespace(NS)
    proxy = h.FaultProxy(url)
    kc = proxy.kubeconfig(os.path.join(h.TMP, "proxy.kubeconfig"))
    api.ok("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "a", "labels": {"role": "src"}}, "data": {"v": "0"}})
    op = h.start_operator("operator", os.path.join(h.FIXTURES, "watch_faults"), kc,
                          ["--log-level", "debug"])
    live = [srv, op]
    n = [0]

    def out_is(v):
        o = api.get(f"{CM}/out-a")
        return o is not None and o.get("data", {}).get("v") == v

    def change_and_converge(what):
        n[0] += 1
        v = str(n[0])
        api.merge_patch(f"{CM}/a", {"data": {"v": v}})
        h.wait_for(f"out-a v={v} after {what}", 20, lambda: out_is(v), live)

    def logged(kind):
        return [r for r in op.oplog.records() if r.get("level") in ("warn", "error") and
                any(w in r.get("msg", "") for w in kind)]

    h.wait_for("out-a v=0", 20, lambda: out_is("0"), live)
    change_and_converge("start")  # the watch through the proxy delivers events
    h.wait_for("an open watch through the proxy", 10, lambda: proxy.open_watches() >= 1, live)

    cases = [
        ("garbage at the start of a watch", "prepend", b'{"type":"ADDED","object":{"metadata":}}\n'),
        ("a non-object document mid-stream", "inject", b'42\n'),
        ("an event without metadata mid-stream", "inject", b'{"type":"MODIFIED","object":{"kind":"ConfigMap"}}\n'),
        ("a stream ending inside an event", "cut", b'{"type":"MODIFIED","object":{"metadata":{"name":"a"'),
    ]
    for title, how, data in cases:
        before = len(logged(("malformed", "inside an event")))
        if how == "prepend":
            proxy.prepend(data)
            api.fault("close-watches")  # the re-watch gets the garbage first
        else:
            h.wait_for("an open watch through the proxy", 20, lambda: proxy.open_watches() >= 1, live)
            h.require(getattr(proxy, how)(data) >= 1, f"{title}: injected into an open watch")
        h.wait_for(f"{title}: logged", 20,
                   lambda: len(logged(("malformed", "inside an event"))) > before, live)
        change_and_converge(title)
        h.check(op.poll() is None, f"{title}: logged, re-watched, later changes reconcile")
    h.check(len(logged(("malformed",))) >= 3, "three malformed streams logged")
    h.check(len(logged(("inside an event",))) >= 1, "the cut stream logged as ending inside an event")
    h.stop(op, 0)


h.main("operator_malformed_watch", body)
