#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test (issue 24 part 9): `luaop run --namespace a,b` against the local API server.

controller-runtime's cache.Options.DefaultNamespaces: one informer per namespace of the list per
watched kind, their union as the controller's view.

  1. ConfigMaps in a and b are reconciled; one in c (not in the list) is not;
  2. one informer per namespace: the log names a ConfigMap informer for a and for b, none for c
     or for all namespaces;
  3. reads through the Lua client: a list across all namespaces answers the union of a and b from
     the cache; a get and a list in c answer an error naming the namespace list;
  4. a reload that changes the controller's rate_limiter (a new queue for it) keeps the
     per-namespace informers (none restarted) and the controller still reconciles in a and b;
  5. the controller's rate_limiter declaration is accepted by `luaop check` and a bad one fails
     naming the field.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402

SCRIPTS = os.path.join(h.FIXTURES, "namespaces")


def cm(ns, name):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns,
                                                                   "labels": {"ns-test": "yes"}}, "data": {"x": "1"}}


def data(api, ns, name):
    o = api.get(f"/api/v1/namespaces/{ns}/configmaps/{name}")
    return (o or {}).get("data") or {}


def body():
    _, url, kc = h.start_apiserver()
    api = h.Api(url)
    for ns in ("a", "b", "c"):
        api.namespace(ns)
    for ns, name in (("a", "one"), ("b", "two"), ("c", "other")):
        api.ok("POST", f"/api/v1/namespaces/{ns}/configmaps", cm(ns, name))
    scripts = os.path.join(h.TMP, "scripts")  # a copy: step 4 edits it
    shutil.copytree(SCRIPTS, scripts)
    op = h.start_operator("operator", scripts, kc, ["--namespace", "a, b"])
    h.wait_for("a/one and b/two reconciled", 30,
               lambda: data(api, "a", "one").get("reconciled") and data(api, "b", "two").get("reconciled"), [op])
    h.check(True, "1: ConfigMaps in the listed namespaces a and b are reconciled")
    api.ok("POST", "/api/v1/namespaces/a/configmaps", cm("a", "probe"))
    d = h.wait_for("the probe reconciled", 30, lambda: data(api, "a", "probe").get("reconciled") and
                   data(api, "a", "probe"), [op])
    h.check(d.get("list_all") == "a/one,a/probe,b/two",
            f"3: a list across all namespaces is the union of a and b ({d.get('list_all')})")
    for key in ("get_c", "list_c"):
        msg = d.get(key, "")
        h.check(msg.startswith("error: ") and "unknown namespace for the cache" in msg and '"c"' in msg and
                "a, b" in msg, f"3: {key} in namespace c answers an error naming the namespace list ({msg})")
    # c/other stays untouched while a later object is reconciled (it was created first, so an
    # informer holding c would have delivered it long before)
    api.ok("POST", "/api/v1/namespaces/b/configmaps", cm("b", "late"))
    h.wait_for("b/late reconciled", 30, lambda: data(api, "b", "late").get("reconciled"), [op])
    h.check(not data(api, "c", "other").get("reconciled"), "1: the ConfigMap in c (not listed) is not reconciled")

    main = os.path.join(scripts, "main.lua")
    with open(main) as f:
        src = f.read()
    with open(main + ".tmp", "w") as f:
        f.write(src.replace("max_delay = 0.05", "max_delay = 0.08"))
    os.rename(main + ".tmp", main)

    def installs():
        with open(op.logfile) as f:
            return f.read().count('msg="scripts installed"')
    h.wait_for("the edited scripts installed", 30, lambda: installs() == 2, [op])
    for ns, name in (("a", "after"), ("b", "after")):
        api.ok("POST", f"/api/v1/namespaces/{ns}/configmaps", cm(ns, name))
    h.wait_for("a/after and b/after reconciled after the reload", 30,
               lambda: data(api, "a", "after").get("reconciled") and data(api, "b", "after").get("reconciled"), [op])
    h.stop(op)
    with open(op.logfile) as f:
        log = f.read()
    starts = re.findall(r'msg="starting informer" informer=(\S+)', log)
    h.check(sorted(starts) == ["/v1/configmaps|a|", "/v1/configmaps|b|"] and 'msg="stopping informer"' not in
            log.split('msg="shutting down"')[0],
            f"4: the reload kept both namespace informers (started: {starts}) and reconciles in a and b")
    informers = set(re.findall(r"informer=(\S*configmaps\S*)", log))
    h.check(any("|a|" in i for i in informers) and any("|b|" in i for i in informers) and
            not any("|c|" in i or "||" in i for i in informers),
            f"2: one ConfigMap informer per listed namespace, none for c or all ({sorted(informers)})")

    bad = os.path.join(h.TMP, "bad")
    os.makedirs(bad)
    with open(os.path.join(SCRIPTS, "main.lua")) as f:
        src = f.read()
    with open(os.path.join(bad, "main.lua"), "w") as f:
        f.write(src.replace("qps = 100", "qps = 0"))
    ok = subprocess.run([h.LUAOP, "check", "--scripts", SCRIPTS], capture_output=True, text=True)
    h.check(ok.returncode == 0, f"5: luaop check accepts the rate_limiter ({ok.stderr.strip()})")
    p = subprocess.run([h.LUAOP, "check", "--scripts", bad], capture_output=True, text=True)
    h.check(p.returncode != 0 and "rate_limiter.qps must be a number > 0" in p.stderr,
            f"5: a bad rate_limiter fails naming the field ({p.stderr.strip().splitlines()[0]})")


h.main("operator_namespaces", body)
