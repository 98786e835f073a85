#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: an operator run under a least-privilege ServiceAccount token against
`luaop apiserver --authorization-mode=RBAC` (issue 22 part 7).

The ServiceAccount's Role in namespace `work` allows get/list/watch/patch of ConfigMaps and
create/patch of Events, nothing else. The reconciler (fixtures/restricted) marks each ConfigMap
and then tries to create a Secret. Proves:
  - the operator starts, syncs its cache and reconciles with only that Role (discovery is open
    to every authenticated user, as the bootstrap policy makes it);
  - the Secret create fails with 403 Forbidden and kube-apiserver's message, which the reconciler
    sees as err.code 403 / err.reason "Forbidden" and logs;
  - the operator keeps running: a ConfigMap created after the denial is reconciled too, the
    Secret never exists, and the operator exits 0 on SIGTERM;
  - a token without the Role (another ServiceAccount) cannot even list: the operator's
    informer gets 403 and the process stays up without reconciling anything.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.environ["LUAOP_SRC"], "tests", "integration", "fixtures"))
import opharness as h  # noqa: E402

NS = "work"
FORBIDDEN = ('secrets is forbidden: User "system:serviceaccount:work:op" cannot create resource '
             '"secrets" in API group "" in the namespace "work"')
ROLE = f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: op, namespace: {NS}}}
rules:
- {{apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch", "patch"]}}
- {{apiGroups: ["", "events.k8s.io"], resources: ["events"], verbs: ["create", "patch"]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: op, namespace: {NS}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: op}}
subjects: [{{kind: ServiceAccount, name: op, namespace: {NS}}}]
"""


def annotated(kc, name):
    try:
        cm = json.loads(h.kubectl(kc, "-n", NS, "get", "configmap", name, "-o", "json"))
    except h.Fatal:
        return False
    return (cm["metadata"].get("annotations") or {}).get("restricted.luaop.dev/seen") == "yes"


def denials(op, name):
    return [r for r in op.oplog.find(msg="secret create failed") if r.get("name") == name]


def body():
    srv, kc = h.start_rbac_apiserver()
    h.kubectl(kc, "create", "namespace", NS)
    h.kubectl(kc, "-n", NS, "create", "serviceaccount", "op")
    h.kubectl(kc, "-n", NS, "create", "serviceaccount", "nobody")
    h.kubectl(kc, "apply", "-f", "-", stdin=ROLE)
    op_kc = h.token_kubeconfig(kc, "op", h.kubectl(kc, "-n", NS, "create", "token", "op").strip())
    h.kubectl(kc, "-n", NS, "create", "configmap", "first", "--from-literal=a=b")

    scripts = os.path.join(h.FIXTURES, "restricted")
    op = h.start_operator("operator", scripts, op_kc, ["--namespace", NS])
    h.wait_for("the first ConfigMap to be reconciled", 30, lambda: annotated(kc, "first"), [srv, op])
    recs = h.wait_for("the forbidden Secret create to be logged", 30, lambda: denials(op, "first"), [srv, op])
    r = recs[0]
    h.check(r.get("code") == "403" and r.get("reason") == "Forbidden",
            f"the reconciler sees 403 Forbidden (got {r.get('code')} {r.get('reason')})")
    h.check(r.get("message") == FORBIDDEN, f"the message is kube-apiserver's (got {r.get('message')!r})")

    h.kubectl(kc, "-n", NS, "create", "configmap", "second", "--from-literal=a=b")
    h.wait_for("a later ConfigMap to be reconciled", 30, lambda: annotated(kc, "second"), [srv, op])
    h.wait_for("its denial to be logged", 30, lambda: denials(op, "second"), [srv, op])
    h.check(op.poll() is None, "the operator keeps running after the denials")
    secrets = json.loads(h.kubectl(kc, "-n", NS, "get", "secrets", "-o", "json"))["items"]
    h.check(secrets == [], f"no Secret was created (got {[s['metadata']['name'] for s in secrets]})")
    h.stop(op)

    # a token with no Role at all: its list is refused, nothing is reconciled, it stays up
    nobody_kc = h.token_kubeconfig(kc, "nobody", h.kubectl(kc, "-n", NS, "create", "token", "nobody").strip())
    h.kubectl(kc, "-n", NS, "create", "configmap", "third", "--from-literal=a=b")
    op2 = h.start_operator("operator-nobody", scripts, nobody_kc, ["--namespace", NS])

    def refused():
        with open(op2.logfile, errors="replace") as f:
            return "forbidden" in f.read()
    h.wait_for("the unprivileged operator's list to be refused", 30, refused, [srv, op2])
    h.check(not annotated(kc, "third"), "nothing was reconciled without permissions")
    h.check(op2.poll() is None, "the unprivileged operator keeps running")
    h.stop(op2)


if __name__ == "__main__":
    h.main("operator_restricted", body)
