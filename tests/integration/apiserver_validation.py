#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test: what `luaop apiserver` rejects, and how, checked with clients nobody here
wrote (python3-kubernetes, kubectl 1.32) and raw HTTP: custom resources against their structural
schema (every 422 cause with kube-apiserver's reason, field and message), pruning under each
fieldValidation, nulls, defaults, embedded resources, list-type duplicates, the status
subresource, x-kubernetes-validations rules, deprecated versions and the preferred version,
ObjectMeta rules (labels, annotations and their 256 KiB total: client-side `kubectl apply` of a
huge CRD fails, `--server-side` works), ConfigMap/Secret data rules, immutable objects, 415."""
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from kubernetes import client, config
from kubernetes.client.rest import ApiException

LUAOP = os.environ["LUAOP"]
tmp = tempfile.mkdtemp()
kc = os.path.join(tmp, "kc")
proc = subprocess.Popen([LUAOP, "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out", kc],
                        stdout=subprocess.PIPE, text=True)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def raw(method, path, body=None, ctype="application/json"):
    """(code, headers, parsed body) of one HTTP request."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.headers, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, e.headers, json.loads(e.read() or b"null")


def causes(status):
    return sorted((c["reason"], c["field"], c["message"]) for c in status["details"]["causes"])


def invalid(fn, *args):
    """The Status body of a call that must fail with 422."""
    try:
        fn(*args)
    except ApiException as e:
        check(e.status == 422, "expected 422, got %d: %s" % (e.status, e.body))
        return json.loads(e.body)
    check(False, "expected a 422 from %s%r" % (fn.__name__, args[:4]))
    return {"details": {"causes": []}, "message": ""}


WIDGET_SCHEMA = {"type": "object", "properties": {
    "spec": {"type": "object", "required": ["size"], "properties": {
        "size": {"type": "integer", "minimum": 1, "maximum": 5},
        "ratio": {"type": "number", "multipleOf": 0.5, "maximum": 2, "exclusiveMaximum": True},
        "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+\\d*$"},
        "ip": {"type": "string", "format": "ipv4"},
        "when": {"type": "string", "format": "date-time"},
        "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
        "tags": {"type": "array", "maxItems": 3, "items": {"type": "string"},
                 "x-kubernetes-list-type": "set"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["port"],
                  "items": {"type": "object", "required": ["port"], "properties": {
                      "port": {"type": "integer"}, "name": {"type": "string"}}}},
        "labels": {"type": "object", "maxProperties": 2, "additionalProperties": {"type": "string"}},
        "port": {"x-kubernetes-int-or-string": True},
        "note": {"type": "string", "nullable": True},
        "other": {"type": "string"},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "x-kubernetes-preserve-unknown-fields": True}}},
    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}

try:
    line = proc.stdout.readline()
    assert line.startswith("listening on "), line
    url = line.split()[-1]
    config.load_kube_config(config_file=kc)
    ext = client.ApiextensionsV1Api()
    co = client.CustomObjectsApi()
    v1 = client.CoreV1Api()

    ext.create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": [
                     {"name": "v1alpha1", "served": True, "storage": False, "deprecated": True,
                      "deprecationWarning": "example.com/v1alpha1 Widget is going away",
                      "schema": {"openAPIV3Schema": {"type": "object",
                                                     "x-kubernetes-preserve-unknown-fields": True}}},
                     {"name": "v1beta1", "served": True, "storage": False, "deprecated": True,
                      "schema": {"openAPIV3Schema": {"type": "object",
                                                     "x-kubernetes-preserve-unknown-fields": True}}},
                     {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                      "schema": {"openAPIV3Schema": WIDGET_SCHEMA}}]}})

    def widget(name, spec):
        return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
                "spec": spec}

    # --- every schema violation is listed, in kube-apiserver's words
    st = invalid(co.create_namespaced_custom_object, "example.com", "v1", "default", "widgets",
                 widget("w1", {"size": 7, "ratio": 1.25, "name": "ABCDEFG", "ip": "1.2.3",
                               "when": "yesterday", "mode": "medium", "tags": ["a", "b", "a", "c"],
                               "ports": [{"port": 80}, {"port": 80, "name": "x"}, {"name": "y"}],
                               "labels": {"a": "1", "b": "2", "c": "3"}, "port": 1.5,
                               "other": None, "template": {"metadata": {"name": "t"}}}))
    check(st["details"]["kind"] == "Widget" and st["details"]["group"] == "example.com",
          "422 details name the Kind: %r" % st["details"])
    want = sorted([
        ("FieldValueInvalid", "spec.size",
         "Invalid value: 7: spec.size in body should be less than or equal to 5"),
        ("FieldValueInvalid", "spec.ratio",
         "Invalid value: 1.25: spec.ratio in body should be a multiple of 0.5"),
        ("FieldValueTooLong", "spec.name", "Too long: may not be longer than 5"),
        ("FieldValueInvalid", "spec.name",
         "Invalid value: \"ABCDEFG\": spec.name in body should match '^[a-z]+\\d*$'"),
        ("FieldValueTypeInvalid", "spec.ip",
         "Invalid value: \"1.2.3\": spec.ip in body must be of type ipv4: \"1.2.3\""),
        ("FieldValueTypeInvalid", "spec.when",
         "Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\""),
        ("FieldValueNotSupported", "spec.mode",
         "Unsupported value: \"medium\": supported values: \"fast\", \"slow\""),
        ("FieldValueTooMany", "spec.tags", "Too many: 4: must have at most 3 items"),
        ("FieldValueTooMany", "spec.labels", "Too many: 3: must have at most 2 items"),
        ("FieldValueTypeInvalid", "spec.port",
         "Invalid value: \"number\": spec.port in body must be of type integer,string: \"number\""),
        ("FieldValueRequired", "spec.ports[2].port", "Required value"),
        ("FieldValueRequired", "spec.template.apiVersion", "Required value: must not be empty"),
        ("FieldValueRequired", "spec.template.kind", "Required value: must not be empty"),
        ("FieldValueDuplicate", "spec.tags[2]", "Duplicate value: \"a\""),
        ("FieldValueDuplicate", "spec.ports[1]",
         "Duplicate value: map[string]interface {}{\"port\":80}"),
    ])
    got = causes(st)
    check(got == want, "schema causes:\n got %r\nwant %r" % (got, want))
    check(st["message"].startswith("Widget.example.com \"w1\" is invalid: [") and
          "spec.size: Invalid value: 7: spec.size in body should be less than or equal to 5"
          in st["message"], "422 message: %s" % st["message"][:200])

    st = invalid(co.create_namespaced_custom_object, "example.com", "v1", "default", "widgets",
                 widget("w2", {"size": 0, "name": "a", "ratio": 2}))
    check(causes(st) == sorted([
        ("FieldValueInvalid", "spec.size",
         "Invalid value: 0: spec.size in body should be greater than or equal to 1"),
        ("FieldValueInvalid", "spec.name",
         "Invalid value: \"a\": spec.name in body should be at least 2 chars long"),
        ("FieldValueInvalid", "spec.ratio", "Invalid value: 2: spec.ratio in body should be less than 2"),
    ]), "lower bounds and exclusive maximum: %r" % causes(st))
    st = invalid(co.create_namespaced_custom_object, "example.com", "v1", "default", "widgets",
                 widget("w3", {}))
    check(causes(st) == [("FieldValueRequired", "spec.size", "Required value")] and
          st["message"] == "Widget.example.com \"w3\" is invalid: spec.size: Required value",
          "one cause, no brackets: %s" % st["message"])
    # maxLength counts code points, not bytes
    w = co.create_namespaced_custom_object("example.com", "v1", "default", "widgets",
                                           widget("wutf", {"size": 1, "other": "\u00e9\u00e9\u00e9\u00e9\u00e9"}))
    check(w["spec"]["other"] == "\u00e9" * 5, "a 10-byte, 5-rune string passes")

    # --- pruning, per fieldValidation; nulls; defaults; embedded metadata
    body = widget("w4", {"size": 2, "junk": 1, "note": None, "other": None,
                         "free": {"anything": [1]},
                         "template": {"apiVersion": "v1", "kind": "Pod",
                                      "metadata": {"name": "p", "junk": True}}})
    code, hdrs, obj = raw("POST", "/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Strict",
                          body)
    check(code == 400 and "unknown field \"spec.junk\"" in obj["message"], "Strict: 400 %s" % obj)
    code, hdrs, obj = raw("POST", "/apis/example.com/v1/namespaces/default/widgets", body)
    warns = hdrs.get_all("Warning") or []
    check(code == 201, "Warn (default) creates: %d %s" % (code, obj))
    check('299 - "unknown field \\"spec.junk\\""' in warns and
          '299 - "unknown field \\"spec.template.metadata.junk\\""' in warns, "Warn headers: %r" % warns)
    spec = obj.get("spec", {})
    check("junk" not in spec and spec.get("free") == {"anything": [1]}, "pruned, preserved: %r" % spec)
    check("note" in spec and spec["note"] is None and "other" not in spec,
          "a nullable null stays, a non-nullable one goes: %r" % spec)
    check(spec.get("mode") == "fast", "default applied: %r" % spec)
    check(spec["template"]["metadata"] == {"name": "p"}, "embedded metadata pruned to ObjectMeta")
    code, hdrs, obj = raw("POST", "/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Ignore",
                          dict(body, metadata={"name": "w5"}))
    check(code == 201 and not hdrs.get_all("Warning"), "Ignore: silent")

    # --- the status subresource validates status against the schema
    st = invalid(co.patch_namespaced_custom_object_status, "example.com", "v1", "default", "widgets",
                 "w4", {"status": {"ready": "yes"}})
    check(causes(st) == [("FieldValueTypeInvalid", "status.ready",
                          "Invalid value: \"string\": status.ready in body must be of type boolean: \"string\"")],
          "status validated: %r" % causes(st))

    # --- deprecated versions warn on every request; the preferred version is the highest priority
    code, hdrs, _ = raw("GET", "/apis/example.com/v1beta1/namespaces/default/widgets")
    check(hdrs.get_all("Warning") == ['299 - "example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"'],
          "default deprecation warning: %r" % hdrs.get_all("Warning"))
    code, hdrs, _ = raw("GET", "/apis/example.com/v1alpha1/namespaces/default/widgets")
    check(hdrs.get_all("Warning") == ['299 - "example.com/v1alpha1 Widget is going away"'],
          "deprecationWarning text: %r" % hdrs.get_all("Warning"))
    code, _, grp = raw("GET", "/apis/example.com")
    check(grp["preferredVersion"]["version"] == "v1" and
          [v["version"] for v in grp["versions"]] == ["v1", "v1beta1", "v1alpha1"],
          "version priority: %r" % grp)

    # --- x-kubernetes-validations: CEL rules evaluated, transition rules on updates only, and a
    # rule outside the supported subset is named in a Warning rather than silently accepted
    rules_schema = {"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.minReplicas <= self.maxReplicas", "message": "min must not exceed max "},
            {"rule": "self.maxReplicas % 2 == 0",
             "messageExpression": "'maxReplicas ' + string(self.maxReplicas) + ' is odd'"},
            {"rule": "!has(self.legacy)", "reason": "FieldValueForbidden", "fieldPath": ".legacy",
             "messageExpression": "'legacy ' + self.legacy.format([1])"},
            {"rule": "self.name.startsWith('g-')"},
            {"rule": "self.tags.all(t, t.size() <= 3) && !self.tags.exists(t, t == 'bad')",
             "message": "bad tags"}],
        "properties": {
            "minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
            "legacy": {"type": "string"}, "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "mode": {"type": "string",
                     "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "mode is immutable"}]},
            "lazy": {"type": "string", "pattern": "^a+?$"},
            "size": {"type": "string",
                     "x-kubernetes-validations": [{"rule": "quantity(self).isLessThan(quantity('1Gi'))"}]}}}}}
    ext.create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gizmos", "kind": "Gizmo"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": rules_schema}}]}})

    def gizmo(name, spec):
        return {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": name}, "spec": spec}

    st = invalid(co.create_namespaced_custom_object, "example.com", "v1", "default", "gizmos",
                 gizmo("z1", {"minReplicas": 5, "maxReplicas": 3, "legacy": "x", "name": "x",
                              "tags": ["ok", "bad"], "mode": "a"}))
    want = sorted([
        ("FieldValueInvalid", "spec", "Invalid value: \"object\": min must not exceed max"),
        ("FieldValueInvalid", "spec", "Invalid value: \"object\": maxReplicas 3 is odd"),
        ("FieldValueForbidden", "spec.legacy", "Forbidden: failed rule: !has(self.legacy)"),
        ("FieldValueInvalid", "spec", "Invalid value: \"object\": failed rule: self.name.startsWith('g-')"),
        ("FieldValueInvalid", "spec", "Invalid value: \"object\": bad tags"),
    ])
    check(causes(st) == want, "CEL causes:\n got %r\nwant %r" % (causes(st), want))
    st = invalid(co.create_namespaced_custom_object, "example.com", "v1", "default", "gizmos",
                 gizmo("z2", {"maxReplicas": 2, "name": "g-2", "tags": []}))
    check(causes(st) == [("FieldValueInvalid", "spec",
                          "Invalid value: \"object\": no such key: minReplicas evaluating rule: "
                          "self.minReplicas <= self.maxReplicas")], "CEL runtime error: %r" % causes(st))
    code, hdrs, obj = raw("POST", "/apis/example.com/v1/namespaces/default/gizmos",
                          gizmo("z3", {"minReplicas": 1, "maxReplicas": 2, "name": "g-3", "tags": ["a"],
                                       "mode": "a", "size": "1", "lazy": "aa"}))
    check(code == 201, "valid under every rule: %d %s" % (code, obj))
    warns = hdrs.get_all("Warning") or []
    check(len(warns) == 3 and any("spec: messageExpression not evaluated by the local API server: 'legacy ' + "
                                  "self.legacy.format([1])" in w for w in warns) and any("spec.size: x-kubernetes-validations rule not evaluated by the local API "
                                  "server: quantity(self).isLessThan(quantity('1Gi'))" in w for w in warns) and
          any("spec.lazy: pattern not enforced by the local API server (unsupported syntax): ^a+?$" in w
              for w in warns), "an unsupported rule or pattern is named in a Warning: %r" % warns)
    st = invalid(co.patch_namespaced_custom_object, "example.com", "v1", "default", "gizmos", "z3",
                 {"spec": {"mode": "b"}})
    check(causes(st) == [("FieldValueInvalid", "spec.mode", "Invalid value: \"string\": mode is immutable")],
          "transition rule: %r" % causes(st))
    got = co.patch_namespaced_custom_object("example.com", "v1", "default", "gizmos", "z3",
                                            {"spec": {"tags": ["b"]}})
    check(got["spec"]["tags"] == ["b"], "an update keeping the mode passes the transition rule")

    # --- uniqueItems is not allowed in a structural schema
    code, _, obj = raw("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "uniqs.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "uniqs", "kind": "Uniq"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                         "type": "array", "uniqueItems": True, "items": {"type": "string"}}}}}}]}})
    check(code == 422 and "uniqueItems cannot be set to true" in obj["message"], "uniqueItems: %s" % obj)

    # --- ObjectMeta: labels, annotations, finalizers, generateName
    QN = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
          "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
          "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
    st = invalid(v1.create_namespaced_config_map, "default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="m1", labels={"bad key": "ok", "app": "-bad-", "x" * 64: "v"},
                                     annotations={"Example.COM/Fine": "1", "/no-prefix": "2"},
                                     finalizers=["a/b/c"])))
    want = sorted([
        ("FieldValueInvalid", "metadata.labels", "Invalid value: \"bad key\": name part " + QN),
        ("FieldValueInvalid", "metadata.labels",
         "Invalid value: \"-bad-\": a valid label must be an empty string or consist of alphanumeric "
         "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
         "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
         "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
        ("FieldValueInvalid", "metadata.labels",
         "Invalid value: \"%s\": name part must be no more than 63 characters" % ("x" * 64)),
        ("FieldValueInvalid", "metadata.annotations",
         "Invalid value: \"/no-prefix\": prefix part must be non-empty"),
        ("FieldValueInvalid", "metadata.finalizers",
         "Invalid value: \"a/b/c\": a qualified name " + QN +
         " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"),
    ])
    check(causes(st) == want, "metadata causes:\n got %r\nwant %r" % (causes(st), want))
    st = invalid(co.create_namespaced_custom_object, "example.com", "v1", "default", "widgets", {
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w6", "labels": {"ok": "no way"}}, "spec": {"size": 9}})
    check([c[1] for c in causes(st)] == ["metadata.labels", "spec.size"],
          "metadata and schema causes in one 422: %r" % causes(st))
    big = {"a": "x" * (256 * 1024)}
    st = invalid(v1.create_namespaced_config_map, "default",
                 client.V1ConfigMap(metadata=client.V1ObjectMeta(name="big", annotations=big)))
    check(st["message"] == "ConfigMap \"big\" is invalid: metadata.annotations: Too long: must have at "
          "most 262144 bytes", "annotation total: %s" % st["message"])

    # --- ConfigMap / Secret data
    code, _, obj = raw("POST", "/api/v1/namespaces/default/configmaps",
                       {"metadata": {"name": "d1"}, "data": {"n": 1}})
    check(code == 400 and obj["message"] == "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: "
          "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
          "ConfigMap data must be strings: %s" % obj)
    code, _, obj = raw("POST", "/api/v1/namespaces/default/secrets",
                       {"metadata": {"name": "s1"}, "data": {"k": "not base64!"}})
    check(code == 400 and "cannot be handled as a Secret: illegal base64 data at input byte 3" in obj["message"],
          "Secret data must be base64: %s" % obj)
    st = invalid(v1.create_namespaced_config_map, "default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="d2"), data={"a/b": "1", "..x": "2"}))
    check([c[1] for c in causes(st)] == ["data[..x]", "data[a/b]"] and
          "must not start with '..'" in st["message"], "config keys: %r" % causes(st))
    sec = v1.create_namespaced_secret("default", client.V1Secret(
        metadata=client.V1ObjectMeta(name="s2"), string_data={"user": "admin"}, data={"b": "YQ=="}))
    check(sec.data == {"b": "YQ==", "user": "YWRtaW4="} and not sec.string_data,
          "stringData merged into data: %r" % sec.data)
    st = invalid(v1.create_namespaced_secret, "default", client.V1Secret(
        metadata=client.V1ObjectMeta(name="s3"), type="kubernetes.io/tls", data={"tls.crt": "YQ=="}))
    check(causes(st) == [("FieldValueRequired", "data[tls.key]", "Required value")], "tls keys")

    # --- immutable ConfigMaps and Secrets
    v1.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="frozen", labels={"v": "1"}), data={"k": "1"}, immutable=True))
    st = invalid(v1.patch_namespaced_config_map, "frozen", "default", {"data": {"k": "2"}})
    check(causes(st) == [("FieldValueForbidden", "data",
                          "Forbidden: field is immutable when `immutable` is set")], "immutable data")
    st = invalid(v1.patch_namespaced_config_map, "frozen", "default", {"immutable": False})
    check(causes(st) == [("FieldValueForbidden", "immutable",
                          "Forbidden: field is immutable when `immutable` is set")], "immutable flag")
    got = v1.patch_namespaced_config_map("frozen", "default", {"metadata": {"labels": {"v": "2"}}})
    check(got.metadata.labels == {"v": "2"}, "metadata of an immutable ConfigMap still changes")
    v1.create_namespaced_secret("default", client.V1Secret(
        metadata=client.V1ObjectMeta(name="fs"), data={"k": "YQ=="}, immutable=True))
    st = invalid(v1.patch_namespaced_secret, "fs", "default", {"data": {"k": "Yg=="}})
    check([c[1] for c in causes(st)] == ["data"], "immutable Secret")

    # --- 415 for a body in a media type the server does not decode
    code, _, obj = raw("POST", "/api/v1/namespaces/default/configmaps", b"{}", "text/plain")
    check(code == 415 and obj["reason"] == "UnsupportedMediaType" and obj["message"] ==
          "the body of the request was in an unknown format - accepted media types include: "
          "application/json, application/yaml, application/vnd.kubernetes.protobuf", "415: %s" % obj)
    code, _, obj = raw("PUT", "/apis/example.com/v1/namespaces/default/widgets/w4", b"{}", "application/xml")
    check(code == 415 and obj["message"].endswith("application/json, application/yaml"), "415 CR: %s" % obj)

    # --- kubectl: client-side apply of a huge CRD hits the annotation limit, server-side does not
    env = dict(os.environ, KUBECONFIG=kc, KUBECACHEDIR=os.path.join(tmp, "cache"))
    props = {"f%04d" % i: {"type": "string", "description": "d" * 200} for i in range(1400)}
    huge = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "huges.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "huges", "kind": "Huge"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                         "openAPIV3Schema": {"type": "object", "properties": {
                             "spec": {"type": "object", "properties": props}}}}}]}}
    path = os.path.join(tmp, "huge.json")
    with open(path, "w") as f:
        json.dump(huge, f)
    r = subprocess.run(["kubectl", "apply", "-f", path], env=env, capture_output=True, text=True)
    check(r.returncode != 0 and "metadata.annotations: Too long: must have at most 262144 bytes" in r.stderr,
          "client-side apply of a huge CRD fails: %s" % r.stderr[-300:])
    r = subprocess.run(["kubectl", "apply", "--server-side", "-f", path], env=env, capture_output=True,
                       text=True)
    check(r.returncode == 0, "server-side apply works: %s" % r.stderr[-300:])
finally:
    proc.terminate()
    proc.wait(timeout=10)

if failures:
    raise AssertionError("%d check(s) failed: %s" % (len(failures), "; ".join(failures)))
print("PASS apiserver_validation")
