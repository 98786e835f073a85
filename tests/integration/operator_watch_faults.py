#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: the operator survives watch faults and API errors (issue 3, "Proven by").

`luaop apiserver --enable-fault-control` + `luaop run` with fixtures/watch_faults, a mirror
reconciler: ConfigMap wf/<x> (label role=src) -> ConfigMap wf/out-<x> with the same data.v; when
<x> is gone the mirror is deleted and the reconciler logs `gone name=<x>`. Proves:
  1. a watch closed mid-stream -> later changes still reconcile;
  2a. compact + close-watches (the re-watch from an old RV gets an ERROR 410 event in a 200
      stream) with an object deleted and another changed while watches were stalled -> the
      delete and the change reach the reconciler (by relist: the stalled stream never sends them);
  2b. the same with an HTTP 410 answering the watch request itself;
  3. the operator recovers, converges and never exits when the API server fails requests:
     a. 500 on its writes (reconcile error, rate-limited requeue) and 503/429 with Retry-After
        (retried by the REST client after the delay);
     b. 429 on the watch and 503 on the list around a 410 relist, with a delete in the gap;
     c. 500/503 on every request of the collection for a while (reflector backoff);
     every operator exits 0 on SIGTERM. Each scenario runs a fresh operator so the reflector's
     client-go backoff (0.8 s doubling, reset after 2 min) starts from its initial step.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402

NS = "wf"
CM = f"/api/v1/namespaces/{NS}/configmaps"


def body():
    srv, url, kc = h.start_apiserver()
    api = h.Api(url)
    api.namespace(NS)

    def src(name, v):
        api.ok("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name, "labels": {"role": "src"}},
                            "data": {"v": v}})

    def set_v(name, v):
        api.merge_patch(f"{CM}/{name}", {"data": {"v": v}})

    def out_is(name, v):
        o = api.get(f"{CM}/out-{name}")
        return o is not None and o.get("data", {}).get("v") == v

    def out_gone(name):
        code, _ = api.req("GET", f"{CM}/out-{name}")
        return code == 404

    def rejected(code, path_prefix, verb=None):
        n = 0
        with open(srv.logfile) as f:
            for line in f:
                r = h.parse_logfmt(line) if "request rejected" in line else None
                if r and r.get("code") == str(code) and r.get("path", "").startswith(path_prefix) \
                        and (verb is None or r.get("method") == verb):
                    n += 1
        return n

    n = [0]

    def scenario(title, x):
        """A fresh operator (fresh reflector backoff) and a source x whose change v=1 -> v=2 has
        been reconciled, so the operator's watch is established and has delivered events."""
        print(f"-- {title}", file=sys.stderr, flush=True)
        n[0] += 1
        src(x, "1")
        op = h.start_operator(f"operator{n[0]}", os.path.join(h.FIXTURES, "watch_faults"), kc,
                              ["--log-level", "debug"])
        live = [srv, op]
        h.wait_for(f"out-{x} v=1", 20, lambda: out_is(x, "1"), live)
        set_v(x, "2")
        h.wait_for(f"out-{x} v=2", 20, lambda: out_is(x, "2"), live)
        return op, live

    def done(op):
        h.check(op.poll() is None, f"{op.name} never exited")
        h.stop(op, 0)

    # 1. watch dropped mid-stream
    op, live = scenario("1. watch closed mid-stream", "a")
    api.fault("close-watches")
    set_v("a", "3")
    h.wait_for("out-a v=3 after close-watches", 20, lambda: out_is("a", "3"), live)
    h.check(True, "watch closed mid-stream: a later change still reconciles")
    done(op)

    # 2a. compact + close: ERROR 410 event in a 200 stream; delete during the stalled gap
    op, live = scenario("2a. ERROR 410 event (compacted history), delete in the gap", "b")
    src("b2", "1")
    h.wait_for("out-b2 v=1", 20, lambda: out_is("b2", "1"), live)
    api.fault("stall", on="true")
    api.ok("DELETE", f"{CM}/b2")
    set_v("b", "3")
    api.fault("compact")
    api.fault("close-watches")
    h.wait_for("out-b2 deleted (b2 deleted during the gap)", 20, lambda: out_gone("b2"), live)
    h.wait_for("out-b v=3 (changed during the gap)", 20, lambda: out_is("b", "3"), live)
    h.check(bool(op.oplog.find(msg="gone", name="b2")), "reconciler saw b2 NotFound (log gone name=b2)")
    h.check(bool(op.oplog.find(msg="watch expired (ERROR 410), relisting")),
            "the reflector relisted on the ERROR 410 event")
    api.fault("stall", on="false")
    h.check(True, "ERROR 410 in a 200 watch stream: delete during the gap reached the reconciler")
    done(op)

    # 2b. HTTP 410 on the watch request; delete during the stalled gap
    op, live = scenario("2b. HTTP 410 on the watch request, delete in the gap", "c")
    src("c2", "1")
    h.wait_for("out-c2 v=1", 20, lambda: out_is("c2", "1"), live)
    api.fault("stall", on="true")
    api.ok("DELETE", f"{CM}/c2")
    set_v("c", "3")
    api.fault("fail", code="410", verb="watch", count="1")
    api.fault("close-watches")
    h.wait_for("out-c2 deleted (c2 deleted during the gap)", 20, lambda: out_gone("c2"), live)
    h.wait_for("out-c v=3 (changed during the gap)", 20, lambda: out_is("c", "3"), live)
    h.check(bool(op.oplog.find(msg="gone", name="c2")), "reconciler saw c2 NotFound (log gone name=c2)")
    h.check(bool(op.oplog.find(msg="watch expired (HTTP 410), relisting")),
            "the reflector relisted on the HTTP 410")
    api.fault("stall", on="false")
    h.check(True, "HTTP 410 on watch: delete during the gap reached the reconciler")
    done(op)

    # 3a. 500 on the operator's own writes: reconcile error -> rate-limited requeue -> retry;
    # 503 and 429 with Retry-After: retried by the REST client after the delay (like client-go)
    op, live = scenario("3a. 500/503/429 on the operator's writes", "d")
    api.fault("fail", code="500", verb="patch", path=f"{CM}/out-d", count="2")
    api.fault("fail", code="503", verb="patch", path=f"{CM}/out-d", count="2", retryAfter="1")
    api.fault("fail", code="429", verb="patch", path=f"{CM}/out-d", count="2", retryAfter="1")
    set_v("d", "3")
    h.wait_for("out-d v=3 through 500/503/429", 20, lambda: out_is("d", "3"), live)
    for code in (500, 503, 429):
        h.check(rejected(code, f"{CM}/out-d") == 2, f"two {code}s hit the operator's apply of out-d")
    h.check(len(op.oplog.find(msg="reconciler error", name="d")) == 2,
            "each 500 (no Retry-After) failed the reconcile, which was requeued with backoff")
    h.check(len(op.oplog.find(msg="retrying after Retry-After", method="PATCH")) == 4,
            "each 503/429 with Retry-After was retried by the REST client after the delay")
    done(op)

    # 3b. 429 (+Retry-After) on watch, 503 (+Retry-After) on list around a 410 relist, and a
    # delete in the gap
    op, live = scenario("3b. 429 on watch, 503 on list, around a 410", "e")
    src("e2", "1")
    h.wait_for("out-e2 v=1", 20, lambda: out_is("e2", "1"), live)
    w429, l503 = rejected(429, CM, "GET"), rejected(503, CM, "GET")
    api.fault("stall", on="true")
    set_v("e", "3")
    api.ok("DELETE", f"{CM}/e2")
    api.fault("compact")
    api.fault("fail", code="429", verb="watch", count="1", retryAfter="1")
    api.fault("fail", code="503", verb="list", count="1", retryAfter="1")
    api.fault("close-watches")
    h.wait_for("out-e v=3 after 429/503", 30, lambda: out_is("e", "3"), live)
    h.wait_for("out-e2 deleted after 429/503", 20, lambda: out_gone("e2"), live)
    h.check(rejected(429, CM, "GET") == w429 + 1, "a 429 answered the operator's watch")
    h.check(rejected(503, CM, "GET") == l503 + 1, "a 503 answered the operator's list")
    api.fault("stall", on="false")
    done(op)

    # 3c. every request of the collection fails for a while (500 and 503 mixed)
    op, live = scenario("3c. 500/503 on every request of the collection", "f")
    base = rejected(500, CM) + rejected(503, CM)
    api.fault("stall", on="true")
    set_v("f", "3")
    api.fault("fail", code="500", path=CM, count="1")
    api.fault("fail", code="503", path=CM, count="2", retryAfter="1")
    api.fault("close-watches")
    # poll only the server's log until the failures are consumed, so they all hit the operator
    h.wait_for("the operator to consume 3 injected failures", 30,
               lambda: rejected(500, CM) + rejected(503, CM) - base >= 3, live)
    api.fault("stall", on="false")
    h.wait_for("out-f v=3 after the failure burst", 30, lambda: out_is("f", "3"), live)
    set_v("f", "4")
    h.wait_for("out-f v=4 once the server is healthy", 20, lambda: out_is("f", "4"), live)
    done(op)


h.main("operator_watch_faults", body)
