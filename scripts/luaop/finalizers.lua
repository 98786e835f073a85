--- Finalizers (controller-runtime controllerutil.AddFinalizer/RemoveFinalizer, done safely).
--
-- `add` and `remove` write a JSON patch whose `test` operation pins the list (or the entry) they
-- were computed from, so a finalizer another controller added or removed meanwhile is never
-- clobbered: a failed test (422) or a conflict re-reads the object and tries again (bounded).
-- On success the caller's `obj` is refreshed in place with the stored object.
-- Context: reconcile.
-- @module luaop.finalizers

local type, error, ipairs, tostring, require = type, error, ipairs, tostring, require

local _M = {}

local MAX_ATTEMPTS = 5

local function json() return require("luaop.core").json end
local function client() return require("luaop.client") end
local function errors() return require("luaop.errors") end

local function check(fn, obj, name)
  if type(obj) ~= "table" or type(obj.metadata) ~= "table" then
    error("luaop.finalizers." .. fn .. ": obj must be an object with metadata", 3)
  end
  if type(name) ~= "string" or name == "" then
    error("luaop.finalizers." .. fn .. ": finalizer name must be a non-empty string", 3)
  end
end

local function index_of(obj, name)
  local list = obj.metadata.finalizers
  if type(list) ~= "table" then return nil end
  for i, f in ipairs(list) do
    if f == name then return i end
  end
  return nil
end

--- Does the object carry the finalizer?
-- @tparam table obj
-- @tparam string name e.g. "cache.example.com/finalizer"
-- @treturn boolean
function _M.has(obj, name)
  check("has", obj, name)
  return index_of(obj, name) ~= nil
end

local function refetch(obj)
  local md = obj.metadata
  return client().get(obj.apiVersion, obj.kind, md.namespace, md.name, { live = true })
end

local function retryable(err)
  return errors().is_invalid(err) or errors().is_conflict(err)
end

--- Add a finalizer (no API call when already present).
-- @tparam table obj as read (apiVersion, kind, metadata.name, resourceVersion)
-- @tparam string name
-- @treturn table|nil obj, refreshed in place
-- @treturn table|nil err (NotFound, Invalid when the object is being deleted, ...)
function _M.add(obj, name)
  check("add", obj, name)
  local cur = obj
  for _ = 1, MAX_ATTEMPTS do
    if index_of(cur, name) then
      if cur ~= obj then require("luaop.object").replace(obj, cur) end
      return obj
    end
    if cur.metadata.deletionTimestamp ~= nil then
      return nil, errors().new(422, "Invalid", "luaop.finalizers.add: " .. tostring(cur.metadata.name)
                               .. " is being deleted; no new finalizers can be added")
    end
    local list = cur.metadata.finalizers
    local ops
    if type(list) == "table" then
      ops = json().array({
        { op = "test", path = "/metadata/finalizers", value = require("luaop.object").deep_copy(list) },
        { op = "add", path = "/metadata/finalizers/-", value = name },
      })
    else
      ops = json().array()
      if cur.metadata.resourceVersion then
        ops[#ops + 1] = { op = "test", path = "/metadata/resourceVersion", value = cur.metadata.resourceVersion }
      end
      ops[#ops + 1] = { op = "add", path = "/metadata/finalizers", value = json().array({ name }) }
    end
    local res, err = client().patch(cur, ops, "json")
    if res then return require("luaop.object").replace(obj, res) end
    if not retryable(err) then return nil, err end
    local fresh, gerr = refetch(cur)
    if not fresh then return nil, gerr end
    cur = fresh
  end
  return nil, errors().new(409, "Conflict", "luaop.finalizers.add: object kept changing, gave up after "
                           .. MAX_ATTEMPTS .. " attempts")
end

--- Remove a finalizer (no API call when absent). Other finalizers are never touched.
-- Removing the last finalizer of an object being deleted lets the server delete it.
-- @tparam table obj
-- @tparam string name
-- @treturn table|nil obj, refreshed in place (when the object is gone, obj minus the finalizer)
-- @treturn table|nil err
function _M.remove(obj, name)
  check("remove", obj, name)
  local cur = obj
  for _ = 1, MAX_ATTEMPTS do
    local i = index_of(cur, name)
    if not i then
      if cur ~= obj then require("luaop.object").replace(obj, cur) end
      return obj
    end
    local p = "/metadata/finalizers/" .. tostring(i - 1)
    local ops = json().array({ { op = "test", path = p, value = name }, { op = "remove", path = p } })
    local res, err = client().patch(cur, ops, "json")
    if res then return require("luaop.object").replace(obj, res) end
    if errors().is_not_found(err) then
      table.remove(obj.metadata.finalizers, index_of(obj, name) or #obj.metadata.finalizers + 1)
      return obj
    end
    if not retryable(err) then return nil, err end
    local fresh, gerr = refetch(cur)
    if not fresh then
      if errors().is_not_found(gerr) then
        local j = index_of(obj, name)
        if j then table.remove(obj.metadata.finalizers, j) end
        return obj
      end
      return nil, gerr
    end
    cur = fresh
  end
  return nil, errors().new(409, "Conflict", "luaop.finalizers.remove: object kept changing, gave up after "
                           .. MAX_ATTEMPTS .. " attempts")
end

--- The finalizer life cycle in one call.
--
-- Not being deleted: make sure the finalizer is present, return `false`.
-- Being deleted (deletionTimestamp set) and still carrying the finalizer: run `cleanup(obj)`;
-- when it succeeds remove the finalizer and return `true`. Being deleted without our finalizer:
-- return `true` (nothing to do). cleanup must be idempotent: it runs once per successful
-- deletion, but again if the process dies between cleanup and the finalizer removal.
--
--    local deleting, err = finalizers.finalize(m, FINALIZER, function(obj) ... end)
--    if err then return nil, err end
--    if deleting then return result.done() end
--
-- @tparam table obj
-- @tparam string name
-- @tparam function cleanup `function(obj) -> nil | true | false | nil, err`; failure is `false`
--   or a non-nil second value
-- @treturn boolean|nil true when the object is being deleted (stop reconciling it)
-- @treturn table|nil err from cleanup or from the API (the finalizer stays; retry later)
function _M.finalize(obj, name, cleanup)
  check("finalize", obj, name)
  if type(cleanup) ~= "function" then error("luaop.finalizers.finalize: cleanup must be a function", 2) end
  if obj.metadata.deletionTimestamp == nil then
    if index_of(obj, name) then return false end
    local res, err = _M.add(obj, name)
    if not res then return nil, err end
    return false
  end
  if not index_of(obj, name) then return true end
  local ok, cerr = cleanup(obj)
  if ok == false or cerr ~= nil then
    if cerr == nil then cerr = errors().new(nil, "CleanupFailed", "finalizer " .. name .. ": cleanup failed") end
    if type(cerr) ~= "table" then cerr = errors().new(nil, "CleanupFailed", tostring(cerr)) end
    return nil, cerr
  end
  local res, err = _M.remove(obj, name)
  if not res then return nil, err end
  return true
end

return _M
-- SPDX-License-Identifier: Apache-2.0
