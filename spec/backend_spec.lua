-- The host adapter: luaop.client over luaop.core's host functions (stubbed here, since the plain
-- module has no host). Checks the exact calls the library makes.
local backend = require("luaop.backend")
local client = require("luaop.client")
local status = require("luaop.status")
local core = require("luaop.core")
local json = core.json

describe("luaop.backend host adapter", function()
  local calls, saved
  local stubs = {}
  before_each(function()
    calls = {}
    saved = {}
    stubs = {
      request = function(...)
        calls[#calls + 1] = { ... }
        local verb = select(1, ...)
        if verb == "delete" then return 200, { kind = "Status", status = "Success" } end
        if verb == "get" then
          local _, av, kind, ns, name = ...
          return 200, { apiVersion = av, kind = kind, metadata = { name = name, namespace = ns, resourceVersion = "6" } }
        end
        if verb == "update" and select(6, ...) == "status" then
          return nil, { code = 409, reason = "Conflict", message = "stale" }
        end
        return 201, json.decode(select(9, ...))
      end,
      get = function(av, kind, ns, name)
        calls[#calls + 1] = { "cache-get", av, kind, ns, name }
        return { apiVersion = av, kind = kind, metadata = { name = name, namespace = ns, resourceVersion = "5" } }
      end,
      event = function(...) calls[#calls + 1] = { "event", ... }; return true end,
      log = function(...) calls[#calls + 1] = { "log", ... } end,
      is_leader = function() return false end,
      identity = function() return "pod-1" end,
    }
    for k, f in pairs(stubs) do saved[k] = rawget(core, k); core[k] = f end
    backend.set(nil)
  end)
  after_each(function()
    for k in pairs(stubs) do core[k] = saved[k] end
    backend.set(nil)
  end)

  it("create encodes the body with the lossless codec and passes the query", function()
    local o = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "a", namespace = "ns", resourceVersion = "9" },
                data = {}, list = json.array() }
    local res = assert(client.create(o, { field_manager = "my op" }))
    local c = calls[1]
    assert.same({ "create", "v1", "ConfigMap", "ns" }, { c[1], c[2], c[3], c[4] })
    assert.is_nil(c[5])
    assert.equal("fieldManager=my%20op", c[8])
    assert.is_string(c[9])
    local sent = json.decode(c[9])
    assert.is_nil(sent.metadata.resourceVersion)
    assert.equal("[]", json.encode(sent.list))
    assert.equal("a", res.metadata.name)
  end)

  it("apply sends patch type apply with fieldManager and force", function()
    client.apply({ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "a", namespace = "ns" } },
      { field_manager = "op", force = true })
    local c = calls[1]
    assert.same({ "patch", "a", nil, "apply", "fieldManager=op&force=true" }, { c[1], c[5], c[6], c[7], c[8] })
  end)

  it("delete returns true on a Status success body", function()
    assert.is_true(client.delete({ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "a", namespace = "ns" } }))
  end)

  it("get reads the cache; get{live} is a REST get", function()
    client.get("v1", "ConfigMap", "ns", "a")
    assert.equal("cache-get", calls[1][1])
    client.get("v1", "ConfigMap", "ns", "a", { live = true })
    assert.same({ "get", "v1", "ConfigMap", "ns", "a" }, { calls[2][1], calls[2][2], calls[2][3], calls[2][4], calls[2][5] })
  end)

  it("errors pass through as nil, err; without core.sleep retries do not wait", function()
    local o = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "a", namespace = "ns", resourceVersion = "5" } }
    local res, err = status.update(o, function(x) x.status.n = 1 end, { max_attempts = 2 })
    assert.is_nil(res)
    assert.equal("Conflict", err.reason)
    local verbs = {}
    for i, c in ipairs(calls) do verbs[i] = c[1] .. (c[6] and ("/" .. c[6]) or "") end
    assert.same({ "update/status", "get", "update/status" }, verbs)
  end)

  it("events, log, leader go to core", function()
    require("luaop.events").record({ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "a" } }, "Normal", "Seen", "m")
    require("luaop.log").info("hello", { n = 1 })
    assert.same({ "event" }, { calls[1][1] })
    assert.same({ "log", "info", "hello", { n = 1 } }, calls[2])
    assert.is_false(require("luaop.leader").is_leader())
    assert.equal("pod-1", require("luaop.leader").identity())
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
