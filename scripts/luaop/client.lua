--- The API client: reads from the informer cache (when the kind is watched), writes via REST.
--
-- Every function returns the object (or `true`) on success and `nil, err` on an API failure,
-- `err = {code = 404, reason = "NotFound", message = "...", details = {...}}` (see
-- `luaop.errors`). Wrong argument types raise. Objects are plain decoded tables; the argument
-- objects are never modified (and not copied: the host encodes them as they are).
--
-- The backend is pluggable (`luaop.backend`): the host's `luaop.core`, or the fake installed by
-- `luaop.testing`.
-- Context: reconcile (get/list also in map functions).
-- @module luaop.client

local type, error, tostring, pairs, setmetatable, getmetatable, require =
      type, error, tostring, pairs, setmetatable, getmetatable, require
local concat = table.concat

local _M = {}

local patch_types = { merge = true, json = true, strategic = true, apply = true }

local backend_mod = nil -- luaop.backend, looked up once per VM (on first use: no load-order tie)

local function backend()
  local m = backend_mod
  if m == nil then
    m = require("luaop.backend")
    backend_mod = m
  end
  return m.current()
end

-- A shallow copy of obj whose metadata is a shallow copy too: enough to drop metadata fields
-- without touching the caller's object (backends never modify request bodies).
local function with_metadata_copy(obj)
  local out = {}
  for k, v in pairs(obj) do out[k] = v end
  local md = {}
  for k, v in pairs(obj.metadata) do md[k] = v end
  out.metadata = setmetatable(md, getmetatable(obj.metadata))
  return setmetatable(out, getmetatable(obj))
end

local function str(fn, what, v, optional)
  if v == nil and optional then return end
  if type(v) ~= "string" or v == "" then
    error("luaop.client." .. fn .. ": " .. what .. " must be a non-empty string", 3)
  end
end

-- Identity of an object argument: apiVersion, kind, namespace, name.
local function ident(fn, obj, need_name)
  if type(obj) ~= "table" then error("luaop.client." .. fn .. ": object must be a table", 3) end
  if type(obj.apiVersion) ~= "string" or obj.apiVersion == "" then
    error("luaop.client." .. fn .. ": object has no apiVersion", 3)
  end
  if type(obj.kind) ~= "string" or obj.kind == "" then
    error("luaop.client." .. fn .. ": object has no kind", 3)
  end
  local md = obj.metadata
  if type(md) ~= "table" then error("luaop.client." .. fn .. ": object has no metadata", 3) end
  if need_name and (type(md.name) ~= "string" or md.name == "") then
    error("luaop.client." .. fn .. ": object has no metadata.name", 3)
  end
  local ns = md.namespace
  if ns == "" then ns = nil end
  return obj.apiVersion, obj.kind, ns, md.name
end

local function query_of(opts)
  local q = {}
  if opts.field_manager ~= nil then
    if type(opts.field_manager) ~= "string" or opts.field_manager == "" or #opts.field_manager > 128 then
      error("luaop.client: field_manager must be a non-empty string of at most 128 characters", 4)
    end
    q[#q + 1] = "fieldManager=" .. opts.field_manager:gsub("[^%w%-%._~]", function(c)
      return string.format("%%%02X", c:byte())
    end)
  end
  if opts.force then q[#q + 1] = "force=true" end
  if opts.dry_run then q[#q + 1] = "dryRun=All" end
  if #q == 0 then return nil end
  return concat(q, "&")
end

local function result(code, body)
  if code == nil then return nil, body end
  return body
end

--- Read one object (cache first in the host, live GET when the kind is not cached).
-- The cache may lag the API server by a watch event; pass `{live = true}` to read from the
-- server (the helpers do this after a 409 Conflict, when the cached copy is known to be stale).
-- @tparam string api_version e.g. "apps/v1"
-- @tparam string kind e.g. "Deployment"
-- @tparam string|nil namespace nil for cluster-scoped kinds
-- @tparam string name
-- @tparam[opt] table opts `{live = true}` bypasses the cache
-- @treturn table|nil obj (a fresh table the caller may modify)
-- @treturn table|nil err (NotFound, ...)
-- @raise on wrong argument types
function _M.get(api_version, kind, namespace, name, opts)
  -- Every cache read comes through here: the checks call str (which raises) only on a bad
  -- argument, in the same order, so the common case makes no extra calls (JIT is off by default).
  if type(api_version) ~= "string" or api_version == "" then str("get", "api_version", api_version) end
  if type(kind) ~= "string" or kind == "" then str("get", "kind", kind) end
  if namespace ~= nil and (type(namespace) ~= "string" or namespace == "") then
    str("get", "namespace", namespace, true)
  end
  if type(name) ~= "string" or name == "" then str("get", "name", name) end
  if opts ~= nil then
    if type(opts) ~= "table" then error("luaop.client.get: opts must be a table", 2) end
    if opts.live then
      return result(backend().request("get", api_version, kind, namespace, name, nil, nil, nil, nil))
    end
  end
  return backend().get(api_version, kind, namespace, name)
end

--- List objects (cache first in the host; all pages otherwise).
--
-- With `index = {[name] = value}` (controller-runtime's client.MatchingFields): the objects
-- whose declared field index (`op.index`) holds value, served by the host's cache in O(matches)
-- (never a live LIST: the API server has no such index), in namespace order by name.
-- @tparam string api_version
-- @tparam string kind
-- @tparam string|table|nil namespace nil = all namespaces (or cluster-scoped); or the opts table
--   itself, with `namespace` in it: `list(av, kind, {namespace = ns, index = {...}})`
-- @tparam[opt] string|table opts a label selector string, or `{label_selector = "app=web",
--   index = {secretRef = "db-creds"}}` (one index; the value a string, or a number/boolean
--   meaning its string form)
-- @treturn table|nil array of objects (possibly empty, marked as a JSON array)
-- @treturn table|nil err (an index lookup before the kind's cache synced: reason "ServiceUnavailable")
-- @raise on wrong argument types, a selector that does not parse, an index option of another
--   shape, or an index the kind does not have (the message names the declared ones)
function _M.list(api_version, kind, namespace, opts)
  str("list", "api_version", api_version)
  str("list", "kind", kind)
  if type(namespace) == "table" and opts == nil then
    opts = namespace
    namespace = opts.namespace
  end
  str("list", "namespace", namespace, true)
  local sel = opts
  local index, value
  if type(opts) == "table" then
    sel = opts.label_selector
    if opts.index ~= nil then index, value = require("luaop.fieldindex").option(opts.index, 2) end
  end
  if sel ~= nil then
    if type(sel) ~= "string" then error("luaop.client.list: label_selector must be a string", 2) end
    local ok, err = require("luaop.selector").parse(sel)
    if not ok then error("luaop.client.list: " .. tostring(err), 2) end
    if sel == "" then sel = nil end
  end
  if index then return backend().list(api_version, kind, namespace, sel, index, value) end
  return backend().list(api_version, kind, namespace, sel)
end

--- Create an object (POST). `metadata.resourceVersion` is stripped (a set RV is a server error).
-- @tparam table obj with apiVersion, kind, metadata.name or metadata.generateName
-- @tparam[opt] table opts `{field_manager=, dry_run=}`
-- @treturn table|nil the created object as stored (uid, resourceVersion, ...)
-- @treturn table|nil err (AlreadyExists, NotFound for a missing namespace, Invalid, ...)
-- @raise on a malformed object
function _M.create(obj, opts)
  local av, kind, ns = ident("create", obj, false)
  if type(obj.metadata.name) ~= "string" and type(obj.metadata.generateName) ~= "string" then
    error("luaop.client.create: object needs metadata.name or metadata.generateName", 2)
  end
  local body = with_metadata_copy(obj)
  body.metadata.resourceVersion = nil
  return result(backend().request("create", av, kind, ns, nil, nil, nil, query_of(opts or {}), body))
end

--- Replace an object (PUT) guarded by its metadata.resourceVersion (409 Conflict when stale).
-- With the status subresource on, the server ignores `.status` here; use `update_status`.
-- @tparam table obj as read (with metadata.resourceVersion)
-- @tparam[opt] table opts `{field_manager=, dry_run=}`
-- @treturn table|nil the stored object
-- @treturn table|nil err (Conflict, NotFound, Invalid, ...)
function _M.update(obj, opts)
  local av, kind, ns, name = ident("update", obj, true)
  return result(backend().request("update", av, kind, ns, name, nil, nil, query_of(opts or {}), obj))
end

local function patch(fn, sub, obj, p, opts)
  local av, kind, ns, name = ident(fn, obj, true)
  if type(opts) == "string" then opts = { type = opts } end
  opts = opts or {}
  if type(opts) ~= "table" then error("luaop.client." .. fn .. ": opts must be a patch type or a table", 3) end
  local pt = opts.type or "merge"
  if not patch_types[pt] then
    error("luaop.client." .. fn .. ": patch type must be merge, json, strategic or apply", 3)
  end
  if type(p) ~= "table" and type(p) ~= "string" then
    error("luaop.client." .. fn .. ": patch must be a table or a JSON string", 3)
  end
  if pt == "json" and type(p) == "table" and not require("luaop.object").is_array(p) then
    error("luaop.client." .. fn .. ": a json patch is an array of operations", 3)
  end
  if pt == "apply" and opts.field_manager == nil then
    error("luaop.client." .. fn .. ": an apply patch needs opts.field_manager", 3)
  end
  if opts.force and pt ~= "apply" then
    error("luaop.client." .. fn .. ": force is only allowed for apply patches", 3)
  end
  return result(backend().request("patch", av, kind, ns, name, sub, pt, query_of(opts), p))
end

--- Patch an object.
-- @tparam table obj identifies the target (apiVersion, kind, metadata.namespace/name)
-- @tparam table|string p the patch: a merge patch (object; `json.null` deletes), json patch (array of
--   `{op=, path=, value=}`), strategic merge patch (built-in kinds only) or apply configuration
-- @tparam[opt] string|table opts a patch type ("merge" default, "json", "strategic", "apply") or
--   `{type=, field_manager=, force=, dry_run=}`
-- @treturn table|nil the patched object
-- @treturn table|nil err (NotFound, Invalid for a failed json-patch test, Conflict, ...)
-- @raise on wrong argument types, an unknown patch type, force on a non-apply patch
function _M.patch(obj, p, opts)
  return patch("patch", nil, obj, p, opts)
end

--- Delete an object.
-- @tparam table obj identifies the target
-- @tparam[opt] table opts `{propagation_policy = "Background"|"Foreground"|"Orphan",
--   preconditions = {uid=, resourceVersion=}, grace_period_seconds=}`
-- @treturn true|nil true when deleted or deletion started (finalizers may keep it a while)
-- @treturn table|nil err (NotFound, Conflict on a failed precondition, ...)
function _M.delete(obj, opts)
  local av, kind, ns, name = ident("delete", obj, true)
  opts = opts or {}
  if type(opts) ~= "table" then error("luaop.client.delete: opts must be a table", 2) end
  local body = nil
  if opts.propagation_policy or opts.preconditions or opts.grace_period_seconds then
    local pp = opts.propagation_policy
    if pp ~= nil and pp ~= "Background" and pp ~= "Foreground" and pp ~= "Orphan" then
      error("luaop.client.delete: propagation_policy must be Background, Foreground or Orphan", 2)
    end
    body = { kind = "DeleteOptions", apiVersion = "v1", propagationPolicy = pp,
             preconditions = opts.preconditions, gracePeriodSeconds = opts.grace_period_seconds }
  end
  local code, err = backend().request("delete", av, kind, ns, name, nil, nil, nil, body)
  if code == nil then return nil, err end
  return true
end

--- Replace the status (PUT /status) guarded by metadata.resourceVersion.
-- Only `.status` is written; everything else in obj is ignored by the server.
-- Prefer `luaop.status.update`, which retries conflicts and skips no-op writes.
-- @tparam table obj
-- @tparam[opt] table opts `{field_manager=, dry_run=}`
-- @treturn table|nil the stored object
-- @treturn table|nil err (Conflict, NotFound, ...)
function _M.update_status(obj, opts)
  local av, kind, ns, name = ident("update_status", obj, true)
  return result(backend().request("update", av, kind, ns, name, "status", nil, query_of(opts or {}), obj))
end

--- Patch the status subresource (merge by default; apply with a field manager).
-- @tparam table obj identifies the target
-- @tparam table|string p the patch, e.g. `{status = {ready = true}}`
-- @tparam[opt] string|table opts as in `patch`
-- @treturn table|nil obj
-- @treturn table|nil err
function _M.patch_status(obj, p, opts)
  return patch("patch_status", "status", obj, p, opts)
end

--- Server-side apply: send the fields this manager owns; creates the object when missing.
-- @tparam table obj fully specified intent (apiVersion, kind, metadata.name, the owned fields)
-- @tparam table opts `{field_manager = "my-operator", force = false, subresource = nil|"status"}`
-- @treturn table|nil the resulting object
-- @treturn table|nil err (Conflict with FieldManagerConflict causes when another manager owns a
--   field and force is false)
function _M.apply(obj, opts)
  if type(opts) ~= "table" then error("luaop.client.apply: opts {field_manager=} required", 2) end
  ident("apply", obj, true)
  local body = with_metadata_copy(obj)
  body.metadata.managedFields = nil
  local sub = opts.subresource
  if sub ~= nil and sub ~= "status" then error("luaop.client.apply: subresource must be nil or \"status\"", 2) end
  return patch("apply", sub, obj, body, { type = "apply", field_manager = opts.field_manager, force = opts.force,
                                          dry_run = opts.dry_run })
end

return _M
-- SPDX-License-Identifier: Apache-2.0
