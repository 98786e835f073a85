--- Field indexes (`op.index`; controller-runtime's FieldIndexer.IndexField and
-- client.MatchingFields): validation of a declaration, and the lookup semantics `luaop.testing`
-- shares with the host. Users call `op.index{...}` and `op.client.list(..., {index = {...}})`;
-- see docs/lua-api.md "Field indexes".
--
-- The values of an object are what the declaration's `field` path reaches in it, computed by the
-- host's own evaluator (`luaop.core.fieldpath`, host/kube/cache/fieldpath.c): in the host on the
-- informer's thread as objects enter the cache, in `luaop.testing` when a list asks.
-- Context: any (pure), except `normalize` which raises at the caller's level.
-- @module luaop.fieldindex

local type, pairs, ipairs, error, tostring, tonumber, require, next, pcall =
      type, pairs, ipairs, error, tostring, tonumber, require, next, pcall
local sort, concat = table.sort, table.concat
local math_floor = math.floor

local _M = {}

local KEYS = { name = true, api_version = true, kind = true, field = true, extract = true }
local HINTS = { apiVersion = "api_version", path = "field", fieldPath = "field", index = "name" }

--- Validate an index declaration.
-- @tparam table decl `{name = "secretRef", api_version = "apps/v1", kind = "Deployment",
--   field = "spec.template.spec.volumes[*].secret.secretName"}`, or with
--   `extract = function(obj) return {"a", ...} end` in place of `field`
-- @tparam[opt] number level error level of the user's call
-- @treturn table a normalized copy `{name=, api_version=, kind=, field= | extract=}`
-- @raise naming the offending field; a field path that does not compile (with its position);
--   both or neither of field and extract
function _M.normalize(decl, level)
  level = (level or 1) + 1
  if type(decl) ~= "table" then error("op.index: the declaration must be a table", level) end
  for k in pairs(decl) do
    if not KEYS[k] then
      local hint = HINTS[k]
      error("op.index: unknown field '" .. tostring(k) .. "'" .. (hint and (" (did you mean '" .. hint .. "'?)") or ""),
            level)
    end
  end
  if type(decl.name) ~= "string" or not decl.name:match("^[%w%._%-/]+$") then
    error("op.index: name must be a non-empty string of letters, digits, '.', '_', '-', '/' (e.g. \"secretRef\")", level)
  end
  if type(decl.api_version) ~= "string" or decl.api_version == "" then
    error("op.index '" .. decl.name .. "': api_version must be a non-empty string (e.g. \"apps/v1\")", level)
  end
  if type(decl.kind) ~= "string" or not decl.kind:match("^%u%w*$") then
    error("op.index '" .. decl.name .. "': kind must be a Kind name (e.g. \"Deployment\")", level)
  end
  if decl.extract ~= nil then
    if type(decl.extract) ~= "function" or decl.field ~= nil then
      error("op.index '" .. decl.name .. "': declare either field (a path) or extract (a function), not both", level)
    end
    return { name = decl.name, api_version = decl.api_version, kind = decl.kind, extract = decl.extract }
  end
  if type(decl.field) ~= "string" or decl.field == "" then
    error("op.index '" .. decl.name .. "': field must be a field path (e.g. \"spec.template.spec.volumes[*].secret.secretName\")",
          level)
  end
  local ok, core = pcall(require, "luaop.core")
  if ok and type(core.fieldpath) == "function" then
    local cok, err = pcall(core.fieldpath, decl.field, "{}")
    if not cok then error("op.index '" .. decl.name .. "': " .. tostring(err), level) end
  end
  return { name = decl.name, api_version = decl.api_version, kind = decl.kind, field = decl.field }
end

-- A scalar as the string an index holds for it (3 -> "3", 0.5 -> "0.5", true -> "true"); nil
-- for anything else.
local function scalar_string(v)
  local t = type(v)
  if t == "string" then return v end
  if t == "boolean" then return tostring(v) end
  if t ~= "number" then return nil end
  if v == math_floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return ("%d"):format(v) end
  for p = 1, 17 do
    local s = ("%." .. p .. "g"):format(v)
    if tonumber(s) == v then return s end
  end
  return ("%.17g"):format(v)
end

--- Check a list's `index` option: exactly one `{[name] = value}` pair, the value a string (a
-- number or boolean is taken as the string the index holds for it: 3 → "3", true → "true").
-- @tparam table index
-- @tparam[opt] number level error level of the user's call
-- @treturn string name
-- @treturn string value
-- @raise on any other shape
function _M.option(index, level)
  level = (level or 1) + 1
  if type(index) ~= "table" then error("luaop.client.list: index must be a table {[index name] = value}", level) end
  local name, value = next(index)
  if name == nil or next(index, name) ~= nil then
    error("luaop.client.list: index must name exactly one index ({secretRef = \"db-creds\"})", level)
  end
  if type(name) ~= "string" then error("luaop.client.list: an index name must be a string", level) end
  local str = scalar_string(value)
  if str == nil then
    error("luaop.client.list: index '" .. name .. "' value must be a string, not a " .. type(value), level)
  end
  value = str
  return name, value
end

--- The message of a lookup of an index the kind does not have (the host's words).
-- @tparam string api_version
-- @tparam string kind
-- @tparam string name the index asked for
-- @tparam table declared array of the kind's index names, in declaration order
-- @treturn string
function _M.unknown_message(api_version, kind, name, declared)
  local quoted = {}
  for i, n in ipairs(declared) do quoted[i] = "'" .. n .. "'" end
  return "op.client.list: " .. api_version .. " " .. kind .. " has no index '" .. name .. "' (declared: "
         .. (#quoted > 0 and concat(quoted, ", ") or "none") .. ")"
end

--- The values of obj under spec: the field path's (the host's evaluator), or the extract
-- function's as the host takes them (nil: none; a list of strings, numbers, booleans).
-- @tparam table spec a normalized declaration
-- @tparam table obj
-- @treturn table|nil array of strings; nil, message when the extract function raised or returned
--   something else (the host then leaves the object out of the index)
function _M.values(spec, obj)
  if not spec.extract then return require("luaop.core").fieldpath(spec.field, obj) end
  local ok, res = pcall(spec.extract, obj)
  if not ok then return nil, "index '" .. spec.name .. "' extract: " .. tostring(res) end
  if res == nil then return {} end
  if type(res) ~= "table" then
    return nil, "index '" .. spec.name .. "' extract: extract returned a " .. type(res) .. "; expected a list of strings"
  end
  local out = {}
  for i = 1, #res do
    local s = scalar_string(res[i])
    if s == nil then
      return nil, "index '" .. spec.name .. "' extract: extract result [" .. i .. "] is a " .. type(res[i])
                  .. "; expected a string"
    end
    out[i] = s
  end
  return out
end

--- Whether obj's values under spec include value (an extract function that fails: no).
-- @tparam table spec a normalized declaration
-- @tparam table obj
-- @tparam string value
-- @treturn boolean
function _M.matches(spec, obj, value)
  for _, v in ipairs(_M.values(spec, obj) or {}) do
    if v == value then return true end
  end
  return false
end

--- Filter objects (of one namespace, or all) to those whose index holds value, sorted by cache key
-- ("namespace/name", or "name") as the host returns them.
-- @tparam table spec
-- @tparam table objs array
-- @tparam string value
-- @treturn table array (new)
function _M.filter(spec, objs, value)
  local out = {}
  for _, o in ipairs(objs) do
    if _M.matches(spec, o, value) then out[#out + 1] = o end
  end
  local function key(o)
    local md = o.metadata or {}
    return (md.namespace and md.namespace ~= "" and (md.namespace .. "/") or "") .. tostring(md.name)
  end
  sort(out, function(a, b) return key(a) < key(b) end)
  return out
end

return _M
-- SPDX-License-Identifier: Apache-2.0
