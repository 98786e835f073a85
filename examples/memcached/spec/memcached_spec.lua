-- The memcached reconciler driven through luaop.testing: create, scale, drift, deletion with
-- finalizer, Deployment deleted by someone, conflict on the status write.
local testing = require("luaop.testing")
local conditions = require("luaop.conditions")

local API, KIND = "cache.example.com/v1", "Memcached"
local NS, NAME = "default", "memcached-sample"
-- scripts/ next to this spec directory, wherever busted runs from
local EXAMPLE = debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$") or "."
local SCRIPTS = EXAMPLE .. "/scripts"

local function sample(size)
  return { apiVersion = API, kind = KIND, metadata = { name = NAME, namespace = NS }, spec = { replicas = size } }
end

describe("memcached example", function()
  local fake

  local function memcached() return fake:get_object(API, KIND, NS, NAME) end
  local function deployment() return fake:get_object("apps/v1", "Deployment", NS, NAME) end
  -- The Deployment controller the fake does not run: report every replica ready.
  local function deployment_becomes_ready()
    local d = deployment()
    assert(fake:edit_status("apps/v1", "Deployment", NS, NAME, function(o)
      o.status = { observedGeneration = d.metadata.generation, replicas = d.spec.replicas,
                   updatedReplicas = d.spec.replicas, readyReplicas = d.spec.replicas,
                   availableReplicas = d.spec.replicas }
    end))
  end

  before_each(function()
    fake = testing.new()
    testing.apply_manifest(EXAMPLE .. "/crd/cache.example.com_memcacheds.yaml")
    local specs = testing.load(SCRIPTS)
    assert.equal(1, #specs)
    assert.equal("memcached", specs[1].name)
  end)

  it("reconciles the shipped sample", function()
    local created = testing.apply_manifest(EXAMPLE .. "/samples/memcached.yaml")
    assert.equal(NAME, created[1].metadata.name)
    testing.run_until_stable("memcached")
    assert.equal(created[1].spec.replicas, deployment().spec.replicas)
  end)

  describe("create", function()
    it("adds the finalizer, creates an owned Deployment with size replicas and labels", function()
      assert(fake:create(sample(3)))
      testing.run_until_stable("memcached")
      local m, d = memcached(), deployment()
      assert.same({ "cache.example.com/finalizer" }, m.metadata.finalizers)
      assert.is_not_nil(d)
      assert.equal(3, d.spec.replicas)
      assert.equal("memcached", d.spec.template.spec.containers[1].name)
      assert.matches("^memcached:", d.spec.template.spec.containers[1].image)
      assert.equal(NAME, d.metadata.labels["app.kubernetes.io/instance"])
      assert.equal("memcached", d.spec.selector.matchLabels["app.kubernetes.io/name"])
      local ref = d.metadata.ownerReferences[1]
      assert.same({ apiVersion = API, kind = KIND, name = NAME, uid = m.metadata.uid,
                    controller = true, blockOwnerDeletion = true }, ref)
      assert.equal(1, #fake:events_with("Created"))
    end)

    it("reports Progressing until the Deployment is ready, then Available with observedGeneration", function()
      assert(fake:create(sample(2)))
      testing.run_until_stable("memcached")
      local m = memcached()
      assert.is_true(conditions.is_false(m, "Available"))
      assert.is_true(conditions.is_true(m, "Progressing"))
      assert.is_true(conditions.is_false(m, "Degraded"))
      deployment_becomes_ready()
      testing.run_until_stable("memcached")
      m = memcached()
      assert.is_true(conditions.is_true(m, "Available"))
      assert.is_true(conditions.is_false(m, "Progressing"))
      assert.equal(m.metadata.generation, m.status.observedGeneration)
      assert.equal(m.metadata.generation, conditions.get(m, "Available").observedGeneration)
    end)

    it("reaches a steady state: a further reconcile writes nothing", function()
      assert(fake:create(sample(1)))
      testing.run_until_stable("memcached")
      deployment_becomes_ready()
      testing.run_until_stable("memcached")
      fake:reset_writes()
      local r = testing.reconcile("memcached", { namespace = NS, name = NAME })
      assert.equal("done", r.kind)
      assert.same({}, fake.writes)
    end)
  end)

  describe("scale", function()
    it("follows spec.replicas and bumps observedGeneration", function()
      assert(fake:create(sample(1)))
      testing.run_until_stable("memcached")
      assert(fake:edit(API, KIND, NS, NAME, function(o) o.spec.replicas = 4 end))
      testing.run_until_stable("memcached")
      assert.equal(4, deployment().spec.replicas)
      local m = memcached()
      assert.equal(2, m.metadata.generation)
      assert.equal(2, m.status.observedGeneration)
      assert.equal(1, #fake:events_with("Scaled"))
    end)

    it("restores replicas when someone edits the Deployment", function()
      assert(fake:create(sample(2)))
      testing.run_until_stable("memcached")
      assert(fake:edit("apps/v1", "Deployment", NS, NAME, function(d) d.spec.replicas = 7 end))
      testing.run_until_stable("memcached")
      assert.equal(2, deployment().spec.replicas)
      assert.equal("Deployment memcached-sample scaled from 7 to 2 replicas", fake:events_with("Scaled")[1].message)
    end)

    it("a label-only edit of the Deployment is restored without a Scaled event", function()
      assert(fake:create(sample(2)))
      testing.run_until_stable("memcached")
      assert(fake:edit("apps/v1", "Deployment", NS, NAME, function(d)
        d.metadata.labels["app.kubernetes.io/managed-by"] = "someone"
      end))
      testing.run_until_stable("memcached")
      assert.equal("luaop", deployment().metadata.labels["app.kubernetes.io/managed-by"])
      assert.same({}, fake:events_with("Scaled"))
    end)

    it("rejects an invalid size as a terminal error with Degraded=True", function()
      assert(fake:create(sample(-1)))
      local summary = testing.run_until_stable("memcached")
      assert.equal("terminal", summary.results[#summary.results].kind)
      assert.is_true(conditions.is_true(memcached(), "Degraded"))
      assert.equal("InvalidSize", conditions.get(memcached(), "Degraded").reason)
      assert.is_nil(deployment())
    end)
  end)

  describe("Deployment deleted by someone", function()
    it("is recreated", function()
      assert(fake:create(sample(2)))
      testing.run_until_stable("memcached")
      local old_uid = deployment().metadata.uid
      assert(fake:delete("apps/v1", "Deployment", NS, NAME))
      assert.is_nil(deployment())
      testing.run_until_stable("memcached")
      assert.is_not_nil(deployment())
      assert.are_not.equal(old_uid, deployment().metadata.uid)
      assert.equal(2, deployment().spec.replicas)
    end)
  end)

  describe("deletion with finalizer", function()
    it("runs cleanup once, removes the finalizer, and the Deployment is garbage-collected", function()
      assert(fake:create(sample(1)))
      testing.run_until_stable("memcached")
      assert(fake:delete(API, KIND, NS, NAME))
      assert.is_not_nil(memcached().metadata.deletionTimestamp) -- lingers: finalizer present
      testing.run_until_stable("memcached")
      assert.is_nil(memcached())
      assert.is_nil(deployment())
      assert.equal(1, #fake:events_with("Deleting"))
    end)
  end)

  describe("conflict on the status write", function()
    it("is retried and succeeds", function()
      assert(fake:create(sample(1)))
      fake:inject_conflict({ verb = "update", subresource = "status", kind = KIND })
      testing.run_until_stable("memcached")
      local conflicts = 0
      for _, w in ipairs(fake:writes_matching({ verb = "update", subresource = "status" })) do
        if w.code == 409 then conflicts = conflicts + 1 end
      end
      assert.equal(1, conflicts)
      local m = memcached()
      assert.is_true(conditions.is_false(m, "Degraded"))
      assert.equal(m.metadata.generation, m.status.observedGeneration)
    end)

    it("an injected 409 on every attempt fails the reconcile, which is retried with backoff", function()
      assert(fake:create(sample(1)))
      fake:inject({ verb = "update", subresource = "status", kind = KIND, code = 409, reason = "Conflict", times = 5 })
      local summary = testing.run_until_stable("memcached")
      local kinds = testing.kinds(summary)
      assert.equal("error", kinds[1])
      assert.equal("done", kinds[#kinds])
      assert.is_true(conditions.is_false(memcached(), "Degraded"))
    end)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
