-- luaop.testing: the fake API's semantics and the reconcile harness.
local testing = require("luaop.testing")
local client = require("luaop.client")
local op = require("luaop")
local json = require("luaop.core").json
local fx = require("spec.support.fixtures")

describe("luaop.testing fake API", function()
  local fake
  before_each(function() fake = testing.new() end)

  it("bumps one global resourceVersion across kinds", function()
    local a = assert(client.create(fx.widget("a")))
    local b = assert(client.create(fx.configmap("b")))
    assert.equal(tonumber(a.metadata.resourceVersion) + 1, tonumber(b.metadata.resourceVersion))
  end)

  it("a no-op write keeps the resourceVersion and emits no watch event", function()
    local w = assert(client.create(fx.widget("a")))
    local n = #fake.watch_log
    local u = assert(client.update(w))
    assert.equal(w.metadata.resourceVersion, u.metadata.resourceVersion)
    assert.equal(n, #fake.watch_log)
  end)

  it("status subresource: create drops status", function()
    local o = fx.widget("a")
    o.status = { x = 1 }
    assert.is_nil(assert(client.create(o)).status)
  end)

  it("status subresource: the main endpoint keeps the stored status", function()
    local w = assert(client.create(fx.widget("a")))
    w = assert(client.update_status((function() w.status = { x = 1 }; return w end)()))
    w.status = { x = 2 }
    w.spec.size = 5
    local u = assert(client.update(w))
    assert.equal(1, u.status.x)
    assert.equal(5, u.spec.size)
  end)

  it("status subresource: /status writes only status and never bumps generation", function()
    local w = assert(client.create(fx.widget("a")))
    w.status = { x = 1 }
    w.spec.size = 9
    w.metadata.labels = { changed = "yes" }
    local u = assert(client.update_status(w))
    assert.equal(1, u.status.x)
    assert.equal(1, u.spec.size)
    assert.same({ app = "demo" }, u.metadata.labels)
    assert.equal(1, u.metadata.generation)
  end)

  it("generation bumps on spec changes only, not on metadata changes", function()
    local w = assert(client.create(fx.widget("a")))
    w.metadata.labels.extra = "x"
    w = assert(client.update(w))
    assert.equal(1, w.metadata.generation)
    w.spec.size = 2
    assert.equal(2, assert(client.update(w)).metadata.generation)
  end)

  it("kinds without the status subresource treat status as a normal field", function()
    fake:define_kind({ api_version = "example.com/v1", kind = "Plain", status = false })
    local p = assert(client.create({ apiVersion = "example.com/v1", kind = "Plain",
      metadata = { name = "p", namespace = "default" }, status = { x = 1 } }))
    assert.equal(1, p.status.x)
    local _, err = client.update_status(p)
    assert.equal(404, err.code)
  end)

  it("cluster-scoped kinds ignore the namespace", function()
    fake:define_kind({ api_version = "example.com/v1", kind = "Global", namespaced = false })
    local g = assert(client.create({ apiVersion = "example.com/v1", kind = "Global", metadata = { name = "g" } }))
    assert.is_nil(g.metadata.namespace)
    assert(client.get("example.com/v1", "Global", nil, "g"))
  end)

  it("no new finalizers while deleting (422); removing the last one deletes", function()
    local o = fx.widget("a")
    o.metadata.finalizers = json.array({ "a/b" })
    local w = assert(client.create(o))
    assert(client.delete(w))
    w = assert(client.get(fx.AV, fx.KIND, "default", "a"))
    table.insert(w.metadata.finalizers, "c/d")
    local _, err = client.update(w)
    assert.equal(422, err.code)
    w.metadata.finalizers = json.array()
    assert(client.update(w))
    assert.is_nil(fake:get_object(fx.AV, fx.KIND, "default", "a"))
    assert.equal("delete", fake.watch_log[#fake.watch_log].type)
  end)

  it("garbage collection waits for every owner and honours the dependent's finalizers", function()
    local a = assert(client.create(fx.widget("a")))
    local b = assert(client.create(fx.widget("b")))
    local cm = fx.configmap("cm")
    op.owner.set_controller_reference(a, cm)
    op.owner.set_owner_reference(b, cm)
    cm.metadata.finalizers = json.array({ "keep/me" })
    assert(client.create(cm))
    assert(client.delete(a))
    assert.is_nil(fake:get_object("v1", "ConfigMap", "default", "cm").metadata.deletionTimestamp)
    assert(client.delete(b))
    local left = fake:get_object("v1", "ConfigMap", "default", "cm")
    assert.is_string(left.metadata.deletionTimestamp)
  end)

  it("Orphan propagation removes the owner reference from dependents", function()
    local a = assert(client.create(fx.widget("a")))
    local cm = fx.configmap("cm")
    op.owner.set_controller_reference(a, cm)
    assert(client.create(cm))
    assert(client.delete(a, { propagation_policy = "Orphan" }))
    local left = assert(fake:get_object("v1", "ConfigMap", "default", "cm"))
    assert.is_nil(left.metadata.ownerReferences)
  end)

  it("records every write with its outcome", function()
    local w = assert(client.create(fx.widget("a")))
    client.create(fx.widget("a"))
    client.patch(w, { spec = { size = 3 } })
    local codes = {}
    for i, x in ipairs(fake.writes) do codes[i] = x.verb .. ":" .. tostring(x.code) end
    assert.same({ "create:201", "create:409", "patch:200" }, codes)
  end)

  it("fault injection: a fault fires the given number of times", function()
    fake:inject({ verb = "create", code = 503, reason = "ServiceUnavailable", times = 2 })
    assert.equal(503, select(2, client.create(fx.widget("a"))).code)
    assert.equal(503, select(2, client.create(fx.widget("a"))).code)
    assert(client.create(fx.widget("a")))
  end)
end)

describe("luaop.testing harness", function()
  local fake
  before_each(function() fake = testing.new() end)

  it("load runs main.lua with require resolving inside the script set", function()
    local specs = testing.load("spec/support/scripts")
    assert.equal("configmap-marker", specs[1].name)
    assert(client.create(fx.configmap("x")))
    local summary = testing.run_until_stable("configmap-marker")
    assert.equal("yes", fake:get_object("v1", "ConfigMap", "default", "x").data.seen)
    assert.is_true(summary.reconciles >= 1)
  end)

  it("load reports a script that fails to load with its file:line", function()
    local ok, err = pcall(testing.load, "spec/support/no-such-dir")
    assert.is_false(ok)
    assert.matches("no%-such%-dir/main.lua", err)
  end)

  it("reconcile classifies results like the host", function()
    local out
    local spec = op.controller({ name = "c", for_ = { api_version = "v1", kind = "ConfigMap" },
      reconcile = function() return out() end })
    local cases = {
      { function() end, "done" },
      { function() return op.result.done() end, "done" },
      { function() return op.result.requeue() end, "requeue" },
      { function() return op.result.requeue_after(5) end, "requeue_after" },
      { function() return nil, { reason = "Conflict" } end, "error" },
      { function() return nil, op.errors.terminal("bad") end, "terminal" },
      { function() error("boom") end, "error" },
    }
    for _, c in ipairs(cases) do
      out = c[1]
      assert.equal(c[2], testing.reconcile(spec, { namespace = "default", name = "x" }).kind)
    end
    out = function() error("boom") end
    local r = testing.reconcile("c", { namespace = "default", name = "x" })
    assert.is_true(r.raised)
    assert.matches("boom", r.err.message)
  end)

  it("run_until_stable catches a hot loop", function()
    op.controller({ name = "hot", for_ = { api_version = "v1", kind = "ConfigMap" },
      reconcile = function(req)
        local cm = op.client.get("v1", "ConfigMap", req.namespace, req.name)
        cm.data.n = tostring(tonumber(cm.data.n or "0") + 1) -- writes on every pass
        op.client.update(cm)
      end })
    assert(client.create(fx.configmap("x", {})))
    local ok, err = pcall(testing.run_until_stable, "hot", { max_reconciles = 20 })
    assert.is_false(ok)
    assert.matches("not stable after 20 reconciles", err)
  end)

  it("run_until_stable flags a reconcile that returns requeue() forever, naming the key", function()
    local calls = 0
    op.controller({ name = "spinner", for_ = { api_version = "v1", kind = "ConfigMap" },
      reconcile = function() calls = calls + 1; return op.result.requeue() end })
    assert(client.create(fx.configmap("x", {})))
    local ok, err = pcall(testing.run_until_stable, "spinner")
    assert.is_false(ok)
    assert.matches("controller 'spinner': reconcile of default/x returned requeue%(%) 10 times in a row", err)
    assert.equal(10, calls)
    assert(client.create(fx.configmap("y", {})))
    ok, err = pcall(testing.run_until_stable, "spinner", { max_requeues = 3 })
    assert.is_false(ok)
    assert.matches("reconcile of default/y returned requeue%(%) 3 times in a row", err)
    ok, err = pcall(testing.run_until_stable, "spinner", { max_requeues = 0 })
    assert.is_false(ok)
    assert.matches("opts.max_requeues must be a number >= 1", err)
  end)

  it("a few requeue() results followed by done are stable", function()
    local calls = 0
    op.controller({ name = "settles", for_ = { api_version = "v1", kind = "ConfigMap" },
      reconcile = function()
        calls = calls + 1
        if calls <= 9 then return op.result.requeue() end
      end })
    assert(client.create(fx.configmap("x", {})))
    local summary = testing.run_until_stable("settles")
    assert.equal(10, summary.reconciles)
    assert.equal("done", summary.results[10].kind)
    assert.same({}, summary.pending)
  end)

  it("requeue_after waits on the fake clock; later items stay pending past the horizon", function()
    local calls = 0
    op.controller({ name = "periodic", for_ = { api_version = "v1", kind = "ConfigMap" },
      reconcile = function() calls = calls + 1; return op.result.requeue_after(60) end })
    assert(client.create(fx.configmap("x")))
    local t0 = fake:now()
    local summary = testing.run_until_stable("periodic", { horizon = 150 })
    assert.equal(3, calls)                       -- t0, t0+60, t0+120
    assert.equal(t0 + 120, fake:now())
    assert.same({ "default/x" }, summary.pending)
  end)

  it("errors are retried with backoff until they succeed", function()
    local calls = 0
    op.controller({ name = "flaky", for_ = { api_version = "v1", kind = "ConfigMap" },
      reconcile = function()
        calls = calls + 1
        if calls < 3 then return nil, { reason = "ServiceUnavailable", code = 503 } end
      end })
    assert(client.create(fx.configmap("x")))
    local t0 = fake:now()
    local summary = testing.run_until_stable("flaky")
    assert.same({ "error", "error", "done" }, testing.kinds(summary))
    assert.is_true(math.abs(fake:now() - (t0 + 0.005 + 0.01)) < 1e-9)
  end)

  it("a raising reconcile fails run_until_stable with its traceback", function()
    op.controller({ name = "raiser", for_ = { api_version = "v1", kind = "ConfigMap" },
      reconcile = function() error("kaboom") end })
    assert(client.create(fx.configmap("x")))
    local ok, err = pcall(testing.run_until_stable, "raiser")
    assert.is_false(ok)
    assert.matches("kaboom", err)
  end)

  it("predicates filter events; owned objects map to their controller owner", function()
    local seen = {}
    op.controller({ name = "owner", for_ = { api_version = fx.AV, kind = fx.KIND,
        predicates = { op.predicates.generation_changed } },
      owns = { { api_version = "v1", kind = "ConfigMap" } },
      reconcile = function(req) seen[#seen + 1] = req.name end })
    local w = assert(client.create(fx.widget("a")))
    testing.run_until_stable("owner")
    assert.same({ "a" }, seen)
    w.metadata.labels.x = "y" -- metadata only: filtered by generation_changed
    assert(client.update(w))
    testing.run_until_stable("owner")
    assert.same({ "a" }, seen)
    local cm = fx.configmap("child")
    op.owner.set_controller_reference(w, cm)
    assert(client.create(cm))
    testing.run_until_stable("owner")
    assert.same({ "a", "a" }, seen)
  end)

  it("watches map events to requests", function()
    local seen = {}
    op.controller({ name = "mapper", for_ = { api_version = fx.AV, kind = fx.KIND },
      watches = { { api_version = "v1", kind = "ConfigMap",
                    map = function(obj) return { { namespace = obj.metadata.namespace, name = "target-" .. obj.metadata.name } } end } },
      reconcile = function(req) seen[#seen + 1] = req.name end })
    assert(client.create(fx.configmap("c1")))
    testing.run_until_stable("mapper")
    assert.same({ "target-c1" }, seen)
  end)
end)

describe("luaop.testing.load sandbox", function()
  it("scripts see no io/debug and an os with only time/date/clock, like in the host", function()
    testing.new()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. dir)
    local f = assert(io.open(dir .. "/main.lua", "w"))
    f:write("assert(io == nil and debug == nil and loadfile == nil, 'leaky sandbox')\n",
            "assert(string and table and math and coroutine and bit, 'missing libraries')\n",
            "assert(os.execute == nil and os.exit == nil and os.getenv == nil and os.remove == nil, 'os leaks')\n",
            "assert(os.rename == nil and os.tmpname == nil and os.setlocale == nil, 'os leaks')\n",
            "local n = 0; for _ in pairs(os) do n = n + 1 end; assert(n == 3, 'os has ' .. n .. ' entries')\n",
            "assert(require('os') == os and require('bit') == bit and require('string') == string)\n",
            "assert(os.time() == 1700000000, 'os.time() = ' .. os.time())\n",
            "assert(os.date('!%Y-%m-%dT%H:%M:%SZ') == '2023-11-14T22:13:20Z', os.date('!%Y-%m-%dT%H:%M:%SZ'))\n",
            "assert(os.date('!%H:%M', 0) == '00:00' and os.date('!*t', 0).year == 1970)\n",
            "assert(type(os.clock()) == 'number')\n")
    f:close()
    assert.same({}, testing.load(dir))
    os.remove(dir .. "/main.lua")
    os.remove(dir)
  end)
end)

describe("luaop.testing fake and the codec", function()
  it("a body the host could not encode fails in the fake too, naming the key", function()
    testing.new()
    local o = fx.configmap("bad")
    o.data = { 1, 2, x = "mixed" }
    local ok, err = pcall(client.create, o)
    assert.is_false(ok)
    assert.matches("json: cannot encode", err)
    assert.matches("data", err)
  end)
end)

describe("luaop.testing fake stores what the server would", function()
  it("a null object member is stored as absent; nulls in arrays stay", function()
    local fake = testing.new()
    local o = fx.configmap("n", { a = "1", b = json.null })
    o.list = json.array({ json.null })
    assert(client.create(o))
    local s = fake:get_object("v1", "ConfigMap", "default", "n")
    assert.is_nil(s.data.b)
    assert.equal(json.null, s.list[1])
  end)
end)

describe("luaop.testing manifests", function()
  it("apply_manifest defines CRD kinds (scope, status subresource) and creates objects", function()
    local fake = testing.new()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write([[
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Thing, plural: things}
  versions:
    - {name: v1, served: true, storage: true}
---
apiVersion: example.com/v1
kind: Thing
metadata: {name: t1}
spec: {items: []}
status: {x: 1}
]])
    f:close()
    local out = testing.apply_manifest(path)
    os.remove(path)
    assert.equal(2, #out)
    local t = assert(fake:get_object("example.com/v1", "Thing", nil, "t1"))
    assert.is_nil(t.metadata.namespace)               -- cluster-scoped
    assert.equal(1, t.status.x)                       -- no status subresource: stored on create
    assert.equal("[]", json.encode(t.spec.items))
  end)

  it("read_manifest names the file on a parse error", function()
    testing.new()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("a: [unclosed\n")
    f:close()
    local ok, err = pcall(testing.read_manifest, path)
    os.remove(path)
    assert.is_false(ok)
    assert.matches(path, err, 1, true)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
