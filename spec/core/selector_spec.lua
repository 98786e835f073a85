-- Specs for luaop.core.selector: the API server's label selector parser and matcher from Lua.
local core = require("luaop.core")
local selector = core.selector

describe("luaop.core.selector", function()
  local cases = {
    { "app=web", { app = "web" }, true },
    { "app=web", { app = "db" }, false },
    { "app!=web", {}, true },
    { "tier in (a,b)", { tier = "b" }, true },
    { "tier notin (a,b)", { tier = "b" }, false },
    { "app", { app = "" }, true },
    { "!app", { app = "x" }, false },
    { "app=web,tier=fe", { app = "web", tier = "fe" }, true },
    { "", { anything = "x" }, true },
  }
  for _, c in ipairs(cases) do
    it(("%q against %s"):format(c[1], core.json.encode(c[2])), function()
      local sel = assert(selector.parse_labels(c[1]))
      assert.are.equal(c[3], sel:matches(c[2]))
    end)
  end

  it("nil labels match like an empty label set", function()
    assert.is_true(assert(selector.parse_labels("app!=x")):matches(nil))
  end)

  it("a syntax error returns nil and the API server's message", function()
    local sel, err = selector.parse_labels("app in (a")
    assert.is_nil(sel)
    assert.matches("unable to parse requirement", err)
  end)

  it("tostring gives the source text and empty() is true for ''", function()
    local sel = assert(selector.parse_labels("app=web"))
    assert.are.equal("app=web", tostring(sel))
    assert.is_false(sel:empty())
    assert.is_true(assert(selector.parse_labels("")):empty())
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
