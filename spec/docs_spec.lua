-- Documentation is a check, not advice: every public function of the library has an LDoc block,
-- and docs/lua-api.md names it.
local read = require("spec.support.fixtures").read_file

local function modules()
  local out = {}
  local p = assert(io.popen("ls scripts/luaop/*.lua scripts/luaop/testing/*.lua"))
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

-- module files whose functions are internal plumbing, documented in the module header only
local INTERNAL = { ["scripts/luaop/backend.lua"] = false }

describe("library documentation", function()
  local api = read("docs/lua-api.md")
  for _, path in ipairs(modules()) do
    it(path .. " documents every public function", function()
      local lines = {}
      for l in (read(path) .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
      assert.matches("^%-%-%- ", lines[1], 1, false)      -- module header
      local missing, unnamed = {}, {}
      for i, l in ipairs(lines) do
        local name = l:match("^function _M%.([%w_]+)") or l:match("^function Fake:([%w_]+)")
        if name then
          local j, has_doc = i - 1, false
          while j > 0 and lines[j]:match("^%-%-") do
            if lines[j]:match("^%-%-%-") or lines[j]:match("^%-%- %(internal%)") then has_doc = true end
            j = j - 1
          end
          if not has_doc then missing[#missing + 1] = name end
          if l:match("^function _M%.") and not INTERNAL[path] and not api:find(name, 1, true) then
            unnamed[#unnamed + 1] = name
          end
        end
      end
      assert.same({}, missing)
      assert.same({}, unnamed)
    end)
  end
end)
-- SPDX-License-Identifier: Apache-2.0
