#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""py_informer.py — the second, slower reference: Debian's python3-kubernetes (run it with
/usr/bin/python3, which sees Debian's packages). A hand-made informer the way Python operators
commonly do it: LIST (raw dicts, no model objects), then Watch(return_type="object") (raw dicts),
a dict cache keyed by namespace/name and a deduplicating queue (deque + set).

    py_informer.py sync  KUBECONFIG RESOURCE
    py_informer.py watch KUBECONFIG RESOURCE FROM_RV M

RESOURCE: "pods", "configmaps" or "GROUP/VERSION/PLURAL". Same measurements and output line as
informer.mjs (key=value).
"""
import collections
import gc
import json
import sys
import time

from kubernetes import client, config, watch


def rss_kb():
    gc.collect()
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main():
    mode, kc, resource = sys.argv[1:4]
    config.load_kube_config(config_file=kc)
    if resource in ("pods", "configmaps"):
        core = client.CoreV1Api()
        fn = core.list_pod_for_all_namespaces if resource == "pods" else core.list_config_map_for_all_namespaces
        list_raw = lambda: json.loads(fn(_preload_content=False).data)
        watch_fn, watch_args = fn, ()
    else:
        group, version, plural = resource.split("/")
        co = client.CustomObjectsApi()
        list_raw = lambda: co.list_cluster_custom_object(group, version, plural)
        watch_fn, watch_args = co.list_cluster_custom_object, (group, version, plural)

    cache = {}
    pending, order = set(), collections.deque()

    def handle(obj):
        md = obj["metadata"]
        key = "%s/%s" % (md.get("namespace", ""), md["name"])
        cache[key] = obj
        if key not in pending:
            pending.add(key)
            order.append(key)

    def drain():
        while order:
            pending.discard(order.popleft())

    rss0 = rss_kb()
    c0, t0 = time.process_time(), time.perf_counter()
    lst = list_raw()
    for o in lst["items"]:
        handle(o)
    drain()
    if mode == "sync":
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        n = len(lst["items"])
        print("objects=%d seconds=%.4f rate=%.1f cpu_s=%.4f rss_delta_kb=%d" % (
            n, dt, n / dt, cpu, rss_kb() - rss0))
        return 0
    want = int(sys.argv[5])
    got = 0
    w = watch.Watch(return_type="object")
    c0, t0 = time.process_time(), time.perf_counter()
    for ev in w.stream(watch_fn, *watch_args, resource_version=sys.argv[4], timeout_seconds=600):
        if ev["type"] in ("ADDED", "MODIFIED"):
            handle(ev["object"])
            got += 1
            if len(order) > 64:
                drain()
            if got >= want:
                break
    drain()
    w.stop()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    print("events=%d seconds=%.4f rate=%.1f cpu_s=%.4f" % (got, dt, got / dt, cpu))
    return 0 if got >= want else 1


if __name__ == "__main__":
    sys.exit(main())
