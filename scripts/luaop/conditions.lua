--- Status conditions with the Kubernetes conventions (apimachinery meta.SetStatusCondition).
--
-- Conditions live in `obj.status.conditions` (a JSON array). Each is
-- `{type=, status="True"|"False"|"Unknown", reason=, message=, lastTransitionTime=, observedGeneration=}`.
-- Rules: `lastTransitionTime` changes only when `status` changes; `observedGeneration` defaults to
-- `obj.metadata.generation`; `reason` is required and CamelCase; a type appears at most once.
-- These helpers only edit the table; write it with `luaop.status.update`.
-- Context: any (time is read from the backend clock: the injected clock in the host, the fake
-- clock in luaop.testing).
-- @module luaop.conditions

local type, error, ipairs, require = type, error, ipairs, require

local _M = {}

local statuses = { True = true, False = true, Unknown = true }

local function json() return require("luaop.core").json end

local function now_string()
  local b = require("luaop.backend").current()
  return require("luaop.core").format_time(b.now())
end

local function list_of(obj, create)
  if type(obj) ~= "table" then error("luaop.conditions: obj must be a table", 3) end
  local st = obj.status
  if st == nil then
    if not create then return nil end
    st = json().object()
    obj.status = st
  elseif type(st) ~= "table" then
    error("luaop.conditions: obj.status is not an object", 3)
  end
  local list = st.conditions
  if list == nil then
    if not create then return nil end
    list = json().array()
    st.conditions = list
  elseif type(list) ~= "table" then
    error("luaop.conditions: obj.status.conditions is not an array", 3)
  end
  return list
end

local function valid_reason(r)
  return type(r) == "string" and #r <= 1024 and r:match("^%u[%w_,:]*$") ~= nil and not r:match("[,:]$")
end

--- Set (add or update) a condition.
-- @tparam table obj the object; `status.conditions` is created when missing
-- @tparam table cond `{type = "Available", status = "True"|"False"|"Unknown",
--   reason = "CamelCase", message = "..." (optional), observed_generation = n (optional; default
--   obj.metadata.generation)}`
-- @treturn boolean true when anything changed
-- @raise when type is empty, status is not True/False/Unknown, or reason is missing / not CamelCase
function _M.set(obj, cond)
  if type(cond) ~= "table" then error("luaop.conditions.set: condition must be a table", 2) end
  if type(cond.type) ~= "string" or cond.type == "" or #cond.type > 316 then
    error("luaop.conditions.set: type must be a non-empty string", 2)
  end
  if not statuses[cond.status] then
    error("luaop.conditions.set: status must be \"True\", \"False\" or \"Unknown\" (condition " .. cond.type .. ")", 2)
  end
  if not valid_reason(cond.reason) then
    error("luaop.conditions.set: reason is required and must be CamelCase, e.g. \"MinimumReplicasAvailable\" (condition "
          .. cond.type .. ")", 2)
  end
  local message = cond.message or ""
  if type(message) ~= "string" then error("luaop.conditions.set: message must be a string", 2) end
  if #message > 32768 then
    local cut = 32768
    while cut > 0 and message:byte(cut + 1) and message:byte(cut + 1) >= 0x80 and message:byte(cut + 1) < 0xC0 do
      cut = cut - 1 -- never split a UTF-8 sequence
    end
    message = message:sub(1, cut)
  end
  local og = cond.observed_generation or cond.observedGeneration
  if og == nil and type(obj) == "table" and type(obj.metadata) == "table" then og = obj.metadata.generation end

  local list = list_of(obj, true)
  local found, changed = nil, false
  local i = 1
  while i <= #list do
    local c = list[i]
    if type(c) == "table" and c.type == cond.type then
      if found then
        table.remove(list, i)       -- duplicate type: keep the first
        changed = true
      else
        found = c
        i = i + 1
      end
    else
      i = i + 1
    end
  end
  if not found then
    list[#list + 1] = json().object({
      type = cond.type, status = cond.status, reason = cond.reason, message = message,
      lastTransitionTime = now_string(), observedGeneration = og,
    })
    return true
  end
  if found.status ~= cond.status then
    found.status = cond.status
    found.lastTransitionTime = now_string()
    changed = true
  elseif found.lastTransitionTime == nil then
    found.lastTransitionTime = now_string()
    changed = true
  end
  if found.reason ~= cond.reason then found.reason = cond.reason; changed = true end
  if (found.message or "") ~= message then found.message = message; changed = true end
  if found.observedGeneration ~= og then found.observedGeneration = og; changed = true end
  return changed
end

--- Find a condition by type.
-- @tparam table obj
-- @tparam string ctype
-- @treturn table|nil the condition table (live; edit through `set`)
function _M.get(obj, ctype)
  if type(ctype) ~= "string" then error("luaop.conditions.get: type must be a string", 2) end
  local list = list_of(obj, false)
  if not list then return nil end
  for _, c in ipairs(list) do
    if type(c) == "table" and c.type == ctype then return c end
  end
  return nil
end

--- Remove a condition by type (every entry of that type).
-- @tparam table obj
-- @tparam string ctype
-- @treturn boolean true when something was removed
function _M.remove(obj, ctype)
  if type(ctype) ~= "string" then error("luaop.conditions.remove: type must be a string", 2) end
  local list = list_of(obj, false)
  if not list then return false end
  local removed = false
  local i = 1
  while i <= #list do
    if type(list[i]) == "table" and list[i].type == ctype then
      table.remove(list, i)
      removed = true
    else
      i = i + 1
    end
  end
  return removed
end

--- Is the condition present with status "True"?
-- @tparam table obj
-- @tparam string ctype
-- @treturn boolean
function _M.is_true(obj, ctype)
  local c = _M.get(obj, ctype)
  return c ~= nil and c.status == "True"
end

--- Is the condition present with status "False"?
-- @tparam table obj
-- @tparam string ctype
-- @treturn boolean
function _M.is_false(obj, ctype)
  local c = _M.get(obj, ctype)
  return c ~= nil and c.status == "False"
end

--- Is the condition present with status "Unknown" (or absent)?
-- @tparam table obj
-- @tparam string ctype
-- @treturn boolean
function _M.is_unknown(obj, ctype)
  local c = _M.get(obj, ctype)
  return c == nil or c.status == "Unknown"
end

return _M
-- SPDX-License-Identifier: Apache-2.0
