-- SPDX-License-Identifier: Apache-2.0
-- The LuaLS stubs in types/luaop (issue 23 part 3), checked as text since lua-language-server is
-- neither in Debian nor on npm: they are what tools/luals_types.lua generates from the current
-- LDoc comments; every function each module exports is declared, and nothing else; each
-- `---@param` names an argument of its function; every type named is a LuaLS built-in or a class
-- the stubs declare; each stub is valid Lua.
local MODULES = {
  "luaop", "luaop.backend", "luaop.client", "luaop.conditions", "luaop.controller", "luaop.crypto",
  "luaop.errors", "luaop.events", "luaop.finalizers", "luaop.handler", "luaop.leader", "luaop.log",
  "luaop.metrics", "luaop.object", "luaop.ops", "luaop.owner", "luaop.predicates", "luaop.result",
  "luaop.selector", "luaop.status", "luaop.webhook", "luaop.testing", "luaop.testing.fake",
  "luaop.testing.jsonpatch",
}
local BUILTIN = { ["nil"] = true, any = true, boolean = true, string = true, number = true, integer = true,
                  table = true, ["function"] = true, userdata = true, thread = true, ["true"] = true,
                  ["false"] = true }

local function stub_path(mod)
  if mod == "luaop" then return "types/luaop/init.lua" end
  local rel = mod:gsub("^luaop%.", ""):gsub("%.", "/")
  local f = io.open("types/luaop/" .. rel .. ".lua")
  if f then f:close() return "types/luaop/" .. rel .. ".lua" end
  return "types/luaop/" .. rel .. "/init.lua"
end

local read = require("spec.support.fixtures").read_file

describe("LuaLS types (types/luaop)", function()
  it("are what tools/luals_types.lua generates from the LDoc comments (make types)", function()
    local p = io.popen("luajit tools/luals_types.lua --check scripts/luaop types/luaop 2>&1; echo rc=$?")
    local out = p:read("*a")
    p:close()
    assert.equal("rc=0\n", out)
  end)

  for _, mod in ipairs(MODULES) do
    it("declare exactly the functions " .. mod .. " exports", function()
      local text = read(stub_path(mod))
      assert.truthy(text:find("^%-%-%-@meta " .. mod:gsub("%.", "%%.") .. "\n"))
      local declared = {}
      for name in text:gmatch("\nfunction M%.([%w_]+)%(") do declared[name] = true end
      local exported = {}
      local m = require(mod)
      for k, v in pairs(m) do
        if type(v) == "function" then exported[k] = true end
      end
      assert.same(exported, declared)
    end)
  end

  it("declare the LDoc-documented methods of the fake, each of which exists", function()
    local Fake = require("luaop.testing.fake").Fake
    -- documented in the source: a comment block that opens with "---" right above the method
    local src, documented = {}, {}
    for line in read("scripts/luaop/testing/fake.lua"):gmatch("([^\n]*)\n") do src[#src + 1] = line end
    for i, line in ipairs(src) do
      local name = line:match("^function Fake:([%w_]+)%(")
      local j = i - 1
      while name and j > 0 and src[j]:match("^%-%-") and not src[j]:match("^%-%-%-") do j = j - 1 end
      if name and j > 0 and src[j]:match("^%-%-%-") then documented[name] = true end
    end
    local declared = {}
    for name in read("types/luaop/testing/fake.lua"):gmatch("\nfunction Fake:([%w_]+)%(") do
      assert.is_function(Fake[name], name)
      declared[name] = true
    end
    assert.is_not_nil(next(declared))
    assert.same(documented, declared)
  end)

  it("name real arguments, built-in or declared types, and load as Lua", function()
    local classes = {}
    local texts = {}
    for _, mod in ipairs(MODULES) do
      texts[mod] = read(stub_path(mod))
      for c in texts[mod]:gmatch("%-%-%-@class ([%w_.]+)") do classes[c] = true end
    end
    local function known(ty)
      for part in ty:gsub("%?$", ""):gmatch("[^|]+") do
        local base = part:gsub("%[%]$", "")
        assert(BUILTIN[base] or classes[base], "unknown type " .. part)
      end
    end
    for mod, text in pairs(texts) do
      assert(loadstring(text, mod))
      local pending = {}
      for line in text:gmatch("[^\n]+") do
        local name, ty = line:match("^%-%-%-@param ([%w_.]+)%??%s+(%S+)")
        if name then pending[#pending + 1] = name; known(ty) end
        local rty = line:match("^%-%-%-@return (%S+)")
        if rty then known(rty) end
        local fty = line:match("^%-%-%-@field [%w_]+ (%S+)")
        if fty then known(fty) end
        local args = line:match("^function [%w_.:]+%(([^)]*)%) end$")
        if args then
          local set = {}
          for a in args:gmatch("[^,%s]+") do set[a] = true end
          for _, p in ipairs(pending) do assert(set[p], mod .. ": @param " .. p .. " is not an argument: " .. line) end
          pending = {}
        end
      end
    end
  end)
end)
