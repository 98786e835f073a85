#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: reloads that add and remove a controller (`luaop dev --scripts-configmap`).

  1. adding a controller for a new kind (Gadget) -> its informer starts (log "starting
     informer", luaop_informer_objects{gvr=".../gadgets"} appears with every Gadget), its existing
     objects are reconciled (finalizer added, status written), the Widget controller keeps its
     queue and is not rebuilt;
  2. removing it -> "controller removed by reload; draining", "stopping informer", the metric
     disappears, the informer and worker threads end, and no watch is left open: after a
     Gadget changes, no connection to the API server holds unread bytes (a leftover watch
     stream would receive the event with nobody reading it);
  3. a Gadget deleted while no controller owns its finalizer stays (deletionTimestamp set,
     finalizer kept) — documented behaviour — and is finalized as soon as a reload brings the
     controller back;
  4. a set naming a kind not served yet is rejected, and loads by itself (retried every 10 s)
     once its CRD is applied.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reload_common import CRD, Check, Dev, WIDGET_CRD, configmap_json, widget_main  # noqa: E402

GADGET_CRD = CRD % {"plural": "gadgets", "kind": "Gadget", "singular": "gadget"}
GADGETS = """
op.controller {
  name = "gadgets",
  for_ = { api_version = "example.com/v1", kind = "Gadget" },
  reconcile = function(req)
    local g, err = op.client.get("example.com/v1", "Gadget", req.namespace, req.name)
    if not g then
      if op.errors.is_not_found(err) then return op.result.done() end
      return nil, err
    end
    local deleting, ferr = op.finalizers.finalize(g, "example.com/gadget", function() return true end)
    if ferr then return nil, ferr end
    if deleting then return op.result.done() end
    local _, serr = op.status.update(g, function(o) o.status.seen = LOGIC end)
    if serr then return nil, serr end
    return op.result.done()
  end,
}
"""
GVR = 'gvr="example.com/v1/gadgets"'
GPATH = "/apis/example.com/v1/namespaces/default/gadgets"

ok = Check()
dev = Dev("--scripts-configmap", "default/scripts", crds=[WIDGET_CRD, GADGET_CRD])
api_port = int(dev.api.rsplit(":", 1)[1])


def connections(unread=False):
    """ESTABLISHED TCP connections from this process to the API server port (client side), or
    with unread=True the bytes received on them that nobody has read."""
    inodes = set()
    fd_dir = "/proc/%d/fd" % dev.proc.pid
    for fd in os.listdir(fd_dir):
        try:
            link = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    n = 0
    for table in ("/proc/%d/net/tcp" % dev.proc.pid, "/proc/%d/net/tcp6" % dev.proc.pid):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            c = row.split()
            if c[3] == "01" and int(c[2].split(":")[1], 16) == api_port and c[9] in inodes:
                n += int(c[4].split(":")[1], 16) if unread else 1
    return n


def unread_bytes():
    return connections(unread=True)


def threads():
    with open("/proc/%d/status" % dev.proc.pid) as f:
        return int([l for l in f if l.startswith("Threads:")][0].split()[1])


def gadget(name):
    code, obj = dev.request("GET", GPATH + "/" + name)
    return obj if code == 200 else None


def all_widgets(v):
    return lambda: all((w.get("status") or {}).get("logic") == v for w in dev.widgets())


try:
    dev.create_widget("w0")
    for i in range(3):
        code, _ = dev.request("POST", GPATH, '{"apiVersion":"example.com/v1","kind":"Gadget",'
                              '"metadata":{"name":"g%d","namespace":"default"}}' % i)
        assert code == 201
    only_widgets = {"main.lua": widget_main("v1")}
    dev.apply(configmap_json(only_widgets))
    dev.wait_for("w0 on v1", 20, all_widgets("v1"))
    ok(dev.metric("luaop_informer_objects", GVR) is None, "no Gadget informer before")
    dev.wait_for("a steady connection count", 10, lambda: connections() > 0)
    base = connections()
    threads0 = threads()

    # 1. add the gadgets controller
    with_gadgets = {"main.lua": widget_main("v2") + GADGETS}
    t = time.monotonic()
    dev.apply(configmap_json(with_gadgets))
    dev.wait_for("every Gadget reconciled", 20, lambda: all(
        ((gadget("g%d" % i) or {}).get("status") or {}).get("seen") == "v2" for i in range(3)))
    ok(all("example.com/gadget" in gadget("g%d" % i)["metadata"].get("finalizers", [])
           for i in range(3)), "existing Gadgets reconciled by the new controller (finalizer added)")
    ok(bool(dev.log_matches(r'msg="starting informer" informer=example\.com/v1/gadgets', after=t)),
       "log: starting informer example.com/v1/gadgets")
    ok(bool(dev.log_matches(r'msg="starting controller" controller=gadgets', after=t)),
       "log: starting controller gadgets")
    ok(not dev.log_matches(r'msg="starting controller" controller=widgets', after=t),
       "the widgets controller was kept (not restarted)")
    ok(dev.metric("luaop_informer_objects", GVR) == 3, "luaop_informer_objects{gadgets} = 3")
    dev.wait_for("w0 on v2", 10, all_widgets("v2"))
    with_watch = connections()
    threads1 = threads()
    ok(with_watch >= base + 1, "one more connection while the Gadget watch runs (%d -> %d)"
       % (base, with_watch))

    # 2. remove it again
    t = time.monotonic()
    dev.apply(configmap_json({"main.lua": widget_main("v3")}))
    dev.wait_log(r'msg="controller removed by reload; draining" controller=gadgets', 10, after=t)
    dev.wait_log(r'msg="stopping informer" informer=example\.com/v1/gadgets', 10, after=t)
    ok(True, "log: controller gadgets drained, informer stopped")
    dev.wait_for("w0 on v3", 10, all_widgets("v3"))
    ok(dev.metric("luaop_informer_objects", GVR) is None, "luaop_informer_objects{gadgets} gone")
    dev.wait_for("the informer and worker threads to end", 10, lambda: threads() <= threads0)
    ok(True, "threads back to %d (Gadget informer and worker joined)" % threads0)
    # A watch left open would receive this change on a socket nobody reads any more.
    dev.patch(GPATH + "/g0", {"metadata": {"labels": {"poke": "1"}}})
    dev.patch("/apis/example.com/v1/namespaces/default/widgets/w0", {"spec": {"n": 4}})
    dev.wait_for("w0 generation 2 reconciled (a barrier)", 10, lambda: (
        (dev.widget("w0").get("status") or {}).get("observedGeneration") == 2))
    # Live streams (the Widget watch) are read at once; a leaked one would keep its bytes.
    dev.wait_for("no unread bytes on connections to the API server", 5,
                 lambda: unread_bytes() == 0)
    ok(True, "no watch left open: a Gadget change leaves no unread data on any connection")

    # 3. deleting a Gadget whose controller is gone: the finalizer stays
    code, _ = dev.request("DELETE", GPATH + "/g1")
    ok(code in (200, 202), "DELETE g1 accepted (%d)" % code)
    dev.patch("/apis/example.com/v1/namespaces/default/widgets/w0", {"spec": {"n": 5}})
    dev.wait_for("w0 generation 3 reconciled (a barrier)", 10, lambda: (
        (dev.widget("w0").get("status") or {}).get("observedGeneration") == 3))
    g1 = gadget("g1")
    ok(g1 is not None and g1["metadata"].get("deletionTimestamp")
       and "example.com/gadget" in g1["metadata"].get("finalizers", []),
       "g1 stays terminating with its finalizer while no controller owns it")
    dev.apply(configmap_json({"main.lua": widget_main("v4") + GADGETS}))
    dev.wait_for("g1 finalized once the controller is back", 20, lambda: gadget("g1") is None)
    ok(True, "the returning controller removes the finalizer; g1 is gone")
    ok(gadget("g0") is not None and gadget("g2") is not None, "the other Gadgets are untouched")

    # 4. a controller for a kind whose CRD comes after the ConfigMap: rejected, then retried
    gizmos = GADGETS.replace('"Gadget"', '"Gizmo"').replace('name = "gadgets"', 'name = "gizmos"')
    t = time.monotonic()
    dev.apply(configmap_json({"main.lua": widget_main("v5") + gizmos}))
    dev.wait_log(r'script reload failed.*kind example\.com/v1 Gizmo is not served', 10, after=t)
    ok(True, "a set naming an unserved kind is rejected")
    dev.kubectl("apply", "-f", "-", input=CRD % {"plural": "gizmos", "kind": "Gizmo", "singular": "gizmo"})
    dev.wait_log(r'msg="scripts reloaded"', 15, after=t)
    dev.wait_for("w0 on v5", 10, all_widgets("v5"))
    ok(True, "the same content is retried (every 10 s) and loads once the CRD is served")
finally:
    rc = dev.stop()
ok(rc == 0, "exit 0 on SIGTERM")
ok.finish("reload_controllers")
