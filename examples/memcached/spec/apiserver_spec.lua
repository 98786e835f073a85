-- The memcached reconciler against the local API server (`luaop apiserver`, loopback): the CRD
-- and sample from this example, the reconcile function called directly (no informers: each step
-- reconciles until a pass writes nothing).
local testing = require("luaop.testing")
local backend = require("luaop.backend")
local http = require("spec.support.http_backend")
local op = require("luaop")

local HERE = debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$") or "examples/memcached"
local API, KIND, NS, NAME = "cache.example.com/v1", "Memcached", "default", "memcached-sample"

describe("memcached example against the local API server", function()
  local server, spec, api

  local function reconcile_until_quiet()
    for _ = 1, 10 do
      local before = api.writes
      local ok, res, err = pcall(spec.reconcile, { namespace = NS, name = NAME, id = "t" })
      assert(ok, res)
      assert.is_nil(err)
      if api.writes == before then return end
    end
    error("memcached did not settle after 10 reconciles")
  end
  local function memcached() return op.client.get(API, KIND, NS, NAME, { live = true }) end
  local function deployment() return op.client.get("apps/v1", "Deployment", NS, NAME, { live = true }) end

  setup(function()
    server = http.start_server()
    http.apply_manifest(server.url, HERE .. "/crd/cache.example.com_memcacheds.yaml")
    testing.new()
    spec = testing.load(HERE .. "/scripts")[1]
    api = http.new(server.url)
    backend.set(api)
  end)
  teardown(function()
    backend.set(nil)
    if server then server.stop() end
  end)

  it("creates the finalizer, an owned Deployment and the conditions", function()
    http.apply_manifest(server.url, HERE .. "/samples/memcached.yaml")
    reconcile_until_quiet()
    local m, d = assert(memcached()), assert(deployment())
    assert.same({ "cache.example.com/finalizer" }, m.metadata.finalizers)
    assert.equal(1, d.spec.replicas)
    assert.equal(m.metadata.uid, d.metadata.ownerReferences[1].uid)
    assert.equal(m.metadata.generation, m.status.observedGeneration)
    assert.is_true(op.conditions.is_true(m, "Progressing"))
    assert.is_true(op.conditions.is_false(m, "Degraded"))
  end)

  it("scales the Deployment when spec.replicas changes", function()
    assert(op.client.patch(assert(memcached()), { spec = { replicas = 3 } }))
    reconcile_until_quiet()
    assert.equal(3, assert(deployment()).spec.replicas)
    local m = assert(memcached())
    assert.equal(2, m.metadata.generation)
    assert.equal(2, m.status.observedGeneration)
  end)

  it("restores replicas someone else changed", function()
    assert(op.client.patch(assert(deployment()), { spec = { replicas = 9 } }))
    reconcile_until_quiet()
    assert.equal(3, assert(deployment()).spec.replicas)
  end)

  it("recreates a deleted Deployment", function()
    assert(op.client.delete(assert(deployment())))
    reconcile_until_quiet()
    assert.equal(3, assert(deployment()).spec.replicas)
  end)

  it("on deletion runs the finalizer and the object goes away", function()
    assert(op.client.delete(assert(memcached())))
    assert.is_string(assert(memcached()).metadata.deletionTimestamp)
    reconcile_until_quiet()
    local _, err = memcached()
    assert.is_true(op.errors.is_not_found(err))
    assert.equal("Deleting", api.events[#api.events].reason)
    local _, derr = deployment()   -- the API server's garbage collector follows the owner reference
    assert.is_true(op.errors.is_not_found(derr))
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
