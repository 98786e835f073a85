--- Status writes that survive conflicts and skip no-ops (the status subresource).
--
--    op.status.update(m, function(o)
--      op.conditions.set(o, {type = "Available", status = "True", reason = "Ready"})
--      o.status.replicas = 3
--    end)
--
-- Two styles: `update(obj, mutate)` where `obj` is as read and every status edit happens inside
-- `mutate` (the no-op check compares against `obj`, so do not also edit `obj.status` directly);
-- or edit `obj.status` yourself and call `update(obj)`, which compares with the stored object.
--
-- `update(obj, mutate)` applies `mutate` to a copy of `obj`, sets `status.observedGeneration`
-- from `obj.metadata.generation`, and when the status is unchanged makes no API call at all.
-- Otherwise it PUTs /status with the object's resourceVersion; on 409 Conflict it re-reads the
-- object, re-applies `mutate` to the fresh copy and tries again, at most `max_attempts` times,
-- waiting between attempts (client-go RetryOnConflict: 10 ms, doubling here, capped at 1 s) on the
-- backend clock (the fake clock in luaop.testing). `mutate` may therefore run more than once and
-- must be a pure function of the object it is given. The fresh copy keeps `obj`'s
-- metadata.generation while `mutate` runs and observedGeneration stays `obj`'s: when another
-- client changed the spec meanwhile, the status written describes (and claims) the generation
-- the caller reconciled, not the newer one it has not seen (the spec change brings the next
-- reconcile).
--
-- Read-your-writes: the returned object is what the server stored. The caller's `obj` is refreshed
-- in place with it, so later writes in the same reconcile carry the new resourceVersion.
-- Context: reconcile.
-- @module luaop.status

local type, error, next, require = type, error, next, require

local _M = {}

local DEFAULTS = { max_attempts = 5, backoff = 0.01, factor = 2, max_backoff = 1 }

local function object() return require("luaop.object") end
local function client() return require("luaop.client") end
local function errors() return require("luaop.errors") end

-- live = true after a conflict: the cached copy is known to be stale then.
local function refetch(obj, live)
  local md = obj.metadata
  return client().get(obj.apiVersion, obj.kind, md.namespace, md.name, live and { live = true } or nil)
end

--- Update the status with conflict retries; skip the write when nothing changed.
-- @tparam table obj the object as read (apiVersion, kind, metadata.name/resourceVersion)
-- @tparam[opt] function mutate `function(o)` editing `o.status` in place (`o.status` is an
--   object, created empty when the stored object has none). When nil, the desired
--   status is `obj.status` as the caller edited it: it is compared with (and on conflict copied
--   onto) the current stored object.
-- @tparam[opt] table opts `{max_attempts = 5, backoff = 0.01, factor = 2, max_backoff = 1}` (seconds)
-- @treturn table|nil obj refreshed in place (unchanged when no write was needed)
-- @treturn table|nil err (Conflict after the last attempt, NotFound, Invalid, ...)
-- @treturn[1] string "updated" or "unchanged" (third value on success)
-- @raise on wrong argument types
function _M.update(obj, mutate, opts)
  if type(obj) ~= "table" or type(obj.metadata) ~= "table" then
    error("luaop.status.update: obj must be an object", 2)
  end
  if mutate ~= nil and type(mutate) ~= "function" then
    error("luaop.status.update: mutate must be a function or nil", 2)
  end
  opts = opts or {}
  if type(opts) ~= "table" then error("luaop.status.update: opts must be a table", 2) end
  local max_attempts = opts.max_attempts or DEFAULTS.max_attempts
  local delay = opts.backoff or DEFAULTS.backoff
  local factor = opts.factor or DEFAULTS.factor
  local max_backoff = opts.max_backoff or DEFAULTS.max_backoff
  if type(max_attempts) ~= "number" or max_attempts < 1 then
    error("luaop.status.update: max_attempts must be >= 1", 2)
  end

  local base = obj
  if mutate == nil then
    local desired = object().deep_copy(obj.status)
    mutate = function(o) o.status = object().deep_copy(desired) end
    local fresh, err = refetch(obj, false)
    if not fresh then return nil, err end
    base = fresh
  end

  -- The generation the caller computed the status from. After a conflict the re-read object may
  -- carry a newer spec (generation); the status still describes this one, so observedGeneration
  -- (and a condition's default observedGeneration) must not claim the newer one: the spec change
  -- triggers another reconcile that will.
  local observed = obj.metadata.generation
  local backend = require("luaop.backend").current()
  local last_err
  for attempt = 1, max_attempts do
    local work = object().deep_copy(base)
    if work.status == nil then work.status = require("luaop.core").json.object() end
    local stored_generation = work.metadata.generation
    if observed ~= nil then work.metadata.generation = observed end
    mutate(work)
    if type(work.metadata) ~= "table" or work.metadata.name ~= base.metadata.name
       or work.metadata.namespace ~= base.metadata.namespace then
      error("luaop.status.update: mutate must not change metadata.name/namespace", 2)
    end
    if work.status == nil then work.status = require("luaop.core").json.object() end
    if type(work.status) ~= "table" then error("luaop.status.update: status must be an object", 2) end
    if observed ~= nil then work.status.observedGeneration = observed end
    work.metadata.generation = stored_generation
    if object().equal(base.status, work.status) or (base.status == nil and next(work.status) == nil) then
      if base ~= obj then object().replace(obj, base) end
      return obj, nil, "unchanged"
    end
    local res, err = client().update_status(work)
    if res then
      object().replace(obj, res)
      return obj, nil, "updated"
    end
    last_err = err
    if not errors().is_conflict(err) or attempt == max_attempts then break end
    if backend.sleep then backend.sleep(delay) end
    delay = delay * factor
    if delay > max_backoff then delay = max_backoff end
    local fresh, gerr = refetch(base, true)
    if not fresh then return nil, gerr end
    base = fresh
  end
  return nil, last_err
end

--- Merge-patch the status (no resourceVersion guard, so no conflicts; last writer wins per field).
-- @tparam table obj identifies the target
-- @tparam table status_patch merge patch of the status, e.g. `{ready = true}`
-- @treturn table|nil obj refreshed in place
-- @treturn table|nil err
function _M.patch(obj, status_patch)
  if type(status_patch) ~= "table" then error("luaop.status.patch: status_patch must be a table", 2) end
  local res, err = client().patch_status(obj, { status = status_patch }, "merge")
  if not res then return nil, err end
  return object().replace(obj, res)
end

return _M
-- SPDX-License-Identifier: Apache-2.0
