local testing = require("luaop.testing")
local op = require("luaop")

local function decl(extra)
  local d = {
    name = "widgets",
    for_ = { api_version = "example.com/v1", kind = "Widget" },
    reconcile = function() end,
  }
  for k, v in pairs(extra or {}) do d[k] = v end
  return d
end

describe("luaop.controller", function()
  local fake
  before_each(function() fake = testing.new() end)

  it("normalizes with defaults and registers with the backend", function()
    local spec = op.controller(decl())
    assert.equal(spec, fake.controllers.widgets)
    assert.equal(1, spec.max_concurrent_reconciles)
    assert.is_true(spec.leader_election)
    assert.same({}, spec.owns)
    assert.same({}, spec.watches)
    assert.same({}, spec.for_.predicates)
    assert.is_nil(spec.reconcile_timeout)
  end)

  it("applies top-level predicates to every watch, before the watch's own", function()
    local spec = op.controller(decl({
      predicates = { op.predicates.generation_changed },
      owns = { { api_version = "apps/v1", kind = "Deployment", predicates = { op.predicates.labels_changed } } },
      watches = { { api_version = "v1", kind = "ConfigMap", map = function() return {} end } },
    }))
    assert.same({ op.predicates.generation_changed }, spec.for_.predicates)
    assert.same({ op.predicates.generation_changed, op.predicates.labels_changed }, spec.owns[1].predicates)
    assert.same({ op.predicates.generation_changed }, spec.watches[1].predicates)
  end)

  it("keeps a rate_limiter's fields (seconds, qps, burst) in the spec", function()
    local spec = op.controller(decl({ rate_limiter = { base_delay = 0.05, max_delay = 30, qps = 5, burst = 20 } }))
    assert.same({ base_delay = 0.05, max_delay = 30, qps = 5, burst = 20 }, spec.rate_limiter)
    assert.is_nil(op.controller(decl({ name = "other" })).rate_limiter)
  end)

  it("a duplicate controller name raises", function()
    op.controller(decl())
    assert.has_error(function() op.controller(decl()) end)
  end)

  describe("invalid declarations raise naming the field", function()
    local cases = {
      { "not a table", "x", "declaration must be a table" },
      { "unknown field", decl({ For = {} }), "unknown field 'For'" },
      { "missing name", decl({ name = false }), "name must be" },
      { "missing reconcile", decl({ reconcile = "x" }), "reconcile must be a function" },
      { "missing for_", decl({ for_ = false }), "for_ must be a table" },
      { "bad kind", decl({ for_ = { api_version = "v1", kind = "configmap" } }), "for_.kind" },
      { "unknown for_ field", decl({ for_ = { api_version = "v1", kind = "ConfigMap", apiVersion = "v1" } }),
        "controller 'widgets': for_ unknown field 'apiVersion'" },
      { "bad selector", decl({ for_ = { api_version = "v1", kind = "ConfigMap", label_selector = "a in (" } }),
        "label_selector" },
      { "owns not a list", decl({ owns = 3 }), "owns must be a list" },
      { "metadata_only not a boolean", decl({ owns = { { api_version = "v1", kind = "Pod", metadata_only = "yes" } } }),
        "controller 'widgets': owns%[1%].metadata_only must be a boolean" },
      { "watch without map", decl({ watches = { { api_version = "v1", kind = "ConfigMap" } } }), "watches%[1%].map" },
      { "bad predicate", decl({ predicates = { { builtin = "sometimes" } } }),
        "controller 'widgets': predicates%[1%] unknown builtin 'sometimes'" },
      { "bad owns predicate", decl({ owns = { { api_version = "v1", kind = "Secret", predicates = { { builtin = "nope" } } } } }),
        "controller 'widgets': owns%[1%].predicates%[1%] unknown builtin 'nope'" },
      { "too many workers", decl({ max_concurrent_reconciles = 2000 }), "from 1 to 1024" },
      { "zero workers", decl({ max_concurrent_reconciles = 0 }), "max_concurrent_reconciles" },
      { "fractional workers", decl({ max_concurrent_reconciles = 1.5 }), "max_concurrent_reconciles" },
      { "leader_election string", decl({ leader_election = "yes" }), "leader_election" },
      { "negative timeout", decl({ reconcile_timeout = -1 }), "reconcile_timeout" },
      { "rate_limiter not a table", decl({ rate_limiter = 5 }), "controller 'widgets': rate_limiter must be a table" },
      { "rate_limiter unknown field", decl({ rate_limiter = { baseDelay = 1 } }),
        "rate_limiter: unknown field 'baseDelay' %(did you mean 'base_delay'%?%)" },
      { "rate_limiter negative qps", decl({ rate_limiter = { qps = -1 } }), "rate_limiter.qps must be a number > 0" },
      { "rate_limiter fractional burst", decl({ rate_limiter = { burst = 1.5 } }),
        "rate_limiter.burst must be an integer > 0" },
      { "rate_limiter max below base", decl({ rate_limiter = { base_delay = 2, max_delay = 1 } }),
        "rate_limiter.max_delay must not be below base_delay" },
      { "rate_limiter max below the default base", decl({ rate_limiter = { max_delay = 0.001 } }),
        "rate_limiter.max_delay must not be below base_delay" },
    }
    for _, c in ipairs(cases) do
      it(c[1], function()
        local ok, err = pcall(op.controller, c[2])
        assert.is_false(ok)
        assert.matches(c[3], err)
      end)
    end
  end)

  it("errors point at the line that declared the controller", function()
    local ok, err = pcall(function()
      op.controller(decl({ owns = 3 }))   -- this line
    end)
    assert.is_false(ok)
    assert.matches("controller_spec.lua:%d+: controller 'widgets': owns must be a list", err)
  end)

  it("re-exports submodules lazily", function()
    assert.equal(require("luaop.client"), op.client)
    assert.equal(require("luaop.status"), op.status)
    assert.is_nil(op.nonexistent)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
