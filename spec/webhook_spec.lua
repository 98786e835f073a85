-- luaop.webhook declarations and luaop.testing's admit/convert (the same `handle` functions the
-- host's webhook VMs call: bindings/engine_webhook.c).
local testing = require("luaop.testing")
local op = require("luaop")

local FOR = { api_version = "cache.example.com/v1", kind = "Memcached" }

local function memcached(size, extra)
  local o = { apiVersion = "cache.example.com/v1", kind = "Memcached",
              metadata = { name = "m", namespace = "default" }, spec = { size = size } }
  for k, v in pairs(extra or {}) do o.spec[k] = v end
  return o
end

describe("luaop.webhook", function()
  local fake
  before_each(function() fake = testing.new() end)

  it("names and paths follow kubebuilder", function()
    local d = op.webhook.defaulter { for_ = FOR, default = function() end }
    assert.equal("mmemcached.cache.example.com", d.name)
    assert.equal("/mutate-cache-example-com-v1-memcached", d.path)
    assert.same({ { operations = { "CREATE", "UPDATE" }, api_groups = { "cache.example.com" },
                    api_versions = { "v1" }, resources = { "memcacheds" } } }, d.rules)
    local v = op.webhook.validator { for_ = FOR, validate_create = function() end }
    assert.equal("/validate-cache-example-com-v1-memcached", v.path)
    assert.same({ "CREATE", "UPDATE" }, v.rules[1].operations)
    assert.equal(10, v.timeout_seconds)
    assert.equal("Fail", v.failure_policy)
    assert.equal(2, #fake.webhooks)
  end)

  it("guesses resources as kubebuilder does", function()
    local g = require("luaop.webhook").guess_resource
    assert.equal("policies", g("Policy"))
    assert.equal("gateways", g("Gateway"))
    assert.equal("ingresses", g("Ingress"))
    assert.equal("boxes", g("Box"))
    assert.equal("patches", g("Patch"))
    assert.equal("memcacheds", g("Memcached"))
  end)

  it("raises naming the field, at the caller's line", function()
    local ok, err = pcall(op.webhook.validator, { for_ = FOR, validate = function() end })
    assert.is_false(ok)
    assert.matches("unknown field 'validate' %(did you mean 'validate_create'%?%)", err)
    ok, err = pcall(op.webhook.defaulter, { for_ = { api_version = "a/b/c", kind = "K" }, default = function() end })
    assert.is_false(ok)
    assert.matches("for_.api_version must be", err)
    ok, err = pcall(op.webhook.conversion, { group = "cache.example.com", kind = "Memcached" })
    assert.is_false(ok)
    assert.matches("convert must be a function", err)
    ok, err = pcall(op.webhook.validating, { name = "x.example.com", admit = function() end, rules = { {} } })
    assert.is_false(ok)
    assert.matches("rules%[1%].operations must be a non%-empty list", err)
  end)

  it("refuses a second webhook on the same path", function()
    op.webhook.defaulter { for_ = FOR, default = function() end }
    local ok, err = pcall(op.webhook.defaulter, { for_ = FOR, name = "other.example.com", default = function() end })
    assert.is_false(ok)
    assert.matches("path /mutate%-cache%-example%-com%-v1%-memcached is already served", err)
  end)
end)

describe("luaop.testing.admit and convert", function()
  before_each(function()
    testing.new()
    op.webhook.defaulter { for_ = FOR, default = function(obj, req)
      obj.spec.size = obj.spec.size or 1
      if req.dryRun then req.warn("dry run") end
    end }
    op.webhook.validator { for_ = FOR,
      validate_create = function(obj) if obj.spec.size > 5 then return false, "size must be <= 5" end end,
      validate_update = function(new, old)
        if new.spec.image ~= old.spec.image then return false, "spec.image is immutable" end
      end,
      validate_delete = function(old) if old.spec.keep then error("keep is set") end end,
    }
    op.webhook.conversion { group = "cache.example.com", kind = "Memcached", convert = function(obj, to)
      if to == "cache.example.com/v1alpha1" then return { spec = { replicas = obj.spec.size } } end
      return { spec = { size = obj.spec.replicas } }
    end }
  end)

  it("defaults before it validates", function()
    local r = testing.admit(memcached(nil), { dry_run = true })
    assert.is_true(r.allowed)
    assert.equal(1, r.object.spec.size)
    assert.same({ "dry run" }, r.warnings)
  end)

  it("denies with the validator's reason", function()
    local r = testing.admit(memcached(9))
    assert.is_false(r.allowed)
    assert.equal(403, r.code)
    assert.equal("size must be <= 5", r.message)
    assert.equal("vmemcached.cache.example.com", r.webhook)
  end)

  it("checks an immutable field on update", function()
    local old = memcached(2, { image = "a" })
    local r = testing.admit(memcached(2, { image = "b" }), { operation = "UPDATE", old = old })
    assert.is_false(r.allowed)
    assert.equal("spec.image is immutable", r.message)
    assert.is_true(testing.admit(memcached(3, { image = "a" }), { operation = "UPDATE", old = old }).allowed)
  end)

  it("a raise denies with 500 and names the file and line", function()
    local r = testing.admit(memcached(1), { operation = "DELETE", old = memcached(1, { keep = true }) })
    assert.is_false(r.allowed)
    assert.equal(500, r.code)
    assert.matches("webhook_spec.lua:%d+: keep is set", r.message)
  end)

  it("does not modify the object it is given", function()
    local o = memcached(nil)
    testing.admit(o)
    assert.is_nil(o.spec.size)
  end)

  it("converts both ways without loss", function()
    local v1a1 = assert(testing.convert(memcached(3), "cache.example.com/v1alpha1"))
    assert.equal("cache.example.com/v1alpha1", v1a1.apiVersion)
    assert.equal("Memcached", v1a1.kind)
    assert.equal("m", v1a1.metadata.name)
    assert.equal(3, v1a1.spec.replicas)
    local back = assert(testing.convert(v1a1, "cache.example.com/v1"))
    assert.same(memcached(3), back)
  end)

  it("convert names what is missing", function()
    local none, err = testing.convert({ apiVersion = "other.io/v1", kind = "X" }, "other.io/v2")
    assert.is_nil(none)
    assert.matches("no conversion webhook is declared for X in group other.io", err)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
