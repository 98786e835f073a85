--- Prometheus metrics defined by scripts, served with the host's own on /metrics.
--
--    local metrics = require("luaop.metrics")
--    local scaled = metrics.counter{name = "memcached_scale_events_total",
--                                   help = "Deployments scaled", labels = {"namespace"}}
--    scaled:inc({namespace = req.namespace})
--    local size = metrics.gauge{name = "memcached_size", labels = {"namespace", "name"}}
--    size:set(3, {namespace = "ns", name = "mc"})
--    local lat = metrics.histogram{name = "memcached_backend_seconds", buckets = {0.1, 1, 10}}
--    lat:observe(0.42)
--
-- Declare at module level (main.lua or a module it requires): every worker VM declares the same
-- metric and gets the same series, and a reload re-declares it unchanged. Names under the host's
-- prefixes (controller_runtime_, workqueue_, rest_client_, leader_election_, luaop_) are refused.
-- Label values are given as a table keyed by label name; every declared label is required.
-- Without a host registry (luaop check, busted specs) values are kept in this module and can be
-- read back with `metrics.value`, so specs can assert on them.
-- Context: any.
-- @module luaop.metrics

local type, error, pairs, ipairs, tostring, pcall, require = type, error, pairs, ipairs, tostring, pcall, require
local setmetatable, math = setmetatable, math
local concat, sort = table.concat, table.sort

local _M = {}

local RESERVED = {"controller_runtime_", "workqueue_", "rest_client_", "leader_election_", "luaop_"}

--- True when name is reserved for the host's metrics.
-- @tparam string name
-- @treturn boolean
function _M.reserved(name)
  for _, p in ipairs(RESERVED) do
    if name:sub(1, #p) == p then return true end
  end
  return false
end

local core_cache = nil
local function core()
  if core_cache == nil then
    local ok, c = pcall(require, "luaop.core")
    core_cache = (ok and type(c) == "table" and c.metric_declare) and c or false
  end
  return core_cache
end

-- Local store (no host registry): name -> {type=, labels=, series = {key -> {values=, value=, ...}}}
local store = {}

local function check_name(name, what)
  if type(name) ~= "string" or not name:match("^[a-zA-Z_:][a-zA-Z0-9_:]*$") then
    error("luaop.metrics." .. what .. ": name must match [a-zA-Z_:][a-zA-Z0-9_:]*", 3)
  end
  if _M.reserved(name) then
    error("luaop.metrics." .. what .. ": metric name " .. name .. " is reserved for the host", 3)
  end
end

local function label_values(m, labels)
  local vals = {}
  if labels ~= nil and type(labels) ~= "table" then
    error("luaop.metrics: labels must be a table keyed by label name", 3)
  end
  labels = labels or {}
  for i, ln in ipairs(m.labels) do
    local v = labels[ln]
    if v == nil then error("luaop.metrics: " .. m.name .. ": missing label " .. ln, 3) end
    vals[i] = tostring(v)
  end
  for k in pairs(labels) do
    if m.label_set[k] == nil then
      error("luaop.metrics: " .. m.name .. ": unknown label " .. tostring(k), 3)
    end
  end
  return vals
end

local function update(m, op, v, labels)
  if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge then
    error("luaop.metrics: " .. m.name .. ": value must be a finite number", 3)
  end
  local vals = label_values(m, labels)
  if m.handle then
    local ok, err = core().metric_update(m.handle, op, vals, v)
    if not ok then error("luaop.metrics: " .. tostring(err), 3) end
    return
  end
  local key = concat(vals, "\0")
  local s = store[m.name].series[key]
  if s == nil then
    s = {values = vals, value = 0, count = 0, sum = 0}
    store[m.name].series[key] = s
  end
  if op == "add" then
    if m.type == "counter" and v < 0 then
      error("luaop.metrics: " .. m.name .. ": a counter cannot go down", 3)
    end
    s.value = s.value + v
  elseif op == "set" then
    s.value = v
  else
    s.count = s.count + 1
    s.sum = s.sum + v
  end
end

local Metric = {}
Metric.__index = Metric

--- Counter/gauge: add v (counters: v >= 0).
function Metric:add(v, labels)
  if self.type == "histogram" then error("luaop.metrics: " .. self.name .. " is a histogram; use observe", 2) end
  update(self, "add", v, labels)
end
--- Counter/gauge: add 1.
function Metric:inc(labels) self:add(1, labels) end
--- Gauge: subtract 1.
function Metric:dec(labels)
  if self.type ~= "gauge" then error("luaop.metrics: " .. self.name .. " is not a gauge", 2) end
  update(self, "add", -1, labels)
end
--- Gauge: set to v.
function Metric:set(v, labels)
  if self.type ~= "gauge" then error("luaop.metrics: " .. self.name .. " is not a gauge", 2) end
  update(self, "set", v, labels)
end
--- Histogram: record one observation.
function Metric:observe(v, labels)
  if self.type ~= "histogram" then error("luaop.metrics: " .. self.name .. " is not a histogram", 2) end
  update(self, "observe", v, labels)
end

local function declare(kind, spec)
  if type(spec) ~= "table" then error("luaop.metrics." .. kind .. ": expects a table {name=, help=, labels=}", 3) end
  check_name(spec.name, kind)
  local labels = spec.labels or {}
  if type(labels) ~= "table" then error("luaop.metrics." .. kind .. ": labels must be an array of names", 3) end
  local label_set = {}
  for i, ln in ipairs(labels) do
    if type(ln) ~= "string" or not ln:match("^[a-zA-Z_][a-zA-Z0-9_]*$") or ln:sub(1, 2) == "__" then
      error("luaop.metrics." .. kind .. ": bad label name at " .. i, 3)
    end
    if label_set[ln] then error("luaop.metrics." .. kind .. ": duplicate label " .. ln, 3) end
    label_set[ln] = true
  end
  if spec.buckets ~= nil and kind ~= "histogram" then
    error("luaop.metrics." .. kind .. ": only histograms take buckets", 3)
  end
  local m = setmetatable({name = spec.name, type = kind, labels = labels, label_set = label_set}, Metric)
  local c = core()
  if c then
    local h, err = c.metric_declare(kind, spec.name, spec.help or "", labels, spec.buckets)
    if h == nil then error("luaop.metrics." .. kind .. ": " .. tostring(err), 3) end
    if h then m.handle = h; return m end
  end
  local prev = store[spec.name]
  if prev and (prev.type ~= kind or concat(prev.labels, ",") ~= concat(labels, ",")) then
    error("luaop.metrics." .. kind .. ": " .. spec.name .. " already declared with another type or labels", 3)
  end
  if not prev then store[spec.name] = {type = kind, labels = labels, series = {}} end
  return m
end

--- Declare (or find) a counter.
-- @tparam table spec `{name=, help=, labels={...}}`
-- @treturn table metric with `inc(labels)`, `add(v, labels)`
-- @raise on a bad or reserved name, or a conflicting redeclaration
function _M.counter(spec) return declare("counter", spec) end
--- Declare (or find) a gauge: `set`, `add`, `inc`, `dec`.
function _M.gauge(spec) return declare("gauge", spec) end
--- Declare (or find) a histogram: `observe(v, labels)`; `buckets` optional (upper bounds).
function _M.histogram(spec) return declare("histogram", spec) end

--- Without a host registry: the value of one series (counter/gauge value; histogram
-- `{count=, sum=}`), or nil when never updated. Always nil in the host (read /metrics there).
-- @tparam string name
-- @tparam[opt] table labels keyed by label name
function _M.value(name, labels)
  local e = store[name]
  if not e then return nil end
  local vals = {}
  for i, ln in ipairs(e.labels) do vals[i] = tostring((labels or {})[ln]) end
  local s = e.series[concat(vals, "\0")]
  if not s then return nil end
  if e.type == "histogram" then return {count = s.count, sum = s.sum} end
  return s.value
end

--- Without a host registry: forget every value (for specs' before_each).
function _M.reset()
  for _, e in pairs(store) do e.series = {} end
end

--- The names declared without a host registry, sorted (for specs).
function _M.names()
  local out = {}
  for k in pairs(store) do out[#out + 1] = k end
  sort(out)
  return out
end

return _M
-- SPDX-License-Identifier: Apache-2.0
