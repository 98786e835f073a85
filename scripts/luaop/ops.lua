--- create_or_update / create_or_patch (controller-runtime controllerutil.CreateOrUpdate/CreateOrPatch).
--
-- Read the object named by `obj`; when missing, run `mutate` on `obj` and create it; when
-- present, run `mutate` on a copy of the stored object and write only if the mutation changed
-- something. `mutate` must not change the name or namespace (raises).
-- Context: reconcile.
-- @module luaop.ops

local type, error, next, require = type, error, next, require

local _M = {}

local function object() return require("luaop.object") end
local function client() return require("luaop.client") end

local function check(fn, obj, mutate)
  if type(obj) ~= "table" or type(obj.metadata) ~= "table" or type(obj.metadata.name) ~= "string"
     or type(obj.apiVersion) ~= "string" or type(obj.kind) ~= "string" then
    error("luaop.ops." .. fn .. ": obj must have apiVersion, kind and metadata.name", 3)
  end
  if type(mutate) ~= "function" then error("luaop.ops." .. fn .. ": mutate must be a function(obj)", 3) end
end

local function run_mutate(fn, o, mutate)
  local name, ns = o.metadata.name, o.metadata.namespace
  mutate(o)
  if type(o.metadata) ~= "table" or o.metadata.name ~= name or o.metadata.namespace ~= ns then
    error("luaop.ops." .. fn .. ": mutate must not change metadata.name or metadata.namespace", 3)
  end
end

local function start(fn, obj, mutate)
  check(fn, obj, mutate)
  local md = obj.metadata
  local cur, err = client().get(obj.apiVersion, obj.kind, md.namespace, md.name)
  if cur then return cur end
  if not require("luaop.errors").is_not_found(err) then return nil, err end
  local new = object().deep_copy(obj)
  run_mutate(fn, new, mutate)
  local created, cerr = client().create(new)
  if not created then return nil, cerr end
  object().replace(obj, created)
  return nil, nil, "created"
end

--- Create the object or update it (PUT) when `mutate` changed it.
-- @tparam table obj names the object (apiVersion, kind, metadata.namespace/name); it is
--   refreshed in place with the stored object
-- @tparam function mutate `function(o)` sets the desired state on o (the stored copy, or obj
--   itself before a create)
-- @treturn string|nil "created", "updated" or "unchanged"
-- @treturn table obj on success, err on failure (AlreadyExists on a create race, Conflict, ...)
-- @raise on wrong argument types or when mutate renames the object
function _M.create_or_update(obj, mutate)
  local cur, err, done = start("create_or_update", obj, mutate)
  if done then return done, obj end
  if not cur then return nil, err end
  local work = object().deep_copy(cur)
  run_mutate("create_or_update", work, mutate)
  if object().equal(cur, work) then
    object().replace(obj, cur)
    return "unchanged", obj
  end
  local res, uerr = client().update(work)
  if not res then return nil, uerr end
  object().replace(obj, res)
  return "updated", obj
end

--- Create the object or merge-patch the difference `mutate` made (spec and metadata; the status
-- difference, if any, goes to /status).
-- @tparam table obj as in create_or_update
-- @tparam function mutate
-- @treturn string|nil "created", "updated" or "unchanged"
-- @treturn table obj or err
function _M.create_or_patch(obj, mutate)
  local cur, err, done = start("create_or_patch", obj, mutate)
  if done then return done, obj end
  if not cur then return nil, err end
  local work = object().deep_copy(cur)
  run_mutate("create_or_patch", work, mutate)
  if object().equal(cur, work) then
    object().replace(obj, cur)
    return "unchanged", obj
  end
  local old_status, new_status = cur.status, work.status
  local a, b = object().deep_copy(cur), object().deep_copy(work)
  a.status, b.status = nil, nil
  local res = cur
  local p = object().merge_diff(a, b)
  if next(p) ~= nil then
    local r, perr = client().patch(cur, p, "merge")
    if not r then return nil, perr end
    res = r
  end
  if not object().equal(old_status, new_status) then
    local sp = object().merge_diff({ status = old_status or {} }, { status = new_status or {} })
    if next(sp) ~= nil then
      local r, serr = client().patch_status(cur, sp, "merge")
      if not r then return nil, serr end
      res = r
    end
  end
  object().replace(obj, res)
  return "updated", obj
end

return _M
-- SPDX-License-Identifier: Apache-2.0
