local object = require("luaop.object")
local json = require("luaop.core").json

describe("luaop.object", function()
  describe("deep_copy", function()
    it("keeps [] an array and {} an object", function()
      local src = { a = json.array(), b = json.object(), c = { json.array() } }
      local c = object.deep_copy(src)
      assert.is_true(json.is_array(c.a))
      assert.is_false(json.is_array(c.b))
      assert.is_true(json.is_array(c.c[1]))
      assert.equal(getmetatable(src.a), getmetatable(c.a))
      assert.equal(getmetatable(src.b), getmetatable(c.b))
    end)
    it("keeps json.null in arrays", function()
      local c = object.deep_copy(json.array({ 1, json.null, 3 }))
      assert.equal(json.null, c[2])
    end)
    it("is independent of the source", function()
      local src = { spec = { x = 1 } }
      local c = object.deep_copy(src)
      c.spec.x = 2
      assert.equal(1, src.spec.x)
    end)
    it("[] and null survive decode -> deep_copy -> encode", function()
      local text = '{"a":[],"b":{},"c":[1,null,3]}'
      local back = json.decode(json.encode(object.deep_copy(json.decode(text))))
      assert.is_true(json.is_array(back.a))
      assert.is_false(json.is_array(back.b))
      assert.equal(json.null, back.c[2])
      assert.equal('[]', json.encode(object.deep_copy(json.decode("[]"))))
      assert.equal('{}', json.encode(object.deep_copy(json.decode("{}"))))
    end)
  end)

  describe("equal", function()
    local cases = {
      { "[] differs from {}", json.array(), json.object(), false },
      { "equal nested tables", { a = { 1, 2 } }, { a = { 1, 2 } }, true },
      { "missing key", { a = 1 }, { a = 1, b = 2 }, false },
      { "null equals null", json.array({ json.null }), json.array({ json.null }), true },
      { "scalars", "x", "x", true },
      { "number vs string", 1, "1", false },
    }
    for _, c in ipairs(cases) do
      it(c[1], function() assert.equal(c[4], object.equal(c[2], c[3])) end)
    end
  end)

  describe("get / set by path", function()
    it("reads nested values, arrays 1-based, missing steps give nil", function()
      local o = { spec = { containers = json.array({ { name = "a" }, { name = "b" } }) } }
      assert.equal("b", object.get(o, "spec.containers.2.name"))
      assert.is_nil(object.get(o, "spec.missing.name"))
      assert.equal("x", object.get({ metadata = { labels = { ["app.kubernetes.io/name"] = "x" } } },
        { "metadata", "labels", "app.kubernetes.io/name" }))
    end)
    it("creates intermediate objects", function()
      local o = {}
      object.set(o, "metadata.labels.app", "web")
      assert.equal("web", o.metadata.labels.app)
      assert.equal('{"metadata":{"labels":{"app":"web"}}}', json.encode(o))
    end)
    it("raises when an intermediate value is not a table", function()
      assert.has_error(function() object.set({ a = 1 }, "a.b", 2) end)
    end)
  end)

  describe("key", function()
    it("namespace/name or name", function()
      assert.equal("ns/a", object.key({ metadata = { name = "a", namespace = "ns" } }))
      assert.equal("a", object.key({ metadata = { name = "a" } }))
      assert.has_error(function() object.key({}) end)
    end)
  end)

  describe("merge_patch (RFC 7386 appendix A)", function()
    local N = json.null
    local cases = {
      { { a = "b" }, { a = "c" }, { a = "c" } },
      { { a = "b" }, { b = "c" }, { a = "b", b = "c" } },
      { { a = "b" }, { a = N }, {} },
      { { a = "b", b = "c" }, { a = N }, { b = "c" } },
      { { a = json.array({ "b" }) }, { a = "c" }, { a = "c" } },
      { { a = "c" }, { a = json.array({ "b" }) }, { a = json.array({ "b" }) } },
      { { a = { b = "c" } }, { a = { b = "d", c = N } }, { a = { b = "d" } } },
      { { a = json.array({ { b = "c" } }) }, { a = json.array({ 1 }) }, { a = json.array({ 1 }) } },
      { json.array({ "a", "b" }), json.array({ "c", "d" }), json.array({ "c", "d" }) },
      { { a = "b" }, json.array({ "c" }), json.array({ "c" }) },
      { { e = N }, { a = 1 }, { e = N, a = 1 } },
      { json.array({ 1, 2 }), { a = "b", c = N }, { a = "b" } },
      { {}, { a = { bb = { ccc = N } } }, { a = { bb = {} } } },
    }
    for i, c in ipairs(cases) do
      it("case " .. i, function()
        assert.is_true(object.equal(c[3], object.merge_patch(c[1], c[2])))
      end)
    end
    it("keeps [] in the result", function()
      local r = object.merge_patch({ a = 1 }, { items = json.array() })
      assert.equal('[]', json.encode(r.items))
      assert.equal(1, json.decode(json.encode(r)).a)
    end)
  end)

  describe("merge_diff", function()
    it("produces null for removed keys and the changed leaves only", function()
      local old = { spec = { a = 1, b = 2, list = json.array({ 1 }) }, keep = "x" }
      local new = { spec = { a = 1, c = 3, list = json.array({ 1, 2 }) }, keep = "x" }
      local p = object.merge_diff(old, new)
      assert.equal(json.null, p.spec.b)
      assert.equal(3, p.spec.c)
      assert.is_nil(p.spec.a)
      assert.is_nil(p.keep)
      assert.is_true(object.equal(new, object.merge_patch(old, p)))
    end)
    it("is empty when nothing changed", function()
      assert.same({}, object.merge_diff({ a = { b = 1 } }, { a = { b = 1 } }))
    end)
    it("sends [] when a list was emptied", function()
      local p = object.merge_diff({ l = json.array({ 1 }) }, { l = json.array() })
      assert.equal('{"l":[]}', json.encode(p))
    end)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
