local p = require("luaop.predicates")

local function ev(t, old_md, new_md)
  return { type = t, object = { metadata = new_md }, old = old_md and { metadata = old_md } or nil }
end

describe("luaop.predicates", function()
  it("built-ins are plain tables the host can run natively", function()
    assert.same({ builtin = "generation_changed" }, p.generation_changed)
    assert.same({ builtin = "resource_version_changed" }, p.resource_version_changed)
    assert.same({ builtin = "labels_changed" }, p.labels_changed)
    assert.same({ builtin = "annotations_changed" }, p.annotations_changed)
    assert.same({ builtin = "and", args = { p.labels_changed, p.annotations_changed } },
      p.and_(p.labels_changed, p.annotations_changed))
    assert.same({ builtin = "not", args = { p.generation_changed } }, p.not_(p.generation_changed))
  end)

  local cases = {
    { "generation changed passes", p.generation_changed, ev("update", { generation = 1 }, { generation = 2 }), true },
    { "generation same is filtered", p.generation_changed, ev("update", { generation = 1, resourceVersion = "1" },
      { generation = 1, resourceVersion = "2" }), false },
    { "adds always pass", p.generation_changed, ev("add", nil, { generation = 1 }), true },
    { "deletes always pass", p.generation_changed, ev("delete", nil, { generation = 1 }), true },
    { "rv changed", p.resource_version_changed, ev("update", { resourceVersion = "1" }, { resourceVersion = "2" }), true },
    { "rv same", p.resource_version_changed, ev("update", { resourceVersion = "1" }, { resourceVersion = "1" }), false },
    { "labels changed", p.labels_changed, ev("update", { labels = { a = "1" } }, { labels = { a = "2" } }), true },
    { "labels same", p.labels_changed, ev("update", { labels = { a = "1" } }, { labels = { a = "1" } }), false },
    { "labels absent vs empty", p.labels_changed, ev("update", {}, { labels = {} }), false },
    { "annotations changed", p.annotations_changed, ev("update", {}, { annotations = { x = "y" } }), true },
    { "or", p.or_(p.labels_changed, p.generation_changed), ev("update", { generation = 1 }, { generation = 2 }), true },
    { "and", p.and_(p.labels_changed, p.generation_changed), ev("update", { generation = 1 }, { generation = 2 }), false },
    { "not", p.not_(p.generation_changed), ev("update", { generation = 1 }, { generation = 1 }), true },
    { "lua function", function(e) return e.object.metadata.name == "x" end, ev("update", {}, { name = "x" }), true },
  }
  for _, c in ipairs(cases) do
    it(c[1], function() assert.equal(c[4], p.eval(c[2], c[3])) end)
  end

  describe("malformed predicates raise", function()
    local bad = {
      { "unknown builtin", function() p.eval({ builtin = "nope" }, ev("add", nil, {})) end },
      { "and without args", function() p.and_() end },
      { "or with a string", function() p.or_("x") end },
      { "not with two", function() p.eval({ builtin = "not", args = { p.labels_changed, p.labels_changed } }, ev("add", nil, {})) end },
    }
    for _, c in ipairs(bad) do it(c[1], function() assert.has_error(c[2]) end) end
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
