#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: `luaop run --leader-elect` rejects bad leader-election flags at start.

Each bad combination must fail at once (exit 2, one clear line naming the problem) before any
request is made: the kubeconfig points at a loopback port nobody listens on, so a run that got as
far as connecting would instead fail differently. A valid combination is shown to get past the
check (its next log line is about loading the scripts, not leader election).
"""
import json
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
# Valid flags get past the check: the run goes on to load the scripts (which fails against the
# unreachable server and is then retried on reload; the process is stopped here).
p = subprocess.Popen([h.LUAOP, "run", "--kubeconfig", kc, "--scripts", os.path.join(h.HERE, "counter"),
                      "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
                      "--log-format", "json", "--leader-elect", "--leader-election-id", "flags",
                      "--leader-election-namespace", "default", "--leader-elect-lease-duration", "2s",
                      "--leader-elect-renew-deadline", "1.5s", "--leader-elect-retry-period", "250ms",
                      "--leader-elect-on-loss", "restart-election"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                     preexec_fn=h._die_with_parent)
h._procs.append(p)
past = None
for line in p.stderr:  # ends at EOF if the process exits
    if line.startswith("{") and json.loads(line).get("msg") != "connecting":
        past = json.loads(line).get("msg")
        break
p.terminate()
p.wait(timeout=30)
check(past is not None and "leader" not in past,
      f"valid flags pass the check (next log line: {past!r})")
h.finish()
