--- Structured logging through the host logger.
--
-- `log.info("scaled deployment", {from = 1, to = 3})`. The host adds controller, namespace/name
-- and reconcile id. Strings, numbers and booleans are written as text, tables as JSON; other
-- values (functions, userdata) through `tostring`.
-- Context: any (load, reconcile, predicate).
-- @module luaop.log

local type, pairs, tostring, error = type, pairs, tostring, error
local require = require

local _M = {}

local function emit(level, msg, fields)
  if type(msg) ~= "string" then error("luaop.log." .. level .. ": message must be a string", 3) end
  if fields ~= nil and type(fields) ~= "table" then
    error("luaop.log." .. level .. ": fields must be a table", 3)
  end
  local f = {}
  for k, v in pairs(fields or {}) do
    local t = type(v)
    if t == "string" or t == "number" or t == "boolean" or t == "table" then f[tostring(k)] = v
    else f[tostring(k)] = tostring(v) end
  end
  require("luaop.backend").current().log(level, msg, f)
end

--- Log at debug level.
-- @tparam string msg
-- @tparam[opt] table fields values: strings, numbers, booleans, tables
-- @raise on wrong argument types
function _M.debug(msg, fields) emit("debug", msg, fields) end

--- Log at info level.
-- @tparam string msg
-- @tparam[opt] table fields values: strings, numbers, booleans, tables
-- @raise on wrong argument types
function _M.info(msg, fields) emit("info", msg, fields) end

--- Log at warn level.
-- @tparam string msg
-- @tparam[opt] table fields values: strings, numbers, booleans, tables
-- @raise on wrong argument types
function _M.warn(msg, fields) emit("warn", msg, fields) end

--- Log at error level.
-- @tparam string msg
-- @tparam[opt] table fields values: strings, numbers, booleans, tables
-- @raise on wrong argument types
function _M.error(msg, fields) emit("error", msg, fields) end

return _M
-- SPDX-License-Identifier: Apache-2.0
