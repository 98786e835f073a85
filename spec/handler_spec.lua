local handler = require("luaop.handler")
local controller = require("luaop.controller")
local p = require("luaop.predicates")

local spec = controller.normalize({
  name = "c",
  for_ = { api_version = "example.com/v1", kind = "Widget", predicates = { p.generation_changed } },
  owns = { { api_version = "apps/v1", kind = "Deployment" } },
  watches = { { api_version = "v1", kind = "Secret", map = handler.map_to_owner("example.com/v1", "Widget") } },
  reconcile = function() end,
})

local function obj(av, kind, name, refs, gen)
  return { apiVersion = av, kind = kind, metadata = { name = name, namespace = "ns", ownerReferences = refs, generation = gen } }
end
local ctrl_ref = { apiVersion = "example.com/v2", kind = "Widget", name = "w", uid = "u", controller = true }
local plain_ref = { apiVersion = "example.com/v1", kind = "Widget", name = "w2", uid = "u2" }

describe("luaop.handler.requests_for", function()
  local cases = {
    { "primary object enqueues itself",
      { type = "add", api_version = "example.com/v1", kind = "Widget", object = obj("example.com/v1", "Widget", "a") },
      { { namespace = "ns", name = "a" } } },
    { "primary update filtered by its predicates",
      { type = "update", api_version = "example.com/v1", kind = "Widget",
        object = obj("example.com/v1", "Widget", "a", nil, 1), old = obj("example.com/v1", "Widget", "a", nil, 1) }, {} },
    { "owned object enqueues its controller owner (group match, any version)",
      { type = "update", api_version = "apps/v1", kind = "Deployment", object = obj("apps/v1", "Deployment", "d", { ctrl_ref }) },
      { { namespace = "ns", name = "w" } } },
    { "owned object without a controller reference enqueues nothing",
      { type = "add", api_version = "apps/v1", kind = "Deployment", object = obj("apps/v1", "Deployment", "d", { plain_ref }) }, {} },
    { "watched object goes through the map function",
      { type = "add", api_version = "v1", kind = "Secret", object = obj("v1", "Secret", "s", { plain_ref }) },
      { { namespace = "ns", name = "w2" } } },
    { "unrelated kinds enqueue nothing",
      { type = "add", api_version = "v1", kind = "ConfigMap", object = obj("v1", "ConfigMap", "x") }, {} },
  }
  for _, c in ipairs(cases) do
    it(c[1], function() assert.same(c[3], handler.requests_for(spec, c[2])) end)
  end

  it("a metadata_only watch's predicates and map see apiVersion, kind and metadata only", function()
    local seen = {}
    local s = controller.normalize({
      name = "m",
      for_ = { api_version = "example.com/v1", kind = "Widget" },
      owns = { { api_version = "v1", kind = "Pod", metadata_only = true,
                 predicates = { function(ev) seen.pred = ev.object; return true end } } },
      watches = { { api_version = "v1", kind = "Secret", metadata_only = true,
                    map = function(o, ev) seen.map, seen.old = o, ev.old; return { { namespace = "ns", name = "x" } } end } },
      reconcile = function() end,
    })
    assert.is_true(s.owns[1].metadata_only)
    local pod = obj("v1", "Pod", "p", { ctrl_ref })
    pod.spec = { containers = {} }
    pod.metadata.managedFields = { { manager = "m" } }
    assert.same({ { namespace = "ns", name = "w" } },
      handler.requests_for(s, { type = "add", api_version = "v1", kind = "Pod", object = pod }))
    assert.same({ apiVersion = "v1", kind = "Pod",
                  metadata = { name = "p", namespace = "ns", ownerReferences = { ctrl_ref } } }, seen.pred)
    local sec = obj("v1", "Secret", "s")
    sec.data = { k = "dg==" }
    assert.same({ { namespace = "ns", name = "x" } },
      handler.requests_for(s, { type = "update", api_version = "v1", kind = "Secret", object = sec, old = sec }))
    assert.is_nil(seen.map.data)
    assert.is_nil(seen.old.data)
    assert.equal("s", seen.map.metadata.name)
    assert.equal("dg==", sec.data.k) -- the event's own object is untouched
  end)

  it("map_to_owner with controller_only", function()
    local m = handler.map_to_owner("example.com/v1", "Widget", { controller_only = true })
    assert.same({ { namespace = "ns", name = "w" } }, m(obj("v1", "Secret", "s", { ctrl_ref, plain_ref })))
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
