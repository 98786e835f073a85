-- The fake and the local API server must agree: the same cases (spec/support/api_cases.lua) run
-- against luaop.testing's fake and against `luaop apiserver` started on a free loopback port.
local testing = require("luaop.testing")
local backend = require("luaop.backend")
local http = require("spec.support.http_backend")
local shared = require("spec.support.api_cases")
local json = require("luaop.core").json

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
      c.fn(ctx("case-" .. i))
    end)
  end
end)

describe("API agreement: local API server", function()
  local server
  setup(function()
    server = http.start_server()
    http.create_crd(server.url, shared.KIND)
  end)
  teardown(function()
    backend.set(nil)
    if server then server.stop() end
  end)
  for i, c in ipairs(shared.cases) do
    it(c.name, function()
      backend.set(http.new(server.url))
      c.fn(ctx("case-" .. i))
    end)
  end
end)
-- SPDX-License-Identifier: Apache-2.0
