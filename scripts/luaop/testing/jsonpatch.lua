--- RFC 6902 JSON Patch applied to decoded Lua values (used by the luaop.testing fake).
-- Supports add, remove, replace, move, copy, test; array indices are 0-based as in JSON
-- Pointer, "-" appends. Inputs are not modified.
-- Context: any.
-- @module luaop.testing.jsonpatch

local type, tostring, tonumber, ipairs, error, pcall = type, tostring, tonumber, ipairs, error, pcall
local require = require

local _M = {}

local function object() return require("luaop.object") end

local function parse_pointer(p)
  if type(p) ~= "string" then error("path must be a string") end
  if p == "" then return {} end
  if p:sub(1, 1) ~= "/" then error("path '" .. p .. "' must start with '/'") end
  local out = {}
  for seg in (p:sub(2) .. "/"):gmatch("(.-)/") do
    out[#out + 1] = seg:gsub("~1", "/"):gsub("~0", "~")
  end
  return out
end

local function arr_index(t, seg, allow_end)
  if seg == "-" and allow_end then return #t + 1 end
  if not seg:match("^%d+$") or (seg ~= "0" and seg:sub(1, 1) == "0") then
    error("bad array index '" .. seg .. "'")
  end
  local i = tonumber(seg) + 1
  local max = allow_end and #t + 1 or #t
  if i > max then error("array index " .. seg .. " out of range") end
  return i
end

local function parent(doc, segs)
  local cur = doc
  for i = 1, #segs - 1 do
    local s = segs[i]
    if type(cur) ~= "table" then error("path element '" .. s .. "' is not in a container") end
    if object().is_array(cur) then cur = cur[arr_index(cur, s, false)] else cur = cur[s] end
    if cur == nil then error("path element '" .. s .. "' does not exist") end
  end
  if type(cur) ~= "table" then error("target parent is not a container") end
  return cur, segs[#segs]
end

local function get(doc, segs)
  if #segs == 0 then return doc end
  local p, last = parent(doc, segs)
  local v
  if object().is_array(p) then v = p[arr_index(p, last, false)] else v = p[last] end
  if v == nil then error("path does not exist") end
  return v
end

local function add(doc, segs, value)
  if #segs == 0 then return value end
  local p, last = parent(doc, segs)
  if object().is_array(p) then
    table.insert(p, arr_index(p, last, true), value)
  else
    p[last] = value
  end
  return doc
end

local function remove(doc, segs)
  if #segs == 0 then error("cannot remove the whole document") end
  local p, last = parent(doc, segs)
  local v
  if object().is_array(p) then
    v = table.remove(p, arr_index(p, last, false))
  else
    v = p[last]
    if v == nil then error("path does not exist") end
    p[last] = nil
  end
  return doc, v
end

local function apply_op(doc, op)
  if type(op) ~= "table" then error("operation must be an object") end
  local kind = op.op
  local segs = parse_pointer(op.path)
  local copy = object().deep_copy
  if kind == "add" then
    return add(doc, segs, copy(op.value))
  elseif kind == "remove" then
    return (remove(doc, segs))
  elseif kind == "replace" then
    get(doc, segs)
    if #segs == 0 then return copy(op.value) end
    local p, last = parent(doc, segs)
    if object().is_array(p) then p[arr_index(p, last, false)] = copy(op.value) else p[last] = copy(op.value) end
    return doc
  elseif kind == "test" then
    if not object().equal(get(doc, segs), op.value) then error("test failed at " .. op.path) end
    return doc
  elseif kind == "move" or kind == "copy" then
    local from = parse_pointer(op.from)
    local v
    if kind == "move" then doc, v = remove(doc, from) else v = copy(get(doc, from)) end
    return add(doc, segs, v)
  end
  error("unknown op '" .. tostring(kind) .. "'")
end

--- Apply a patch.
-- @param doc decoded document (not modified)
-- @tparam table ops array of `{op=, path=, value=, from=}`
-- @return the patched document, or nil and a message naming the failing operation
function _M.apply(doc, ops)
  if type(ops) ~= "table" then return nil, "patch must be an array of operations" end
  local cur = object().deep_copy(doc)
  for i, op in ipairs(ops) do
    local ok, res = pcall(apply_op, cur, op)
    if not ok then
      return nil, "operation " .. i .. " (" .. tostring(type(op) == "table" and op.op) .. "): "
             .. tostring(res):gsub("^.-:%d+: ", "")
    end
    cur = res
  end
  return cur
end

return _M
-- SPDX-License-Identifier: Apache-2.0
