-- The host and luaop.testing map reconcile returns the same way: every case of
-- spec/support/result_cases.lua, which tests/unit/bindings/test_lua_engine.c runs through the real
-- engine with the same expectations, run here through luaop.testing.reconcile.
local testing = require("luaop.testing")
local cases = require("spec.support.result_cases")

describe("reconcile result mapping agrees with the host", function()
  after_each(function() testing.reset() end)
  for i, c in ipairs(cases) do
    it(("case %d: %s -> %s"):format(i, c.body, c.kind), function()
      testing.new()
      local reconcile = assert(loadstring("return function(req) " .. c.body .. " end"))()
      local spec = { name = "c", for_ = { api_version = "v1", kind = "A" }, reconcile = reconcile }
      local res = testing.reconcile(spec, { namespace = "default", name = "x" })
      assert.are.equal(c.kind, res.kind)
      assert.are.equal(c.after, res.requeue_after)
    end)
  end
end)
-- SPDX-License-Identifier: Apache-2.0
