#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test (issue 23 part 8): field indexes in the host (op.index, op.client.list with
index = {...}), under `luaop run` against `luaop apiserver`.

The script set (written by this test, so that it can reload it) declares the index "secretRef"
(spec.template.spec.volumes[*].secret.secretName) on Deployments, and a controller for
Deployments that watches Secrets with a map function finding the Deployments that mount the
Secret through the index (op.client.list(..., {index = {secretRef = name}}) served by the
informer cache's field index, hostapi.c → fieldindex.c), never by listing the namespace. Proves:
  - a Secret's create/update enqueues exactly the Deployments of its namespace that mount it (the
    map function logs the index's answer; each of them is reconciled);
  - an update of a Deployment that moves its value moves it in the index (the next Secret event
    finds it);
  - a lookup across all namespaces, and an unknown index name raising with the declared names, in
    the host's own words (the same message luaop.testing gives, spec/fieldindex_spec.lua);
  - a reload that adds an index ("configRef", with a ConfigMap watch using it) builds it from a
    fresh list of the kind (the ConfigMap's event finds the Deployment created before the reload)
    and keeps the old one working; a reload that removes it makes it unknown again;
  - a reload to an index on a kind no controller watches in full is refused naming it (the
    running set keeps serving its index), and `luaop check` refuses it and lists the indexes;
  - under --namespace a,b (one informer per namespace) a lookup across all namespaces is their
    union; under --namespace a, that namespace's objects;
  - a Lua extract index (op.index{extract = function(obj)}) run by the host in its own event VM:
    the Secret named in a container's env finds its Deployment; an object whose extract raises is
    left out of the index and logged with main.lua:line, one that never returns is stopped at the
    predicate deadline (and left out); it survives a reload (re-listed);
  - the operator exits 0 on SIGTERM.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402

MAIN = """-- SPDX-License-Identifier: Apache-2.0
local op = require("luaop")
local AV, KIND = "apps/v1", "Deployment"

op.index { name = "secretRef", api_version = AV, kind = KIND,
           field = "spec.template.spec.volumes[*].secret.secretName" }
-- a Lua extract function: the Secrets the containers' env names; raises on explode=yes objects,
-- never returns on spin=yes ones
op.index { name = "envSecret", api_version = AV, kind = KIND, extract = function(d)
  if (d.metadata.labels or {}).explode == "yes" then error("boom") end
  if (d.metadata.labels or {}).spin == "yes" then while true do end end
  local out = {}
  for _, c in ipairs(d.spec.template.spec.containers or {}) do
    for _, e in ipairs(c.env or {}) do
      local ref = e.valueFrom and e.valueFrom.secretKeyRef
      if ref then out[#out + 1] = ref.name end
    end
  end
  return out
end }
%(extra_index)s
local function keys(list)
  local out = {}
  for i, d in ipairs(list) do out[i] = d.metadata.namespace .. "/" .. d.metadata.name end
  return table.concat(out, ",")
end

-- obj -> the Deployments of its namespace whose index `index` holds obj's name
local function users(index)
  return function(obj)
    local ds, err = op.client.list(AV, KIND, obj.metadata.namespace, { index = { [index] = obj.metadata.name } })
    if not ds then
      op.log.error("map failed", { err = err.message })
      return {}
    end
    op.log.info("mapped", { via = index, obj = obj.metadata.namespace .. "/" .. obj.metadata.name,
                            keys = keys(ds), rv = obj.metadata.resourceVersion })
    local reqs = {}
    for i, d in ipairs(ds) do reqs[i] = { namespace = d.metadata.namespace, name = d.metadata.name } end
    return reqs
  end
end

op.controller {
  name = "secret-users",
  for_ = { api_version = AV, kind = KIND },
  watches = { { api_version = "v1", kind = "Secret", map = users("secretRef") },
              { api_version = "v1", kind = "Secret", map = users("envSecret") },
%(extra_watch)s  },
  reconcile = function(req)
    local d = op.client.get(AV, KIND, req.namespace, req.name)
    local probe = d and (d.metadata.annotations or {}).probe
    if probe then
      local ok, err = pcall(op.client.list, AV, KIND, { namespace = req.namespace, index = { [probe] = "x" } })
      local all = op.client.list(AV, KIND, nil, { index = { secretRef = "db-creds" } })
      op.log.info("probe", { index = probe, ok = tostring(ok), err = ok and "" or tostring(err),
                             all = all and keys(all) or "" })
    end
    op.log.info("reconciled", { key = req.namespace .. "/" .. req.name })
    return op.result.done()
  end,
}
"""

V1 = MAIN % {"extra_index": "", "extra_watch": ""}
V2 = MAIN % {
    "extra_index": 'op.index { name = "configRef", api_version = AV, kind = KIND,\n'
                   '           field = "spec.template.spec.volumes[*].configMap.name" }\n',
    "extra_watch": '    { api_version = "v1", kind = "ConfigMap", map = users("configRef") },\n',
}


def write(path, text):
    tmp = path + ".tmp~"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def deployment(name, secrets, configmaps=(), env_secret=None, labels=None):
    vols = [{"name": f"s{i}", "secret": {"secretName": s}} for i, s in enumerate(secrets)]
    vols += [{"name": f"c{i}", "configMap": {"name": c}} for i, c in enumerate(configmaps)]
    c = {"name": "c", "image": "busybox"}
    if env_secret:
        c["env"] = [{"name": "K", "valueFrom": {"secretKeyRef": {"name": env_secret, "key": "k"}}}]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels or {"app": name}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [c], "volumes": vols}}}}


def body():
    srv, url, kc = h.start_apiserver()
    api = h.Api(url)
    for ns in ("a", "b"):
        api.namespace(ns)
    scripts = os.path.join(h.TMP, "scripts")
    os.makedirs(scripts)
    write(os.path.join(scripts, "main.lua"), V1)
    op = h.start_operator("operator", scripts, kc)
    live = [srv, op]

    def reconciles(key):
        return len(op.oplog.find(msg="reconciled", key=key))

    def mapped(via, obj, rv):
        r = op.oplog.find(msg="mapped", via=via, obj=obj, rv=rv)
        return r and r[-1]

    def installs():
        return len(op.oplog.find(msg="scripts installed"))

    def secret(ns, name, value):
        path = f"/api/v1/namespaces/{ns}/secrets"
        code, _ = api.req("GET", f"{path}/{name}")
        if code == 404:
            o = api.ok("POST", path, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                                      "stringData": {"k": value}})
        else:
            o = api.merge_patch(f"{path}/{name}", {"stringData": {"k": value}})
        return o["metadata"]["resourceVersion"]

    def wait_mapped(via, obj, rv, want, after):
        m = h.wait_for(f"the {via} map of {obj}@{rv}", 20, lambda: mapped(via, obj, rv), live)
        h.check(m.get("keys") == want, f"{obj}'s event via index {via} finds [{want}] (got [{m.get('keys')}])")
        for key in want.split(",") if want else []:
            h.wait_for(f"{key} reconciled again", 20, lambda: reconciles(key) > after[key], live)
        h.check(True, f"each Deployment found is reconciled ({want or 'none'})")

    h.wait_for("the scripts to be installed", 20, lambda: installs() >= 1, live)
    api.ok("POST", "/apis/apps/v1/namespaces/a/deployments", deployment("web", ["db-creds"], ["cfg"], "api-key"))
    api.ok("POST", "/apis/apps/v1/namespaces/a/deployments", deployment("other", ["tls"]))
    api.ok("POST", "/apis/apps/v1/namespaces/b/deployments", deployment("web", ["db-creds"]))
    api.ok("POST", "/apis/apps/v1/namespaces/b/deployments",
           deployment("bad", [], (), "api-key", {"app": "bad", "explode": "yes"}))
    api.ok("POST", "/apis/apps/v1/namespaces/b/deployments",
           deployment("spin", [], (), "api-key", {"app": "spin", "spin": "yes"}))
    for key in ("a/web", "a/other", "b/web", "b/bad", "b/spin"):
        h.wait_for(f"{key} reconciled", 20, lambda: reconciles(key) >= 1, live)

    def counts():
        return {k: reconciles(k) for k in ("a/web", "a/other", "b/web", "b/bad", "b/spin")}

    # 1. a Secret finds the Deployments of its namespace that mount it
    c = counts()
    rv = secret("a", "db-creds", "v1")
    wait_mapped("secretRef", "a/db-creds", rv, "a/web", c)
    c = counts()
    rv = secret("a", "tls", "v1")
    wait_mapped("secretRef", "a/tls", rv, "a/other", c)
    c = counts()
    rv = secret("b", "db-creds", "v1")
    wait_mapped("secretRef", "b/db-creds", rv, "b/web", c)

    # 1b. a Lua extract index (run in its own event VM on the informer's thread): the env's Secret;
    # the object whose extract raises is left out of the index, and the failure is logged
    c = counts()
    rv = secret("a", "api-key", "v1")
    wait_mapped("envSecret", "a/api-key", rv, "a/web", c)
    c = counts()
    rv = secret("b", "api-key", "v1")
    wait_mapped("envSecret", "b/api-key", rv, "", c)
    fails = op.oplog.find(msg="index extract function failed; the object is left out of the index", index="envSecret",
                          namespace="b", name="bad")
    h.check(bool(fails) and "boom" in fails[0].get("error", "") and "main.lua:" in fails[0].get("error", ""),
            f"the raising extract is logged with main.lua:line ({(fails[0].get('error', '') if fails else '')[:120]!r})")
    spins = op.oplog.find(msg="index extract function failed; the object is left out of the index",
                          index="envSecret", namespace="b", name="spin")
    h.check(bool(spins) and "deadline" in spins[0].get("error", ""),
            f"an extract that never returns is stopped at the predicate deadline "
            f"({(spins[0].get('error', '') if spins else '')[:100]!r})")

    # 2. an update that moves a value: a/other now mounts db-creds instead of tls
    c = counts()
    api.merge_patch("/apis/apps/v1/namespaces/a/deployments/other",
                    {"spec": {"template": {"spec": {"volumes": [{"name": "s0", "secret": {"secretName": "db-creds"}}]}}}})
    h.wait_for("a/other reconciled after its update", 20, lambda: reconciles("a/other") > c["a/other"], live)
    c = counts()
    rv = secret("a", "db-creds", "v2")
    wait_mapped("secretRef", "a/db-creds", rv, "a/other,a/web", c)
    c = counts()
    rv = secret("a", "tls", "v2")
    wait_mapped("secretRef", "a/tls", rv, "", c)

    # 3. all namespaces, and an unknown index in the host's words
    api.merge_patch("/apis/apps/v1/namespaces/a/deployments/web", {"metadata": {"annotations": {"probe": "secretref"}}})
    p = h.wait_for("the probe", 20, lambda: op.oplog.find(msg="probe", index="secretref"), live)[-1]
    h.check(p.get("ok") == "false" and "apps/v1 Deployment has no index 'secretref' (declared: 'secretRef', "
            "'envSecret')" in p.get("err", ""), f"an unknown index raises naming the declared ones ({p.get('err')!r})")
    h.check(p.get("all") == "a/other,a/web,b/web", f"a lookup across all namespaces ({p.get('all')})")

    # 4. a reload that adds an index: built from a fresh list; the old one keeps working
    n = installs()
    c = counts()
    write(os.path.join(scripts, "main.lua"), V2)
    h.wait_for("the reload that adds configRef", 20, lambda: installs() > n, live)
    deps = [r["informer"] for r in op.oplog.find(msg="starting informer")
            if r.get("informer", "").startswith("apps/v1/deployments|")]
    h.check(len(deps) >= 2 and deps[-1] != deps[0] and "|idx:" in deps[-1],
            f"the reload that changes the kind's indexes starts a new Deployment informer ({deps})")
    # the kind's new informer has listed once every Deployment is reconciled again (a reload
    # requeues every primary object; the new informer's first list replays them as adds)
    for key in c:
        h.wait_for(f"{key} requeued by the reload", 20, lambda: reconciles(key) > c[key], live)
    c = counts()
    o = api.ok("POST", "/api/v1/namespaces/a/configmaps",
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"k": "v"}})
    wait_mapped("configRef", "a/cfg", o["metadata"]["resourceVersion"], "a/web", c)
    c = counts()
    rv = secret("a", "db-creds", "v3")
    wait_mapped("secretRef", "a/db-creds", rv, "a/other,a/web", c)
    c = counts()
    rv = secret("a", "api-key", "v3")
    wait_mapped("envSecret", "a/api-key", rv, "a/web", c)

    # 5. a reload that removes it: the name is unknown again
    n = installs()
    write(os.path.join(scripts, "main.lua"), V1)
    h.wait_for("the reload that removes configRef", 20, lambda: installs() > n, live)
    api.merge_patch("/apis/apps/v1/namespaces/a/deployments/web", {"metadata": {"annotations": {"probe": "configRef"}}})
    p = h.wait_for("the probe after the reload", 20, lambda: op.oplog.find(msg="probe", index="configRef"), live)[-1]
    h.check(p.get("ok") == "false" and "has no index 'configRef' (declared: 'secretRef', 'envSecret')"
            in p.get("err", ""),
            f"after the reload that removed it, configRef is unknown ({p.get('err')!r})")
    # a reload to an index on a kind no controller watches in full is refused; the running set stays
    bad = V1.replace('op.controller {', 'op.index { name = "podRef", api_version = "apps/v1", kind = "StatefulSet",'
                     ' field = "spec.serviceName" }\nop.controller {', 1)
    write(os.path.join(scripts, "main.lua"), bad)
    msg = "script reload failed; keeping the running scripts"
    f = h.wait_for("the refused reload", 20, lambda: op.oplog.find(msg=msg), live)[-1]
    h.check("op.index 'podRef': no controller watches apps/v1 StatefulSet in full" in f.get("error", ""),
            f"the install names the index and the kind ({f.get('error', '')[:140]!r})")
    c = counts()
    rv = secret("b", "db-creds", "v4")
    wait_mapped("secretRef", "b/db-creds", rv, "b/web", c)
    write(os.path.join(scripts, "main.lua"), V1)

    # luaop check says the same without a cluster, and lists the indexes
    chk = subprocess.run([h.LUAOP, "check", "--scripts", scripts], capture_output=True, text=True, timeout=30)
    h.check(chk.returncode == 0 and "index secretRef: apps/v1 Deployment, field "
            "spec.template.spec.volumes[*].secret.secretName" in chk.stdout and
            "index envSecret: apps/v1 Deployment, an extract function" in chk.stdout,
            f"luaop check lists the index ({chk.stdout.strip()[-120:]!r})")
    bad_dir = os.path.join(h.TMP, "bad")
    os.makedirs(bad_dir)
    write(os.path.join(bad_dir, "main.lua"), bad)
    chk = subprocess.run([h.LUAOP, "check", "--scripts", bad_dir], capture_output=True, text=True, timeout=30)
    h.check(chk.returncode == 1 and "op.index 'podRef': no controller watches apps/v1 StatefulSet in full"
            in chk.stderr, f"luaop check refuses the index on an unwatched kind ({chk.stderr.strip()[:140]!r})")

    h.check(not op.oplog.find(msg="map failed"), "no map function failed")
    h.check(op.poll() is None, "the operator survived")
    h.stop(op, 0)

    # 6. under --namespace: across all namespaces is the union of the listed namespaces' informers
    for flag, want in (("a,b", "a/other,a/web,b/web"), ("a", "a/other,a/web")):
        opn = h.start_operator(f"operator-ns-{flag.replace(',', '-')}", scripts, kc, ["--namespace", flag])
        p = h.wait_for(f"the probe under --namespace {flag}", 20,
                       lambda: opn.oplog.find(msg="probe", index="configRef"), [srv, opn])[-1]
        h.check(p.get("all") == want, f"--namespace {flag}: a lookup across all namespaces gives [{want}] "
                f"(got [{p.get('all')}])")
        h.stop(opn, 0)
    h.stop(srv, 0)


h.main("operator_fieldindex", body)
