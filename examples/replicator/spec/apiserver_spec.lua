-- The replicator reconciler against the local API server (`luaop apiserver`, loopback): the CRD
-- and samples from this example, the reconcile function called directly (no informers: each step
-- reconciles until a pass writes nothing). Checks that what the fake-based specs rely on holds on
-- the server: a cluster-scoped kind read with no namespace, a LIST of ConfigMaps across all
-- namespaces by label, DELETE with a uid precondition, the finalizer life cycle.
local testing = require("luaop.testing")
local backend = require("luaop.backend")
local http = require("spec.support.http_backend")
local op = require("luaop")

local HERE = debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$") or "examples/replicator"
local API, KIND, NAME = "replicator.example.com/v1alpha1", "ConfigMapReplication", "shared-settings"
local LABEL = "replicator.example.com/replication"

describe("replicator example against the local API server", function()
  local server, spec, api

  local function reconcile_until_quiet()
    for _ = 1, 10 do
      local before = api.writes
      local ok, res, err = pcall(spec.reconcile, { name = NAME, id = "t" })
      assert(ok, res)
      assert.is_nil(err)
      if api.writes == before then return end
    end
    error("replicator did not settle after 10 reconciles")
  end
  local function repl() return op.client.get(API, KIND, nil, NAME, { live = true }) end
  local function copies()
    local out = {}
    for _, cm in ipairs(assert(op.client.list("v1", "ConfigMap", nil, { label_selector = LABEL .. "=" .. NAME }))) do
      out[#out + 1] = cm.metadata.namespace .. "/" .. cm.metadata.name
    end
    table.sort(out)
    return out
  end

  setup(function()
    server = http.start_server()
    http.apply_manifest(server.url, HERE .. "/crd/replicator.example.com_configmapreplications.yaml")
    http.apply_manifest(server.url, HERE .. "/samples/source.yaml")
    testing.new()
    spec = testing.load(HERE .. "/scripts")[1]
    api = http.new(server.url)
    backend.set(api)
  end)
  teardown(function()
    backend.set(nil)
    if server then server.stop() end
  end)

  it("copies the source into team-a (selected) and team-b (listed), with the status", function()
    http.apply_manifest(server.url, HERE .. "/samples/replication.yaml")
    reconcile_until_quiet()
    assert.same({ "team-a/shared-settings", "team-b/shared-settings" }, copies())
    local r = assert(repl())
    assert.is_nil(r.metadata.namespace)
    assert.same({ "replicator.example.com/cleanup" }, r.metadata.finalizers)
    assert.same({ "team-a", "team-b" }, r.status.syncedNamespaces)
    assert.equal(r.metadata.generation, r.status.observedGeneration)
    assert.is_true(op.conditions.is_true(r, "Ready"))
    assert.equal("Synced", api.events[#api.events].reason)
  end)

  it("propagates a source change", function()
    local src = assert(op.client.get("v1", "ConfigMap", "default", "shared-settings"))
    assert(op.client.patch(src, { data = { log_level = "debug" } }))
    reconcile_until_quiet()
    for _, ns in ipairs({ "team-a", "team-b" }) do
      assert.equal("debug", assert(op.client.get("v1", "ConfigMap", ns, "shared-settings")).data.log_level)
    end
  end)

  it("drops a namespace removed from targetNamespaces", function()
    assert(op.client.patch(assert(repl()), { spec = { targetNamespaces = op.object.array() } }))
    reconcile_until_quiet()
    assert.same({ "team-a/shared-settings" }, copies())
    local r = assert(repl())
    assert.same({ "team-a" }, r.status.syncedNamespaces)
    assert.equal(2, r.status.observedGeneration)
  end)

  it("on deletion removes every copy and the replication goes away", function()
    assert(op.client.delete(assert(repl())))
    assert.is_string(assert(repl()).metadata.deletionTimestamp)
    reconcile_until_quiet()
    local _, err = repl()
    assert.is_true(op.errors.is_not_found(err))
    assert.same({}, copies())
    assert.equal("CleanedUp", api.events[#api.events].reason)
    assert.equal("deleted 1 copy of default/shared-settings from team-a", api.events[#api.events].message)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
