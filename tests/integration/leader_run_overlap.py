#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: no two `luaop run` replicas ever reconcile at the same time (issue 5).

Three replicas of the counter fixture (tests/integration/fixtures/leader/counter) in
restart-election mode (lease 2 s, renew deadline 1.5 s, retry 250 ms). The leader reconciles
continuously: each reconcile reads the ConfigMap, increments data.counter and writes it back, and
logs who did it with its start and end times (COUNTER_OK / COUNTER_FAIL).

20 handovers are forced by freezing the leader (SIGSTOP) — a stalled leader, the hard case: its
reconcile is frozen mid-flight, so it resumes (SIGCONT) after a standby has taken over and
reconciled. The fault endpoint of the API server cannot single out one client (it fails everyone's
Lease updates, the standbys' acquisitions included), so a stall is used instead. Per handover the
test waits until the leader is reconciling, freezes it, waits until another replica leads and has
reconciled, resumes the old leader and waits until it logs that it stopped leading.

Afterwards the records are analysed:
  - in the API server's own order (the watch history of the ConfigMap and the Lease, by
    resourceVersion), every counter write was committed while its writer held the Lease, and the
    writes are 1..N;
  - the successful reconciles (writes that completed) of different replicas never overlap in time,
    and none of them spans another replica's acquisition of the lease (client-side times; a
    reconcile in flight when its replica was frozen is left out, its end is only when the answer
    was read after the resume);
  - the counter values written are 1..N, each once, in time order, and the ConfigMap holds N
    (no lost or duplicated update, no missing record);
  - every resumed old leader stepped down without exiting, the three processes are still running,
    and leadership was regained by replicas that had lost it (restart-election mode).
Prints how the resumed leaders' in-flight writes ended (refused as NotLeader, Conflict, or written
when the write had reached the server before the freeze).
"""
import collections
import datetime
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "leader"))
import harness as h  # noqa: E402
from harness import check  # noqa: E402

HANDOVERS = int(os.environ.get("LEADER_RUN_HANDOVERS", "20"))
PER_TENURE = 3  # successful reconciles each leader makes before it is frozen
LEASE = "overlap"


def wall(rec):
    ts = rec["ts"].rstrip("Z")
    return datetime.datetime.fromisoformat(ts).replace(tzinfo=datetime.timezone.utc).timestamp()


def main():
    started = time.monotonic()
    api = h.ApiServer()
    rv0 = api.create_configmap("c1", "counter", {"counter": "0"})["metadata"]["resourceVersion"]
    reps = [h.Replica(api, "counter", LEASE, "--leader-elect-on-loss", "restart-election")
            for _ in range(3)]
    check(h.wait_identities(reps), "three replicas campaign")
    leader, _ = h.next_leader(reps, 0.0, 15)
    if not check(leader is not None, "a leader is elected"):
        h.finish()

    done = 0
    resumed = []  # (old leader, time of SIGCONT)
    for i in range(HANDOVERS):
        base = len(leader.all("COUNTER_OK"))
        busy = h.wait_until(lambda: len(leader.all("COUNTER_OK")) >= base + PER_TENURE, 5, leader)
        if not check(busy, f"handover {i + 1}: the leader {leader.label} is reconciling"):
            break
        standbys = [r for r in reps if r is not leader]
        t0 = time.monotonic()
        stop_wall = time.time()
        leader.signal(signal.SIGSTOP)
        nxt, t1 = h.next_leader(standbys, t0, h.LEASE_S + h.RETRY_S + 5)
        if not check(nxt is not None, f"handover {i + 1}: a standby takes over from the frozen leader"):
            leader.signal(signal.SIGCONT)
            break
        t, _ = nxt.wait("COUNTER_OK", 5, after=t1)
        check(t is not None, f"handover {i + 1}: the new leader {nxt.label} reconciles")
        leader.signal(signal.SIGCONT)
        t, _ = leader.wait(h.STOPPED, 5, after=t0)
        check(t is not None, f"handover {i + 1}: the resumed {leader.label} stops leading")
        resumed.append((leader, stop_wall))
        leader = nxt
        done += 1
    print(f"     {done} handovers in {time.monotonic() - started:.1f} s", file=sys.stderr)

    # Stop everyone cleanly so every record is in: then the ConfigMap must match them exactly.
    for r in reps:
        check(r.proc.poll() is None, f"{r.label} is still running (restart-election mode)")
    for r in reps:
        r.signal(signal.SIGTERM)
    for r in reps:
        check(r.exit_code(15) == 0, f"{r.label} exits 0 on SIGTERM")
        h.wait_until(lambda: r.eof, 5)
    final = int(api.configmap("c1")["data"]["counter"])

    ok = []  # (t0, t1, n, replica label)
    for r in reps:
        for _, rec in r.all("COUNTER_OK"):
            ok.append((float(rec["t0"]), float(rec["t1"]), int(rec["n"]), r.label))
    ns = sorted(n for _, _, n, _ in ok)
    check(ns == list(range(1, len(ns) + 1)),
          f"the {len(ns)} successful reconciles wrote counter values 1..N, each once")
    check(final == len(ns), f"the ConfigMap counter ({final}) equals the number of successful "
                            f"reconciles recorded ({len(ns)})")

    # The server's own order: every counter write and every Lease change, by resourceVersion.
    # Each write must have been committed while its writer held the Lease — the property fencing
    # exists for, judged where it matters (a frozen leader's write that reached the server before
    # the freeze is legitimate however late its answer is logged; one committed after another
    # replica acquired the Lease is not).
    writes = api.replay(f"/api/v1/namespaces/{h.NS}/configmaps", rv0, "c1")
    leases = api.replay(f"/apis/coordination.k8s.io/v1/namespaces/{h.NS}/leases", rv0, LEASE)
    commits = [(int(o["metadata"]["resourceVersion"]), o["data"].get("by"), int(o["data"]["counter"]))
               for t, o in writes if t == "MODIFIED"]
    check([n for _, _, n in commits] == list(range(1, len(commits) + 1)),
          f"the server saw counter values 1..N in resourceVersion order ({len(commits)} writes)")
    check(sorted(n for _, _, n in commits) == ns, "each recorded successful reconcile is one committed write")
    changes = sorted((int(o["metadata"]["resourceVersion"]), (o.get("spec") or {}).get("holderIdentity"))
                     for t, o in leases if t in ("ADDED", "MODIFIED"))
    fenced, holder, i = [], None, 0
    for rv, by, n in commits:
        while i < len(changes) and changes[i][0] < rv:
            holder = changes[i][1]
            i += 1
        if by != holder:
            fenced.append((n, by, holder))
    check(not fenced, f"every counter write was committed while its writer held the Lease "
                      f"({len(commits)} writes, {len(changes)} Lease changes)")
    for n, by, holder in fenced[:5]:
        print(f"     write n={n} by {by} committed while {holder} held the Lease", file=sys.stderr)

    # Client-side times: a reconcile in flight when its replica was frozen has no meaningful end
    # (its answer is read after the resume), so the time checks below leave those out.
    stops = collections.defaultdict(list)
    for old, stop_wall in resumed:
        stops[old.label].append(stop_wall)
    ok = [iv for iv in ok if not any(iv[0] < st < iv[1] for st in stops[iv[3]])]
    by_end = sorted(ok, key=lambda x: x[1])
    check([x[2] for x in by_end] == sorted(x[2] for x in by_end), "counter values increase in time order")

    overlaps = []
    by_start = sorted(ok)
    # Sweep by start time: an interval overlaps an earlier one iff it starts before the latest end
    # seen so far; intervals of one replica never overlap each other (one worker), so comparing
    # with the interval holding that latest end finds every cross-replica overlap.
    longest = None
    for iv in by_start:
        if longest and longest[3] != iv[3] and iv[0] < longest[1]:
            overlaps.append((longest, iv))
        if longest is None or iv[1] > longest[1]:
            longest = iv
    check(not overlaps, f"no two replicas' successful reconciles overlap in time "
                        f"({len(ok)} reconciles, {len(overlaps)} overlaps)")
    for a, b in overlaps[:5]:
        print(f"     overlap: {a} and {b}", file=sys.stderr)

    acquisitions = [(wall(rec), r.label) for r in reps for _, rec in r.all(h.BECAME)]
    spanning = [(iv, acq) for iv in ok for acq in acquisitions
                if acq[1] != iv[3] and iv[0] < acq[0] < iv[1]]
    check(not spanning, "no successful reconcile spans another replica's acquisition of the lease")
    for iv, acq in spanning[:5]:
        print(f"     reconcile {iv} spans acquisition {acq}", file=sys.stderr)

    counts = collections.Counter(label for _, label in acquisitions)
    regained = [r for r in reps if counts[r.label] >= 2 and r.all(h.STOPPED)]
    check(bool(regained), f"leadership was lost and regained without exiting (acquisitions: "
                          f"{dict(counts)})")

    # The reconcile each frozen leader had in flight (started before the stop, ended after it).
    outcomes = collections.Counter()
    for old, stop_wall in resumed:
        inflight = [rec for _, rec in old.records if rec.get("msg") in ("COUNTER_OK", "COUNTER_FAIL")
                    and float(rec["t0"]) < stop_wall < float(rec["t1"])]
        for rec in inflight:
            outcomes[rec.get("reason", "written")] += 1
        if not inflight:
            outcomes["idle when frozen"] += 1
    print(f"     frozen leaders' in-flight reconcile, on resume: {dict(outcomes)}", file=sys.stderr)
    print(f"     total {time.monotonic() - started:.1f} s", file=sys.stderr)
    h.finish()


if __name__ == "__main__":
    main()
