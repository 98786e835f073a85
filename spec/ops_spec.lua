local testing = require("luaop.testing")
local client = require("luaop.client")
local ops = require("luaop.ops")
local json = require("luaop.core").json

local function cm_skeleton()
  return { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "cm", namespace = "default" } }
end

describe("luaop.ops", function()
  local fake
  before_each(function() fake = testing.new() end)

  for _, fn in ipairs({ "create_or_update", "create_or_patch" }) do
    describe(fn, function()
      local function want(o) o.data = { a = "1" }; o.metadata.labels = { app = "x" } end

      it("reports \"created\" and creates with the mutation applied", function()
        local obj = cm_skeleton()
        local what, res = ops[fn](obj, want)
        assert.equal("created", what)
        assert.equal(obj, res)
        assert.is_not_nil(obj.metadata.uid)
        assert.equal("1", fake:get_object("v1", "ConfigMap", "default", "cm").data.a)
      end)

      it("reports \"unchanged\" when nothing changed and makes no write", function()
        ops[fn](cm_skeleton(), want)
        fake:reset_writes()
        local what = ops[fn](cm_skeleton(), want)
        assert.equal("unchanged", what)
        assert.same({}, fake.writes)
      end)

      it("reports \"updated\" and writes the change", function()
        ops[fn](cm_skeleton(), want)
        local what = ops[fn](cm_skeleton(), function(o) o.data.a = "2" end)
        assert.equal("updated", what)
        assert.equal("2", fake:get_object("v1", "ConfigMap", "default", "cm").data.a)
      end)

      it("keeps fields the mutation does not touch (including [])", function()
        assert(client.create({ apiVersion = "v1", kind = "ConfigMap",
          metadata = { name = "cm", namespace = "default", finalizers = json.array() }, data = { keep = "k" } }))
        assert.equal("updated", (ops[fn](cm_skeleton(), function(o) o.data.a = "1" end)))
        local s = fake:get_object("v1", "ConfigMap", "default", "cm")
        assert.equal("k", s.data.keep)
        assert.equal("[]", json.encode(s.metadata.finalizers))
      end)

      it("raises when mutate renames the object", function()
        assert.has_error(function() ops[fn](cm_skeleton(), function(o) o.metadata.name = "x" end) end)
      end)

      it("returns nil, err on API errors", function()
        fake:inject({ verb = "create", code = 403, reason = "Forbidden" })
        local what, err = ops[fn](cm_skeleton(), want)
        assert.is_nil(what)
        assert.equal("Forbidden", err.reason)
      end)
    end)
  end

  it("create_or_patch sends a merge patch with only the difference", function()
    ops.create_or_patch(cm_skeleton(), function(o) o.data = { a = "1", b = "2" } end)
    fake:reset_writes()
    ops.create_or_patch(cm_skeleton(), function(o) o.data.b = nil end)
    assert.equal(1, #fake.writes)
    assert.equal("merge", fake.writes[1].patch_type)
    assert.is_nil(fake:get_object("v1", "ConfigMap", "default", "cm").data.b)
  end)

  it("create_or_patch writes a status change through /status", function()
    fake:define_kind({ api_version = "example.com/v1", kind = "Widget" })
    local w = { apiVersion = "example.com/v1", kind = "Widget", metadata = { name = "w", namespace = "default" }, spec = { x = 1 } }
    ops.create_or_patch(w, function() end)
    local what = ops.create_or_patch({ apiVersion = "example.com/v1", kind = "Widget", metadata = { name = "w", namespace = "default" } },
      function(o) o.status = { phase = "Ready" } end)
    assert.equal("updated", what)
    assert.equal("Ready", fake:get_object("example.com/v1", "Widget", "default", "w").status.phase)
    assert.equal(1, #fake:writes_matching({ verb = "patch", subresource = "status" }))
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
