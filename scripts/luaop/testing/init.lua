--- luaop.testing: unit-test reconcilers with busted, without a cluster.
--
--    local testing = require("luaop.testing")
--    local fake
--    before_each(function()
--      fake = testing.new()                        -- fresh fake API, installed as the backend
--      testing.apply_manifest("examples/memcached/crd/cache.example.com_memcacheds.yaml")
--      testing.load("examples/memcached/scripts")  -- runs main.lua like the host does
--    end)
--    it("creates the deployment", function()
--      fake:create(memcached_sample)
--      local summary = testing.run_until_stable("memcached")
--      assert.is_not_nil(fake:get_object("apps/v1", "Deployment", "default", "sample"))
--    end)
--
-- `testing.new()` returns the fake (see luaop.testing.fake for its methods: define_kind, create,
-- edit, edit_status, delete, get_object, objects, writes_matching, reset_writes, events_with,
-- inject, inject_conflict, advance, now). Everything here runs in busted only.
-- @module luaop.testing

local type, pairs, ipairs, error, tostring, xpcall, setmetatable, require, select =
      type, pairs, ipairs, error, tostring, xpcall, setmetatable, require, select
local loadfile, setfenv, io_open, load, loadstring, string, collectgarbage =
      loadfile, setfenv, io.open, load, loadstring, string, collectgarbage
local sort, concat = table.sort, table.concat
local os_time, os_date, os_clock, floor = os.time, os.date, os.clock, math.floor
local _G = _G
local sandbox_globals

local _M = {}

local current = nil

--- Create a fresh fake API and install it as the `luaop.client` backend.
-- @tparam[opt] table opts `{now = seconds}` (fake clock start)
-- @treturn table the fake
function _M.new(opts)
  current = require("luaop.testing.fake").new(opts)
  require("luaop.backend").set(current:backend())
  return current
end

--- The fake installed by the last `new`.
-- @treturn table fake
-- @raise when `new` was not called
function _M.fake()
  if not current then error("luaop.testing: call testing.new() first (e.g. in before_each)", 2) end
  return current
end

--- The fake installed by the last `new`, or nil (never raises).
-- @treturn table|nil
function _M.current_fake() return current end

--- Start the local API server in this process and run the script set's controllers against it
-- (envtest): see luaop.testing.apiserver for the options and the env's methods.
-- @tparam[opt] table opts `{crds = {path...}, manifests = {path...}, scripts = dir, now = seconds,
--   listen = "127.0.0.1:0", log_level = "warn"}`
-- @treturn table env (`env.client`, `env:apply_manifest`, `env:run_until_stable`, `env:stop`, ...)
-- @raise when the server cannot start or a manifest or script fails
function _M.apiserver(opts)
  return require("luaop.testing.apiserver").start(opts) -- a tail call: errors name the spec's line
end

--- Uninstall the fake (the backend reverts to the host's luaop.core).
function _M.reset()
  current = nil
  require("luaop.backend").set(nil)
end

local function file_exists(path)
  local f = io_open(path, "r")
  if f then f:close() return true end
  return false
end

-- The globals a script sees in the host's sandbox (docs/execution-model.md; base, string,
-- table, math, coroutine, bit, a safe os; no io/debug/ffi/jit, no file loading). A script that
-- reaches for os.execute works nowhere in the host, so it fails in the specs too.
local SANDBOX = {
  "assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "rawequal",
  "rawget", "rawset", "select", "setmetatable", "tonumber", "tostring", "type", "unpack",
  "xpcall", "_VERSION", "table", "math", "coroutine", "bit", "gcinfo", "newproxy",
}

-- What require() returns from the sandbox itself (the host's package.loaded: engine_require.c).
local STDLIBS = { string = true, table = true, math = true, coroutine = true, bit = true, os = true }

-- load/loadstring refuse bytecode, as in the host.
local function text_only(fn)
  return function(chunk, ...)
    if type(chunk) == "string" and chunk:byte(1) == 27 then return nil, "attempt to load a binary chunk" end
    return fn(chunk, ...)
  end
end

sandbox_globals = function(fake)
  local g = {}
  for _, k in ipairs(SANDBOX) do g[k] = _G[k] end
  local str = {}
  for k, v in pairs(string) do if k ~= "dump" then str[k] = v end end
  g.string = str
  g.collectgarbage = function(opt, ...)
    if opt ~= nil and opt ~= "collect" and opt ~= "count" and opt ~= "step" then
      error("collectgarbage: option '" .. tostring(opt) .. "' is not allowed in the sandbox", 2)
    end
    return collectgarbage(opt, ...)
  end
  -- os: time, date and clock only, as in the host (bindings/sandbox_libs.h); time() and date()
  -- without a time read the fake's clock, as the host's read its injected clock.
  local function now() return floor(fake:now()) end
  g.os = {
    time = function(t) if t == nil then return now() end return os_time(t) end,
    date = function(fmt, t) if t == nil then t = now() end return os_date(fmt or "%c", t) end,
    clock = os_clock,
  }
  g.load = text_only(load)
  g.loadstring = text_only(loadstring)
  g.print = function(...)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
    fake.logs[#fake.logs + 1] = { level = "info", msg = concat(parts, "\t"), fields = { source = "print" } }
  end
  g._G = g
  return g
end

-- An op.index needs a controller that caches its kind in full, as the host's install checks.
local function check_index_watched(fake, ix)
  for _, spec in pairs(fake.controllers) do
    local ws = { spec.for_ }
    for _, w in ipairs(spec.owns or {}) do ws[#ws + 1] = w end
    for _, w in ipairs(spec.watches or {}) do ws[#ws + 1] = w end
    for _, w in ipairs(ws) do
      if w.api_version == ix.api_version and w.kind == ix.kind and not w.metadata_only and not w.label_selector then
        return
      end
    end
  end
  error("op.index '" .. ix.name .. "': no controller watches " .. ix.api_version .. " " .. ix.kind
        .. " in full (for_, owns or watches without label_selector or metadata_only): the index lives in that"
        .. " kind's informer cache", 0)
end

--- Load a script set the way the host does: `main.lua` is the entry and runs in the host's
-- sandbox (base without dofile/loadfile, string without dump, table, math, coroutine, bit, an
-- os with only time/date/clock on the fake clock; `print` goes to `fake.logs`); `require("luaop...")` and `require("cjson")` come from the
-- library, every other name from the set (`a.b` → `<dir>/a/b.lua` or `<dir>/a/b/init.lua`,
-- loaded once per `load`). Controllers declared with `luaop.controller` are collected by the fake,
-- field indexes declared with `op.index` too (each must be on a kind a controller watches in full).
-- @tparam string dir the script directory (or the path of main.lua)
-- @treturn table array of the declared controller specs, in declaration order
-- @raise with file:line when a script fails to load
function _M.load(dir)
  local fake = _M.fake()
  if type(dir) ~= "string" then error("luaop.testing.load: dir must be a string", 2) end
  local main = dir
  if not dir:match("%.lua$") then main = dir .. "/main.lua" else dir = dir:match("^(.*)/[^/]*$") or "." end
  local before = #fake.controller_order
  local before_idx = #fake.index_order
  local env = setmetatable({}, { __index = sandbox_globals(fake) })
  local loaded = {}
  env.require = function(name)
    if type(name) ~= "string" then error("require: module name must be a string", 2) end
    -- luaop and luaop.* come only from the library (scripts cannot shadow them); cjson is lua-cjson.
    if name == "luaop" or name:sub(1, 6) == "luaop." or name == "cjson" then return require(name) end
    -- the sandbox's standard libraries, as the host's package.loaded has them
    if STDLIBS[name] then return env[name] end
    if loaded[name] ~= nil then return loaded[name] end
    local base = dir .. "/" .. name:gsub("%.", "/")
    for _, path in ipairs({ base .. ".lua", base .. "/init.lua" }) do
      if file_exists(path) then
        local chunk, err = loadfile(path)
        if not chunk then error(err, 0) end
        setfenv(chunk, env)
        local r = chunk(name)
        if r == nil then r = true end
        loaded[name] = r
        return r
      end
    end
    error("module '" .. name .. "' not found in the script set " .. dir, 2)
  end
  local chunk, err = loadfile(main)
  if not chunk then error("luaop.testing.load: " .. tostring(err), 2) end
  setfenv(chunk, env)
  chunk()
  for i = before_idx + 1, #fake.index_order do check_index_watched(fake, fake.index_order[i]) end
  local out = {}
  for i = before + 1, #fake.controller_order do
    out[#out + 1] = fake.controllers[fake.controller_order[i]]
  end
  return out
end

local function resolve(ctrl)
  local fake = _M.fake()
  if type(ctrl) == "string" then
    local spec = fake.controllers[ctrl]
    if not spec then error("luaop.testing: no controller named '" .. ctrl .. "' was declared", 3) end
    return spec
  end
  if type(ctrl) == "table" then
    if type(ctrl.owns) == "table" and type(ctrl.watches) == "table" and type(ctrl.reconcile) == "function" then
      return ctrl
    end
    return require("luaop.controller").normalize(ctrl, 3)
  end
  error("luaop.testing: controller must be a name or a spec table", 3)
end

-- Classify what reconcile returned: the host's own mapping (luaop.core.reconcile_result, the C
-- function every worker uses: bindings/result_map.h), so a test sees what the host would do.
local reconcile_result = require("luaop.core").reconcile_result
local function classify(ok, a, b)
  if not ok then return { kind = "error", err = { reason = "LuaError", message = tostring(a) }, raised = true } end
  local mok, m = pcall(reconcile_result, a, b)
  if not mok then
    return { kind = "error", raised = true, err = { reason = "BadResult", message = tostring(m) } }
  end
  if m.kind == "error" or m.kind == "terminal" then return { kind = m.kind, err = b } end
  if m.kind == "requeue_after" then return { kind = "requeue_after", requeue_after = m.requeue_after } end
  return { kind = m.kind }
end

local function run_one(spec, req)
  local fake = _M.fake()
  fake.reconcile_ids = (fake.reconcile_ids or 0) + 1
  local r = { namespace = req.namespace, name = req.name, id = req.id or ("test-" .. fake.reconcile_ids) }
  fake.current_context = { controller = spec.name, namespace = r.namespace, name = r.name, reconcile_id = r.id }
  local ok, a, b = xpcall(function() return spec.reconcile(r) end, debug.traceback)
  fake.current_context = nil
  return classify(ok, a, b)
end

--- Run one reconcile.
-- @tparam string|table ctrl a declared controller's name, or a spec (normalized or a declaration)
-- @tparam table req `{namespace=, name=}`
-- @treturn table `{kind = "done"|"requeue"|"requeue_after"|"error"|"terminal",
--   requeue_after = seconds?, err = err?, raised = true? (the reconcile raised; err.message holds
--   the traceback)}`
function _M.reconcile(ctrl, req)
  local spec = resolve(ctrl)
  if type(req) ~= "table" or type(req.name) ~= "string" then
    error("luaop.testing.reconcile: req must be {namespace=, name=}", 2)
  end
  return run_one(spec, req)
end

local function key_of(req)
  if req.namespace and req.namespace ~= "" then return req.namespace .. "/" .. req.name end
  return req.name
end

--- Reconcile until no work is left, the way the host's controller would: every write (by the
-- reconciler or by the spec through the fake) is a watch event that goes through the
-- controller's predicates and handlers (for_, owns by controller reference, watches' map);
-- `requeue` and errors back off (5 ms doubling, as the default rate limiter), `requeue_after`
-- waits; waiting advances the fake clock. Items due later than `horizon` seconds after the start
-- stay pending.
--
-- A key whose reconcile returns `requeue()` `max_requeues` times in a row (no other result in
-- between) fails the run: on a cluster it would be retried forever, with the exponential backoff
-- of the default rate limiter (client-go util/workqueue default_rate_limiters.go) hiding the loop
-- once the delay grows past the horizon.
-- @tparam string|table ctrl controller name or spec
-- @tparam[opt] table opts `{max_reconciles = 100, max_requeues = 10, horizon = 600,
--   allow_raise = false}`
-- @treturn table summary `{reconciles = n, results = {{key=, kind=, ...}...}, pending = {keys}}`
-- @raise "not stable after N reconciles" (a hot loop), "reconcile of <key> returned requeue()
--   N times in a row" (a requeue loop), or the traceback of a reconcile that raised unless
--   allow_raise; a bad option raises naming it
function _M.run_until_stable(ctrl, opts)
  local spec = resolve(ctrl)
  opts = opts or {}
  if type(opts) ~= "table" then error("luaop.testing.run_until_stable: opts must be a table", 2) end
  for _, k in ipairs({ "max_reconciles", "max_requeues", "horizon" }) do
    local v = opts[k]
    if v ~= nil and (type(v) ~= "number" or v ~= v or v < 1) then
      error("luaop.testing.run_until_stable: opts." .. k .. " must be a number >= 1", 2)
    end
  end
  local fake = _M.fake()
  local max = opts.max_reconciles or 100
  local max_requeues = opts.max_requeues or 10
  local horizon = opts.horizon or 600
  local requeues = {} -- key -> consecutive requeue() results in this run
  local st = fake.harness[spec.name]
  if not st then
    st = { cursor = 0, failures = {} }
    fake.harness[spec.name] = st
  end
  local queue, queued, delayed = {}, {}, {}
  local function add(req)
    local k = key_of(req)
    if not queued[k] then
      queued[k] = true
      queue[#queue + 1] = { namespace = req.namespace, name = req.name, key = k }
    end
  end
  -- items still delayed from an earlier call
  for k, d in pairs(st.delayed or {}) do delayed[k] = d end
  local deadline = fake.clock + horizon
  local summary = { reconciles = 0, results = {}, pending = {} }

  local function drain()
    -- against a real API server (luaop.testing.apiserver) the watch log is fed by relisting
    if fake.sync_watch then fake.sync_watch() end
    while st.cursor < #fake.watch_log do
      st.cursor = st.cursor + 1
      for _, r in ipairs(require("luaop.handler").requests_for(spec, fake.watch_log[st.cursor])) do add(r) end
    end
  end

  while true do
    drain()
    if #queue == 0 then
      local best, bk = nil, nil
      for k, d in pairs(delayed) do
        if best == nil or d.due < best.due or (d.due == best.due and k < bk) then best, bk = d, k end
      end
      if not best or best.due > deadline then break end
      delayed[bk] = nil
      if best.due > fake.clock then fake.clock = best.due end
      add(best.req)
    end
    local item = table.remove(queue, 1)
    queued[item.key] = nil
    summary.reconciles = summary.reconciles + 1
    if summary.reconciles > max then
      local keys = { item.key }
      for _, q in ipairs(queue) do keys[#keys + 1] = q.key end
      error("luaop.testing.run_until_stable: controller '" .. spec.name .. "' not stable after " .. max
            .. " reconciles (hot loop?); still queued: " .. concat(keys, ", "), 2)
    end
    local res = run_one(spec, item)
    res.key = item.key
    summary.results[#summary.results + 1] = res
    if res.raised and not opts.allow_raise then
      error("luaop.testing.run_until_stable: reconcile of " .. item.key .. " raised: " .. tostring(res.err.message), 2)
    end
    if res.kind == "requeue" then
      requeues[item.key] = (requeues[item.key] or 0) + 1
      if requeues[item.key] >= max_requeues then
        error("luaop.testing.run_until_stable: controller '" .. spec.name .. "': reconcile of " .. item.key
              .. " returned requeue() " .. requeues[item.key] .. " times in a row (it would be requeued"
              .. " forever); return done(), requeue_after(seconds) or an error once the work is finished", 2)
      end
    else
      requeues[item.key] = nil
    end
    if res.kind == "done" or res.kind == "terminal" then
      st.failures[item.key] = nil
    elseif res.kind == "requeue_after" then
      st.failures[item.key] = nil
      delayed[item.key] = { due = fake.clock + res.requeue_after, req = item }
    else
      local n = (st.failures[item.key] or 0) + 1
      st.failures[item.key] = n
      local backoff = 0.005 * 2 ^ (n - 1)
      if backoff > 1000 then backoff = 1000 end
      delayed[item.key] = { due = fake.clock + backoff, req = item }
    end
  end
  st.delayed = delayed
  for k in pairs(delayed) do summary.pending[#summary.pending + 1] = k end
  sort(summary.pending)
  return summary
end

--- Read a YAML (or JSON) manifest file, every document of it.
-- YAML goes through the host's own reader (`luaop.core.yaml`, host/codec/yaml.c), so a manifest
-- means here what it means to the host and kubectl: YAML 1.1 as go-yaml v2 reads it (`on`/`yes`
-- are true, `010` is 8, dates stay strings), empty documents skipped. No external program is run.
-- @tparam string path
-- @treturn table array of decoded objects (lossless codec: `[]` stays `[]`)
-- @raise when the file cannot be read, or "luaop.testing.read_manifest: yaml: <path>:<line>:<col>: <problem>"
function _M.read_manifest(path)
  if type(path) ~= "string" then error("luaop.testing.read_manifest: path must be a string", 2) end
  local fh = io_open(path, "r")
  if not fh then error("luaop.testing.read_manifest: cannot read " .. path, 2) end
  local content = fh:read("*a")
  fh:close()
  local ok, docs = pcall(require("luaop.core").yaml.decode, content, path)
  if not ok then error("luaop.testing.read_manifest: " .. tostring(docs), 2) end
  return docs
end

--- Apply a manifest to the fake: a CustomResourceDefinition defines its kinds (scope, status
-- subresource per version and names.plural, as the API server would serve them) and, under the
-- busted module of luaop.core, its openAPIV3Schema per version: the fake then validates, defaults
-- and prunes every write of those kinds with the API server's own validator (luaop.core.schema),
-- failing with the 422 causes the server would give; any other
-- object is created as another client would (`fake:create`).
-- @tparam string|table path a YAML or JSON file (one or more documents), or an array of objects
-- @treturn table array of what was created or defined (objects; CRDs as given)
-- @raise on an unreadable file or a failed create
function _M.apply_manifest(path)
  local fake = _M.fake()
  local out = {}
  local docs = path
  if type(path) == "string" then
    docs = _M.read_manifest(path)
  elseif type(path) ~= "table" then
    error("luaop.testing.apply_manifest: path must be a file path or an array of objects", 2)
  else
    path = "objects"
  end
  for _, doc in ipairs(docs) do
    if doc.kind == "CustomResourceDefinition" then
      local spec = doc.spec or {}
      local core = require("luaop.core")
      -- the API server's own validator (busted module only; the host's luaop.core has none)
      local schema = core.schema and core.schema.compile(doc) or nil
      for _, v in ipairs(spec.versions or {}) do
        local has_schema = type(v.schema) == "table" and type(v.schema.openAPIV3Schema) == "table"
        fake:define_kind({
          api_version = spec.group .. "/" .. v.name, kind = spec.names.kind,
          namespaced = spec.scope ~= "Cluster", plural = spec.names.plural,
          status = type(v.subresources) == "table" and v.subresources.status ~= nil,
          schema = has_schema and schema or nil,
        })
      end
      out[#out + 1] = doc
    else
      local res, err = fake:create(doc)
      if not res then
        error("luaop.testing.apply_manifest: " .. path .. ": " .. tostring(err.message), 2)
      end
      out[#out + 1] = res
    end
  end
  return out
end

-- --------------------------------------------------------------- webhooks

local function roundtrip(v)
  -- what the host's webhook VM sees: the value through the lossless codec, a copy of the spec's
  local j = require("luaop.core").json
  return j.decode(j.encode(v))
end

local function split_gv(av)
  local g, v = av:match("^([^/]+)/([^/]+)$")
  if g then return g, v end
  return "", av
end

local function list_has(list, v)
  for _, x in ipairs(list) do
    if x == "*" or x == v then return true end
  end
  return false
end

-- Does spec's rule cover this request? (admissionregistration.k8s.io/v1 RuleWithOperations:
-- operations, apiGroups, apiVersions, resources; subresources and scope are not modelled here.)
local function covers(spec, op, group, version, resource)
  for _, r in ipairs(spec.rules or {}) do
    if list_has(r.operations, op) and list_has(r.api_groups, group) and list_has(r.api_versions, version)
       and list_has(r.resources, resource) then
      return true
    end
  end
  return false
end

--- Run the declared admission webhooks over an object as the API server would: the mutating
-- ones in declaration order (each sees the object the previous one returned), then the
-- validating ones; the first denial stops. Webhooks are chosen by their rules, with the resource
-- guessed from the kind (kubebuilder's plural, luaop.webhook) unless `opts.resource` says.
-- @tparam table obj the object (not modified; a copy goes through the host's JSON codec)
-- @tparam[opt] table opts `{operation = "CREATE"|"UPDATE"|"DELETE" (default CREATE), old = obj
--   (UPDATE, DELETE), dry_run = bool, namespace=, user_info = {...}, resource=, webhook = name
--   (only that one)}`
-- @treturn table `{allowed = bool, code = n?, message = s?, warnings = {...}, object = the object
--   after the mutating webhooks, webhook = the name of the one that denied}`
function _M.admit(obj, opts)
  opts = opts or {}
  if type(obj) ~= "table" or type(obj.apiVersion) ~= "string" or type(obj.kind) ~= "string" then
    error("luaop.testing.admit: obj must be an object with apiVersion and kind", 2)
  end
  local op = opts.operation or "CREATE"
  local group, version = split_gv(obj.apiVersion)
  local resource = opts.resource or require("luaop.webhook").guess_resource(obj.kind)
  local cur, warnings = roundtrip(obj), {}
  local md = obj.metadata or {}
  local function request()
    return roundtrip({
      uid = "testing-" .. tostring(md.name), operation = op, dryRun = opts.dry_run and true or false,
      kind = { group = group, version = version, kind = obj.kind },
      resource = { group = group, version = version, resource = resource },
      namespace = opts.namespace or md.namespace, name = md.name, userInfo = opts.user_info or { username = "testing" },
      object = op ~= "DELETE" and cur or nil, oldObject = opts.old,
    })
  end
  for _, pass in ipairs({ "mutating", "validating" }) do
    for _, spec in ipairs(_M.fake().webhooks) do
      if spec.type == pass and (opts.webhook == nil or opts.webhook == spec.name)
         and covers(spec, op, group, version, resource) then
        local ok, r = xpcall(spec.handle, debug.traceback, request())
        if not ok then r = { allowed = false, code = 500, message = "webhook '" .. spec.name .. "': " .. tostring(r):match("^[^\n]*") } end
        for _, w in ipairs(r.warnings or {}) do warnings[#warnings + 1] = w end
        if not r.allowed then
          return { allowed = false, code = r.code, message = r.message, warnings = warnings, object = cur, webhook = spec.name }
        end
        if r.patched ~= nil then cur = roundtrip(r.patched) end
      end
    end
  end
  return { allowed = true, warnings = warnings, object = cur }
end

--- Convert an object with the declared conversion webhook of its group and kind.
-- @tparam table obj
-- @tparam string to_api_version e.g. "cache.example.com/v1"
-- @treturn table|nil the converted object
-- @treturn string|nil the error
function _M.convert(obj, to_api_version)
  if type(obj) ~= "table" or type(obj.apiVersion) ~= "string" or type(obj.kind) ~= "string" then
    error("luaop.testing.convert: obj must be an object with apiVersion and kind", 2)
  end
  local group = split_gv(obj.apiVersion)
  for _, spec in ipairs(_M.fake().webhooks) do
    if spec.type == "conversion" and spec.group == group and spec.kind == obj.kind then
      local ok, r = xpcall(spec.handle, debug.traceback, roundtrip(obj), to_api_version)
      if not ok then return nil, "webhook '" .. spec.name .. "': " .. tostring(r):match("^[^\n]*") end
      return roundtrip(r)
    end
  end
  return nil, "no conversion webhook is declared for " .. obj.kind .. " in group " .. group
end

--- Kinds of the results of a summary, e.g. `{"done", "requeue_after"}` (handy in assertions).
-- @tparam table summary from run_until_stable
-- @treturn table array of strings
function _M.kinds(summary)
  local out = {}
  for i, r in ipairs(summary.results) do out[i] = r.kind end
  return out
end

return _M
-- SPDX-License-Identifier: Apache-2.0
