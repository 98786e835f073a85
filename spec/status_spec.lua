local testing = require("luaop.testing")
local client = require("luaop.client")
local status = require("luaop.status")
local conditions = require("luaop.conditions")
local json = require("luaop.core").json
local fx = require("spec.support.fixtures")

describe("luaop.status.update", function()
  local fake, w
  before_each(function()
    fake = testing.new()
    w = assert(client.create(fx.widget("w1")))
    fake:reset_writes()
  end)

  local function status_writes()
    return fake:writes_matching({ verb = "update", subresource = "status" })
  end

  it("writes the status, sets observedGeneration and refreshes obj in place", function()
    local ref = w
    local res, err, what = status.update(w, function(o) o.status.ready = true end)
    assert.is_nil(err)
    assert.equal(ref, res)
    assert.equal("updated", what)
    assert.is_true(w.status.ready)
    assert.equal(1, w.status.observedGeneration)
    assert.equal(fake:get_object(fx.AV, fx.KIND, "default", "w1").metadata.resourceVersion, w.metadata.resourceVersion)
  end)

  it("a no-op status write makes no API call", function()
    assert(status.update(w, function(o) o.status.ready = true end))
    fake:reset_writes()
    local _, err, what = status.update(w, function(o) o.status.ready = true end)
    assert.is_nil(err)
    assert.equal("unchanged", what)
    assert.same({}, fake.writes)
  end)

  it("a no-op condition set makes no API call and keeps lastTransitionTime", function()
    local set = function(o) conditions.set(o, { type = "Ready", status = "True", reason = "Ok" }) end
    assert(status.update(w, set))
    local t0 = conditions.get(w, "Ready").lastTransitionTime
    fake:advance(120)
    fake:reset_writes()
    assert(status.update(w, set))
    assert.same({}, fake.writes)
    assert.equal(t0, conditions.get(w, "Ready").lastTransitionTime)
  end)

  it("status conflict retried and succeeds", function()
    fake:inject_conflict({ verb = "update", subresource = "status" })
    local calls = 0
    local res, err = status.update(w, function(o) calls = calls + 1; o.status.ready = true end)
    assert.is_nil(err)
    assert.is_true(res.status.ready)
    assert.equal(2, calls)                     -- mutate re-applied on the fresh object
    local codes = {}
    for i, x in ipairs(status_writes()) do codes[i] = x.code end
    assert.same({ 409, 200 }, codes)
    assert.equal("1", res.metadata.annotations["luaop.test/touched"]) -- the other writer's change survives
  end)

  it("after a conflict the object is re-read from the server, not the cache", function()
    fake:inject_conflict({ verb = "update", subresource = "status" })
    fake.reads = {}
    assert(status.update(w, function(o) o.status.ready = true end))
    assert.equal(1, #fake.reads)
    assert.is_true(fake.reads[1].live)
  end)

  it("backs off on the clock between attempts (no busy loop)", function()
    fake:inject({ verb = "update", subresource = "status", code = 409, reason = "Conflict", times = 2 })
    assert(status.update(w, function(o) o.status.ready = true end))
    assert.same({ 0.01, 0.02 }, fake.sleeps)
  end)

  it("gives up after max_attempts and returns the Conflict", function()
    fake:inject({ verb = "update", subresource = "status", code = 409, reason = "Conflict", times = 10 })
    local res, err = status.update(w, function(o) o.status.ready = true end, { max_attempts = 3 })
    assert.is_nil(res)
    assert.equal("Conflict", err.reason)
    assert.equal(3, #status_writes())
  end)

  it("does not retry other errors", function()
    fake:inject({ verb = "update", subresource = "status", code = 500, reason = "InternalError" })
    local res, err = status.update(w, function(o) o.status.ready = true end)
    assert.is_nil(res)
    assert.equal(500, err.code)
    assert.equal(1, #status_writes())
  end)

  it("without mutate, compares obj.status with the stored object", function()
    w.status = { phase = "Ready" }
    assert(status.update(w))
    assert.equal("Ready", fake:get_object(fx.AV, fx.KIND, "default", "w1").status.phase)
    fake:reset_writes()
    w.status = { phase = "Ready", observedGeneration = 1 }
    assert(status.update(w))
    assert.same({}, fake.writes)
  end)

  it("without mutate, a conflict re-applies the desired status on the fresh object", function()
    w.status = { phase = "Ready" }
    fake:inject_conflict({ verb = "update", subresource = "status" })
    local res = assert(status.update(w))
    assert.equal("Ready", res.status.phase)
  end)

  it("[] and null round-trip through a status write", function()
    local res = assert(status.update(w, function(o)
      o.status.items = json.array()
      o.status.list = json.array({ 1, json.null })
    end))
    assert.equal("[]", json.encode(res.status.items))
    assert.equal("[1,null]", json.encode(res.status.list))
    local stored = fake:get_object(fx.AV, fx.KIND, "default", "w1")
    assert.equal("[]", json.encode(stored.spec.items))
  end)

  it("misuse raises", function()
    assert.has_error(function() status.update(nil) end)
    assert.has_error(function() status.update(w, "not a function") end)
    assert.has_error(function() status.update(w, function(o) o.metadata.name = "other" end) end)
  end)

  it("patch merges into the status", function()
    assert(status.patch(w, { ready = true }))
    assert(status.patch(w, { ready = json.null, phase = "x" }))
    local s = fake:get_object(fx.AV, fx.KIND, "default", "w1").status
    assert.is_nil(s.ready)
    assert.equal("x", s.phase)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
