-- SPDX-License-Identifier: Apache-2.0
-- The fake and the local API server must agree: the same cases (spec/support/api_cases.lua) run
-- against luaop.testing's fake and against the local API server started in process by
-- luaop.testing.apiserver() (the host's REST client, through luaop.core.rest).
local testing = require("luaop.testing")
local shared = require("spec.support.api_cases")
local json = require("luaop.core").json

local function crd(kind, plural)
  return {
    apiVersion = "apiextensions.k8s.io/v1", kind = "CustomResourceDefinition",
    metadata = { name = plural .. ".example.com" },
    spec = {
      group = "example.com", scope = "Namespaced",
      names = { kind = kind, plural = plural, singular = kind:lower(), listKind = kind .. "List" },
      versions = json.array({ {
        name = "v1", served = true, storage = true, subresources = { status = json.object() },
        schema = { openAPIV3Schema = { type = "object", ["x-kubernetes-preserve-unknown-fields"] = true } },
      } }),
    },
  }
end
-- Redis's plural is "redis": the kind-based guess ("redises") would be wrong
local CRDS = { crd(shared.KIND, "widgets"), crd("Redis", "redis") }

local function widget(name)
  return { apiVersion = shared.AV, kind = shared.KIND,
           metadata = { name = name, namespace = shared.NS, labels = { app = "demo" } },
           spec = { size = 1, items = json.array() } }
end

local function ctx(name)
  return {
    name = name,
    obj = function() return widget(name) end,
    get = function() return require("luaop.client").get(shared.AV, shared.KIND, shared.NS, name, { live = true }) end,
  }
end

describe("API agreement: luaop.testing fake", function()
  after_each(function() testing.reset() end)
  for i, c in ipairs(shared.cases) do
    it(c.name, function()
      testing.new()
      testing.apply_manifest(CRDS)
      c.fn(ctx("case-" .. i))
    end)
  end
end)

describe("API agreement: local API server", function()
  local env
  setup(function() env = testing.apiserver({ manifests = { CRDS } }) end)
  teardown(function() env:stop() end)
  for i, c in ipairs(shared.cases) do
    it(c.name, function() c.fn(ctx("case-" .. i)) end)
  end
end)
