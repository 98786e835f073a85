#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: Debian's python3-kubernetes (a client nobody here wrote) against
`luaop apiserver`: list, pagination, conflicts, watch with bookmarks, 410 handling after
compaction, custom resources with the status subresource, Leases with MicroTime."""
import datetime
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

LUAOP = os.environ["LUAOP"]
tmp = tempfile.mkdtemp()
kc = os.path.join(tmp, "kc")
proc = subprocess.Popen([LUAOP, "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out", kc,
                         "--enable-fault-control"], stdout=subprocess.PIPE, text=True)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


try:
    line = proc.stdout.readline()
    assert line.startswith("listening on "), line
    url = line.split()[-1]
    config.load_kube_config(config_file=kc)
    v1 = client.CoreV1Api()

    def fault(action):
        req = urllib.request.Request(url + "/luaop-fault/" + action, data=b"", method="POST")
        urllib.request.urlopen(req).read()

    # --- list, namespaces, items never null
    names = [n.metadata.name for n in v1.list_namespace().items]
    check("default" in names and "kube-system" in names, "default namespaces exist")
    empty = v1.list_namespaced_config_map("kube-public")
    check(empty.items == [] and empty.metadata.resource_version, "empty list has [] and an RV")

    # --- create, conflict on a stale RV, AlreadyExists
    cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c1", labels={"app": "x"}),
                            data={"k": "1"})
    created = v1.create_namespaced_config_map("default", cm)
    rv0 = created.metadata.resource_version
    created.data["k"] = "2"
    v1.replace_namespaced_config_map("c1", "default", created)
    created.data["k"] = "3"
    try:
        v1.replace_namespaced_config_map("c1", "default", created)
        check(False, "stale replace must fail")
    except ApiException as e:
        body = json.loads(e.body)
        check(e.status == 409 and body["reason"] == "Conflict", "stale RV gives 409 Conflict")
        check(body["details"]["kind"] == "configmaps", "Conflict details.kind is the plural (Q.3)")
    try:
        v1.create_namespaced_config_map("default", cm)
        check(False, "duplicate create must fail")
    except ApiException as e:
        check(e.status == 409 and json.loads(e.body)["reason"] == "AlreadyExists", "AlreadyExists")

    # --- pagination
    for i in range(5):
        v1.create_namespaced_config_map("default", client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="p%d" % i, labels={"page": "yes"})))
    seen, cont, pages = [], None, 0
    while True:
        page = v1.list_namespaced_config_map("default", label_selector="page=yes", limit=2,
                                             _continue=cont)
        pages += 1
        seen += [c.metadata.name for c in page.items]
        cont = page.metadata._continue
        if not cont:
            break
    check(seen == ["p0", "p1", "p2", "p3", "p4"] and pages == 3, "paginated list: %r" % seen)

    # --- watch from a resourceVersion, with bookmarks; ends after timeoutSeconds
    v1.patch_namespaced_config_map("c1", "default", {"data": {"k": "4"}})
    v1.delete_namespaced_config_map("c1", "default")
    w = watch.Watch()
    events = [(e["type"], e["raw_object"]["metadata"].get("name"))
              for e in w.stream(v1.list_namespaced_config_map, "default", resource_version=rv0,
                                field_selector="metadata.name=c1", allow_watch_bookmarks=True,
                                timeout_seconds=1)]
    types = [t for t, _ in events]
    check(types[:3] == ["MODIFIED", "MODIFIED", "DELETED"], "watch replay: %r" % types)
    check(types[-1] == "BOOKMARK", "bookmark before the timeout closes the watch: %r" % types)

    # --- 410 after compaction: ERROR event inside a 200 stream (Q.1)
    fault("compact")
    try:
        for _ in watch.Watch().stream(v1.list_namespaced_config_map, "default",
                                      resource_version=rv0, timeout_seconds=1):
            pass
        check(False, "watch from a compacted RV must fail")
    except ApiException as e:
        check(e.status == 410 and "Expired" in str(e.reason), "410 Expired on compacted watch")
    # relist then watch from the list RV works
    lst = v1.list_namespaced_config_map("default")
    evs = list(watch.Watch().stream(v1.list_namespaced_config_map, "default",
                                    resource_version=lst.metadata.resource_version,
                                    timeout_seconds=1))
    check(evs == [], "watch from the fresh list RV is quiet: %r" % evs)

    # --- a selector watch sees label transitions as DELETED / ADDED (F.9)
    sel = v1.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="sel", labels={"team": "a"})))
    v1.patch_namespaced_config_map("sel", "default", {"metadata": {"labels": {"team": "b"}}})
    v1.patch_namespaced_config_map("sel", "default", {"metadata": {"labels": {"team": "a"}}})
    types = [e["type"] for e in watch.Watch().stream(
        v1.list_namespaced_config_map, "default", label_selector="team=a",
        resource_version=sel.metadata.resource_version, timeout_seconds=1)]
    check(types == ["DELETED", "ADDED"], "selector transitions: %r" % types)

    # --- finalizers: delete marks, removing the last finalizer deletes (I.6, I.10)
    v1.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="fin", finalizers=["example.com/hold"])))
    v1.delete_namespaced_config_map("fin", "default", _preload_content=False)
    held = v1.read_namespaced_config_map("fin", "default")
    check(held.metadata.deletion_timestamp is not None, "deletionTimestamp set while finalized")
    v1.patch_namespaced_config_map("fin", "default", {"metadata": {"finalizers": None}})
    try:
        v1.read_namespaced_config_map("fin", "default")
        check(False, "object must be gone after its last finalizer")
    except ApiException as e:
        check(e.status == 404, "404 after the last finalizer")

    # --- CRD + custom objects + status subresource
    ext = client.ApiextensionsV1Api()
    ext.create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]}})
    co = client.CustomObjectsApi()
    g = co.create_namespaced_custom_object("example.com", "v1", "default", "gadgets", {
        "apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"},
        "spec": {"size": 1}, "status": {"ok": True}})
    check("status" not in g and g["metadata"]["generation"] == 1, "CR create drops status")
    g = co.patch_namespaced_custom_object_status("example.com", "v1", "default", "gadgets", "g1",
                                                 {"status": {"ok": True}})
    check(g["status"] == {"ok": True} and g["metadata"]["generation"] == 1, "status patch")
    try:
        co.replace_namespaced_custom_object("example.com", "v1", "default", "gadgets", "g1", {
            "apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"}})
        check(False, "CR PUT without RV must fail")
    except ApiException as e:
        check(e.status == 422, "CR PUT without resourceVersion is 422 (Q.4)")

    # --- Lease with MicroTime, create-on-PUT
    coord = client.CoordinationV1Api()
    now = datetime.datetime(2025, 3, 1, 10, 5, 12, 650001, tzinfo=datetime.timezone.utc)
    lease = client.V1Lease(metadata=client.V1ObjectMeta(name="leader"),
                           spec=client.V1LeaseSpec(holder_identity="me", lease_duration_seconds=15,
                                                   acquire_time=now, renew_time=now))
    got = coord.create_namespaced_lease("default", lease)
    check(got.spec.renew_time == now, "MicroTime round trip")
    got.spec.holder_identity = "other"
    got = coord.replace_namespaced_lease("leader", "default", got)
    check(got.spec.holder_identity == "other", "lease update with RV")
finally:
    proc.terminate()
    proc.wait(timeout=10)

# the verdict: every check() above must have held (an AssertionError exits non-zero with the list)
if failures:
    raise AssertionError("%d check(s) failed: %s" % (len(failures), "; ".join(failures)))
print("PASS apiserver_python")
