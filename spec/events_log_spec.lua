local testing = require("luaop.testing")
local events = require("luaop.events")
local log = require("luaop.log")
local leader = require("luaop.leader")
local selector = require("luaop.selector")

local obj = { apiVersion = "example.com/v1", kind = "Widget", metadata = { name = "w", namespace = "ns", uid = "u1" } }

describe("luaop.events", function()
  local fake
  before_each(function() fake = testing.new() end)

  it("record goes to the backend with the object reference", function()
    assert.is_true(events.record(obj, "Normal", "Created", "made it"))
    assert.same({ apiVersion = "example.com/v1", kind = "Widget", namespace = "ns", name = "w", uid = "u1" },
      fake.events[1].regarding)
    assert.equal("Created", fake.events[1].reason)
    assert.equal("made it", fake.events[1].message)
  end)

  it("truncates messages over 1024 bytes", function()
    events.record(obj, "Warning", "Long", string.rep("x", 2000))
    assert.equal(1024, #fake.events[1].message)
  end)

  local bad = {
    { "type", function() events.record(obj, "Error", "X", "m") end },
    { "lowercase reason", function() events.record(obj, "Normal", "created", "m") end },
    { "reason with spaces", function() events.record(obj, "Normal", "Was Created", "m") end },
    { "object without kind", function() events.record({ metadata = { name = "x" } }, "Normal", "X", "m") end },
    { "message not a string", function() events.record(obj, "Normal", "X", 5) end },
  }
  for _, c in ipairs(bad) do it("raises on a bad " .. c[1], function() assert.has_error(c[2]) end) end
end)

describe("luaop.log", function()
  it("passes level, message and fields to the backend (functions as text)", function()
    local fake = testing.new()
    local fn = function() end
    log.info("scaled", { from = 1, to = "3", ok = true, obj = { a = 1 }, f = fn })
    log.error("boom")
    assert.same({ level = "info", msg = "scaled", fields = { from = 1, to = "3", ok = true, obj = { a = 1 }, f = tostring(fn) } },
      fake.logs[1])
    assert.equal("error", fake.logs[2].level)
  end)
  it("raises on a non-string message", function()
    testing.new()
    assert.has_error(function() log.warn(42) end)
    assert.has_error(function() log.debug("x", "y") end)
  end)
end)

describe("luaop.leader", function()
  it("reports the backend's leader state and identity", function()
    local fake = testing.new()
    assert.is_true(leader.is_leader())
    fake.leader = false
    assert.is_false(leader.is_leader())
    assert.equal("luaop-testing", leader.identity())
  end)
end)

describe("luaop.selector", function()
  local cases = {
    { "app=web", { app = "web" }, true },
    { "app=web", { app = "db" }, false },
    { "app!=web", {}, true },
    { "tier in (a,b)", { tier = "b" }, true },
    { "tier notin (a,b)", {}, true },
    { "canary", { canary = "" }, true },
    { "!canary", { canary = "x" }, false },
    { "app=web,tier=db", { app = "web" }, false },
    { "", { any = "x" }, true },
  }
  for _, c in ipairs(cases) do
    it("'" .. c[1] .. "'", function() assert.equal(c[3], selector.match(c[1], c[2])) end)
  end
  it("matches an object's labels", function()
    assert.is_true(selector.match("app=web", { metadata = { labels = { app = "web" } } }))
  end)
  it("parse returns nil, err on a bad selector; match raises", function()
    local s, err = selector.parse("a in (")
    assert.is_nil(s)
    assert.is_string(err)
    assert.has_error(function() selector.match("a in (", {}) end)
  end)
  it("from_labels", function()
    assert.equal("a=1,b=2", selector.from_labels({ b = "2", a = "1" }))
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
