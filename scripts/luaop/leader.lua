--- Leader-election state of this replica.
-- Context: any.
-- @module luaop.leader

local require = require

local _M = {}

--- True while this replica holds the leader Lease (always true with leader election off).
-- @treturn boolean
function _M.is_leader()
  return require("luaop.backend").current().is_leader() and true or false
end

--- This replica's identity (the Lease holderIdentity it uses).
-- @treturn string
function _M.identity()
  return require("luaop.backend").current().identity()
end

return _M
-- SPDX-License-Identifier: Apache-2.0
