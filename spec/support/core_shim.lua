-- Spec-only stand-in for the parts of the C module `luaop.core` that busted needs (json markers
-- and null, selector, clock), used ONLY while build/lua/luaop/core.so is not available.
-- When the real module loads, this file only fills in what it still lacks (the selector, until
-- bindings/ ships it). It has no codec (no encode/decode): specs that need the codec require the
-- real module.

local ok, real = pcall(require, "luaop.core")

local array_mt = { __name = "luaop.json.array" }
local object_mt = { __name = "luaop.json.object" }

local json = {}
json.null = setmetatable({}, { __name = "luaop.json.null", __tostring = function() return "null" end })
json.array_mt = array_mt
json.object_mt = object_mt
function json.array(t) return setmetatable(t or {}, array_mt) end
function json.object(t) return setmetatable(t or {}, object_mt) end
function json.is_array(t)
  if type(t) ~= "table" then return false end
  local mt = getmetatable(t)
  if mt == array_mt then return true end
  if mt == object_mt then return false end
  return next(t) ~= nil and t[1] ~= nil
end
function json.encode() error("core_shim: json.encode needs the real luaop.core module") end
function json.decode() error("core_shim: json.decode needs the real luaop.core module") end

local selector = {}
local sel_mt = {}
sel_mt.__index = sel_mt
function sel_mt:matches(labels)
  labels = labels or {}
  for _, r in ipairs(self.reqs) do
    local v = labels[r.key]
    if r.op == "exists" then if v == nil then return false end
    elseif r.op == "!exists" then if v ~= nil then return false end
    elseif r.op == "=" then if v ~= r.values[1] then return false end
    elseif r.op == "!=" then if v == r.values[1] then return false end
    elseif r.op == "in" or r.op == "notin" then
      local found = false
      for _, x in ipairs(r.values) do if x == v then found = true end end
      if (r.op == "in") ~= found then return false end
    end
  end
  return true
end
local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end
function selector.parse_labels(s)
  if type(s) ~= "string" then error("selector: string expected") end
  local reqs = {}
  local parts, depth, cur = {}, 0, ""
  for ch in s:gmatch(".") do
    if ch == "(" then depth = depth + 1 elseif ch == ")" then depth = depth - 1 end
    if ch == "," and depth == 0 then parts[#parts + 1] = cur; cur = "" else cur = cur .. ch end
  end
  parts[#parts + 1] = cur
  for _, p in ipairs(parts) do
    p = trim(p)
    if p ~= "" then
      local k, op, rest = p:match("^([%w%./_-]+)%s+(notin)%s*(%b())$")
      if not k then k, op, rest = p:match("^([%w%./_-]+)%s+(in)%s*(%b())$") end
      if k then
        local vals = {}
        for v in rest:sub(2, -2):gmatch("[^,]+") do vals[#vals + 1] = trim(v) end
        reqs[#reqs + 1] = { key = k, op = op, values = vals }
      else
        local k2, op2, v2 = p:match("^([%w%./_-]+)%s*([!=]=?)%s*([%w%._-]*)$")
        if k2 then
          if op2 == "==" then op2 = "=" end
          if op2 == "!" then return nil, "selector: bad requirement '" .. p .. "'" end
          reqs[#reqs + 1] = { key = k2, op = op2, values = { v2 } }
        elseif p:match("^![%w%./_-]+$") then
          reqs[#reqs + 1] = { key = p:sub(2), op = "!exists" }
        elseif p:match("^[%w%./_-]+$") then
          reqs[#reqs + 1] = { key = p, op = "exists" }
        else
          return nil, "selector: bad requirement '" .. p .. "'"
        end
      end
    end
  end
  return setmetatable({ reqs = reqs }, sel_mt)
end

if ok then
  if real.selector == nil then real.selector = selector end
  return
end

local core = { json = json, selector = selector }
function core.now() return os.time() end
function core.mono() return os.clock() end
function core.format_time(secs) return os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(secs)) end
function core.format_microtime(secs)
  local whole = math.floor(secs)
  return os.date("!%Y-%m-%dT%H:%M:%S", whole) .. string.format(".%06dZ", math.floor((secs - whole) * 1e6 + 0.5))
end

package.loaded["luaop.core"] = core
-- SPDX-License-Identifier: Apache-2.0
