--- The in-memory fake API server behind `luaop.testing` (implements the `luaop.backend` shape).
--
-- Semantics follow the API server's, as kubernetes.io's API Concepts page and the local API server
-- (apiserver/) describe them, for what an operator can observe:
-- a global resourceVersion bumped on every persisted change (no-op writes keep it and emit no
-- watch event); 409 Conflict on a stale resourceVersion, 409 AlreadyExists, 404 NotFound, all as
-- metav1.Status-shaped errors; the status subresource (create drops status, the main endpoint
-- keeps the stored status, /status writes only status, generation bumps only when something
-- outside metadata and status changes); finalizers and deletionTimestamp (the object lingers
-- until the list is empty; no new finalizers while deleting); background garbage collection of
-- dependents by owner uid; label selectors; merge and JSON patches; Events and every write
-- recorded; a fake clock; fault injection.
--
-- Approximations (documented): strategic merge patches are applied as merge patches (415 for
-- custom kinds); apply patches are merged without field-manager conflict tracking; namespaces
-- need not exist; Foreground deletion behaves like Background.
-- Context: busted specs only.
-- @module luaop.testing.fake

local type, pairs, ipairs, error, tostring, setmetatable, require = type, pairs, ipairs, error, tostring, setmetatable, require
local sort, tonumber = table.sort, tonumber

local _M = {}

local Fake = {}
Fake.__index = Fake

local START_TIME = 1700000000 -- 2023-11-14T22:13:20Z, fixed so specs are deterministic

local BUILTIN = {
  ["v1/ConfigMap"] = { status = false, generation = false, require_rv = false },
  ["v1/Secret"] = { status = false, generation = false, require_rv = false },
  ["v1/ServiceAccount"] = { status = false, generation = false, require_rv = false },
  ["v1/Service"] = { status = true, generation = false, require_rv = false },
  ["v1/Pod"] = { status = true, generation = false, require_rv = false },
  ["v1/Namespace"] = { status = true, generation = false, require_rv = false, namespaced = false },
  ["v1/Event"] = { status = false, generation = false, require_rv = false },
  ["apps/v1/Deployment"] = { status = true, generation = true, require_rv = false },
  ["apps/v1/StatefulSet"] = { status = true, generation = true, require_rv = false },
  ["apps/v1/DaemonSet"] = { status = true, generation = true, require_rv = false },
  ["apps/v1/ReplicaSet"] = { status = true, generation = true, require_rv = false },
  ["batch/v1/Job"] = { status = true, generation = true, require_rv = false },
  ["coordination.k8s.io/v1/Lease"] = { status = false, generation = false, require_rv = true },
  ["rbac.authorization.k8s.io/v1/ClusterRole"] = { status = false, generation = false, require_rv = false, namespaced = false },
  ["rbac.authorization.k8s.io/v1/Role"] = { status = false, generation = false, require_rv = false },
}

local function object() return require("luaop.object") end
local function json() return require("luaop.core").json end
local check_owner_refs
local function copy(v) return object().deep_copy(v) end

local function gvk_key(api_version, kind) return api_version .. "/" .. kind end

local function group_of(api_version)
  return api_version:match("^(.*)/[^/]*$") or ""
end

-- The guess for a kind nobody declared (kubebuilder's rule, as luaop.webhook's guess_resource).
local function guess_plural(kind)
  local k = kind:lower()
  if k:match("[^aeiou]y$") then return k:sub(1, -2) .. "ies" end
  if k:match("s$") or k:match("x$") or k:match("ch$") or k:match("sh$") then return k .. "es" end
  return k .. "s"
end

-- The resource (plural) of a kind: the one its CRD declared (names.plural, through define_kind
-- or apply_manifest), else the guess, as the API server names it in messages and details.
local function plural(self, av, kind)
  local k = self.kinds[gvk_key(av, kind)]
  if k and k.plural then return k.plural end
  return guess_plural(kind)
end

local function resource_name(self, api_version, kind)
  local g = group_of(api_version)
  if g == "" then return plural(self, api_version, kind) end
  return plural(self, api_version, kind) .. "." .. g
end

local function status_err(code, reason, message, details)
  return { code = code, reason = reason, message = message, details = details,
           kind = "Status", apiVersion = "v1", status = "Failure" }
end

local function not_found(self, av, kind, name)
  return status_err(404, "NotFound", resource_name(self, av, kind) .. " \"" .. tostring(name) .. "\" not found",
    { name = name, group = group_of(av) ~= "" and group_of(av) or nil, kind = plural(self, av, kind) })
end

local function conflict(self, av, kind, name)
  return status_err(409, "Conflict", "Operation cannot be fulfilled on " .. resource_name(self, av, kind) .. " \""
    .. tostring(name) .. "\": the object has been modified; please apply your changes to the latest version and try again",
    { name = name, group = group_of(av) ~= "" and group_of(av) or nil, kind = plural(self, av, kind) })
end

local function invalid(av, kind, name, field, msg)
  return status_err(422, "Invalid", kind .. " \"" .. tostring(name) .. "\" is invalid: " .. field .. ": " .. msg,
    { name = name, group = group_of(av) ~= "" and group_of(av) or nil, kind = kind,
      causes = json().array({ { reason = "FieldValueInvalid", message = msg, field = field } }) })
end

-- The CRD schema check of a write (k.schema of define_kind: a luaop.core.schema validator, the API
-- server's own): the object as the server would store it (ObjectMeta only, defaults applied,
-- unknown fields pruned), or nil and the server's 422 with every cause.
local function validate(info, av, kind, name, new, old)
  if not info.schema then return new end
  local causes, result = info.schema:validate(new, old)
  if #causes == 0 then return result end
  local parts = {}
  for i, c in ipairs(causes) do parts[i] = tostring(c.field) .. ": " .. tostring(c.message) end
  local text = table.concat(parts, ", ")
  if #causes > 1 then text = "[" .. text .. "]" end
  local g = group_of(av)
  return nil, status_err(422, "Invalid", kind .. (g ~= "" and "." .. g or "") .. " \"" .. tostring(name)
    .. "\" is invalid: " .. text, { name = name, group = g ~= "" and g or nil, kind = kind, causes = causes })
end

--- A new fake.
-- @tparam[opt] table opts `{now = seconds}` start time of the fake clock
-- @treturn table fake
function _M.new(opts)
  opts = opts or {}
  local self = setmetatable({}, Fake)
  self.kinds = {}
  self.store = {}          -- gvk -> key -> obj
  self.rv = 0
  self.uids = 0
  self.names = 0
  self.clock = opts.now or START_TIME
  self.writes = {}         -- every write request, in order
  self.reads = {}          -- every get/list: {verb=, kind=, name=, live = true for a REST read}
  self.events = {}         -- every Event recorded
  self.logs = {}
  self.sleeps = {}
  self.watch_log = {}      -- {type=, api_version=, kind=, object=, old=}
  self.faults = {}
  self.controllers = {}    -- name -> spec
  self.controller_order = {}
  self.webhooks = {}       -- luaop.webhook specs, in declaration order
  self.indexes = {}        -- "api_version kind" -> array of op.index specs, in declaration order
  self.index_order = {}    -- every op.index spec, in declaration order
  self.leader = true
  self.harness = {}
  return self
end

--- Describe a kind (defaults: custom resources are namespaced, with the status subresource and
-- generation, and need a resourceVersion on PUT).
-- @tparam table k `{api_version=, kind=, namespaced=true, status=true, generation=true, require_rv=true,
--   plural = the resource name (a CRD's names.plural; default: kubebuilder's guess from the kind),
--   schema = a validator from luaop.core.schema.compile(crd) (optional)}`; plural is used in the
--   messages and details of errors as the API server uses it; with schema, every create, update
--   and patch (status included) is validated, defaulted and pruned by the API server's own CRD
--   validator and fails with the same 422 causes
function Fake:define_kind(k)
  if type(k) ~= "table" or type(k.api_version) ~= "string" or type(k.kind) ~= "string" then
    error("fake:define_kind: {api_version=, kind=} required", 2)
  end
  if k.plural ~= nil and (type(k.plural) ~= "string" or k.plural == "") then
    error("fake:define_kind: plural must be a non-empty string", 2)
  end
  self.kinds[gvk_key(k.api_version, k.kind)] = {
    namespaced = k.namespaced ~= false, status = k.status ~= false,
    generation = k.generation ~= false, require_rv = k.require_rv ~= false, custom = k.custom ~= false,
    plural = k.plural, schema = k.schema,
  }
end

-- (internal) What the fake knows about a kind: define_kind, the built-in table, or CR defaults.
function Fake:kind_info(av, kind)
  local key = gvk_key(av, kind)
  local k = self.kinds[key]
  if k then return k end
  local b = BUILTIN[key]
  if b then
    return { namespaced = b.namespaced ~= false, status = b.status, generation = b.generation,
             require_rv = b.require_rv, custom = false }
  end
  return { namespaced = true, status = true, generation = true, require_rv = true, custom = true }
end

--- Current time of the fake clock (seconds).
function Fake:now() return self.clock end

--- Advance the fake clock.
-- @tparam number secs
function Fake:advance(secs)
  if type(secs) ~= "number" or secs < 0 then error("fake:advance: seconds must be >= 0", 2) end
  self.clock = self.clock + secs
end

local function okey(ns, name)
  if ns and ns ~= "" then return ns .. "/" .. name end
  return name
end

-- (internal) The key -> object table of one kind.
function Fake:bucket(av, kind)
  local k = gvk_key(av, kind)
  local b = self.store[k]
  if not b then
    b = {}
    self.store[k] = b
  end
  return b
end

-- (internal) The next global resourceVersion.
function Fake:next_rv()
  self.rv = self.rv + 1
  return tostring(self.rv)
end

-- (internal) Append a watch event (copies) to watch_log.
function Fake:emit(etype, av, kind, obj, old)
  self.watch_log[#self.watch_log + 1] = { type = etype, api_version = av, kind = kind,
                                          object = copy(obj), old = old and copy(old) or nil }
end

local function scope(self, av, kind, ns)
  local info = self:kind_info(av, kind)
  if not info.namespaced then ns = nil end
  if ns == "" then ns = nil end
  return info, ns
end

--- Read a stored object (a copy) without recording anything.
-- @treturn table|nil
function Fake:get_object(av, kind, ns, name)
  local _, n = scope(self, av, kind, ns)
  local o = self:bucket(av, kind)[okey(n, name)]
  return o and copy(o) or nil
end

--- All stored objects of a kind (copies, sorted by namespace/name).
-- @treturn table array
function Fake:objects(av, kind, ns)
  local out = {}
  for _, o in pairs(self:bucket(av, kind)) do
    if ns == nil or o.metadata.namespace == ns then out[#out + 1] = copy(o) end
  end
  sort(out, function(a, b) return object().key(a) < object().key(b) end)
  return json().array(out)
end

-- --------------------------------------------------------------- write paths

local function strip_meta_for_compare(o)
  local c = copy(o)
  c.metadata = nil
  return c
end

-- What the server stores and sends back: a null object member is the same as an absent key
-- (and decodes to one); nulls inside arrays stay.
local function strip_nulls(v)
  if type(v) ~= "table" then return v end
  local null, arr = json().null, object().is_array(v)
  for k, x in pairs(v) do
    if x == null and not arr then v[k] = nil else strip_nulls(x) end
  end
  return v
end

-- (internal) Store new with a fresh resourceVersion and emit add/update.
function Fake:persist(av, kind, new, old)
  strip_nulls(new)
  new.metadata.resourceVersion = self:next_rv()
  self:bucket(av, kind)[okey(new.metadata.namespace, new.metadata.name)] = new
  self:emit(old and "update" or "add", av, kind, new, old)
  return copy(new)
end

-- (internal) Remove an object, emit delete, collect its dependents.
function Fake:remove_now(av, kind, stored)
  local key = okey(stored.metadata.namespace, stored.metadata.name)
  self:bucket(av, kind)[key] = nil
  local gone = copy(stored)
  gone.metadata.resourceVersion = self:next_rv()
  self:emit("delete", av, kind, gone, nil)
  self:collect_garbage(stored.metadata.uid)
end

-- (internal) Is any stored object this uid?
function Fake:uid_exists(uid)
  for _, b in pairs(self.store) do
    for _, o in pairs(b) do
      if o.metadata.uid == uid then return true end
    end
  end
  return false
end

--- Background garbage collection: delete dependents all of whose owners are gone.
function Fake:collect_garbage(uid)
  local victims = {}
  for _, b in pairs(self.store) do
    for _, o in pairs(b) do
      local refs = o.metadata.ownerReferences
      if type(refs) == "table" then
        local mine, alive = false, false
        for _, r in ipairs(refs) do
          if r.uid == uid then mine = true elseif self:uid_exists(r.uid) then alive = true end
        end
        if mine and not alive then victims[#victims + 1] = o end
      end
    end
  end
  for _, o in ipairs(victims) do
    self:delete_internal(o.apiVersion, o.kind, o.metadata.namespace, o.metadata.name, nil)
  end
end

-- ownerReferences validation: required fields, at most one controller.
check_owner_refs = function(av, kind, name, refs)
  if type(refs) ~= "table" then return nil end
  local n = 0
  for _, r in ipairs(refs) do
    if type(r) ~= "table" or not r.uid or not r.name or not r.kind or not r.apiVersion then
      return invalid(av, kind, name, "metadata.ownerReferences", "Required value: apiVersion, kind, name and uid")
    end
    if r.controller == true then n = n + 1 end
  end
  if n > 1 then
    return invalid(av, kind, name, "metadata.ownerReferences",
      "Invalid value: Only one reference can have Controller set to true")
  end
  return nil
end

-- (internal) POST semantics. Returns 201, obj or nil, status error.
function Fake:create_internal(av, kind, ns, body)
  local info
  info, ns = scope(self, av, kind, ns)
  if type(body) ~= "table" or type(body.metadata) ~= "table" then
    return nil, status_err(400, "BadRequest", "object has no metadata")
  end
  local md = body.metadata
  if info.namespaced and not ns then
    return nil, status_err(400, "BadRequest", "a namespace is required for " .. kind)
  end
  if md.namespace and md.namespace ~= "" and info.namespaced and md.namespace ~= ns then
    return nil, status_err(400, "BadRequest",
      "the namespace of the provided object does not match the namespace sent on the request")
  end
  if md.resourceVersion and md.resourceVersion ~= "" then
    return nil, status_err(500, "InternalError", "resourceVersion should not be set on objects to be created")
  end
  local new = copy(body)
  new.apiVersion, new.kind = av, kind
  local nm = new.metadata
  if (nm.name == nil or nm.name == "") and type(nm.generateName) == "string" then
    self.names = self.names + 1
    nm.name = nm.generateName .. string.format("%05d", self.names):gsub("%d", function(d)
      return ("bcdfghjklm"):sub(tonumber(d) + 1, tonumber(d) + 1)
    end)
  end
  if type(nm.name) ~= "string" or nm.name == "" then
    return nil, invalid(av, kind, "", "metadata.name", "Required value: name or generateName is required")
  end
  if self:bucket(av, kind)[okey(ns, nm.name)] then
    return nil, status_err(409, "AlreadyExists", resource_name(self, av, kind) .. " \"" .. nm.name .. "\" already exists",
      { name = nm.name, group = group_of(av) ~= "" and group_of(av) or nil, kind = plural(self, av, kind) })
  end
  local bad = check_owner_refs(av, kind, nm.name, nm.ownerReferences)
  if bad then return nil, bad end
  nm.namespace = ns
  self.uids = self.uids + 1
  nm.uid = string.format("00000000-0000-4000-8000-%012d", self.uids)
  nm.creationTimestamp = require("luaop.core").format_time(self.clock)
  nm.deletionTimestamp, nm.deletionGracePeriodSeconds = nil, nil
  if info.generation then nm.generation = 1 else nm.generation = nil end
  if info.status then new.status = nil end
  local bad_schema
  new, bad_schema = validate(info, av, kind, nm.name, new, nil)
  if not new then return nil, bad_schema end
  return 201, self:persist(av, kind, new, nil)
end

-- (internal) PUT semantics, shared by PATCH once the new body is known. sub = nil | "status".
function Fake:update_internal(av, kind, ns, name, body, sub, from_patch)
  local info
  info, ns = scope(self, av, kind, ns)
  local stored = self:bucket(av, kind)[okey(ns, name)]
  if not stored then return nil, not_found(self, av, kind, name) end
  if type(body) ~= "table" or type(body.metadata) ~= "table" then
    return nil, status_err(400, "BadRequest", "object has no metadata")
  end
  if sub == "status" and not info.status then return nil, not_found(self, av, kind, name) end
  local bmd = body.metadata
  if bmd.name ~= nil and bmd.name ~= name then
    return nil, status_err(400, "BadRequest", "the name of the object (" .. tostring(bmd.name)
      .. ") does not match the name on the URL (" .. name .. ")")
  end
  local rv = bmd.resourceVersion
  if rv == nil or rv == "" then
    if info.require_rv and not from_patch then
      return nil, invalid(av, kind, name, "metadata.resourceVersion", "Invalid value: 0x0: must be specified for an update")
    end
  elseif rv ~= stored.metadata.resourceVersion then
    return nil, conflict(self, av, kind, name)
  end

  local new
  if sub == "status" then
    new = copy(stored)
    new.status = copy(body.status)
    local bad
    new, bad = validate(info, av, kind, name, new, stored)
    if not new then return nil, bad end
  else
    new = copy(body)
    new.apiVersion, new.kind = av, kind
    local nm, sm = new.metadata, stored.metadata
    nm.name, nm.namespace, nm.uid = sm.name, sm.namespace, sm.uid
    nm.creationTimestamp, nm.generation = sm.creationTimestamp, sm.generation
    nm.deletionTimestamp, nm.deletionGracePeriodSeconds = sm.deletionTimestamp, sm.deletionGracePeriodSeconds
    if info.status then new.status = copy(stored.status) end
    if sm.deletionTimestamp then
      local had = {}
      for _, f in ipairs(sm.finalizers or {}) do had[f] = true end
      for _, f in ipairs(nm.finalizers or {}) do
        if not had[f] then
          return nil, invalid(av, kind, name, "metadata.finalizers",
            "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers [" .. f .. "]")
        end
      end
    end
    local bad = check_owner_refs(av, kind, name, nm.ownerReferences)
    if bad then return nil, bad end
    new, bad = validate(info, av, kind, name, new, stored)
    if not new then return nil, bad end
    nm = new.metadata
    if info.generation then
      local a, b = strip_meta_for_compare(stored), strip_meta_for_compare(new)
      if info.status then a.status, b.status = nil, nil end
      if not object().equal(a, b) then nm.generation = (sm.generation or 0) + 1 end
    end
  end
  new.metadata.resourceVersion = stored.metadata.resourceVersion
  strip_nulls(new)
  if object().equal(stored, new) then
    return 200, copy(stored) -- no-op: same RV, no watch event
  end
  if new.metadata.deletionTimestamp and (new.metadata.finalizers == nil or #new.metadata.finalizers == 0) then
    self:remove_now(av, kind, stored)
    return 200, copy(new)
  end
  return 200, self:persist(av, kind, new, stored)
end

-- (internal) DELETE semantics (preconditions, Orphan, finalizers). Returns 200, obj|Status or nil, err.
function Fake:delete_internal(av, kind, ns, name, opts)
  local _
  _, ns = scope(self, av, kind, ns)
  local stored = self:bucket(av, kind)[okey(ns, name)]
  if not stored then return nil, not_found(self, av, kind, name) end
  local pre = type(opts) == "table" and opts.preconditions
  if type(pre) == "table" then
    if pre.uid and pre.uid ~= stored.metadata.uid then
      return nil, status_err(409, "Conflict", "Operation cannot be fulfilled on " .. kind .. " \"" .. name
        .. "\": the UID in the precondition (" .. pre.uid .. ") does not match the UID in record ("
        .. tostring(stored.metadata.uid) .. "). The object might have been deleted and then recreated")
    end
    if pre.resourceVersion and pre.resourceVersion ~= stored.metadata.resourceVersion then
      return nil, status_err(409, "Conflict", "Operation cannot be fulfilled on " .. kind .. " \"" .. name
        .. "\": the ResourceVersion in the precondition (" .. pre.resourceVersion
        .. ") does not match the ResourceVersion in record (" .. stored.metadata.resourceVersion
        .. "). The object might have been modified")
    end
  end
  if type(opts) == "table" and opts.propagationPolicy == "Orphan" then
    for _, b in pairs(self.store) do
      for _, o in pairs(b) do
        local refs = o.metadata.ownerReferences
        if type(refs) == "table" then
          local kept, changed = json().array(), false
          for _, r in ipairs(refs) do
            if r.uid == stored.metadata.uid then changed = true else kept[#kept + 1] = r end
          end
          if changed then
            local nb = copy(o)
            nb.metadata.ownerReferences = #kept > 0 and kept or nil
            self:update_internal(o.apiVersion, o.kind, o.metadata.namespace, o.metadata.name, nb, nil, true)
          end
        end
      end
    end
  end
  local fins = stored.metadata.finalizers
  if type(fins) == "table" and #fins > 0 then
    if stored.metadata.deletionTimestamp then return 200, copy(stored) end
    local new = copy(stored)
    new.metadata.deletionTimestamp = require("luaop.core").format_time(self.clock)
    new.metadata.deletionGracePeriodSeconds = 0
    if new.metadata.generation and new.metadata.generation > 0 then
      new.metadata.generation = new.metadata.generation + 1
    end
    return 200, self:persist(av, kind, new, stored)
  end
  self:remove_now(av, kind, stored)
  return 200, { kind = "Status", apiVersion = "v1", status = "Success",
                details = { name = name, kind = plural(self, av, kind), uid = stored.metadata.uid } }
end

-- (internal) PATCH semantics for every patch type, then the update path.
function Fake:patch_internal(av, kind, ns, name, sub, pt, query, body)
  local info
  info, ns = scope(self, av, kind, ns)
  local stored = self:bucket(av, kind)[okey(ns, name)]
  local q = query or ""
  if pt == "apply" then
    if not q:match("fieldManager=[^&]+") then
      return nil, status_err(422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch")
    end
    if not stored then
      if sub == "status" then return nil, not_found(self, av, kind, name) end
      return self:create_internal(av, kind, ns, body)
    end
  elseif q:match("force=") then
    return nil, status_err(422, "Invalid", "force: Forbidden: may not be specified for non-apply patch")
  end
  if not stored then return nil, not_found(self, av, kind, name) end
  local patched
  if pt == "merge" or pt == "apply" then
    patched = object().merge_patch(stored, body)
  elseif pt == "strategic" then
    if info.custom then
      return nil, status_err(415, "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        .. "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
    end
    patched = object().merge_patch(stored, body)
  elseif pt == "json" then
    local res, msg = require("luaop.testing.jsonpatch").apply(stored, body)
    if res == nil then
      local e = status_err(422, "Invalid", "the server rejected our request due to an error in our request")
      e.patch_error = msg
      return nil, e
    end
    patched = res
  else
    return nil, status_err(415, "UnsupportedMediaType", "unknown patch type " .. tostring(pt))
  end
  if type(patched) ~= "table" or type(patched.metadata) ~= "table" then
    return nil, status_err(422, "Invalid", "patched object has no metadata")
  end
  if patched.metadata.resourceVersion ~= stored.metadata.resourceVersion then
    return nil, conflict(self, av, kind, name)
  end
  return self:update_internal(av, kind, ns, name, patched, sub, true)
end

-- --------------------------------------------------------------- fault injection

--- Inject a fault into the next matching request(s).
-- @tparam table f `{verb = "update"|"patch"|..., subresource = "status"|nil (matches any when
--   absent; use "" for the main endpoint), kind = ?, name = ?, times = 1,
--   code = 409, reason = "Conflict", message = ?, before = function(fake, req) end}`.
--   With `code`, the request fails with that metav1.Status error. With `before`, the hook runs
--   first (e.g. a concurrent writer edits the object) and the request then proceeds normally.
function Fake:inject(f)
  if type(f) ~= "table" or (f.code == nil and f.before == nil) then
    error("fake:inject: {verb=, code=} or {verb=, before=fn} required", 2)
  end
  f.times = f.times or 1
  self.faults[#self.faults + 1] = f
end

--- Make the next matching write conflict the honest way: another writer touches the object
-- (an annotation) just before it, so the request's resourceVersion is stale.
-- @tparam table f `{verb = "update", subresource = "status", kind = ?, name = ?, times = 1}`
function Fake:inject_conflict(f)
  f = f or {}
  local spec = { verb = f.verb or "update", subresource = f.subresource, kind = f.kind, name = f.name,
                 times = f.times or 1 }
  spec.before = function(fake, req)
    local cur = fake:get_object(req.api_version, req.kind, req.namespace, req.name)
    if cur then
      cur.metadata.annotations = cur.metadata.annotations or json().object()
      fake.rv_touch = (fake.rv_touch or 0) + 1
      cur.metadata.annotations["luaop.test/touched"] = tostring(fake.rv_touch)
      fake:update_internal(req.api_version, req.kind, req.namespace, req.name, cur, nil, false)
    end
  end
  self:inject(spec)
end

local function matches(f, req)
  if f.verb and f.verb ~= req.verb then return false end
  if f.subresource ~= nil and (f.subresource or "") ~= (req.subresource or "") then return false end
  if f.kind and f.kind ~= req.kind then return false end
  if f.name and f.name ~= req.name then return false end
  return true
end

-- (internal) The first injected fault matching req, consumed.
function Fake:take_fault(req)
  for i, f in ipairs(self.faults) do
    if matches(f, req) then
      f.times = f.times - 1
      if f.times <= 0 then table.remove(self.faults, i) end
      return f
    end
  end
  return nil
end

-- --------------------------------------------------------------- backend functions

--- The REST entry point (backend `request`; body is a Lua value or a JSON string when the real
-- codec is loaded).
function Fake:request(verb, av, kind, ns, name, sub, pt, query, body)
  if type(body) == "string" then
    body = json().decode(body)
  elseif body ~= nil then
    -- Encoded by the same codec the host uses, so a table the host could not send (mixed keys,
    -- sparse arrays, functions) fails here too, with the same message. The Lua value itself is
    -- kept (decoding would drop the nulls a merge patch uses to delete keys), as a copy: the
    -- caller's table is never shared with the store.
    if self:has_codec() then json().encode(body) end
    body = copy(body)
  end
  local req = { verb = verb, api_version = av, kind = kind, namespace = ns, name = name,
                subresource = sub, patch_type = pt, query = query }
  if verb ~= "get" and verb ~= "list" then
    self.writes[#self.writes + 1] = req
  else
    self.reads[#self.reads + 1] = { verb = verb, kind = kind, namespace = ns, name = name, live = true }
  end
  local f = self:take_fault(req)
  if f then
    if f.before then f.before(self, req) end
    if f.code then
      local e = status_err(f.code, f.reason or "InternalError", f.message or ("injected " .. tostring(f.code)),
        { name = name, kind = plural(self, av, kind) })
      req.code = f.code
      return nil, e
    end
  end
  local code, res
  if verb == "get" or verb == "list" then
    local v, e
    if verb == "get" then v, e = self:backend_get(av, kind, ns, name) else v, e = self:backend_list(av, kind, ns, nil) end
    if v then code, res = 200, v else code, res = nil, e end
  elseif verb == "create" then
    code, res = self:create_internal(av, kind, ns, body)
  elseif verb == "update" then
    code, res = self:update_internal(av, kind, ns, name, body, sub, false)
  elseif verb == "patch" then
    code, res = self:patch_internal(av, kind, ns, name, sub, pt, query, body)
  elseif verb == "delete" then
    code, res = self:delete_internal(av, kind, ns, name, body)
  else
    error("fake:request: unknown verb '" .. tostring(verb) .. "'", 2)
  end
  req.code = code or (type(res) == "table" and res.code)
  if code == nil then return nil, res end
  return code, res
end

-- (internal) True when the real luaop.core codec is loaded (not the spec shim).
function Fake:has_codec()
  if self.codec == nil then
    self.codec = pcall(json().encode, json().object()) and true or false
  end
  return self.codec
end

-- (internal) GET: a copy or nil, NotFound.
function Fake:backend_get(av, kind, ns, name)
  local o = self:get_object(av, kind, ns, name)
  if not o then return nil, not_found(self, av, kind, name) end
  return o
end

-- (internal) The op.index spec named name on a kind, or raises as the host does.
function Fake:index_spec(av, kind, name)
  local list = self.indexes[av .. " " .. kind] or {}
  local names = {}
  for i, spec in ipairs(list) do
    if spec.name == name then return spec end
    names[i] = spec.name
  end
  error(require("luaop.fieldindex").unknown_message(av, kind, name, names), 0)
end

-- (internal) LIST with an optional label selector, and optionally only the objects whose field
-- index `index` holds value (op.index; the host's semantics: within ns, or all namespaces; sorted
-- by namespace/name): an array of copies.
function Fake:backend_list(av, kind, ns, selector, index, value)
  local spec = index and self:index_spec(av, kind, index)
  local sel
  if selector and selector ~= "" then
    local err
    sel, err = require("luaop.core").selector.parse_labels(selector)
    if not sel then return nil, status_err(400, "BadRequest", "unable to parse requirement: " .. tostring(err)) end
  end
  local out = json().array()
  local objs = self:objects(av, kind, (ns ~= "" and ns) or nil)
  if spec then objs = require("luaop.fieldindex").filter(spec, objs, value) end
  for _, o in ipairs(objs) do
    if not sel or sel:matches(o.metadata.labels or {}) then out[#out + 1] = o end
  end
  return out
end

--- The backend table for `luaop.backend.set`.
-- @treturn table
function Fake:backend()
  local fake = self
  local b = {}
  function b.get(av, kind, ns, name)
    fake.reads[#fake.reads + 1] = { verb = "get", kind = kind, namespace = ns, name = name, live = false }
    return fake:backend_get(av, kind, ns, name)
  end
  function b.list(av, kind, ns, sel, index, value)
    fake.reads[#fake.reads + 1] = { verb = "list", kind = kind, namespace = ns, live = false,
                                    index = index and { [index] = value } or nil }
    return fake:backend_list(av, kind, ns, sel, index, value)
  end
  function b.request(...) return fake:request(...) end
  function b.event(obj, etype, reason, message)
    local md = obj.metadata or {}
    fake.events[#fake.events + 1] = {
      regarding = { apiVersion = obj.apiVersion, kind = obj.kind, namespace = md.namespace,
                    name = md.name, uid = md.uid },
      type = etype, reason = reason, message = message, time = fake.clock,
    }
    return true
  end
  function b.log(level, msg, fields)
    fake.logs[#fake.logs + 1] = { level = level, msg = msg, fields = fields }
  end
  function b.now() return fake.clock end
  function b.mono() return fake.clock end
  function b.sleep(secs)
    fake.sleeps[#fake.sleeps + 1] = secs
    fake.clock = fake.clock + secs
  end
  function b.is_leader() return fake.leader end
  function b.identity() return "luaop-testing" end
  function b.context() return fake.current_context end
  function b.register_controller(spec)
    if fake.controllers[spec.name] then
      error("luaop.controller: duplicate controller name '" .. spec.name .. "'", 3)
    end
    fake.controllers[spec.name] = spec
    fake.controller_order[#fake.controller_order + 1] = spec.name
  end
  function b.register_index(spec)
    if fake.current_context ~= nil then
      error("op.index may only be called while main.lua loads (indexes are declared before the informers start, "
            .. "as controller-runtime's IndexField)", 3)
    end
    local k = spec.api_version .. " " .. spec.kind
    local list = fake.indexes[k] or {}
    for _, other in ipairs(list) do
      if other.name == spec.name then
        error("op.index '" .. spec.name .. "': declared twice for " .. k .. " (names are unique per kind)", 3)
      end
    end
    list[#list + 1] = spec
    fake.indexes[k] = list
    fake.index_order[#fake.index_order + 1] = spec
  end
  function b.register_webhook(spec)
    local clash = require("luaop.webhook").clash(fake.webhooks, spec)
    if clash then error(clash, 4) end
    fake.webhooks[#fake.webhooks + 1] = spec
  end
  return b
end

-- --------------------------------------------------------------- conveniences for specs

--- Writes recorded since the start (or since `reset_writes`), optionally filtered.
-- @tparam[opt] table filter `{verb=, subresource=, kind=, name=}` (subresource "" = main endpoint)
-- @treturn table array of `{verb=, api_version=, kind=, namespace=, name=, subresource=, patch_type=, code=}`
function Fake:writes_matching(filter)
  local out = {}
  for _, w in ipairs(self.writes) do
    if filter == nil or matches(filter, w) then out[#out + 1] = w end
  end
  return out
end

--- Forget recorded writes.
function Fake:reset_writes() self.writes = {} end

--- Events recorded, optionally filtered by reason.
-- @tparam[opt] string reason
-- @treturn table array of `{regarding=, type=, reason=, message=, time=}`
function Fake:events_with(reason)
  local out = {}
  for _, e in ipairs(self.events) do
    if reason == nil or e.reason == reason then out[#out + 1] = e end
  end
  return out
end

--- Act as another client (kubectl, another controller): edit a stored object through the main
-- endpoint with `fn(obj)`; bumps resourceVersion and emits a watch event like any write.
-- @treturn table|nil the stored object
-- @treturn table|nil err
function Fake:edit(av, kind, ns, name, fn)
  local cur = self:get_object(av, kind, ns, name)
  if not cur then return nil, not_found(self, av, kind, name) end
  fn(cur)
  local code, res = self:update_internal(av, kind, ns, name, cur, nil, false)
  if not code then return nil, res end
  return res
end

--- Act as another client: edit the status of a stored object.
function Fake:edit_status(av, kind, ns, name, fn)
  local cur = self:get_object(av, kind, ns, name)
  if not cur then return nil, not_found(self, av, kind, name) end
  fn(cur)
  local code, res = self:update_internal(av, kind, ns, name, cur, "status", false)
  if not code then return nil, res end
  return res
end

--- Act as another client: create an object (status is stored too when given, as if written to
-- /status afterwards).
function Fake:create(obj)
  local md = obj.metadata or {}
  local code, res = self:create_internal(obj.apiVersion, obj.kind, md.namespace, obj)
  if not code then return nil, res end
  if obj.status ~= nil and self:kind_info(obj.apiVersion, obj.kind).status then
    local withs = copy(res)
    withs.status = copy(obj.status)
    code, res = self:update_internal(obj.apiVersion, obj.kind, res.metadata.namespace, res.metadata.name, withs, "status", false)
    if not code then return nil, res end
  end
  return res
end

--- Act as another client: delete an object (finalizers honoured, dependents collected).
function Fake:delete(av, kind, ns, name, opts)
  local code, res = self:delete_internal(av, kind, ns, name, opts)
  if not code then return nil, res end
  return true
end

_M.Fake = Fake
_M.START_TIME = START_TIME

return _M
-- SPDX-License-Identifier: Apache-2.0
