#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: Lease leader election across processes against `luaop apiserver`.

Each replica is a separate process running the C elector with its own REST client and Lease watch
(the `replica` mode of the test_leaderelection_rest program), with short durations: lease 2 s,
renew deadline 1.5 s, retry period 0.25 s. Proves, with real processes and real time:
  A. exactly one leader among three; SIGTERM the leader -> another leads within 1 s (release +
     watch); SIGKILL the leader -> another leads within lease duration + retry period;
  B. a standby whose wall clock is skewed by +1 h or -1 h neither steals an active lease nor
     waits forever on a dead one;
  C. restart-election mode: a leader frozen (SIGSTOP) past its renew deadline steps down when it
     resumes, without exiting and without writing, and later wins the lease again;
  D. exit mode (default): the frozen leader steps down on resume and exits with status 1.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

LUAOP = os.environ["LUAOP"]
HELPER = os.path.join(os.environ["LUAOP_BUILD"], "tests", "test_leaderelection_rest")
NS = "leader-int"
LEASE_S, RENEW_S, RETRY_S = 2.0, 1.5, 0.25
TIMING = ["--lease-duration-ms", "2000", "--renew-deadline-ms", "1500", "--retry-period-ms", "250"]

failures = []
procs = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, file=sys.stderr)
    if not cond:
        failures.append(what)


class Replica:
    """One replica process; its stdout lines are collected with their arrival time."""

    def __init__(self, kc, ident, lease, *extra):
        self.id = ident
        self.lines = []  # (monotonic time, [words])
        self.cv = threading.Condition()
        self.proc = subprocess.Popen(
            [HELPER, "replica", "--kubeconfig", kc, "--identity", ident, "--namespace", NS,
             "--name", lease] + TIMING + list(extra),
            stdout=subprocess.PIPE, text=True)
        procs.append(self.proc)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cv:
                self.lines.append((time.monotonic(), line.split()))
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def find(self, word, after=0.0, arg=None):
        """Time of the first line `word id [arg]` received after `after`, or None."""
        with self.cv:
            for t, w in self.lines:
                if t >= after and w[0] == word and (arg is None or (len(w) > 2 and w[2] == arg)):
                    return t
        return None

    def wait(self, word, timeout, after=0.0, arg=None):
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                t = self.find_locked(word, after, arg)
                if t is not None or time.monotonic() >= deadline:
                    return t
                self.cv.wait(max(0.0, deadline - time.monotonic()))

    def find_locked(self, word, after, arg):
        for t, w in self.lines:
            if t >= after and w[0] == word and (arg is None or (len(w) > 2 and w[2] == arg)):
                return t
        return None

    def leading(self):
        """True if the last LEADING/STOPPED line is LEADING."""
        state = False
        with self.cv:
            for _, w in self.lines:
                if w[0] == "LEADING":
                    state = True
                elif w[0] == "STOPPED":
                    state = False
        return state

    def signal(self, sig):
        self.proc.send_signal(sig)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def first_leader(reps, after, timeout):
    """Wait until one of reps prints LEADING after `after`; return (replica, time) or (None, None)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        hits = [(r.find("LEADING", after), r) for r in reps]
        hits = [(t, r) for t, r in hits if t is not None]
        if hits:
            t, r = min(hits, key=lambda h: h[0])
            return r, t
        for r in reps:  # block briefly on one replica's output instead of spinning
            r.wait("LEADING", 0.02, after)
    return None, None


def get_lease(url, name):
    with urllib.request.urlopen(
            f"{url}/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{name}") as resp:
        return json.load(resp)["spec"]


def phase_a(url, kc):
    reps = [Replica(kc, f"a{i}", "lock-a") for i in range(3)]
    leader, _ = first_leader(reps, 0.0, 15)
    check(leader is not None, "A: a leader is elected among three")
    if not leader:
        return
    # Every replica reports the same leader, and only one replica leads.
    for r in reps:
        check(r.wait("NEWLEADER", 10, arg=leader.id) is not None,
              f"A: {r.id} observes {leader.id} as leader")
    for r in reps:
        check(r.wait("WATCHING", 10) is not None, f"A: {r.id}'s Lease watch is connected")
    check(sum(r.leading() for r in reps) == 1, "A: exactly one replica leads")
    check(get_lease(url, "lock-a")["holderIdentity"] == leader.id, "A: the Lease names the leader")

    # SIGTERM: release, then a standby takes over at once through its watch.
    t0 = time.monotonic()
    leader.signal(signal.SIGTERM)
    rest = [r for r in reps if r is not leader]
    nxt, t1 = first_leader(rest, t0, 10)
    check(nxt is not None, "A: a standby takes over after SIGTERM")
    if nxt:
        print(f"     SIGTERM handover: {1000 * (t1 - t0):.0f} ms", file=sys.stderr)
        check(t1 - t0 < 1.0, "A: SIGTERM handover within one second")
    check(leader.proc.wait(10) == 0, "A: the released leader exits 0")
    check(leader.wait("RELEASED", 5) is not None, "A: the leader released the lease")  # (lines may trail the exit)
    spec = get_lease(url, "lock-a")
    check(spec.get("leaseTransitions") == 1, "A: one transition counted")
    if not nxt:
        return

    # SIGKILL: no release; the last standby takes over once the lease expires on its clock.
    t0 = time.monotonic()
    nxt.kill()
    last = [r for r in rest if r is not nxt]
    new, t1 = first_leader(last, t0, 10)
    check(new is not None, "A: the last standby takes over after SIGKILL")
    if new:
        print(f"     SIGKILL handover: {1000 * (t1 - t0):.0f} ms", file=sys.stderr)
        check(t1 - t0 <= LEASE_S + RETRY_S, "A: SIGKILL handover within lease duration + retry period")
    check(get_lease(url, "lock-a").get("leaseTransitions") == 2, "A: two transitions counted")
    for r in reps:
        r.kill()


def skewed_standby(url, kc, leader, skew, name):
    """Start a standby skewed by `skew` seconds: no steal while the leader lives; takeover after
    the leader is killed. Returns the new leader replica."""
    s = Replica(kc, name, "lock-b", "--wall-skew-s", str(skew))
    check(s.wait("NEWLEADER", 10, arg=leader.id) is not None, f"B: {name} observes the leader")
    # Longer than a lease duration: renewTime, compared with the skewed wall clock, would look
    # an hour stale (or an hour ahead); only the local observation time counts.
    t_watch = time.monotonic()
    stole = s.wait("LEADING", LEASE_S * 1.5, t_watch)
    check(stole is None, f"B: standby with wall clock {skew:+d}s does not steal an active lease")
    check(leader.leading(), "B: the leader still leads")
    t0 = time.monotonic()
    leader.kill()
    t1 = s.wait("LEADING", 10, t0)
    check(t1 is not None, f"B: standby with wall clock {skew:+d}s takes over a dead lease")
    if t1 is not None:
        print(f"     skew {skew:+d}s takeover: {1000 * (t1 - t0):.0f} ms", file=sys.stderr)
        check(t1 - t0 <= LEASE_S + RETRY_S, f"B: skew {skew:+d}s takeover within lease + retry")
    return s


def phase_b(url, kc):
    leader = Replica(kc, "b0", "lock-b")
    check(leader.wait("LEADING", 15) is not None, "B: first replica leads")
    s1 = skewed_standby(url, kc, leader, 3600, "b-plus")
    s2 = skewed_standby(url, kc, s1, -3600, "b-minus")
    s2.kill()


def freeze_leader(kc, lease, on_loss):
    """Leader P (mode on_loss) and standby Q; P is frozen past its lease; Q takes over."""
    p = Replica(kc, f"{lease}-p", lease, "--on-loss", on_loss)
    check(p.wait("LEADING", 15) is not None, f"{lease}: P leads")
    q = Replica(kc, f"{lease}-q", lease)
    check(q.wait("NEWLEADER", 10, arg=p.id) is not None, f"{lease}: Q observes P")
    t0 = time.monotonic()
    p.signal(signal.SIGSTOP)
    t1 = q.wait("LEADING", 10, t0)
    check(t1 is not None, f"{lease}: Q takes over from the frozen P")
    t_cont = time.monotonic()
    p.signal(signal.SIGCONT)
    check(p.wait("STOPPED", 5, t_cont) is not None, f"{lease}: P steps down when it resumes")
    return p, q, t_cont


def phase_c(url, kc):
    p, q, t_cont = freeze_leader(kc, "lock-c", "restart")
    # P campaigns again without exiting; it does not lead while Q holds the lease.
    check(p.wait("LEADING", LEASE_S * 1.5, t_cont) is None, "C: P does not lead again while Q leads")
    check(p.proc.poll() is None, "C: P is still running (restart-election)")
    check(get_lease(url, "lock-c")["holderIdentity"] == q.id, "C: the Lease names Q")
    check(p.wait("WATCHING", 10) is not None, "C: P's Lease watch is connected")
    t0 = time.monotonic()
    q.signal(signal.SIGTERM)
    t1 = p.wait("LEADING", 10, t0)
    check(t1 is not None and t1 - t0 < 1.0, "C: P regains leadership without restarting")
    check(q.proc.wait(10) == 0, "C: Q exits 0")
    p.kill()


def phase_d(url, kc):
    p, q, _ = freeze_leader(kc, "lock-d", "exit")
    try:
        code = p.proc.wait(10)
    except subprocess.TimeoutExpired:
        code = None
    check(code == 1, "D: the leader that lost its lease exits with status 1")
    # (the reader thread may not have taken the last line off the pipe yet when the exit is seen)
    check(p.wait("LOST", 5) is not None, "D: it reports the loss")
    check(q.leading(), "D: Q leads")
    q.kill()


def main():
    tmp = tempfile.mkdtemp()
    kc = os.path.join(tmp, "kc")
    srv = subprocess.Popen([LUAOP, "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out", kc],
                           stdout=subprocess.PIPE, text=True)
    procs.append(srv)
    try:
        line = srv.stdout.readline()
        if not line.startswith("listening on "):
            check(False, f"local API server started (got {line!r})")
            return
        url = line.split()[-1]
        body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        req = urllib.request.Request(url + "/api/v1/namespaces", data=body.encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req).read()
        except urllib.error.HTTPError as e:
            check(e.code == 409, f"namespace created ({e.code})")
        phase_a(url, kc)
        phase_b(url, kc)
        phase_c(url, kc)
        phase_d(url, kc)
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGCONT)
                except ProcessLookupError:
                    pass
                p.kill()
            p.wait()


main()
if failures:  # the verdict: every check() must have held
    raise AssertionError(f"{len(failures)} check(s) failed: " + "; ".join(failures))
print("leader election integration: all checks passed")
