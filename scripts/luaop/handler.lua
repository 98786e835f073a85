--- Event handlers: which reconcile requests a watch event produces (controller-runtime's
-- handler.EnqueueRequestForObject, EnqueueRequestForOwner and EnqueueRequestsFromMapFunc).
--
-- The host runs this mapping natively for `for_` and `owns`; `luaop.testing` runs it in Lua with
-- `requests_for`. `map_to_owner` builds a map function for `watches`.
-- Context: any (map functions run in the map context in the host).
-- @module luaop.handler

local type, ipairs, pairs, error, require = type, ipairs, pairs, error, require

local _M = {}

local function group_of(api_version)
  return (api_version or ""):match("^(.*)/[^/]*$") or ""
end

local function refs_of(obj)
  local md = type(obj) == "table" and obj.metadata
  return (type(md) == "table" and md.ownerReferences) or {}
end

--- A map function for `watches` that enqueues the owners of the given kind (controller or
-- not) of the watched object, in the object's namespace.
-- @tparam string api_version owner apiVersion (only the group is compared)
-- @tparam string kind owner kind
-- @tparam[opt] table opts `{controller_only = false}`
-- @treturn function `map(obj, ev) -> {{namespace=, name=}...}`
function _M.map_to_owner(api_version, kind, opts)
  if type(api_version) ~= "string" or type(kind) ~= "string" then
    error("luaop.handler.map_to_owner: api_version and kind must be strings", 2)
  end
  local only = opts and opts.controller_only
  return function(obj)
    local out = {}
    for _, r in ipairs(refs_of(obj)) do
      if r.kind == kind and group_of(r.apiVersion) == group_of(api_version) and (not only or r.controller == true) then
        out[#out + 1] = { namespace = obj.metadata.namespace, name = r.name }
      end
    end
    return out
  end
end

-- What a metadata-only watch's cache holds of an object (host: LOP_OBJ_METADATA_ONLY): apiVersion,
-- kind and metadata, managedFields left out.
local function metadata_view(obj)
  if type(obj) ~= "table" then return obj end
  local md = {}
  for k, v in pairs(type(obj.metadata) == "table" and obj.metadata or {}) do
    if k ~= "managedFields" then md[k] = v end
  end
  return { apiVersion = obj.apiVersion, kind = obj.kind, metadata = md }
end

-- ev as the watch w sees it: with metadata_only, its objects are metadata views.
local function as_seen(w, ev)
  if not w.metadata_only then return ev end
  local v = {}
  for k, x in pairs(ev) do v[k] = x end
  v.object = metadata_view(ev.object)
  if ev.old then v.old = metadata_view(ev.old) end
  return v
end

--- The requests a watch event yields for a controller spec, predicates applied.
-- @tparam table spec normalized controller spec
-- @tparam table ev `{type = "add"|"update"|"delete", api_version=, kind=, object=, old=}`
-- @treturn table array of `{namespace=, name=}` (may repeat; the queue deduplicates)
function _M.requests_for(spec, ev)
  local preds = require("luaop.predicates")
  local out = {}
  local all = ev
  local f = spec.for_
  if all.api_version == f.api_version and all.kind == f.kind then
    ev = as_seen(f, all)
    local obj = ev.object
    local md = (type(obj) == "table" and obj.metadata) or {}
    local in_scope = (f.namespace == nil or f.namespace == md.namespace)
    if in_scope and f.label_selector then
      in_scope = require("luaop.selector").match(f.label_selector, obj)
    end
    if in_scope and preds.all(f.predicates, ev) then
      out[#out + 1] = { namespace = md.namespace, name = md.name }
    end
  end
  for _, o in ipairs(spec.owns or {}) do
    ev = as_seen(o, all)
    local obj = ev.object
    local md = (type(obj) == "table" and obj.metadata) or {}
    if ev.api_version == o.api_version and ev.kind == o.kind and preds.all(o.predicates, ev) then
      local seen = {}
      for _, src in ipairs({ obj, ev.old or false }) do
        for _, r in ipairs(refs_of(src)) do
          if r.controller == true and r.kind == f.kind and group_of(r.apiVersion) == group_of(f.api_version)
             and not seen[r.name] then
            seen[r.name] = true
            out[#out + 1] = { namespace = md.namespace, name = r.name }
          end
        end
      end
    end
  end
  for _, w in ipairs(spec.watches or {}) do
    ev = as_seen(w, all)
    if ev.api_version == w.api_version and ev.kind == w.kind and preds.all(w.predicates, ev) then
      for _, r in ipairs(w.map(ev.object, ev) or {}) do
        out[#out + 1] = { namespace = r.namespace, name = r.name }
      end
    end
  end
  return out
end

return _M
-- SPDX-License-Identifier: Apache-2.0
