-- The replicator operator end to end against a real (local) API server started in this process
-- (luaop.testing.apiserver, envtest): the CRD, samples and scripts from this example, the
-- controller driven by watch events from the server (its `watches` map functions included) until
-- nothing changes. Checks that what the fake-based specs rely on holds on the server: a
-- cluster-scoped kind read with no namespace, a LIST of ConfigMaps across all namespaces by label,
-- DELETE with a uid precondition, the finalizer life cycle.
local testing = require("luaop.testing")
local op = require("luaop")

local HERE = debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$") or "."
local API, KIND, NAME = "replicator.example.com/v1alpha1", "ConfigMapReplication", "shared-settings"
local LABEL = "replicator.example.com/replication"

describe("replicator example against luaop.testing.apiserver()", function()
  local env

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
    env = testing.apiserver({
      crds = { HERE .. "/crd/replicator.example.com_configmapreplications.yaml" },
      manifests = { HERE .. "/samples/source.yaml" },
      scripts = HERE .. "/scripts",
    })
  end)
  teardown(function() env:stop() end)

  it("copies the source into team-a (selected) and team-b (listed), with the status", function()
    env:apply_manifest(HERE .. "/samples/replication.yaml")
    env:run_until_stable()
    assert.same({ "team-a/shared-settings", "team-b/shared-settings" }, copies())
    local r = assert(repl())
    assert.is_nil(r.metadata.namespace)
    assert.same({ "replicator.example.com/cleanup" }, r.metadata.finalizers)
    assert.same({ "team-a", "team-b" }, r.status.syncedNamespaces)
    assert.equal(r.metadata.generation, r.status.observedGeneration)
    assert.is_true(op.conditions.is_true(r, "Ready"))
    assert.equal("Synced", env.events[#env.events].reason)
  end)

  it("propagates a source change", function()
    local src = assert(op.client.get("v1", "ConfigMap", "default", "shared-settings"))
    assert(op.client.patch(src, { data = { log_level = "debug" } }))
    env:run_until_stable()
    for _, ns in ipairs({ "team-a", "team-b" }) do
      assert.equal("debug", assert(op.client.get("v1", "ConfigMap", ns, "shared-settings")).data.log_level)
    end
  end)

  it("drops a namespace removed from targetNamespaces", function()
    assert(op.client.patch(assert(repl()), { spec = { targetNamespaces = op.object.array() } }))
    env:run_until_stable()
    assert.same({ "team-a/shared-settings" }, copies())
    local r = assert(repl())
    assert.same({ "team-a" }, r.status.syncedNamespaces)
    assert.equal(2, r.status.observedGeneration)
  end)

  it("on deletion removes every copy and the replication goes away", function()
    assert(op.client.delete(assert(repl())))
    assert.is_string(assert(repl()).metadata.deletionTimestamp)
    env:run_until_stable()
    local _, err = repl()
    assert.is_true(op.errors.is_not_found(err))
    assert.same({}, copies())
    assert.equal("CleanedUp", env.events[#env.events].reason)
    assert.equal("deleted 1 copy of default/shared-settings from team-a", env.events[#env.events].message)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
