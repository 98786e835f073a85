--- luaop: the Lua library for writing Kubernetes controllers on the luaop host.
--
--    local op = require("luaop")
--    op.controller { name = "memcached", for_ = {...}, owns = {...}, reconcile = function(req) ... end }
--
-- Submodules are loaded on first use: `op.client`, `op.result`, `op.errors`, `op.log`,
-- `op.predicates`, `op.object`, `op.conditions`, `op.finalizers`, `op.owner`, `op.status`,
-- `op.ops`, `op.events`, `op.selector`, `op.leader`, `op.handler`, `op.metrics`, `op.crypto`,
-- `op.webhook`.
-- @module luaop

local require, rawset, setmetatable = require, rawset, setmetatable

local _M = {}

local submodules = {
  client = true, result = true, errors = true, log = true, predicates = true, object = true,
  conditions = true, finalizers = true, owner = true, status = true, ops = true, events = true,
  selector = true, leader = true, handler = true, metrics = true, crypto = true, webhook = true,
}

--- Declare a controller (call it while main.lua loads).
--
-- The declaration is validated and normalized to the spec of docs/lua-core.md, then handed to
-- the backend (`core.register_controller` in the host; `luaop.testing` collects it in busted).
--
-- @tparam table decl
--   `name` (string, unique), `for_ = {api_version=, kind=, predicates=?, namespace=?, label_selector=?,
--   metadata_only=?}`, `owns = {{api_version=, kind=, predicates=?, metadata_only=?}, ...}` (optional),
--   `watches = {{api_version=, kind=, map=function(obj, ev) -> {{namespace=, name=}...}, predicates=?,
--   metadata_only=?}, ...}` (optional; metadata_only: that watch caches and shows apiVersion, kind and
--   metadata only, see docs/lua-api.md),
--   `predicates = {...}` (optional; applied to every watch, like controller-runtime's WithEventFilter),
--   `max_concurrent_reconciles` (integer >= 1, default 1), `leader_election` (boolean, default true),
--   `reconcile_timeout` (seconds > 0, optional), `reconcile = function(req)`.
-- @treturn table the normalized spec
-- @raise on any invalid or unknown field, naming it
-- Context: load.
function _M.controller(decl)
  local spec = require("luaop.controller").normalize(decl, 2)  -- errors point at the caller
  require("luaop.backend").current().register_controller(spec)
  return spec
end

--- Declare a field index on a watched kind (call it while main.lua loads, like
-- `luaop.controller`; controller-runtime's `mgr.GetFieldIndexer().IndexField`).
--
-- The host keeps, in the informer cache of the kind, the objects by the values `field` reaches in
-- them (a field path evaluated in C on the informer's thread: members joined by `.`, `[*]` for
-- every element of an array, `[N]` for one, `['a.b/c']` for a member with other characters;
-- scalars as strings). `op.client.list(api_version, kind, {namespace = ns, index = {[name] = value}})`
-- returns the objects whose values include value, within ns (or all namespaces), from the cache.
-- Some controller must watch the kind in full (for_, owns or watches without label_selector or
-- metadata_only); a reload that adds, removes or changes a kind's indexes re-lists that kind into
-- new informers (see docs/lua-api.md "Field indexes").
--
-- Instead of `field`, `extract = function(obj) return {"a", ...} end` (controller-runtime's
-- IndexerFunc) runs in an event VM of the host under the predicate deadline for each object
-- cached; one that fails leaves the object out of the index.
--
-- @tparam table decl `{name = "secretRef", api_version = "apps/v1", kind = "Deployment",
--   field = "spec.template.spec.volumes[*].secret.secretName"}` (or `extract =` in place of `field`)
-- @treturn table the normalized declaration
-- @raise on an invalid or unknown field, a field path that does not compile, both or neither of
--   field and extract, a name declared twice for the kind, or a call outside load
-- Context: load.
function _M.index(decl)
  local spec = require("luaop.fieldindex").normalize(decl, 2)
  require("luaop.backend").current().register_index(spec)
  return spec
end

return setmetatable(_M, {
  __index = function(t, k)
    if submodules[k] then
      local m = require("luaop." .. k)
      rawset(t, k, m)
      return m
    end
    return nil
  end,
})
-- SPDX-License-Identifier: Apache-2.0
