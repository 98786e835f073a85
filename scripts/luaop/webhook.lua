--- luaop.webhook: admission and conversion webhooks written in Lua (docs/lua-api.md "Webhooks").
--
--    local op = require("luaop")
--    op.webhook.defaulter { for_ = { api_version = "cache.example.com/v1", kind = "Memcached" },
--      default = function(obj, req) obj.spec.size = obj.spec.size or 1 end }
--    op.webhook.validator { for_ = { api_version = "cache.example.com/v1", kind = "Memcached" },
--      validate_create = function(obj, req) if obj.spec.size > 5 then return false, "size must be <= 5" end end,
--      validate_update = function(new, old, req) ... end,
--      validate_delete = function(old, req) ... end }
--    op.webhook.conversion { group = "cache.example.com", kind = "Memcached",
--      convert = function(obj, to_api_version) ... return converted end }
--
-- The vocabulary is controller-runtime's (pkg/webhook/admission: CustomDefaulter, CustomValidator;
-- pkg/webhook/conversion), the names and paths kubebuilder's (`m<kind>.<group>`,
-- `/mutate-<group with dots as dashes>-<version>-<kind>`). Each declaration is normalized here to
-- one spec whose `handle` function the host calls for every review (bindings/engine_webhook.c)
-- and `luaop.testing` calls in busted, so the two cannot disagree on what a return value means.
--
-- `req` is the AdmissionReview's request as received (admission.k8s.io/v1 AdmissionRequest:
-- uid, kind, resource, subResource, requestKind, operation, userInfo, namespace, name, object,
-- oldObject, dryRun, options), plus `req.warn(message)`, which adds an AdmissionResponse warning.
-- A validating function returns nil (or true) to allow, or `false, reason` to deny (HTTP 403, as
-- controller-runtime answers a validator's error). A function that raises or runs past the
-- deadline denies with code 500 and the error, naming file:line.
-- Context: load (the declarations); the functions run in a webhook VM (no reconcile context).
-- @module luaop.webhook

local type, pairs, ipairs, error, pcall, tostring = type, pairs, ipairs, error, pcall, tostring
local math_floor = math.floor
local require = require

local _M = {}

-- ------------------------------------------------------------------ validation

local function fail(msg) error({ luaop_webhook_error = msg }) end

-- Raise at the user's call with the message of a failed check (their main.lua line).
local function declare(kind, decl, build)
  local ok, res = pcall(build, decl)
  if ok then
    require("luaop.backend").current().register_webhook(res)
    return res
  end
  if type(res) == "table" and res.luaop_webhook_error then error("luaop.webhook." .. kind .. ": " .. res.luaop_webhook_error, 3) end
  error(res, 0)
end

local HINTS = {
  ["for"] = "for_", For = "for_", apiVersion = "api_version", failurePolicy = "failure_policy",
  sideEffects = "side_effects", timeoutSeconds = "timeout_seconds", validate = "validate_create",
  Default = "default", defaulter = "default", Convert = "convert",
}

local function check_keys(t, allowed)
  for k in pairs(t) do
    if not allowed[k] then
      local hint = HINTS[k]
      fail("unknown field '" .. tostring(k) .. "'" .. (hint and (" (did you mean '" .. hint .. "'?)") or ""))
    end
  end
end

local function check_fn(t, field, shape, required)
  local v = t[field]
  if v == nil and not required then return nil end
  if type(v) ~= "function" then fail(field .. " must be a " .. shape .. ", not a " .. type(v)) end
  return v
end

-- "cache.example.com/v1" -> "cache.example.com", "v1"; "v1" -> "", "v1".
local function split_api_version(av)
  local g, v = av:match("^([^/]+)/([^/]+)$")
  if g then return g, v end
  if av:match("^[^/]+$") then return "", av end
  return nil
end

-- kubebuilder's plural (host/meta/plural.h, which `luaop check` uses too): lowercase, then "-y"
-- not after a vowel -> "-ies", "-s"/"-x"/"-z"/"-ch"/"-sh" -> "+es", else "+s". A CRD kubebuilder
-- generated has that plural; give for_.resource when yours differs.
local function guess_resource(kind)
  local k = kind:lower()
  if k:match("[^aeiou]y$") then return k:sub(1, -2) .. "ies" end
  if k:match("[sxz]$") or k:match("[cs]h$") then return k .. "es" end
  return k .. "s"
end

local function check_for(decl)
  local f = decl.for_
  if type(f) ~= "table" then fail("for_ must be a table {api_version=, kind=}, not a " .. type(f)) end
  check_keys(f, { api_version = true, kind = true, resource = true })
  if type(f.api_version) ~= "string" or not split_api_version(f.api_version) then
    fail("for_.api_version must be \"group/version\" or \"version\" (e.g. \"cache.example.com/v1\")")
  end
  if type(f.kind) ~= "string" or not f.kind:match("^%u%w*$") then fail("for_.kind must be a Kind name (e.g. \"Memcached\")") end
  if f.resource ~= nil and (type(f.resource) ~= "string" or not f.resource:match("^[a-z][a-z0-9%-]*$")) then
    fail("for_.resource must be the lowercase plural resource (e.g. \"memcacheds\")")
  end
  local g, v = split_api_version(f.api_version)
  return g, v, f.kind, f.resource or guess_resource(f.kind)
end

local FAILURE = { Fail = true, Ignore = true }
local SIDE = { None = true, NoneOnDryRun = true }

-- failure_policy, side_effects, timeout_seconds: admissionregistration.k8s.io/v1's defaults.
local function common(decl, spec)
  local fp = decl.failure_policy or "Fail"
  if not FAILURE[fp] then fail("failure_policy must be \"Fail\" or \"Ignore\"") end
  local se = decl.side_effects or "None"
  if not SIDE[se] then fail("side_effects must be \"None\" or \"NoneOnDryRun\"") end
  local ts = decl.timeout_seconds or 10
  if type(ts) ~= "number" or ts < 1 or ts > 30 or math_floor(ts) ~= ts then
    fail("timeout_seconds must be an integer from 1 to 30")
  end
  spec.failure_policy, spec.side_effects, spec.timeout_seconds = fp, se, ts
  if decl.name ~= nil then
    if type(decl.name) ~= "string" or not decl.name:match("^[a-z0-9][a-z0-9%-]*%.[a-z0-9%-%.]*[a-z0-9]$") then
      fail("name must be a DNS subdomain with a dot (e.g. \"vmemcached.cache.example.com\")")
    end
    spec.name = decl.name
  end
  if decl.path ~= nil then
    if type(decl.path) ~= "string" or not decl.path:match("^/[%w%-%._/]*$") or decl.path == "/convert" then
      fail("path must be an absolute URL path of letters, digits, '-', '.', '_', '/' (and not /convert)")
    end
    spec.path = decl.path
  end
  return spec
end

local function kb_path(prefix, group, version, kind)
  return "/" .. prefix .. "-" .. group:gsub("%.", "-") .. "-" .. version .. "-" .. kind:lower()
end

local function kb_name(letter, group, kind)
  return letter .. kind:lower() .. "." .. (group ~= "" and group or "core.k8s.io")
end

-- ------------------------------------------------------------------ review helpers

-- Add req.warn; returns the warnings list it fills.
local function with_warnings(req)
  local warnings = {}
  req.warn = function(msg) warnings[#warnings + 1] = tostring(msg) end
  return warnings
end

-- What a validating function returned -> nil (allowed) or the reason.
local function verdict(field, ok, reason)
  if ok == nil or ok == true then return nil end
  if ok == false then
    if reason == nil then return field .. " denied the request" end
    return tostring(reason)
  end
  error(field .. " returned a " .. type(ok) .. "; return nil to allow, or false, reason to deny", 0)
end

local function result(reason, warnings, patched)
  if reason then return { allowed = false, code = 403, message = reason, warnings = warnings } end
  return { allowed = true, warnings = warnings, patched = patched }
end

-- ------------------------------------------------------------------ declarations

--- A defaulting webhook (controller-runtime's CustomDefaulter): `default(obj, req)` changes obj
-- in place (or returns a replacement table); the host answers with the JSONPatch from the
-- object received to the object after. Runs on CREATE and UPDATE.
-- @tparam table decl `for_ = {api_version=, kind=, resource=?}`, `default = function(obj, req)`,
--   `name=?` (default "m<kind>.<group>"), `path=?` (default "/mutate-<group>-<version>-<kind>"),
--   `failure_policy=?` ("Fail"), `side_effects=?` ("None"), `timeout_seconds=?` (10)
-- @treturn table the normalized spec
-- @raise on an invalid or unknown field, naming it
function _M.defaulter(decl)
  return declare("defaulter", decl, function(d)
    if type(d) ~= "table" then fail("the declaration must be a table") end
    check_keys(d, { for_ = true, default = true, name = true, path = true, failure_policy = true,
                    side_effects = true, timeout_seconds = true })
    local g, v, kind, res = check_for(d)
    local fn = check_fn(d, "default", "function(obj, req)", true)
    local spec = common(d, { type = "mutating", defaulter = true, group = g, version = v, kind = kind,
      name = kb_name("m", g, kind), path = kb_path("mutate", g, v, kind),
      rules = { { operations = { "CREATE", "UPDATE" }, api_groups = { g }, api_versions = { v }, resources = { res } } } })
    spec.handle = function(req)
      local warnings = with_warnings(req)
      if req.operation ~= "CREATE" and req.operation ~= "UPDATE" then return result(nil, warnings) end
      local obj = req.object
      local repl = fn(obj, req)
      if type(repl) == "table" then obj = repl end
      return result(nil, warnings, obj)
    end
    return spec
  end)
end

--- A validating webhook (controller-runtime's CustomValidator). Each function returns nil to
-- allow or `false, reason` to deny; a missing one allows. DELETE is in the rule only when
-- `validate_delete` is given.
-- @tparam table decl `for_`, `validate_create = function(obj, req)`, `validate_update =
--   function(new, old, req)`, `validate_delete = function(old, req)` (each optional, one
--   required), `name=?` ("v<kind>.<group>"), `path=?` ("/validate-..."), `failure_policy=?`,
--   `side_effects=?`, `timeout_seconds=?`
function _M.validator(decl)
  return declare("validator", decl, function(d)
    if type(d) ~= "table" then fail("the declaration must be a table") end
    check_keys(d, { for_ = true, validate_create = true, validate_update = true, validate_delete = true, name = true,
                    path = true, failure_policy = true, side_effects = true, timeout_seconds = true })
    local g, v, kind, res = check_for(d)
    local vc = check_fn(d, "validate_create", "function(obj, req)")
    local vu = check_fn(d, "validate_update", "function(new, old, req)")
    local vd = check_fn(d, "validate_delete", "function(old, req)")
    if not (vc or vu or vd) then fail("give at least one of validate_create, validate_update, validate_delete") end
    local ops = { "CREATE", "UPDATE" }
    if vd then ops[3] = "DELETE" end
    local spec = common(d, { type = "validating", validator = true, group = g, version = v, kind = kind,
      name = kb_name("v", g, kind), path = kb_path("validate", g, v, kind),
      rules = { { operations = ops, api_groups = { g }, api_versions = { v }, resources = { res } } } })
    spec.handle = function(req)
      local warnings = with_warnings(req)
      local op, reason = req.operation, nil
      if op == "CREATE" and vc then
        reason = verdict("validate_create", vc(req.object, req))
      elseif op == "UPDATE" and vu then
        reason = verdict("validate_update", vu(req.object, req.oldObject, req))
      elseif op == "DELETE" and vd then
        reason = verdict("validate_delete", vd(req.oldObject, req))
      end
      return result(reason, warnings)
    end
    return spec
  end)
end

local RULE_KEYS = { operations = true, api_groups = true, api_versions = true, resources = true, scope = true }
local OPS = { CREATE = true, UPDATE = true, DELETE = true, CONNECT = true, ["*"] = true }

local function string_list(path, t, check)
  if type(t) ~= "table" or #t == 0 then fail(path .. " must be a non-empty list of strings") end
  for k in pairs(t) do
    if type(k) ~= "number" then fail(path .. " must be a list (unknown key '" .. tostring(k) .. "')") end
  end
  local out = {}
  for i, s in ipairs(t) do
    if type(s) ~= "string" or (check and not check(s)) then fail(path .. "[" .. i .. "] is not valid: " .. tostring(s)) end
    out[i] = s
  end
  return out
end

local function check_rules(rules)
  if type(rules) ~= "table" or #rules == 0 then fail("rules must be a non-empty list of {operations=, api_groups=, api_versions=, resources=}") end
  local out = {}
  for i, r in ipairs(rules) do
    local p = "rules[" .. i .. "]"
    if type(r) ~= "table" then fail(p .. " must be a table") end
    for k in pairs(r) do
      if not RULE_KEYS[k] then fail(p .. " unknown field '" .. tostring(k) .. "'") end
    end
    local scope = r.scope or "*"
    if scope ~= "*" and scope ~= "Namespaced" and scope ~= "Cluster" then fail(p .. ".scope must be \"Namespaced\", \"Cluster\" or \"*\"") end
    out[i] = {
      operations = string_list(p .. ".operations", r.operations, function(s) return OPS[s] end),
      api_groups = string_list(p .. ".api_groups", r.api_groups),
      api_versions = string_list(p .. ".api_versions", r.api_versions),
      resources = string_list(p .. ".resources", r.resources, function(s) return s:match("^[%*a-z0-9%-]+/?[%*a-z0-9%-]*$") ~= nil end),
      scope = scope,
    }
  end
  return out
end

local function generic(kind, decl)
  return declare(kind, decl, function(d)
    if type(d) ~= "table" then fail("the declaration must be a table") end
    check_keys(d, { name = true, path = true, rules = true, admit = true, failure_policy = true, side_effects = true,
                    timeout_seconds = true })
    if d.name == nil then fail("name is required (a DNS subdomain, e.g. \"pods.policy.example.com\")") end
    local fn = check_fn(d, "admit", "function(req)", true)
    local spec = common(d, { type = kind, rules = check_rules(d.rules) })
    spec.path = spec.path or ("/" .. kind .. "-" .. spec.name:gsub("%.", "-"))
    spec.handle = function(req)
      local warnings = with_warnings(req)
      local reason = verdict("admit", fn(req))
      if kind == "mutating" and not reason then return result(nil, warnings, req.object) end
      return result(reason, warnings)
    end
    return spec
  end)
end

--- A mutating webhook with explicit rules: `admit(req)` may change `req.object` in place and
-- returns nil to allow (with the changes) or `false, reason` to deny.
-- @tparam table decl `name` (required), `rules = {{operations=, api_groups=, api_versions=,
--   resources=, scope=?}}`, `admit = function(req)`, `path=?` ("/mutating-<name>"),
--   `failure_policy=?`, `side_effects=?`, `timeout_seconds=?`
function _M.mutating(decl) return generic("mutating", decl) end

--- A validating webhook with explicit rules: `admit(req)` returns nil to allow, `false, reason`
-- to deny. Fields as `mutating` (path default "/validating-<name>").
function _M.validating(decl) return generic("validating", decl) end

--- A conversion webhook for one CRD (apiextensions.k8s.io/v1 ConversionReview, served at
-- "/convert"): `convert(obj, to_api_version)` returns the object in that version (hub and spoke,
-- or version to version: the function's choice). apiVersion is set on the result, kind and
-- metadata are taken from the input when the result has none.
-- @tparam table decl `group` (the CRD's group), `kind`, `convert = function(obj, to_api_version)`,
--   `timeout_seconds=?`
function _M.conversion(decl)
  return declare("conversion", decl, function(d)
    if type(d) ~= "table" then fail("the declaration must be a table") end
    check_keys(d, { group = true, kind = true, convert = true, timeout_seconds = true })
    if type(d.group) ~= "string" or not d.group:match("^[a-z0-9][a-z0-9%-%.]*$") or not d.group:find(".", 1, true) then
      fail("group must be the CRD's API group (e.g. \"cache.example.com\")")
    end
    if type(d.kind) ~= "string" or not d.kind:match("^%u%w*$") then fail("kind must be a Kind name (e.g. \"Memcached\")") end
    local fn = check_fn(d, "convert", "function(obj, to_api_version)", true)
    local spec = common({ timeout_seconds = d.timeout_seconds }, { type = "conversion", group = d.group, kind = d.kind,
      name = "conversion." .. d.kind:lower() .. "." .. d.group, path = "/convert" })
    spec.handle = function(obj, to)
      if obj.apiVersion == to then return obj end
      local out = fn(obj, to)
      if type(out) ~= "table" then
        error("convert returned a " .. type(out) .. "; expected the object converted to " .. tostring(to), 0)
      end
      out.apiVersion = to
      if out.kind == nil then out.kind = obj.kind end
      if out.metadata == nil then out.metadata = obj.metadata end
      return out
    end
    return spec
  end)
end


--- (internal) The clash of spec with the specs declared before it, or nil: names are unique, so are the
-- paths of admission webhooks and the group/kind of conversion webhooks (the host checks the
-- same in bindings/engine_webhook.c). Used by luaop.testing's fake.
-- @tparam table specs earlier specs
-- @tparam table spec
-- @treturn string|nil
function _M.clash(specs, spec)
  for _, o in ipairs(specs) do
    if o.name == spec.name then return "webhook '" .. spec.name .. "': declared twice (names must be unique)" end
    local conv, oconv = spec.type == "conversion", o.type == "conversion"
    if conv and oconv and o.group == spec.group and o.kind == spec.kind then
      return "webhook '" .. spec.name .. "': a conversion for " .. spec.kind .. " " .. spec.group .. " is already declared"
    end
    if not conv and not oconv and o.path == spec.path then
      return "webhook '" .. spec.name .. "': path " .. spec.path .. " is already served by webhook '" .. o.name .. "'"
    end
  end
  return nil
end

--- (internal) The plural resource kubebuilder gives a kind ("Policy" -> "policies").
-- @tparam string kind
-- @treturn string
function _M.guess_resource(kind) return guess_resource(kind) end

return _M
-- SPDX-License-Identifier: Apache-2.0
