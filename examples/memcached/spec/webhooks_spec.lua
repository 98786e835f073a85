-- The Memcached webhooks (scripts/webhooks.lua) through luaop.testing: the v1alpha1 <-> v1
-- conversion is lossless both ways, the defaulter fills replicas and port, the validator bounds
-- replicas and keeps port immutable.
local testing = require("luaop.testing")

local V1, V1ALPHA1, KIND = "cache.example.com/v1", "cache.example.com/v1alpha1", "Memcached"
local EXAMPLE = debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$") or "."

local function v1(spec, extra)
  local o = { apiVersion = V1, kind = KIND, spec = spec,
              metadata = { name = "m", namespace = "default", labels = { app = "cache" } } }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

describe("memcached webhooks", function()
  before_each(function()
    testing.new()
    testing.apply_manifest(EXAMPLE .. "/crd/cache.example.com_memcacheds.yaml")
    testing.load(EXAMPLE .. "/scripts")
  end)

  describe("conversion", function()
    it("renames replicas to size and keeps port in an annotation (v1 -> v1alpha1)", function()
      local old = assert(testing.convert(v1({ replicas = 3, port = 11311 }), V1ALPHA1))
      assert.equal(V1ALPHA1, old.apiVersion)
      assert.same({ size = 3 }, old.spec)
      assert.equal("11311", old.metadata.annotations["cache.example.com/v1-port"])
      assert.equal("cache", old.metadata.labels.app)
    end)

    it("is lossless from v1 and back, status included", function()
      local status = { observedGeneration = 2, conditions = { { type = "Available", status = "True" } } }
      for _, spec in ipairs({ { replicas = 3, port = 11311 }, { replicas = 0 } }) do
        local orig = v1(spec, { status = status })
        local back = assert(testing.convert(assert(testing.convert(orig, V1ALPHA1)), V1))
        assert.same(orig, back)
      end
    end)

    it("is lossless from v1alpha1 and back (the annotation only exists in v1alpha1)", function()
      local orig = { apiVersion = V1ALPHA1, kind = KIND, metadata = { name = "m", annotations = { keep = "me" } },
                     spec = { size = 2 } }
      local new = assert(testing.convert(orig, V1))
      assert.same({ replicas = 2 }, new.spec)
      assert.same({ keep = "me" }, new.metadata.annotations)
      assert.same(orig, assert(testing.convert(new, V1ALPHA1)))
    end)

    it("refuses a version it does not know", function()
      local _, err = testing.convert(v1({ replicas = 1 }), "cache.example.com/v2")
      assert.matches("cannot convert", err)
    end)
  end)

  describe("defaulter", function()
    it("fills replicas 1 and port 11211 when absent", function()
      local r = testing.admit(v1({}))
      assert.is_true(r.allowed)
      assert.same({ replicas = 1, port = 11211 }, r.object.spec)
    end)

    it("keeps what is set", function()
      local r = testing.admit(v1({ replicas = 4, port = 9000 }))
      assert.same({ replicas = 4, port = 9000 }, r.object.spec)
    end)
  end)

  describe("validator", function()
    local cases = {
      { "too many replicas", { replicas = 11 }, "spec.replicas must be an integer from 0 to 10, got 11" },
      { "negative replicas", { replicas = -1 }, "spec.replicas must be an integer from 0 to 10, got -1" },
      { "a fractional count", { replicas = 1.5 }, "spec.replicas must be an integer from 0 to 10, got 1.5" },
      { "a port out of range", { replicas = 1, port = 70000 }, "spec.port must be a port number (1-65535), got 70000" },
    }
    for _, c in ipairs(cases) do
      it("denies " .. c[1], function()
        local r = testing.admit(v1(c[2]))
        assert.is_false(r.allowed)
        assert.equal(403, r.code)
        assert.equal(c[3], r.message)
      end)
    end

    it("allows the bounds", function()
      assert.is_true(testing.admit(v1({ replicas = 0 })).allowed)
      assert.is_true(testing.admit(v1({ replicas = 10 })).allowed)
    end)

    it("keeps spec.port immutable on update", function()
      local old = v1({ replicas = 1, port = 11211 })
      local r = testing.admit(v1({ replicas = 2, port = 11300 }), { operation = "UPDATE", old = old })
      assert.is_false(r.allowed)
      assert.equal("spec.port is immutable (was 11211, got 11300)", r.message)
      -- scaling alone is fine; so is a port removed by the request (the defaulter restores it)
      assert.is_true(testing.admit(v1({ replicas = 2, port = 11211 }), { operation = "UPDATE", old = old }).allowed)
      assert.is_true(testing.admit(v1({ replicas = 2 }), { operation = "UPDATE", old = old }).allowed)
    end)

    it("does not look at v1alpha1 requests (the API server converts them to v1 first)", function()
      local r = testing.admit({ apiVersion = V1ALPHA1, kind = KIND, metadata = { name = "m" }, spec = { size = 50 } })
      assert.is_true(r.allowed)
    end)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
