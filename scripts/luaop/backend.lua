--- The pluggable backend behind `luaop.client` and the other modules.
--
-- A backend is a table with the functions of the host's `luaop.core` (docs/lua-core.md), except
-- that `request` takes the body as a Lua value (the host adapter encodes it with the lossless
-- codec). In the host the default backend wraps `luaop.core`; `luaop.testing` installs its
-- in-memory fake with `set`. Users normally never touch this module.
--
-- Backend shape:
--
--    {
--      get(api_version, kind, ns, name)                        -> obj | nil, err
--      list(api_version, kind, ns, label_selector[, index, value]) -> {obj...} | nil, err
--                                                                 (index: a declared field index;
--                                                                  raises when the kind has none so named)
--      request(verb, api_version, kind, ns, name, subresource,
--              patch_type, query, body)                        -> code, obj | nil, err
--      event(obj, type, reason, message)                       -> true | nil, err
--      log(level, msg, fields)
--      now() -> seconds, mono() -> seconds, sleep(seconds) (optional)
--      is_leader() -> bool, identity() -> string, context() -> table | nil
--      register_controller(spec)
--      register_webhook(spec)                                  (luaop.webhook's normalized spec)
--      register_index(spec)                                    (luaop.fieldindex's normalized spec)
--    }
--
-- Context: any.
-- @module luaop.backend

local require, type, error, pcall, setmetatable = require, type, error, pcall, setmetatable

local _M = {}

local current = nil

local function core()
  return require("luaop.core")
end

local function host_backend()
  local c = core()
  local b = {}
  -- the host's functions themselves, not forwarders: a cache read makes one call less
  b.get = c.get
  b.list = c.list
  function b.request(verb, api_version, kind, ns, name, sub, patch_type, query, body)
    local text = nil
    if body ~= nil then
      if type(body) == "string" then text = body else text = c.json.encode(body) end
    end
    return c.request(verb, api_version, kind, ns, name, sub, patch_type, query, text)
  end
  function b.event(...) return c.event(...) end
  function b.log(...) return c.log(...) end
  function b.now() return c.now() end
  function b.mono() return c.mono() end
  function b.sleep(secs)
    if c.sleep then return c.sleep(secs) end
  end
  function b.is_leader() return c.is_leader() end
  function b.identity() return c.identity() end
  function b.context() if c.context then return c.context() end return nil end
  function b.register_controller(spec) return c.register_controller(spec) end
  function b.register_index(spec)
    if not c.register_index then error("op.index: this host has no field indexes", 3) end
    return c.register_index(spec)
  end
  function b.register_webhook(spec)
    if not c.register_webhook then error("luaop.webhook: this host does not serve webhooks", 3) end
    return c.register_webhook(spec)
  end
  return b
end

--- The active backend (the host adapter unless one was installed with `set`).
-- @treturn table backend
-- @raise when no backend was installed and `luaop.core` cannot be loaded
function _M.current()
  if current == nil then
    local ok, b = pcall(host_backend)
    if not ok then
      error("luaop: no backend: luaop.core is not loadable (" .. tostring(b) .. ")", 2)
    end
    current = b
  end
  return current
end

--- Install a backend (used by `luaop.testing`); `nil` restores the host adapter.
-- @tparam table|nil b backend table (shape above)
function _M.set(b)
  if b ~= nil and type(b) ~= "table" then
    error("luaop.backend.set: backend must be a table or nil", 2)
  end
  current = b
end

--- The `luaop.core` module (json, selector, clock; host functions in the host).
-- @treturn table
function _M.core()
  return core()
end

return setmetatable(_M, { __newindex = function() error("luaop.backend is read-only", 2) end })
-- SPDX-License-Identifier: Apache-2.0
