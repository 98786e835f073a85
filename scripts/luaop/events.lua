--- Kubernetes Events about an object (`kubectl describe` shows them).
--
-- The host writes core/v1 Events (host/runtime/recorder.h: what `kubectl describe` lists) with
-- reportingComponent and reportingInstance, aggregates identical repeats into a count and
-- rate-limits per object.
-- Context: reconcile.
-- @module luaop.events

local type, error, require = type, error, require

local _M = {}

--- Event type for normal operation.
_M.NORMAL = "Normal"
--- Event type for something the user should look at.
_M.WARNING = "Warning"

--- Record an Event.
-- @tparam table obj the object the event is about (needs apiVersion, kind, metadata.name; uid if known)
-- @tparam string etype "Normal" or "Warning"
-- @tparam string reason UpperCamelCase, e.g. "Created"
-- @tparam string message human-readable, at most 1024 bytes (longer is truncated)
-- @treturn true|nil
-- @treturn table|nil err when the write failed (a failed event should not fail a reconcile)
-- @raise on wrong argument types, an unknown type or a reason that is not UpperCamelCase
function _M.record(obj, etype, reason, message)
  if type(obj) ~= "table" or type(obj.metadata) ~= "table" or type(obj.metadata.name) ~= "string"
     or type(obj.kind) ~= "string" or type(obj.apiVersion) ~= "string" then
    error("luaop.events.record: obj must be an object with apiVersion, kind and metadata.name", 2)
  end
  if etype ~= "Normal" and etype ~= "Warning" then
    error("luaop.events.record: type must be \"Normal\" or \"Warning\"", 2)
  end
  if type(reason) ~= "string" or not reason:match("^%u[%w]*$") or #reason > 128 then
    error("luaop.events.record: reason must be UpperCamelCase (<= 128 chars), e.g. \"Created\"", 2)
  end
  if type(message) ~= "string" then error("luaop.events.record: message must be a string", 2) end
  if #message > 1024 then
    local cut = 1021
    while cut > 0 and message:byte(cut + 1) and message:byte(cut + 1) >= 0x80 and message:byte(cut + 1) < 0xC0 do
      cut = cut - 1 -- never split a UTF-8 sequence
    end
    message = message:sub(1, cut) .. "..."
  end
  return require("luaop.backend").current().event(obj, etype, reason, message)
end

return _M
-- SPDX-License-Identifier: Apache-2.0
