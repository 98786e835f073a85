#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test (issue 23 part 4's proof): the RBAC that `luaop check --rbac` generates for the
memcached example is enough, and is enforced, against `luaop apiserver --authorization-mode=RBAC`.

The generated Role/RoleBinding (`--namespace default`, bound to luaop-system/luaop) and the Lease Role
are applied as the admin; the operator runs with the ServiceAccount's token only, with
--leader-elect in luaop-system. Proves:
  - it acquires the Lease, syncs and reconciles: the Deployment is created with the Memcached as
    its controller owner, status conditions are written (status subresource), the finalizer is
    added (memcacheds/finalizers), and deleting the Memcached runs the finalizer — all with no 403
    in its log;
  - the same token is refused outside what was generated: it cannot list Secrets in `default`, nor
    Memcacheds in another namespace (the Role is namespaced, not a ClusterRole).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402

SRC = os.environ["LUAOP_SRC"]
EX = os.path.join(SRC, "examples", "memcached")
CRD = os.path.join(EX, "crd", "cache.example.com_memcacheds.yaml")
NS = "default"  # the sample's namespace


def generated_rbac():
    r = subprocess.run([os.environ["LUAOP"], "check", "--rbac", "--scripts", os.path.join(EX, "scripts"),
                        "--crd", CRD, "--namespace", NS, "--service-account", "luaop-system/luaop",
                        "--leader-election-namespace", "luaop-system"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise h.Fatal("luaop check --rbac: " + r.stderr.strip())
    return r.stdout


def get_json(kc, *args):
    try:
        return json.loads(h.kubectl(kc, "-n", NS, "get", *args, "-o", "json"))
    except h.Fatal:
        return None


def refused(kc, *args):
    r = subprocess.run(["kubectl", "--kubeconfig", kc] + list(args), capture_output=True, text=True, timeout=60)
    return r.returncode != 0 and "forbidden" in r.stderr.lower()


def body():
    srv, kc = h.start_rbac_apiserver()
    for ns in ("luaop-system", "other"):
        h.kubectl(kc, "create", "namespace", ns)
    h.kubectl(kc, "-n", "luaop-system", "create", "serviceaccount", "luaop")
    h.kubectl(kc, "apply", "-f", CRD)
    h.kubectl(kc, "wait", "--for=condition=Established", "crd/memcacheds.cache.example.com", "--timeout=30s")
    rbac = generated_rbac()
    h.check("kind: ClusterRole\n" not in rbac.split("# the Lease lock")[0],
            "the namespaced set gets Roles, not a ClusterRole")
    h.kubectl(kc, "apply", "-f", "-", stdin=rbac)
    op_kc = h.token_kubeconfig(kc, "luaop", h.kubectl(kc, "-n", "luaop-system", "create", "token", "luaop").strip())

    sample = os.path.join(EX, "samples", "memcached.yaml")
    h.kubectl(kc, "-n", NS, "apply", "-f", sample)
    op = h.start_operator("operator", os.path.join(EX, "scripts"), op_kc,
                          ["--namespace", NS, "--leader-elect", "--leader-election-id", "memcached-operator",
                           "--leader-election-namespace", "luaop-system",
                           "--webhook-bind-address", "0"])
    name = "memcached-sample"

    def deployment():
        d = get_json(kc, "deployment", name)
        return d if d and (d["metadata"].get("ownerReferences") or [{}])[0].get("kind") == "Memcached" else None
    d = h.wait_for("the Deployment, owned by the Memcached", 30, deployment, [srv, op])
    h.check(d["metadata"]["ownerReferences"][0].get("controller") is True, "the Memcached is its controller")

    def available():
        m = get_json(kc, "memcached", name)
        conds = (m or {}).get("status", {}).get("conditions") or []
        return m if any(c.get("type") == "Available" for c in conds) else None
    m = h.wait_for("a status condition written through memcacheds/status", 30, available, [srv, op])
    h.check(bool(m["metadata"].get("finalizers")), "the finalizer was added (memcacheds/finalizers)")
    lease = json.loads(h.kubectl(kc, "-n", "luaop-system", "get", "leases", "-o", "json"))["items"]
    h.check(len(lease) == 1 and lease[0]["spec"].get("holderIdentity"), "the Lease is held in luaop-system")

    h.kubectl(kc, "-n", NS, "delete", "memcached", name, "--wait=false")
    h.wait_for("the Memcached to be gone (the finalizer ran)", 30, lambda: get_json(kc, "memcached", name) is None,
               [srv, op])
    with open(op.logfile, errors="replace") as f:
        log = f.read()
    h.check("forbidden" not in log.lower(), "no request of the operator was refused (no 'forbidden' in its log)")
    h.check(op.poll() is None, "the operator is still running")
    h.stop(op)

    h.check(refused(op_kc, "-n", NS, "get", "secrets"), "the token cannot list Secrets (not generated)")
    h.check(refused(op_kc, "-n", "other", "get", "memcacheds"), "the token cannot list Memcacheds in another namespace")


if __name__ == "__main__":
    h.main("rbac_enforced", body)
