--- luaop.testing.apiserver: envtest in Lua — a script set's controllers against a real (local)
-- Kubernetes API server, started in this process.
--
--    local testing = require("luaop.testing")
--    local env
--    setup(function()
--      env = testing.apiserver {
--        crds = { "crd/cache.example.com_memcacheds.yaml" },   -- applied first
--        scripts = "scripts",                                  -- main.lua loaded like the host does
--      }
--    end)
--    teardown(function() env:stop() end)
--    it("creates the Deployment", function()
--      env:apply_manifest("samples/memcached.yaml")
--      env:run_until_stable()
--      assert(env.client.get("apps/v1", "Deployment", "default", "memcached-sample"))
--    end)
--
-- What is real: the API server (apiserver/, the one `luaop apiserver` runs: validation, defaults,
-- resourceVersions, conflicts, finalizers, the owner-reference garbage collector) and the client
-- (the host's REST client and discovery REST mapper, host/kube/client, through luaop.core.rest:
-- resources are the server's plurals, a CRD's names.plural). What the harness does in place of
-- the host's runtime: reads are live GETs/LISTs (no informer cache, so a reconcile always sees
-- the server's latest state); watch events are made by relisting every watched kind between
-- reconciles and diffing resourceVersions (an added, changed or vanished object is an add,
-- update or delete event, fed through the controllers' predicates and handlers as the host
-- does); the queue, backoff, requeue_after and the clock are luaop.testing's (run_until_stable,
-- a fake clock: nothing sleeps). Events and logs are recorded in `env.events` / `env.logs` (the
-- fake's shapes), not written to the server.
--
-- Needs the busted module of luaop.core (build/lua/luaop/core.so or an installed one), which
-- links the local API server (bindings/module/core_envtest.h). Busted only.
-- @module luaop.testing.apiserver

local type, ipairs, pairs, error, tostring, setmetatable, require, pcall =
      type, ipairs, pairs, error, tostring, setmetatable, require, pcall
local sort, concat = table.sort, table.concat

local _M = {}

local Env = {}
Env.__index = Env

local function json() return require("luaop.core").json end

local function urlencode(s)
  return (tostring(s):gsub("[^%w%-%._~]", function(c) return ("%%%02X"):format(c:byte()) end))
end

-- Raise when the env was stopped (its server and client are gone).
local function check_live(env, what)
  if not env.server then error("luaop.testing.apiserver: " .. what .. " after env:stop()", 3) end
end

-- The backend (luaop.backend shape) whose reads and writes go to the server; everything else
-- (controller and webhook registration, clock, logs, events, context) is the fake's.
local function make_backend(env)
  local b = env.fake:backend()
  local rest = env.rest
  function b.request(verb, av, kind, ns, name, sub, pt, query, body)
    if verb ~= "get" and verb ~= "list" then
      env.writes[#env.writes + 1] = { verb = verb, api_version = av, kind = kind, namespace = ns, name = name,
                                      subresource = sub }
    end
    if type(body) == "table" then body = json().encode(body) end
    return rest:request(verb, av, kind, ns, name, sub, pt, query, body)
  end
  function b.get(av, kind, ns, name)
    local code, obj = rest:request("get", av, kind, ns, name)
    if not code then return nil, obj end
    return obj
  end
  function b.list(av, kind, ns, selector, index, value)
    -- an index: a live LIST filtered by the declaration (the same field-path evaluator as the host)
    local spec = index and env.fake:index_spec(av, kind, index)
    local query
    if selector and selector ~= "" then query = "labelSelector=" .. urlencode(selector) end
    local code, res = rest:request("list", av, kind, ns, nil, nil, nil, query)
    if not code then return nil, res end
    local items = json().array()
    for i, it in ipairs(res.items or {}) do
      it.apiVersion, it.kind = it.apiVersion or av, it.kind or kind
      items[i] = it
    end
    if spec then
      local fi = require("luaop.fieldindex")
      local kept = json().array()
      for i, it in ipairs(fi.filter(spec, items, value)) do kept[i] = it end
      return kept
    end
    return items
  end
  return b
end

--- Start the local API server in process, install a backend that talks to it, and prepare it.
-- @tparam[opt] table opts `{crds = {path...}, manifests = {path...}, scripts = dir (main.lua's
--   directory, loaded with testing.load), now = seconds (the fake clock's start), listen =
--   "127.0.0.1:0", log_level = "warn", history = events, history_bytes = bytes,
--   decode_cache_bytes = bytes}` (the last three as luaop.core's apiserver.start: the watch
--   history's bounds, the decode cache's size); crds, then manifests, are applied in order
-- @treturn table env: `env.url`, `env.client` (luaop.client, on this server), `env.writes`,
--   `env.events`, `env.logs`, `env.fake`, and the methods below
-- @raise when luaop.core has no apiserver (not the busted module), the server cannot start, a
--   manifest fails to apply or the scripts fail to load; a bad option raises naming it
function _M.start(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("luaop.testing.apiserver: opts must be a table", 2) end
  for _, k in ipairs({ "crds", "manifests" }) do
    if opts[k] ~= nil and type(opts[k]) ~= "table" then
      error("luaop.testing.apiserver: opts." .. k .. " must be an array of manifest paths", 2)
    end
  end
  if opts.scripts ~= nil and type(opts.scripts) ~= "string" then
    error("luaop.testing.apiserver: opts.scripts must be a directory path", 2)
  end
  local core = require("luaop.core")
  if type(core.apiserver) ~= "table" or type(core.rest) ~= "table" then
    error("luaop.testing.apiserver: this luaop.core has no local API server (it is the busted module's:"
          .. " run under busted with build/lua/luaop/core.so or the installed package on LUA_CPATH)", 2)
  end
  local srv, err = core.apiserver.start({
    listen = opts.listen,
    log_level = opts.log_level,
    history = opts.history,
    history_bytes = opts.history_bytes,
    decode_cache_bytes = opts.decode_cache_bytes,
  })
  if not srv then error("luaop.testing.apiserver: the local API server did not start: " .. tostring(err.message), 2) end
  local rest, rerr = core.rest.new(srv:url())
  if not rest then
    srv:stop()
    error("luaop.testing.apiserver: no REST client: " .. tostring(rerr.message), 2)
  end
  local testing = require("luaop.testing")
  local env = setmetatable({ server = srv, rest = rest, url = srv:url(), writes = {}, seen = {} }, Env)
  env.fake = testing.new({ now = opts.now })
  env.events, env.logs = env.fake.events, env.fake.logs
  env.client = require("luaop.client")
  env.fake.sync_watch = function() env:sync() end
  require("luaop.backend").set(make_backend(env))
  local ok, perr = pcall(function()
    for _, p in ipairs(opts.crds or {}) do env:apply_manifest(p) end
    for _, p in ipairs(opts.manifests or {}) do env:apply_manifest(p) end
    if opts.scripts then env:load(opts.scripts) end
  end)
  if not ok then
    env:stop()
    error(perr, 2)
  end
  return env
end

--- Create every object of a manifest on the server (CRDs are served as soon as they are
-- created: the REST mapper re-reads discovery for a kind it does not know yet).
-- @tparam string|table src a YAML/JSON file path, or an array of objects
-- @treturn table array of the created objects, as the server returned them
-- @raise "luaop.testing.apiserver: <src>: creating <kind> <name>: <server message>"
function Env:apply_manifest(src)
  check_live(self, "apply_manifest")
  local docs, what = src, "objects"
  if type(src) == "string" then
    docs, what = require("luaop.testing").read_manifest(src), src
  elseif type(src) ~= "table" then
    error("luaop.testing.apiserver: apply_manifest needs a path or an array of objects", 2)
  end
  local out = {}
  for _, obj in ipairs(docs) do
    if type(obj) ~= "table" or type(obj.apiVersion) ~= "string" or type(obj.kind) ~= "string" then
      error("luaop.testing.apiserver: " .. what .. ": a document without apiVersion and kind", 2)
    end
    local md = obj.metadata or {}
    local code, res = self.rest:request("create", obj.apiVersion, obj.kind, md.namespace or "default", nil, nil,
                                        nil, nil, json().encode(obj))
    if not code then
      error("luaop.testing.apiserver: " .. what .. ": creating " .. obj.kind .. " " .. tostring(md.name) .. ": "
            .. tostring(res.message), 2)
    end
    out[#out + 1] = res
  end
  return out
end

--- Load a script set (luaop.testing.load): its controllers run against this server.
-- @tparam string dir @treturn table the declared controller specs
function Env:load(dir)
  check_live(self, "load")
  return require("luaop.testing").load(dir)
end

--- One reconcile (luaop.testing.reconcile). @treturn table the classified result
function Env:reconcile(ctrl, req)
  check_live(self, "reconcile")
  return require("luaop.testing").reconcile(ctrl, req)
end

-- The kinds the declared controllers watch: "av\0kind" -> {av, kind}.
local function watched(fake)
  local out = {}
  local function add(w) out[w.api_version .. "\0" .. w.kind] = { w.api_version, w.kind } end
  for _, name in ipairs(fake.controller_order) do
    local spec = fake.controllers[name]
    add(spec.for_)
    for _, o in ipairs(spec.owns or {}) do add(o) end
    for _, w in ipairs(spec.watches or {}) do add(w) end
  end
  return out
end

local function key_of(obj)
  local md = obj.metadata or {}
  return (md.namespace or "") .. "/" .. tostring(md.name)
end

-- Relist one kind and append the differences to the fake's watch log.
local function sync_kind(env, av, kind, seen)
  local code, res = env.rest:request("list", av, kind, nil)
  if not code then return end -- not served (yet): the host's informer would wait too
  local now, keys = {}, {}
  for _, it in ipairs(res.items or {}) do
    it.apiVersion, it.kind = it.apiVersion or av, it.kind or kind
    local k = key_of(it)
    now[k] = it
    keys[#keys + 1] = k
  end
  for k in pairs(seen) do if not now[k] then keys[#keys + 1] = k end end
  sort(keys)
  local log = env.fake.watch_log
  for _, k in ipairs(keys) do
    local old, new = seen[k], now[k]
    if new and not old then
      log[#log + 1] = { type = "add", api_version = av, kind = kind, object = new }
    elseif new and old.metadata.resourceVersion ~= new.metadata.resourceVersion then
      log[#log + 1] = { type = "update", api_version = av, kind = kind, object = new, old = old }
    elseif old and not new then
      log[#log + 1] = { type = "delete", api_version = av, kind = kind, object = old }
    end
    seen[k] = new
  end
end

--- Relist every watched kind now and turn what changed into watch events (run_until_stable
-- calls this before it looks for work; a spec rarely needs it).
function Env:sync()
  for id, w in pairs(watched(self.fake)) do
    self.seen[id] = self.seen[id] or {}
    sync_kind(self, w[1], w[2], self.seen[id])
  end
end

--- Reconcile until no controller has work left: luaop.testing.run_until_stable for one
-- controller, or round after round over every declared controller (in declaration order) until
-- a round runs no reconcile.
-- @tparam[opt] string|table ctrl a controller name or spec; nil = all of them
-- @tparam[opt] table opts run_until_stable's options, plus `max_rounds = 20` (all controllers)
-- @treturn table summary `{reconciles = n, results = {{controller=, key=, kind=, ...}...}, pending = {...}}`
-- @raise run_until_stable's errors; "not stable after N rounds" when controllers keep waking each other
function Env:run_until_stable(ctrl, opts)
  check_live(self, "run_until_stable")
  local testing = require("luaop.testing")
  if type(ctrl) == "table" and ctrl.reconcile == nil and ctrl.for_ == nil then ctrl, opts = nil, ctrl end
  if ctrl ~= nil then return testing.run_until_stable(ctrl, opts) end
  opts = opts or {}
  local max_rounds = opts.max_rounds or 20
  if type(max_rounds) ~= "number" or max_rounds < 1 then
    error("luaop.testing.apiserver: opts.max_rounds must be a number >= 1", 2)
  end
  local fake = self.fake
  if #fake.controller_order == 0 then error("luaop.testing.apiserver: no controllers declared (load scripts first)", 2) end
  local total = { reconciles = 0, results = {}, pending = {} }
  for _ = 1, max_rounds do
    local ran, pending = 0, {}
    for _, name in ipairs(fake.controller_order) do
      local s = testing.run_until_stable(name, opts)
      ran = ran + s.reconciles
      for _, r in ipairs(s.results) do
        r.controller = name
        total.results[#total.results + 1] = r
      end
      for _, k in ipairs(s.pending) do pending[#pending + 1] = name .. ": " .. k end
    end
    total.reconciles = total.reconciles + ran
    total.pending = pending
    if ran == 0 then return total end
  end
  error("luaop.testing.apiserver: controllers " .. concat(fake.controller_order, ", ") .. " not stable after "
        .. max_rounds .. " rounds (they keep waking each other)", 2)
end

--- Stop the server and free the client; the luaop.client backend is uninstalled. Idempotent
-- (the garbage collector frees a forgotten env's server too).
function Env:stop()
  if self.fake and self.fake.sync_watch then self.fake.sync_watch = nil end
  if self.rest then self.rest:close() end
  if self.server then self.server:stop() end
  self.rest, self.server = nil, nil
  local testing = require("luaop.testing")
  if testing.current_fake() == self.fake then testing.reset() end
end

return _M
-- SPDX-License-Identifier: Apache-2.0
