-- SPDX-License-Identifier: Apache-2.0
-- The memcached operator end to end against a real (local) API server started in this process
-- (luaop.testing.apiserver, envtest): this example's CRD, sample and scripts; its controller
-- driven by watch events from the server until nothing changes. Paths are relative to this
-- file, so the spec runs from a copy of the example with only the installed luaop package.
local testing = require("luaop.testing")
local op = require("luaop")

local HERE = debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$") or "."
local API, KIND, NS, NAME = "cache.example.com/v1", "Memcached", "default", "memcached-sample"

describe("memcached example against luaop.testing.apiserver()", function()
  local env

  local function memcached() return env.client.get(API, KIND, NS, NAME) end
  local function deployment() return env.client.get("apps/v1", "Deployment", NS, NAME) end

  setup(function()
    env = testing.apiserver({ crds = { HERE .. "/crd/cache.example.com_memcacheds.yaml" }, scripts = HERE .. "/scripts" })
  end)
  teardown(function() env:stop() end)

  it("creating a Memcached makes the finalizer, an owned Deployment and the conditions", function()
    env:apply_manifest(HERE .. "/samples/memcached.yaml")
    local summary = env:run_until_stable()
    assert.is_true(summary.reconciles >= 1)
    local m, d = assert(memcached()), assert(deployment())
    assert.same({ "cache.example.com/finalizer" }, m.metadata.finalizers)
    assert.equal(1, d.spec.replicas)
    local ref = d.metadata.ownerReferences[1]
    assert.equal(m.metadata.uid, ref.uid)
    assert.equal(KIND, ref.kind)
    assert.is_true(ref.controller)
    assert.equal(m.metadata.generation, m.status.observedGeneration)
    assert.is_true(op.conditions.is_true(m, "Progressing"))
    assert.is_true(op.conditions.is_false(m, "Degraded"))
  end)

  it("a spec.replicas change reaches the Deployment through the watch", function()
    assert(env.client.patch(assert(memcached()), { spec = { replicas = 3 } }))
    env:run_until_stable()
    assert.equal(3, assert(deployment()).spec.replicas)
    local m = assert(memcached())
    assert.equal(2, m.metadata.generation)
    assert.equal(2, m.status.observedGeneration)
  end)

  it("restores replicas someone else changed on the owned Deployment", function()
    assert(env.client.patch(assert(deployment()), { spec = { replicas = 9 } }))
    env:run_until_stable()
    assert.equal(3, assert(deployment()).spec.replicas)
  end)

  it("recreates a deleted Deployment", function()
    assert(env.client.delete(assert(deployment())))
    env:run_until_stable()
    assert.equal(3, assert(deployment()).spec.replicas)
  end)

  it("on deletion the finalizer runs and the object and its Deployment go away", function()
    assert(env.client.delete(assert(memcached())))
    assert.is_string(assert(memcached()).metadata.deletionTimestamp)
    env:run_until_stable()
    local _, err = memcached()
    assert.is_true(op.errors.is_not_found(err))
    assert.equal("Deleting", env.events[#env.events].reason)
    local _, derr = deployment() -- the API server's garbage collector follows the owner reference
    assert.is_true(op.errors.is_not_found(derr))
  end)
end)
