--- Label selectors, parsed and matched exactly like the API server (same C code via luaop.core).
-- Context: any.
-- @module luaop.selector

local type, error, pairs, ipairs, tostring, require = type, error, pairs, ipairs, tostring, require
local concat, sort = table.concat, table.sort

local _M = {}

--- Parse a label selector string (`"app=web,tier in (a,b),!canary"`).
-- @tparam string s
-- @return selector with `:matches(labels)`, or nil, message
-- @raise when s is not a string
function _M.parse(s)
  if type(s) ~= "string" then error("luaop.selector.parse: selector must be a string", 2) end
  return require("luaop.core").selector.parse_labels(s)
end

--- Does an object (or a labels table) match a selector?
-- @param sel a parsed selector or a selector string
-- @tparam table obj_or_labels an object (its metadata.labels is used) or a labels table
-- @treturn boolean
-- @raise when the selector string does not parse
function _M.match(sel, obj_or_labels)
  if type(sel) == "string" then
    local parsed, err = _M.parse(sel)
    if not parsed then error("luaop.selector.match: " .. tostring(err), 2) end
    sel = parsed
  end
  local labels = obj_or_labels or {}
  if type(labels.metadata) == "table" then labels = labels.metadata.labels or {} end
  return sel:matches(labels)
end

--- Render a `{key = value}` table as an equality selector string (keys sorted).
-- @tparam table labels
-- @treturn string e.g. "app=web,tier=db"
function _M.from_labels(labels)
  local keys = {}
  for k in pairs(labels) do keys[#keys + 1] = k end
  sort(keys)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = k .. "=" .. labels[k] end
  return concat(parts, ",")
end

return _M
-- SPDX-License-Identifier: Apache-2.0
