#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: a controller with `leader_election = false` reconciles on every replica.

Three `luaop run --leader-elect` replicas of the optout fixture (tests/integration/fixtures/leader/
optout): controller "per-replica" opted out of leader election, controller "elected" did not; both
watch the same labelled ConfigMaps and log who reconciled what. Proves:
  - every replica, leader or standby, reconciles every object with the opted-out controller, and
    standbys see luaop.leader.is_leader() == false there;
  - only the leader reconciles with the leader-elected controller;
  - after the leader is terminated, the opted-out controller keeps running on the survivors
    (a new object is reconciled by each of them) and the new leader takes over "elected".
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "leader"))
import harness as h  # noqa: E402
from harness import check  # noqa: E402

LEASE = "optout"


def reconciled(r, msg, obj, after=0.0, timeout=10):
    t, rec = r.wait(msg, timeout, after=after, pred=lambda rec: rec.get("obj") == obj)
    return rec


def main():
    api = h.ApiServer()
    for name in ("o1", "o2"):
        api.create_configmap(name, "optout")
    reps = [h.Replica(api, "optout", LEASE) for _ in range(3)]
    check(h.wait_identities(reps), "three replicas campaign")
    leader, _ = h.next_leader(reps, 0.0, 15)
    if not check(leader is not None, "a leader is elected"):
        h.finish()

    for r in reps:
        for name in ("o1", "o2"):
            rec = reconciled(r, "OPTOUT_RECONCILED", name)
            check(rec is not None and rec.get("who") == r.identity,
                  f"{r.label}{' (leader)' if r is leader else ''} reconciles {name} with the "
                  f"opted-out controller")
            if r is not leader and rec is not None:
                check(rec.get("leader") == "false", f"{r.label} sees is_leader() == false")
    for name in ("o1", "o2"):
        check(reconciled(leader, "ELECTED_RECONCILED", name) is not None,
              f"the leader reconciles {name} with the leader-elected controller")
    # By now every replica has reconciled both objects with the opted-out controller, so the
    # standbys' workers of that controller have run; their "elected" workers must not have.
    for r in reps:
        if r is not leader:
            check(not r.all("ELECTED_RECONCILED"),
                  f"standby {r.label} does not run the leader-elected controller")

    # The leader leaves; the survivors keep their per-replica work and one takes over the rest.
    t0 = time.monotonic()
    leader.signal(signal.SIGTERM)
    rest = [r for r in reps if r is not leader]
    nxt, t1 = h.next_leader(rest, t0, 10)
    check(nxt is not None, "a survivor takes over")
    check(leader.exit_code(10) == 0, "the old leader exits 0")
    t2 = time.monotonic()
    api.create_configmap("o3", "optout")
    for r in rest:
        check(reconciled(r, "OPTOUT_RECONCILED", "o3", after=t2) is not None,
              f"{r.label} reconciles the new object o3 with the opted-out controller")
    if nxt:
        check(reconciled(nxt, "ELECTED_RECONCILED", "o3", after=t2) is not None,
              "the new leader reconciles o3 with the leader-elected controller")
        other = [r for r in rest if r is not nxt]
        check(all(not [x for _, x in r.all("ELECTED_RECONCILED")] for r in other),
              "the remaining standby never ran the leader-elected controller")
    h.finish()


if __name__ == "__main__":
    main()
