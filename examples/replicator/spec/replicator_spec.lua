-- The ConfigMap replicator driven through luaop.testing: create, source change propagates, new
-- namespace gets a copy, targets dropped, foreign ConfigMap left alone, deletion cleans up every
-- copy exactly once, conflict on the status write.
local testing = require("luaop.testing")
local conditions = require("luaop.conditions")
local object = require("luaop.object")

local API, KIND, NAME = "replicator.example.com/v1alpha1", "ConfigMapReplication", "shared-settings"
local LABEL = "replicator.example.com/replication"
local EXAMPLE = debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$") or "."

local function namespace(name, labels)
  return { apiVersion = "v1", kind = "Namespace", metadata = { name = name, labels = labels } }
end

local function configmap(ns, name, data)
  return { apiVersion = "v1", kind = "ConfigMap", metadata = { namespace = ns, name = name }, data = data }
end

local function replication(spec)
  return { apiVersion = API, kind = KIND, metadata = { name = NAME }, spec = spec }
end

describe("replicator example", function()
  local fake

  local function repl() return fake:get_object(API, KIND, nil, NAME) end
  local function copy_in(ns) return fake:get_object("v1", "ConfigMap", ns, "settings") end
  local function stable() return testing.run_until_stable("replicator") end
  -- every copy of the replication, "ns/name", sorted
  local function copies()
    local out = {}
    for _, cm in ipairs(fake:objects("v1", "ConfigMap")) do
      if (cm.metadata.labels or {})[LABEL] == NAME then
        out[#out + 1] = cm.metadata.namespace .. "/" .. cm.metadata.name
      end
    end
    return out
  end

  before_each(function()
    fake = testing.new()
    testing.apply_manifest(EXAMPLE .. "/crd/replicator.example.com_configmapreplications.yaml")
    local specs = testing.load(EXAMPLE .. "/scripts")
    assert.equal(1, #specs)
    for _, ns in ipairs({ "default", "app-1", "app-2" }) do assert(fake:create(namespace(ns))) end
    assert(fake:create(namespace("labelled", { team = "blue" })))
    assert(fake:create(configmap("default", "settings", { level = "info" })))
  end)

  it("the CRD defines a cluster-scoped kind", function()
    assert.is_false(fake:kind_info(API, KIND).namespaced)
    assert.is_true(fake:kind_info(API, KIND).status)
  end)

  it("reconciles the shipped samples", function()
    testing.apply_manifest(EXAMPLE .. "/samples/source.yaml")
    testing.apply_manifest(EXAMPLE .. "/samples/replication.yaml")
    stable()
    assert.same({ "team-a", "team-b" }, repl().status.syncedNamespaces)
    assert.equal("eu-west-1", fake:get_object("v1", "ConfigMap", "team-a", "shared-settings").data.region)
  end)

  describe("create", function()
    it("copies the source into the listed and the selected namespaces, with label, annotation and status", function()
      assert(fake:create(replication({
        source = { namespace = "default", name = "settings" },
        targetNamespaces = { "app-1", "missing" },
        namespaceSelector = { matchLabels = { team = "blue" } },
      })))
      stable()
      assert.same({ "app-1/settings", "labelled/settings" }, copies())
      local c = copy_in("app-1")
      assert.same({ level = "info" }, c.data)
      assert.equal("default/settings", c.metadata.annotations["replicator.example.com/source"])
      assert.is_nil(copy_in("app-2"))
      local r = repl()
      assert.same({ "replicator.example.com/cleanup" }, r.metadata.finalizers)
      assert.same({ "app-1", "labelled" }, r.status.syncedNamespaces)
      assert.equal(r.metadata.generation, r.status.observedGeneration)
      assert.is_true(conditions.is_true(r, "Ready"))
      assert.equal("Synced", conditions.get(r, "Ready").reason)
      local ev = fake:events_with("Synced")
      assert.equal(1, #ev)
      assert.equal("copied default/settings into app-1, labelled", ev[1].message)
      assert.equal(KIND, ev[1].regarding.kind)
      assert.is_nil(ev[1].regarding.namespace)
    end)

    it("reaches a steady state: a further reconcile writes nothing", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        targetNamespaces = { "app-1", "app-2" } })))
      stable()
      fake:reset_writes()
      assert.equal("done", testing.reconcile("replicator", { name = NAME }).kind)
      assert.same({}, fake.writes)
    end)

    it("never copies into the source's own namespace", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        namespaceSelector = object.object() })))
      stable()
      assert.same({ "app-1", "app-2", "labelled" }, repl().status.syncedNamespaces)
      assert.is_nil((copy_in("default").metadata.labels or {})[LABEL])
    end)

    it("translates matchExpressions to the API server's selector syntax", function()
      assert(fake:create(namespace("red", { team = "red", tier = "prod" })))
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
        namespaceSelector = { matchExpressions = {
          { key = "team", operator = "In", values = { "red", "blue" } },
          { key = "tier", operator = "DoesNotExist" } } } })))
      stable()
      assert.same({ "labelled" }, repl().status.syncedNamespaces)
    end)

    it("an invalid selector is a terminal error with Ready=False and one Warning", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
        namespaceSelector = { matchExpressions = { { key = "team", operator = "In", values = object.array() } } } })))
      local summary = stable()
      assert.equal("terminal", summary.results[#summary.results].kind)
      local ready = conditions.get(repl(), "Ready")
      assert.equal("InvalidSelector", ready.reason)
      assert.matches("In needs values", ready.message)
      assert.equal(1, #fake:events_with("InvalidSelector"))
    end)

    it("a spec without a source is refused by the API server (the CRD requires spec.source)", function()
      local ok, err = fake:create(replication({ targetNamespaces = { "app-1" } }))
      assert.is_nil(ok)
      assert.equal(422, err.code)
      assert.same({ { reason = "FieldValueRequired", message = "Required value", field = "spec.source" } },
                  err.details.causes)
    end)

    it("a spec without a source is a terminal error, not a crash, and deletion still works", function()
      -- stored before the CRD required spec.source: the kind without its schema lets it in
      fake:define_kind({ api_version = API, kind = KIND, namespaced = false,
                         plural = "configmapreplications" })
      assert(fake:create(replication({ targetNamespaces = { "app-1" } })))
      local summary = stable()
      assert.equal("terminal", summary.results[#summary.results].kind)
      assert.equal("InvalidSpec", conditions.get(repl(), "Ready").reason)
      assert(fake:delete(API, KIND, nil, NAME))
      stable()
      assert.is_nil(repl())
      assert.equal("deleted 0 copies", fake:events_with("CleanedUp")[1].message)
    end)

    it("a missing source reports SourceNotFound, then syncs when the source appears", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "later" },
                                        targetNamespaces = { "app-1" } })))
      stable()
      assert.equal("SourceNotFound", conditions.get(repl(), "Ready").reason)
      assert.equal(1, #fake:events_with("SourceNotFound"))
      assert(fake:create(configmap("default", "later", { x = "1" })))
      stable()  -- the ConfigMap watch's map function enqueues the replication
      assert.is_true(conditions.is_true(repl(), "Ready"))
      assert.same({ x = "1" }, fake:get_object("v1", "ConfigMap", "app-1", "later").data)
      assert.equal(1, #fake:events_with("SourceNotFound"))
    end)
  end)

  describe("source change", function()
    it("propagates to every copy, through the ConfigMap watch", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        targetNamespaces = { "app-1", "app-2" } })))
      stable()
      local gen = repl().metadata.generation
      assert(fake:edit("v1", "ConfigMap", "default", "settings", function(cm)
        cm.data = { level = "debug", extra = "yes" }
      end))
      local summary = stable()
      assert.is_true(summary.reconciles >= 1)
      assert.same({ level = "debug", extra = "yes" }, copy_in("app-1").data)
      assert.same({ level = "debug", extra = "yes" }, copy_in("app-2").data)
      assert.equal(gen, repl().metadata.generation)
      assert.equal(2, #fake:events_with("Synced"))
    end)

    it("a copy edited by someone is restored", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        targetNamespaces = { "app-1" } })))
      stable()
      assert(fake:edit("v1", "ConfigMap", "app-1", "settings", function(cm) cm.data.level = "hacked" end))
      stable()
      assert.equal("info", copy_in("app-1").data.level)
    end)

    it("a copy deleted by someone is recreated", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        targetNamespaces = { "app-1" } })))
      stable()
      assert(fake:delete("v1", "ConfigMap", "app-1", "settings"))
      stable()
      assert.same({ level = "info" }, copy_in("app-1").data)
    end)
  end)

  describe("namespaces", function()
    it("a new matching namespace gets a copy, through the Namespace watch", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        namespaceSelector = { matchLabels = { team = "blue" } } })))
      stable()
      assert(fake:create(namespace("new-blue", { team = "blue" })))
      assert(fake:create(namespace("new-red", { team = "red" })))
      stable()
      assert.same({ "labelled/settings", "new-blue/settings" }, copies())
      assert.same({ "labelled", "new-blue" }, repl().status.syncedNamespaces)
    end)

    it("a namespace that gains the label gets a copy; losing it removes the copy", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        namespaceSelector = { matchLabels = { team = "blue" } } })))
      stable()
      assert(fake:edit("v1", "Namespace", nil, "app-2", function(ns) ns.metadata.labels = { team = "blue" } end))
      stable()
      assert.same({ "app-2/settings", "labelled/settings" }, copies())
      assert(fake:edit("v1", "Namespace", nil, "app-2", function(ns) ns.metadata.labels = { team = "red" } end))
      stable()
      assert.same({ "labelled/settings" }, copies())
      assert.same({ "labelled" }, repl().status.syncedNamespaces)
      assert.equal("deleted copies no longer targeted: app-2/settings", fake:events_with("Removed")[1].message)
    end)

    it("a namespace being deleted drops out of the status once its copy is gone", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        targetNamespaces = { "app-1", "app-2" } })))
      stable()
      -- as the API server does: the namespace lingers (Terminating) while its content is deleted
      assert(fake:edit("v1", "Namespace", nil, "app-2", function(ns) ns.metadata.finalizers = { "kubernetes" } end))
      assert(fake:delete("v1", "Namespace", nil, "app-2"))
      assert(fake:edit_status("v1", "Namespace", nil, "app-2", function(ns) ns.status = { phase = "Terminating" } end))
      assert(fake:delete("v1", "ConfigMap", "app-2", "settings"))
      stable()
      assert.same({ "app-1/settings" }, copies())
      assert.same({ "app-1" }, repl().status.syncedNamespaces)
      assert.is_true(conditions.is_true(repl(), "Ready"))
    end)

    it("a namespace dropped from targetNamespaces loses its copy", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        targetNamespaces = { "app-1", "app-2" } })))
      stable()
      assert(fake:edit(API, KIND, nil, NAME, function(r) r.spec.targetNamespaces = { "app-2" } end))
      stable()
      assert.same({ "app-2/settings" }, copies())
      local r = repl()
      assert.same({ "app-2" }, r.status.syncedNamespaces)
      assert.equal(r.metadata.generation, r.status.observedGeneration)
    end)

    it("a ConfigMap of the same name it did not create is left alone and reported", function()
      assert(fake:create(configmap("app-2", "settings", { mine = "yes" })))
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        targetNamespaces = { "app-1", "app-2" } })))
      stable()
      assert.same({ mine = "yes" }, copy_in("app-2").data)
      local r = repl()
      assert.same({ "app-1" }, r.status.syncedNamespaces)
      assert.is_true(conditions.is_false(r, "Ready"))
      assert.equal("TargetConflict", conditions.get(r, "Ready").reason)
      assert.equal(1, #fake:events_with("TargetConflict"))
      -- deleting the replication leaves the foreign ConfigMap
      assert(fake:delete(API, KIND, nil, NAME))
      stable()
      assert.same({ mine = "yes" }, copy_in("app-2").data)
      assert.is_nil(copy_in("app-1"))
    end)
  end)

  describe("deletion", function()
    it("cleans up every copy across namespaces exactly once, then the finalizer goes", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        targetNamespaces = { "app-1", "app-2" },
                                        namespaceSelector = { matchLabels = { team = "blue" } } })))
      stable()
      assert.equal(3, #copies())
      fake:reset_writes()
      assert(fake:delete(API, KIND, nil, NAME))
      assert.is_not_nil(repl().metadata.deletionTimestamp)
      stable()
      assert.is_nil(repl())
      assert.same({}, copies())
      local deletes = {}
      for _, w in ipairs(fake:writes_matching({ verb = "delete", kind = "ConfigMap" })) do
        local k = w.namespace .. "/" .. w.name
        deletes[k] = (deletes[k] or 0) + 1
      end
      assert.same({ ["app-1/settings"] = 1, ["app-2/settings"] = 1, ["labelled/settings"] = 1 }, deletes)
      local ev = fake:events_with("CleanedUp")
      assert.equal(1, #ev)
      assert.equal("deleted 3 copies of default/settings from app-1, app-2, labelled", ev[1].message)
      assert.same({ level = "info" }, fake:get_object("v1", "ConfigMap", "default", "settings").data)
    end)

    it("a failed copy deletion keeps the finalizer and is retried", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        targetNamespaces = { "app-1" } })))
      stable()
      fake:inject({ verb = "delete", kind = "ConfigMap", name = "settings", code = 500, reason = "InternalError", times = 1 })
      assert(fake:delete(API, KIND, nil, NAME))
      local summary = stable()
      assert.equal("error", testing.kinds(summary)[1])
      assert.is_nil(repl())
      assert.same({}, copies())
      assert.equal(1, #fake:events_with("CleanedUp"))
    end)
  end)

  describe("conflict on the status write", function()
    it("is retried on a fresh read and succeeds", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        targetNamespaces = { "app-1" } })))
      fake:inject_conflict({ verb = "update", subresource = "status", kind = KIND })
      stable()
      local codes = {}
      for _, w in ipairs(fake:writes_matching({ verb = "update", subresource = "status", kind = KIND })) do
        codes[#codes + 1] = w.code
      end
      assert.same({ 409, 200 }, codes)
      local r = repl()
      assert.same({ "app-1" }, r.status.syncedNamespaces)
      assert.is_true(conditions.is_true(r, "Ready"))
      assert.equal(r.metadata.generation, r.status.observedGeneration)
    end)

    it("a spec change racing the status write ends with the status of the new spec", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        targetNamespaces = { "app-1" } })))
      -- another client changes the spec just before our status write
      fake:inject({ verb = "update", subresource = "status", kind = KIND, times = 1, before = function(f)
        assert(f:edit(API, KIND, nil, NAME, function(r) r.spec.targetNamespaces = { "app-1", "app-2" } end))
      end })
      stable()
      local r = repl()
      assert.equal(2, r.metadata.generation)
      assert.equal(2, r.status.observedGeneration)
      assert.same({ "app-1", "app-2" }, r.status.syncedNamespaces)
    end)

    it("the retried status write claims only the generation it was computed from", function()
      assert(fake:create(replication({ source = { namespace = "default", name = "settings" },
                                        targetNamespaces = { "app-1" } })))
      stable()
      assert(fake:edit(API, KIND, nil, NAME, function(r) r.spec.targetNamespaces = { "app-1", "app-2" } end))
      -- while the reconcile of generation 2 writes its status, another client makes generation 3
      fake:inject({ verb = "update", subresource = "status", kind = KIND, times = 1, before = function(f)
        assert(f:edit(API, KIND, nil, NAME, function(r) r.spec.targetNamespaces = { "app-1", "app-2", "labelled" } end))
      end })
      assert.equal("done", testing.reconcile("replicator", { name = NAME }).kind)
      local r = repl()
      assert.equal(3, r.metadata.generation)
      -- the status describes generation 2 and says so: not observedGeneration 3 with a stale list
      assert.same({ "app-1", "app-2" }, r.status.syncedNamespaces)
      assert.equal(2, r.status.observedGeneration)
      assert.equal(2, conditions.get(r, "Ready").observedGeneration)
      stable()
      r = repl()
      assert.equal(3, r.status.observedGeneration)
      assert.same({ "app-1", "app-2", "labelled" }, r.status.syncedNamespaces)
    end)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
