--- Owner references (controller-runtime controllerutil.SetControllerReference/SetOwnerReference).
--
-- These edit `obj.metadata.ownerReferences` in place; write the object afterwards (create,
-- update, or inside `luaop.ops.create_or_update`'s mutate function). The garbage collector then
-- deletes `obj` when every owner is gone (matched by uid).
-- Rules: the owner must have apiVersion, kind, name and uid; a namespaced owner must be in the
-- object's namespace and a cluster-scoped object cannot have a namespaced owner (the GC would
-- treat the owner as absent); at most one reference is the controller.
-- Context: any.
-- @module luaop.owner

local type, error, ipairs, tostring, require = type, error, ipairs, tostring, require

local _M = {}

local function json() return require("luaop.core").json end
local function errors() return require("luaop.errors") end

local function group_of(api_version)
  local g = api_version:match("^(.*)/[^/]*$")
  return g or ""
end

local function check(fn, owner, obj)
  if type(owner) ~= "table" or type(owner.metadata) ~= "table" then
    error("luaop.owner." .. fn .. ": owner must be an object", 3)
  end
  if type(obj) ~= "table" or type(obj.metadata) ~= "table" then
    error("luaop.owner." .. fn .. ": obj must be an object with metadata", 3)
  end
  local om = owner.metadata
  if type(owner.apiVersion) ~= "string" or type(owner.kind) ~= "string" or type(om.name) ~= "string" then
    error("luaop.owner." .. fn .. ": owner needs apiVersion, kind and metadata.name", 3)
  end
  if type(om.uid) ~= "string" or om.uid == "" then
    error("luaop.owner." .. fn .. ": owner has no metadata.uid (was it created yet?)", 3)
  end
  local ons, ns = om.namespace or "", obj.metadata.namespace or ""
  if ons ~= "" then
    if ns == "" then
      return nil, errors().new(nil, "OwnerRefInvalidNamespace",
        "cluster-scoped object " .. tostring(obj.metadata.name) .. " cannot be owned by namespaced "
        .. owner.kind .. " " .. ons .. "/" .. om.name)
    end
    if ns ~= ons then
      return nil, errors().new(nil, "OwnerRefInvalidNamespace",
        "cross-namespace owner references are not allowed: owner " .. owner.kind .. " " .. ons .. "/" .. om.name
        .. " is not in namespace " .. ns)
    end
  end
  return true
end

local function same_owner(ref, owner)
  return ref.kind == owner.kind and group_of(ref.apiVersion or "") == group_of(owner.apiVersion)
    and ref.name == owner.metadata.name
end

local function upsert(obj, ref, owner)
  local md = obj.metadata
  local refs = md.ownerReferences
  if refs == nil then
    refs = json().array()
    md.ownerReferences = refs
  end
  for i, r in ipairs(refs) do
    if same_owner(r, owner) then
      refs[i] = ref
      return obj
    end
  end
  refs[#refs + 1] = ref
  return obj
end

--- Make `owner` the controller of `obj` (controller=true, blockOwnerDeletion=true).
-- @tparam table owner an object read from the API (has uid)
-- @tparam table obj the dependent, edited in place
-- @treturn table|nil obj
-- @treturn table|nil err reason "AlreadyOwned" when another object is already the controller,
--   "OwnerRefInvalidNamespace" for a cross-namespace owner
-- @raise when owner has no uid or the arguments are not objects
function _M.set_controller_reference(owner, obj)
  local ok, err = check("set_controller_reference", owner, obj)
  if not ok then return nil, err end
  for _, r in ipairs(obj.metadata.ownerReferences or {}) do
    if r.controller == true and not same_owner(r, owner) then
      return nil, errors().new(nil, "AlreadyOwned",
        "object " .. tostring(obj.metadata.name) .. " is already owned by another controller "
        .. tostring(r.kind) .. " " .. tostring(r.name))
    end
  end
  return upsert(obj, json().object({
    apiVersion = owner.apiVersion, kind = owner.kind, name = owner.metadata.name,
    uid = owner.metadata.uid, controller = true, blockOwnerDeletion = true,
  }), owner)
end

--- Add (or refresh) a non-controller owner reference.
-- @tparam table owner
-- @tparam table obj edited in place
-- @treturn table|nil obj
-- @treturn table|nil err "OwnerRefInvalidNamespace"
function _M.set_owner_reference(owner, obj)
  local ok, err = check("set_owner_reference", owner, obj)
  if not ok then return nil, err end
  local ref = json().object({ apiVersion = owner.apiVersion, kind = owner.kind,
                              name = owner.metadata.name, uid = owner.metadata.uid })
  for _, r in ipairs(obj.metadata.ownerReferences or {}) do
    if same_owner(r, owner) then
      ref.controller, ref.blockOwnerDeletion = r.controller, r.blockOwnerDeletion
    end
  end
  return upsert(obj, ref, owner)
end

--- The controller reference of obj, if any.
-- @tparam table obj
-- @treturn table|nil the ownerReference with controller=true
function _M.get_controller_of(obj)
  local md = type(obj) == "table" and obj.metadata
  if type(md) ~= "table" then return nil end
  for _, r in ipairs(md.ownerReferences or {}) do
    if r.controller == true then return r end
  end
  return nil
end

--- Is `owner` referenced by obj (by uid)?
-- @tparam table obj
-- @tparam table owner
-- @treturn boolean
function _M.is_owned_by(obj, owner)
  for _, r in ipairs((obj.metadata or {}).ownerReferences or {}) do
    if r.uid == owner.metadata.uid then return true end
  end
  return false
end

return _M
-- SPDX-License-Identifier: Apache-2.0
