-- `[]` and null round-trip through every helper: each helper below touches an object whose spec
-- holds an empty array, an empty object, a null inside an array and a nested empty array; the
-- encoded spec must come back unchanged.
local testing = require("luaop.testing")
local op = require("luaop")
local json = require("luaop.core").json

local AV, KIND = "example.com/v1", "Widget"

local function fresh_spec()
  return json.decode('{"empty":[],"obj":{},"nulls":[1,null,3],"nested":{"deep":[[]]}}')
end

local function check(o)
  local s = o.spec
  assert.equal("[]", json.encode(s.empty))
  assert.equal("{}", json.encode(s.obj))
  assert.equal("[1,null,3]", json.encode(s.nulls))
  assert.equal('{"deep":[[]]}', json.encode(s.nested))
end

describe("[] and null round-trip through every helper", function()
  local fake, w
  before_each(function()
    fake = testing.new()
    w = assert(op.client.create({ apiVersion = AV, kind = KIND,
      metadata = { name = "w", namespace = "default" }, spec = fresh_spec() }))
  end)

  local function stored() return fake:get_object(AV, KIND, "default", "w") end

  local helpers = {
    { "object.deep_copy", function() return op.object.deep_copy(w) end },
    { "object.merge_patch", function() return op.object.merge_patch(w, { metadata = { labels = { a = "b" } } }) end },
    { "object.set", function() return op.object.set(op.object.deep_copy(w), "spec.extra", 1) end },
    { "client.get", function() return op.client.get(AV, KIND, "default", "w") end },
    { "client.update", function() w.metadata.labels = { x = "y" }; return op.client.update(w) end },
    { "client.patch merge", function() return op.client.patch(w, { metadata = { labels = { a = "b" } } }) end },
    { "client.patch json", function()
        return op.client.patch(w, json.array({ { op = "add", path = "/metadata/labels", value = { a = "b" } } }), "json") end },
    { "client.apply", function()
        return op.client.apply({ apiVersion = AV, kind = KIND, metadata = { name = "w", namespace = "default" },
                                 spec = { added = true } }, { field_manager = "t" }) end },
    { "client.list", function() return op.client.list(AV, KIND, "default")[1] end },
    { "conditions.set + status.update", function()
        return op.status.update(w, function(o) op.conditions.set(o, { type = "Ready", status = "True", reason = "Ok" }) end) end },
    { "finalizers.add", function() return op.finalizers.add(w, "x.io/f") end },
    { "finalizers.remove", function() op.finalizers.add(w, "x.io/f"); return op.finalizers.remove(w, "x.io/f") end },
    { "owner.set_controller_reference + update", function()
        local other = assert(op.client.create({ apiVersion = AV, kind = KIND, metadata = { name = "o", namespace = "default" } }))
        op.owner.set_controller_reference(other, w)
        return op.client.update(w) end },
    { "ops.create_or_update", function()
        local obj = { apiVersion = AV, kind = KIND, metadata = { name = "w", namespace = "default" } }
        local _, res = op.ops.create_or_update(obj, function(o) o.metadata.labels = { z = "1" } end)
        return res end },
    { "ops.create_or_patch", function()
        local obj = { apiVersion = AV, kind = KIND, metadata = { name = "w", namespace = "default" } }
        local _, res = op.ops.create_or_patch(obj, function(o) o.metadata.labels = { z = "2" } end)
        return res end },
  }
  for _, h in ipairs(helpers) do
    it(h[1], function()
      local res = assert(h[2]())
      check(res)
      check(stored())
    end)
  end

  it("the stored JSON keeps them through the real codec", function()
    local text = json.encode(stored())
    check(json.decode(text))
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
