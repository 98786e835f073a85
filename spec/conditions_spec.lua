local testing = require("luaop.testing")
local conditions = require("luaop.conditions")
local json = require("luaop.core").json

local function obj(gen)
  return { apiVersion = "example.com/v1", kind = "Widget", metadata = { name = "w", generation = gen or 3 } }
end

describe("luaop.conditions", function()
  local fake
  before_each(function() fake = testing.new() end)

  it("set adds a condition with lastTransitionTime and observedGeneration", function()
    local o = obj(3)
    assert.is_true(conditions.set(o, { type = "Ready", status = "True", reason = "AllGood", message = "ok" }))
    local c = conditions.get(o, "Ready")
    assert.equal("True", c.status)
    assert.equal("AllGood", c.reason)
    assert.equal(3, c.observedGeneration)
    assert.equal("2023-11-14T22:13:20Z", c.lastTransitionTime)
    assert.is_true(json.is_array(o.status.conditions))
  end)

  it("lastTransitionTime unchanged when status unchanged", function()
    local o = obj()
    conditions.set(o, { type = "Ready", status = "True", reason = "A" })
    local t0 = conditions.get(o, "Ready").lastTransitionTime
    fake:advance(60)
    conditions.set(o, { type = "Ready", status = "True", reason = "B", message = "new text" })
    assert.equal(t0, conditions.get(o, "Ready").lastTransitionTime)
    assert.equal("B", conditions.get(o, "Ready").reason)
  end)

  it("lastTransitionTime changes when status changes", function()
    local o = obj()
    conditions.set(o, { type = "Ready", status = "True", reason = "A" })
    fake:advance(60)
    conditions.set(o, { type = "Ready", status = "False", reason = "A" })
    assert.equal("2023-11-14T22:14:20Z", conditions.get(o, "Ready").lastTransitionTime)
  end)

  it("setting the same condition again reports no change", function()
    local o = obj()
    conditions.set(o, { type = "Ready", status = "True", reason = "A", message = "m" })
    assert.is_false(conditions.set(o, { type = "Ready", status = "True", reason = "A", message = "m" }))
  end)

  it("observedGeneration follows the object's generation", function()
    local o = obj(1)
    conditions.set(o, { type = "Ready", status = "True", reason = "A" })
    o.metadata.generation = 2
    assert.is_true(conditions.set(o, { type = "Ready", status = "True", reason = "A" }))
    assert.equal(2, conditions.get(o, "Ready").observedGeneration)
    conditions.set(o, { type = "Ready", status = "True", reason = "A", observed_generation = 7 })
    assert.equal(7, conditions.get(o, "Ready").observedGeneration)
  end)

  it("no duplicate types: set collapses duplicates", function()
    local o = obj()
    o.status = { conditions = json.array({
      { type = "Ready", status = "False", reason = "X", lastTransitionTime = "t" },
      { type = "Ready", status = "True", reason = "Y", lastTransitionTime = "t" },
    }) }
    conditions.set(o, { type = "Ready", status = "False", reason = "X" })
    assert.equal(1, #o.status.conditions)
  end)

  describe("reason is required and CamelCase", function()
    local bad = { { "missing", nil }, { "empty", "" }, { "lowercase first", "ready" },
                  { "spaces", "Not Ready" }, { "trailing colon", "Bad:" }, { "number", 5 } }
    for _, c in ipairs(bad) do
      it("rejects " .. c[1], function()
        assert.has_error(function() conditions.set(obj(), { type = "Ready", status = "True", reason = c[2] }) end)
      end)
    end
    it("accepts MinimumReplicasAvailable", function()
      assert.has_no.errors(function()
        conditions.set(obj(), { type = "Ready", status = "True", reason = "MinimumReplicasAvailable" })
      end)
    end)
  end)

  it("status must be True, False or Unknown", function()
    assert.has_error(function() conditions.set(obj(), { type = "Ready", status = "true", reason = "A" }) end)
    assert.has_error(function() conditions.set(obj(), { type = "", status = "True", reason = "A" }) end)
  end)

  it("remove, is_true, is_false, is_unknown", function()
    local o = obj()
    assert.is_false(conditions.remove(o, "Ready"))
    assert.is_true(conditions.is_unknown(o, "Ready"))
    conditions.set(o, { type = "Ready", status = "True", reason = "A" })
    conditions.set(o, { type = "Degraded", status = "False", reason = "A" })
    assert.is_true(conditions.is_true(o, "Ready"))
    assert.is_true(conditions.is_false(o, "Degraded"))
    assert.is_false(conditions.is_true(o, "Degraded"))
    assert.is_true(conditions.remove(o, "Ready"))
    assert.is_nil(conditions.get(o, "Ready"))
    assert.equal(1, #o.status.conditions)
  end)

  it("removing the last condition leaves [] (not {}) after encoding", function()
    local o = obj()
    conditions.set(o, { type = "Ready", status = "True", reason = "A" })
    conditions.remove(o, "Ready")
    assert.equal("[]", json.encode(o.status.conditions))
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
