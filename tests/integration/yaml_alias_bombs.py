#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: YAML alias expansion ("billion laughs") is bounded wherever luaop reads YAML
(issue 20 part 5; host/codec/yaml.h states the bound).

  1. `luaop run --kubeconfig F` where F holds the self-referencing `x: &a [*a, *a]` exits 1 naming
     the file and "excessive aliasing" (it used to grow to 23.5 GB until the kernel killed it);
  2. `luaop check --configmap F` on a ConfigMap manifest with a 9-level 9x doubling chain exits 1
     naming F:line and the alias (it used to take 2.27 GB);
each within seconds and with the child's peak RSS far below what the expansion would need.
"""
import os
import resource
import subprocess
import sys
import tempfile

LUAOP = os.path.abspath(os.environ["LUAOP"])
# Peak RSS allowed for one child (KiB). A sanitizer build starts at ~30-60 MB; the expansions
# would need gigabytes.
RSS_LIMIT_KB = 400 * 1024

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(args, cwd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    try:
        p = subprocess.run([LUAOP] + args, cwd=cwd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after 60 s", 0
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return p.returncode, p.stdout, p.stderr, max(before, after)


LAUGHS = "".join(
    ["  a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n"]
    + [f"  {c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")]
)

with tempfile.TemporaryDirectory() as d:
    os.mkdir(os.path.join(d, "s"))
    with open(os.path.join(d, "s", "main.lua"), "w") as f:
        f.write("return {}\n")
    with open(os.path.join(d, "kubeconfig"), "w") as f:
        f.write("apiVersion: v1\nkind: Config\nx: &a [*a, *a]\nclusters: []\nusers: []\ncontexts: []\n"
                "current-context: \"\"\n")
    rc, out, err, rss = run(["run", "--scripts", "s", "--kubeconfig", "kubeconfig", "--metrics-bind-address", "0",
                             "--health-probe-bind-address", "0"], d)
    print(err.strip())
    check(rc == 1, f"luaop run with a self-referencing kubeconfig alias exits 1 (got {rc})")
    check("kubeconfig kubeconfig:" in err and "excessive aliasing" in err,
          "the error names the kubeconfig and excessive aliasing")
    check(0 < rss < RSS_LIMIT_KB, f"peak RSS {rss} KiB stays under {RSS_LIMIT_KB} KiB")

    with open(os.path.join(d, "cm.yaml"), "w") as f:
        f.write("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s, namespace: default}\nx:\n" + LAUGHS
                + "data:\n  main.lua: \"return {}\"\n")
    rc, out, err, rss = run(["check", "--configmap", "cm.yaml"], d)
    print(err.strip())
    check(rc == 1, f"luaop check --configmap with a billion-laughs file exits 1 (got {rc})")
    check("cm.yaml:" in err and "alias *" in err and "excessive aliasing" in err,
          "the error names file:line, the alias and excessive aliasing")
    check(0 < rss < RSS_LIMIT_KB, f"peak RSS {rss} KiB stays under {RSS_LIMIT_KB} KiB")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all passed")
