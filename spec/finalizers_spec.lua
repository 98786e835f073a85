local testing = require("luaop.testing")
local client = require("luaop.client")
local finalizers = require("luaop.finalizers")
local json = require("luaop.core").json
local fx = require("spec.support.fixtures")

local OURS, THEIRS = "example.com/ours", "other.io/theirs"

describe("luaop.finalizers", function()
  local fake, w
  local function stored() return fake:get_object(fx.AV, fx.KIND, "default", "w1") end
  before_each(function()
    fake = testing.new()
    w = assert(client.create(fx.widget("w1")))
    fake:reset_writes()
  end)

  it("add puts the finalizer with one JSON patch and refreshes obj", function()
    assert(finalizers.add(w, OURS))
    assert.same({ OURS }, stored().metadata.finalizers)
    assert.same({ OURS }, w.metadata.finalizers)
    assert.equal(1, #fake.writes)
    assert.equal("json", fake.writes[1].patch_type)
  end)

  it("add is a no-op (no API call) when present", function()
    assert(finalizers.add(w, OURS))
    fake:reset_writes()
    assert(finalizers.add(w, OURS))
    assert.same({}, fake.writes)
  end)

  it("has", function()
    assert.is_false(finalizers.has(w, OURS))
    finalizers.add(w, OURS)
    assert.is_true(finalizers.has(w, OURS))
  end)

  it("another controller's finalizer added meanwhile survives our add", function()
    local stale = w
    assert(fake:edit(fx.AV, fx.KIND, "default", "w1", function(o) o.metadata.finalizers = json.array({ THEIRS }) end))
    assert(finalizers.add(stale, OURS))
    assert.same({ THEIRS, OURS }, stored().metadata.finalizers)
  end)

  it("another controller's finalizer survives ours being removed", function()
    assert(finalizers.add(w, OURS))
    local stale = w
    -- someone prepends theirs after we read: our index moved
    assert(fake:edit(fx.AV, fx.KIND, "default", "w1", function(o)
      table.insert(o.metadata.finalizers, 1, THEIRS)
    end))
    assert(finalizers.remove(stale, OURS))
    assert.same({ THEIRS }, stored().metadata.finalizers)
  end)

  it("remove is a no-op when absent", function()
    assert(finalizers.remove(w, OURS))
    assert.same({}, fake.writes)
  end)

  describe("finalize", function()
    it("adds the finalizer while the object lives and does not run cleanup", function()
      local ran = 0
      local deleting, err = finalizers.finalize(w, OURS, function() ran = ran + 1 end)
      assert.is_nil(err)
      assert.is_false(deleting)
      assert.equal(0, ran)
      assert.is_true(finalizers.has(stored(), OURS))
    end)

    it("cleanup runs once, then the finalizer goes and the object is deleted", function()
      finalizers.add(w, OURS)
      assert(client.delete(w))
      local ran = 0
      for _ = 1, 3 do
        local cur = stored()
        if cur then
          local deleting = assert(finalizers.finalize(cur, OURS, function() ran = ran + 1 end))
          assert.is_true(deleting)
        end
      end
      assert.equal(1, ran)
      assert.is_nil(stored())
    end)

    it("keeps the object while another finalizer remains", function()
      assert(fake:edit(fx.AV, fx.KIND, "default", "w1", function(o) o.metadata.finalizers = json.array({ THEIRS, OURS }) end))
      assert(client.delete(w))
      local cur = stored()
      assert.is_true(finalizers.finalize(cur, OURS, function() end))
      assert.same({ THEIRS }, stored().metadata.finalizers)
      assert.is_not_nil(stored().metadata.deletionTimestamp)
    end)

    it("a failing cleanup keeps the finalizer and returns the error", function()
      finalizers.add(w, OURS)
      assert(client.delete(w))
      local deleting, err = finalizers.finalize(stored(), OURS, function() return nil, { reason = "Busy", message = "later" } end)
      assert.is_nil(deleting)
      assert.equal("Busy", err.reason)
      assert.is_true(finalizers.has(stored(), OURS))
      local _, err2 = finalizers.finalize(stored(), OURS, function() return false end)
      assert.equal("CleanupFailed", err2.reason)
    end)

    it("without our finalizer, a deleting object needs nothing", function()
      assert(fake:edit(fx.AV, fx.KIND, "default", "w1", function(o) o.metadata.finalizers = json.array({ THEIRS }) end))
      assert(client.delete(w))
      local ran = false
      assert.is_true(finalizers.finalize(stored(), OURS, function() ran = true end))
      assert.is_false(ran)
    end)
  end)

  it("add on an object being deleted fails at once with Invalid", function()
    assert(fake:edit(fx.AV, fx.KIND, "default", "w1", function(o) o.metadata.finalizers = json.array({ THEIRS }) end))
    assert(client.delete(w))
    fake:reset_writes()
    local res, err = finalizers.add(w, OURS)   -- w is stale: the first patch fails, the re-read shows the deletion
    assert.is_nil(res)
    assert.equal("Invalid", err.reason)
    assert.equal(1, #fake.writes)
  end)

  it("misuse raises", function()
    assert.has_error(function() finalizers.add(w, "") end)
    assert.has_error(function() finalizers.add({}, OURS) end)
    assert.has_error(function() finalizers.finalize(w, OURS, "nope") end)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
