--- API error helpers (apimachinery's errors.IsNotFound & co.).
--
-- Operational failures are returned as `nil, err` with
-- `err = {code = 409, reason = "Conflict", message = "...", details = {...}}`
-- (metav1.Status fields). Branch on these helpers, never on the message text.
-- Context: any.
-- @module luaop.errors

local type, tostring, pairs, setmetatable, getmetatable = type, tostring, pairs, setmetatable, getmetatable

local _M = {}

local function reason_of(err)
  if type(err) ~= "table" then return nil end
  return err.reason
end

local function code_of(err)
  if type(err) ~= "table" then return nil end
  return err.code
end

--- The API reason ("NotFound", "Conflict", ...) of an error, or nil.
-- @param err error value (table) or nil
-- @treturn string|nil
function _M.reason(err)
  return reason_of(err)
end

--- 404 NotFound.
-- @param err
-- @treturn boolean
function _M.is_not_found(err)
  return reason_of(err) == "NotFound" or (reason_of(err) == nil and code_of(err) == 404)
end

--- 409 Conflict (stale resourceVersion / optimistic lock).
-- @param err
-- @treturn boolean
function _M.is_conflict(err)
  return reason_of(err) == "Conflict"
end

--- 409 AlreadyExists.
-- @param err
-- @treturn boolean
function _M.is_already_exists(err)
  return reason_of(err) == "AlreadyExists"
end

--- 410 Gone / Expired (both reasons and a bare 410).
-- @param err
-- @treturn boolean
function _M.is_gone(err)
  local r = reason_of(err)
  return r == "Gone" or r == "Expired" or code_of(err) == 410
end

--- 422 Invalid.
-- @param err
-- @treturn boolean
function _M.is_invalid(err)
  return reason_of(err) == "Invalid" or (reason_of(err) == nil and code_of(err) == 422)
end

--- Build an error value.
-- @tparam number|nil code HTTP code (nil for errors that did not come from the API)
-- @tparam string reason CamelCase reason
-- @tparam string message
-- @tparam[opt] table details
-- @treturn table err
function _M.new(code, reason, message, details)
  return { code = code, reason = reason, message = tostring(message), details = details }
end

--- Mark an error terminal: the reconcile is not retried (controller-runtime TerminalError).
-- @param err an error table or a message string
-- @treturn table err with `terminal = true` (a copy when err was a table)
function _M.terminal(err)
  local t
  if type(err) == "table" then
    t = {}
    for k, v in pairs(err) do t[k] = v end
  else
    t = { reason = "Terminal", message = tostring(err) }
  end
  t.terminal = true
  return setmetatable(t, getmetatable(err) or nil)
end

--- True when err was marked terminal.
-- @param err
-- @treturn boolean
function _M.is_terminal(err)
  return type(err) == "table" and err.terminal == true
end

--- A one-line description "<reason> (<code>): <message>".
-- @param err
-- @treturn string
function _M.format(err)
  if type(err) ~= "table" then return tostring(err) end
  return tostring(err.reason or "Error") .. " (" .. tostring(err.code or "-") .. "): " .. tostring(err.message or "")
end

return _M
-- SPDX-License-Identifier: Apache-2.0
