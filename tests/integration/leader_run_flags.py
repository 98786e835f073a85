#!/usr/bin/python3
"""Integration test: `luaop run --leader-elect` rejects bad leader-election flags at start.

Each bad combination must fail at once (exit 2, one clear line naming the problem) before any
request is made: the kubeconfig points at a loopback port nobody listens on, so a run that got as
far as connecting would instead fail differently (or hang until its deadline). A valid combination
is shown to get past the check (it then fails to reach the server: exit 1).
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "leader"))
import harness as h  # noqa: E402
from harness import check  # noqa: E402

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""

CASES = [
    (["--leader-elect-lease-duration", "1s", "--leader-elect-renew-deadline", "2s"],
     "lease duration (1s) must be greater than renew deadline (2s)"),
    (["--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s",
      "--leader-elect-retry-period", "2s"], "renew deadline"),
    (["--leader-elect-lease-duration", "500ms", "--leader-elect-renew-deadline", "400ms",
      "--leader-elect-retry-period", "100ms"], "lease duration"),
    (["--leader-election-id", ""], "--leader-elect needs --leader-election-id"),
    (["--leader-election-id", "Not_A_Name"], "not a valid Lease name"),
    (["--leader-election-namespace", "Bad/NS"], "not a valid namespace name"),
]


def run(args, namespace=True):
    cmd = [h.LUAOP, "run", "--kubeconfig", kc, "--scripts", os.path.join(h.HERE, "counter"),
           "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--leader-elect",
           "--leader-election-id", "flags"]
    if namespace:
        cmd += ["--leader-election-namespace", "default"]
    p = subprocess.run(cmd + args, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stderr


kc = os.path.join(h._tmp, "kubeconfig")
with open(kc, "w") as f:
    f.write(KUBECONFIG)

for args, want in CASES:
    rc, err = run(args)
    check(rc == 2 and want in err, f"{' '.join(args) or '(none)'}: exit 2 naming '{want}' "
                                   f"(got {rc}: {err.strip().splitlines()[-1:]})")
if not os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount/namespace"):
    rc, err = run([], namespace=False)
    check(rc == 2 and "needs --leader-election-namespace" in err,
          "outside a cluster, no namespace: exit 2 naming --leader-election-namespace")
rc, err = run(["--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "1.5s",
               "--leader-elect-retry-period", "250ms", "--leader-elect-on-loss", "restart-election"])
check(rc == 1 and "must be" not in err and "needs" not in err,
      f"valid flags pass the check (then the unreachable server fails the run: got {rc})")
h.finish()
