--- Validation and normalization of `luaop.controller{}` declarations (docs/lua-core.md).
-- Used by `luaop.controller` and by `luaop.testing`; users call `luaop.controller`.
-- Context: any (pure).
-- @module luaop.controller

local type, pairs, ipairs, error, pcall, tostring, math_floor = type, pairs, ipairs, error, pcall, tostring, math.floor
local huge = math.huge
local require = require

local _M = {}

local top_keys = {
  name = true, for_ = true, owns = true, watches = true, predicates = true,
  max_concurrent_reconciles = true, leader_election = true, reconcile_timeout = true, reconcile = true,
  rate_limiter = true,
}

-- rate_limiter = { base_delay =, max_delay = (seconds), qps =, burst = }: each an upper bound.
local rate_keys = { base_delay = 3600, max_delay = 86400, qps = 1e6, burst = 1e6 }

-- Names users reach for out of habit (Go, YAML) -> the field they meant.
local HINTS = {
  apiVersion = "api_version", ["for"] = "for_", For = "for_", own = "owns", Owns = "owns",
  watch = "watches", Watches = "watches", predicate = "predicates", workers = "max_concurrent_reconciles",
  maxConcurrentReconciles = "max_concurrent_reconciles", leaderElection = "leader_election",
  timeout = "reconcile_timeout", Reconcile = "reconcile", rateLimiter = "rate_limiter",
  ratelimiter = "rate_limiter", baseDelay = "base_delay", maxDelay = "max_delay",
}

local function unknown(k)
  local hint = HINTS[k]
  return "unknown field '" .. tostring(k) .. "'" .. (hint and (" (did you mean '" .. hint .. "'?)") or "")
end

-- Messages follow the host's: "controller '<name>': <field path> <problem>". They carry no
-- position here; `normalize` re-raises them at the caller's level (the user's main.lua line).
local function fail(_, msg)
  error({ luaop_controller_error = msg })
end

-- A list field (owns, watches, predicates): a table whose keys are exactly 1..n. Anything else
-- would be dropped silently by ipairs, so it raises naming the field: a single entry written
-- without the outer braces (`single(t)` says it looks like one item), a key beside the items,
-- a hole. Returns n.
local function check_list(level, path, t, what, single, example)
  if type(t) ~= "table" then fail(level, path .. " must be a list of " .. what .. ", not a " .. type(t)) end
  local n, max, stray = 0, 0, nil
  for k in pairs(t) do
    if type(k) == "number" and k >= 1 and k < huge and math_floor(k) == k then
      n = n + 1
      if k > max then max = k end
    elseif stray == nil or tostring(k) < tostring(stray) then
      stray = k -- the smallest, so the message does not depend on the table's order
    end
  end
  if stray ~= nil then
    if n == 0 and single(t) then
      fail(level, path .. " must be a list of " .. what .. ", not a single one: wrap it in braces, " .. example)
    end
    fail(level, path .. " unknown key '" .. tostring(stray) .. "' beside the list items (a list holds only [1]..[n])")
  end
  if max ~= n then
    for i = 1, max do
      if t[i] == nil then fail(level, path .. "[" .. i .. "] is missing (a hole before [" .. max .. "])") end
    end
  end
  return n
end

local function looks_like_kind(t) return t.api_version ~= nil or t.kind ~= nil or t.apiVersion ~= nil end
local function looks_like_predicate(t) return t.builtin ~= nil end

local function check_kind(level, where, t, allowed)
  if type(t) ~= "table" then fail(level, where .. " must be a table, not a " .. type(t)) end
  if t[1] ~= nil and t.api_version == nil and t.kind == nil then
    fail(level, where .. " must be one {api_version=, kind=} table, not a list")
  end
  for k in pairs(t) do
    if not allowed[k] then fail(level, where .. " " .. unknown(k)) end
  end
  if type(t.api_version) ~= "string" or t.api_version == "" then
    fail(level, where .. " api_version must be a non-empty string (e.g. \"apps/v1\")")
  end
  if type(t.kind) ~= "string" or not t.kind:match("^%u%w*$") then
    fail(level, where .. " kind must be a Kind name (e.g. \"Deployment\")")
  end
end

local function preds(level, where, list, extra)
  local out = {}
  local validate = require("luaop.predicates").validate
  if extra then
    for _, p in ipairs(extra) do out[#out + 1] = p end
  end
  if list ~= nil then
    local path = where .. (where:sub(-2) == ": " and "predicates" or ".predicates")
    check_list(level, path, list, "predicates", looks_like_predicate, "predicates = { p }")
    for i, p in ipairs(list) do
      local ok, msg = validate(p)
      if not ok then fail(level, path .. "[" .. i .. "] " .. msg) end
      out[#out + 1] = p
    end
  end
  return out
end

local normalize

--- Validate and normalize a declaration.
-- @tparam table decl the user's declaration (see `luaop.controller`)
-- @tparam[opt] number level error level of the user's call (for messages pointing at main.lua)
-- @treturn table normalized spec (new table; functions and predicate tables shared)
-- @raise naming the offending field
function _M.normalize(decl, level)
  local ok, res = pcall(normalize, decl)
  if ok then return res end
  if type(res) == "table" and res.luaop_controller_error then
    error(res.luaop_controller_error, (level or 1) + 1)
  end
  error(res, 0)
end

normalize = function(decl)
  local level = 1
  if type(decl) ~= "table" then fail(level, "luaop.controller: the declaration must be a table") end
  if type(decl.name) ~= "string" or not decl.name:match("^[%w][%w%.%-_]*$") then
    fail(level, "luaop.controller: name must be a non-empty string of letters, digits, '.', '-', '_'")
  end
  local where = "controller '" .. decl.name .. "': "
  for k in pairs(decl) do
    if not top_keys[k] then fail(level, where .. unknown(k)) end
  end
  if type(decl.reconcile) ~= "function" then fail(level, where .. "reconcile must be a function(req)") end
  local common = preds(level, where, decl.predicates)

  check_kind(level, where .. "for_", decl.for_,
    { api_version = true, kind = true, predicates = true, namespace = true, label_selector = true,
      metadata_only = true })
  local f = decl.for_
  local function meta_only(w, v)
    if v ~= nil and type(v) ~= "boolean" then fail(level, w .. ".metadata_only must be a boolean") end
    return v or nil
  end
  if f.namespace ~= nil and type(f.namespace) ~= "string" then fail(level, where .. "for_.namespace must be a string") end
  if f.label_selector ~= nil then
    if type(f.label_selector) ~= "string" then fail(level, where .. "for_.label_selector must be a string") end
    local sel, err = require("luaop.selector").parse(f.label_selector)
    if not sel then fail(level, where .. "for_.label_selector " .. tostring(err)) end
  end
  local spec = {
    name = decl.name,
    for_ = { api_version = f.api_version, kind = f.kind, namespace = f.namespace,
             label_selector = f.label_selector, predicates = preds(level, where .. "for_", f.predicates, common),
             metadata_only = meta_only(where .. "for_", f.metadata_only) },
    owns = {},
    watches = {},
    reconcile = decl.reconcile,
  }

  if decl.owns ~= nil then
    check_list(level, where .. "owns", decl.owns, "tables", looks_like_kind,
      "owns = { { api_version = ..., kind = ... } }")
    for i, o in ipairs(decl.owns) do
      local w = where .. "owns[" .. i .. "]"
      check_kind(level, w, o, { api_version = true, kind = true, predicates = true, metadata_only = true })
      spec.owns[i] = { api_version = o.api_version, kind = o.kind, predicates = preds(level, w, o.predicates, common),
                       metadata_only = meta_only(w, o.metadata_only) }
    end
  end
  if decl.watches ~= nil then
    check_list(level, where .. "watches", decl.watches, "tables", looks_like_kind,
      "watches = { { api_version = ..., kind = ..., map = ... } }")
    for i, o in ipairs(decl.watches) do
      local w = where .. "watches[" .. i .. "]"
      check_kind(level, w, o, { api_version = true, kind = true, predicates = true, map = true, metadata_only = true })
      if type(o.map) ~= "function" then fail(level, w .. ".map must be a function(obj, ev) returning requests") end
      spec.watches[i] = { api_version = o.api_version, kind = o.kind, map = o.map,
                          predicates = preds(level, w, o.predicates, common),
                          metadata_only = meta_only(w, o.metadata_only) }
    end
  end

  local mcr = decl.max_concurrent_reconciles
  if mcr == nil then mcr = 1 end
  if type(mcr) ~= "number" or mcr < 1 or mcr > 1024 or math_floor(mcr) ~= mcr then
    fail(level, where .. "max_concurrent_reconciles must be an integer from 1 to 1024")
  end
  spec.max_concurrent_reconciles = mcr
  local le = decl.leader_election
  if le == nil then le = true end
  if type(le) ~= "boolean" then fail(level, where .. "leader_election must be a boolean") end
  spec.leader_election = le
  if decl.reconcile_timeout ~= nil then
    if type(decl.reconcile_timeout) ~= "number" or not (decl.reconcile_timeout > 0) or decl.reconcile_timeout > 86400 then
      fail(level, where .. "reconcile_timeout must be a number of seconds, > 0 and <= 86400")
    end
    spec.reconcile_timeout = decl.reconcile_timeout
  end
  if decl.rate_limiter ~= nil then
    spec.rate_limiter = _M.rate_limiter(level, where, decl.rate_limiter)
  end
  return spec
end

--- Check a controller's `rate_limiter` table (controller-runtime's RateLimiter option, with
-- client-go's default shape: the larger of a per-item exponential backoff from `base_delay` to
-- `max_delay` seconds and an overall token bucket of `qps` retries per second, `burst` deep).
-- Every field is optional (default 0.005, 1000, 10, 100); raises naming the field.
-- @treturn table a copy with the given fields
function _M.rate_limiter(level, where, rl)
  where = where or ""
  if type(rl) ~= "table" then
    fail(level, where .. "rate_limiter must be a table { base_delay =, max_delay =, qps =, burst = }")
  end
  local out = {}
  for k, v in pairs(rl) do
    local max = rate_keys[k]
    if not max then fail(level, where .. "rate_limiter: " .. unknown(k)) end
    if type(v) ~= "number" or not (v > 0) or v > max or (k == "burst" and math_floor(v) ~= v) then
      fail(level, where .. "rate_limiter." .. k .. " must be " ..
        (k == "burst" and "an integer" or "a number") .. " > 0 and <= " .. tostring(max))
    end
    out[k] = v
  end
  if (out.base_delay or 0.005) > (out.max_delay or 1000) then
    fail(level, where .. "rate_limiter.max_delay must not be below base_delay")
  end
  return out
end

return _M
-- SPDX-License-Identifier: Apache-2.0
