local result = require("luaop.result")
local errors = require("luaop.errors")

describe("luaop.result", function()
  it("done, requeue, requeue_after", function()
    assert.same({}, result.done())
    assert.same({ requeue = true }, result.requeue())
    assert.same({ requeue_after = 30 }, result.requeue_after(30))
  end)
  for _, bad in ipairs({ 0, -1, "5", math.huge, 0 / 0 }) do
    it("requeue_after rejects " .. tostring(bad), function()
      assert.has_error(function() result.requeue_after(bad) end)
    end)
  end
end)

describe("luaop.errors", function()
  local cases = {
    { "is_not_found", { code = 404, reason = "NotFound" }, true },
    { "is_not_found", { code = 404 }, true },
    { "is_not_found", { code = 409, reason = "Conflict" }, false },
    { "is_not_found", nil, false },
    { "is_conflict", { code = 409, reason = "Conflict" }, true },
    { "is_conflict", { code = 409, reason = "AlreadyExists" }, false },
    { "is_already_exists", { code = 409, reason = "AlreadyExists" }, true },
    { "is_gone", { code = 410, reason = "Expired" }, true },
    { "is_gone", { code = 410, reason = "Gone" }, true },
    { "is_gone", { code = 410 }, true },
    { "is_invalid", { code = 422, reason = "Invalid" }, true },
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " " .. tostring(c[2] and (c[2].reason or c[2].code)), function()
      assert.equal(c[3], errors[c[1]](c[2]))
    end)
  end

  it("reason", function()
    assert.equal("Conflict", errors.reason({ reason = "Conflict" }))
    assert.is_nil(errors.reason(nil))
  end)

  it("terminal marks a copy and accepts a string", function()
    local e = { code = 422, reason = "Invalid", message = "m" }
    local t = errors.terminal(e)
    assert.is_true(t.terminal)
    assert.is_nil(e.terminal)
    assert.equal("Invalid", t.reason)
    assert.is_true(errors.is_terminal(errors.terminal("bad spec")))
    assert.equal("bad spec", errors.terminal("bad spec").message)
  end)

  it("format", function()
    assert.equal("NotFound (404): gone", errors.format({ code = 404, reason = "NotFound", message = "gone" }))
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
