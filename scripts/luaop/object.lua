--- Object helpers: deep copy, equality, get/set by path, keys, merge-patch builders.
--
-- Every helper keeps the lossless-JSON markers of `luaop.core.json`: a copied `[]` stays an
-- array, `{}` stays an object, `json.null` and big integers are kept as they are.
-- Context: any.
-- @module luaop.object

local type, pairs, next, error, tostring, tonumber = type, pairs, next, error, tostring, tonumber
local getmetatable, setmetatable, rawget = getmetatable, setmetatable, rawget
local sfind, gmatch = string.find, string.gmatch
local require = require

local _M = {}

local function json()
  return require("luaop.core").json
end

local function is_array(t)
  return json().is_array(t)
end

local function copy(v, depth)
  if type(v) ~= "table" then return v end
  if depth > 200 then error("luaop.object.deep_copy: nesting deeper than 200", 3) end
  local out = {}
  for k, x in pairs(v) do out[k] = copy(x, depth + 1) end
  return setmetatable(out, getmetatable(v))
end

--- Deep copy of a decoded value, keeping array/object markers (and sharing `json.null`/bigints).
-- @param v any value
-- @return an independent copy
function _M.deep_copy(v)
  return copy(v, 0)
end

local function equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  if is_array(a) ~= is_array(b) then return false end
  for k, x in pairs(a) do
    if not equal(x, rawget(b, k)) then return false end
  end
  for k in pairs(b) do
    if rawget(a, k) == nil then return false end
  end
  return true
end

--- Structural equality as JSON sees it: `[]` differs from `{}`, `json.null` equals only itself.
-- @param a any
-- @param b any
-- @treturn boolean
function _M.equal(a, b)
  return equal(a, b)
end

local function split(path)
  if type(path) == "table" then return path end
  if type(path) ~= "string" or path == "" then
    error("luaop.object: path must be a non-empty string or a table of keys", 3)
  end
  local keys = {}
  for seg in gmatch(path, "[^%.]+") do
    keys[#keys + 1] = seg
  end
  return keys
end

local function index(t, key)
  if type(key) == "string" and sfind(key, "^%d+$") and is_array(t) then
    return tonumber(key)
  end
  return key
end

--- Value at a path.
-- @tparam table obj
-- @tparam string|table path `"spec.template.metadata.labels"` (numeric segments index arrays,
--   1-based as in Lua) or a list of keys `{"metadata", "labels", "app.kubernetes.io/name"}`
-- @return the value, or nil when any step is missing
function _M.get(obj, path)
  local keys = split(path)
  local cur = obj
  for i = 1, #keys do
    if type(cur) ~= "table" then return nil end
    cur = cur[index(cur, keys[i])]
  end
  return cur
end

--- Set the value at a path, creating intermediate objects.
-- @tparam table obj
-- @tparam string|table path as in `get`
-- @param value the new value (nil removes the key)
-- @treturn table obj
-- @raise when an intermediate value exists and is not a table
function _M.set(obj, path, value)
  if type(obj) ~= "table" then error("luaop.object.set: obj must be a table", 2) end
  local keys = split(path)
  local cur = obj
  for i = 1, #keys - 1 do
    local k = index(cur, keys[i])
    local nxt = cur[k]
    if nxt == nil then
      nxt = json().object()
      cur[k] = nxt
    elseif type(nxt) ~= "table" then
      error("luaop.object.set: " .. tostring(keys[i]) .. " is a " .. type(nxt) .. ", not an object", 2)
    end
    cur = nxt
  end
  cur[index(cur, keys[#keys])] = value
  return obj
end

--- The cache key of an object: `"namespace/name"`, or `"name"` when cluster-scoped.
-- @tparam table obj an object with metadata.name
-- @treturn string
-- @raise when metadata.name is missing
function _M.key(obj)
  local md = type(obj) == "table" and obj.metadata
  if type(md) ~= "table" or type(md.name) ~= "string" then
    error("luaop.object.key: object has no metadata.name", 2)
  end
  if md.namespace and md.namespace ~= "" then return md.namespace .. "/" .. md.name end
  return md.name
end

--- Replace the contents of `dst` in place with a deep copy of `src` (markers kept), so a caller's
-- reference sees the object the server returned.
-- @tparam table dst
-- @tparam table src
-- @treturn table dst
function _M.replace(dst, src)
  for k in pairs(dst) do dst[k] = nil end
  for k, v in pairs(src) do dst[k] = copy(v, 0) end
  return setmetatable(dst, getmetatable(src))
end

local function is_object(v)
  return type(v) == "table" and not is_array(v)
end

local function merge(target, patch)
  if not is_object(patch) then return copy(patch, 0) end
  local out
  if is_object(target) then out = copy(target, 0) else out = json().object() end
  local null = json().null
  for k, v in pairs(patch) do
    if v == null then
      out[k] = nil
    else
      out[k] = merge(out[k], v)
    end
  end
  return out
end

--- Apply an RFC 7386 JSON merge patch; inputs are not modified.
-- `json.null` in the patch deletes a key; arrays replace wholesale.
-- @param target decoded value
-- @param patch decoded merge patch
-- @return the merged value (a new table)
function _M.merge_patch(target, patch)
  return merge(target, patch)
end

local function diff(old, new)
  local null = json().null
  local patch = json().object()
  for k in pairs(old) do
    if new[k] == nil then patch[k] = null end
  end
  for k, v in pairs(new) do
    local o = old[k]
    if is_object(o) and is_object(v) then
      local sub = diff(o, v)
      if next(sub) ~= nil then patch[k] = sub end
    elseif not equal(o, v) then
      patch[k] = copy(v, 0)
    end
  end
  return patch
end

--- Build the merge patch that turns `old` into `new` (both objects).
-- Removed keys become `json.null`; changed arrays are sent whole.
-- @tparam table old
-- @tparam table new
-- @treturn table patch (an object; empty when nothing differs)
-- @raise when either argument is not an object
function _M.merge_diff(old, new)
  if not is_object(old) or not is_object(new) then
    error("luaop.object.merge_diff: both arguments must be objects", 2)
  end
  return diff(old, new)
end

--- True when `t` is a JSON array (marked, or a non-empty sequence).
-- @param t
-- @treturn boolean
function _M.is_array(t)
  return type(t) == "table" and is_array(t)
end

--- A new (or the given) table marked as a JSON array.
-- @tparam[opt] table t
-- @treturn table
function _M.array(t)
  return json().array(t)
end

--- A new (or the given) table marked as a JSON object.
-- @tparam[opt] table t
-- @treturn table
function _M.object(t)
  return json().object(t)
end

--- The `json.null` sentinel (write it to delete a key in a merge patch).
-- @return light userdata
function _M.null()
  return json().null
end

return _M
-- SPDX-License-Identifier: Apache-2.0
