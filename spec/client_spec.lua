local testing = require("luaop.testing")
local client = require("luaop.client")
local errors = require("luaop.errors")
local json = require("luaop.core").json
local fx = require("spec.support.fixtures")

describe("luaop.client", function()
  local fake
  before_each(function() fake = testing.new() end)

  describe("create / get", function()
    it("creates, assigns uid/resourceVersion/generation and reads back", function()
      local w = assert(client.create(fx.widget("a")))
      assert.is_string(w.metadata.uid)
      assert.equal(1, w.metadata.generation)
      assert.same(w, assert(client.get(fx.AV, fx.KIND, "default", "a")))
    end)

    it("strips a resourceVersion before POST and never modifies its argument", function()
      local src = fx.widget("a")
      src.metadata.resourceVersion = "42"
      assert(client.create(src))
      assert.equal("42", src.metadata.resourceVersion)
      assert.is_nil(src.metadata.uid)
    end)

    it("tables are never shared between the caller and the store", function()
      local src = fx.widget("a")
      local w = assert(client.create(src))
      src.spec.size = 50
      w.spec.size = 60
      assert.equal(1, fake:get_object(fx.AV, fx.KIND, "default", "a").spec.size)
      local u = assert(client.update(assert(client.get(fx.AV, fx.KIND, "default", "a"))))
      u.spec.items[1] = "x"
      assert.equal("[]", json.encode(fake:get_object(fx.AV, fx.KIND, "default", "a").spec.items))
    end)

    it("AlreadyExists as a metav1.Status-shaped error", function()
      assert(client.create(fx.widget("a")))
      local res, err = client.create(fx.widget("a"))
      assert.is_nil(res)
      assert.equal(409, err.code)
      assert.equal("AlreadyExists", err.reason)
      assert.equal('widgets.example.com "a" already exists', err.message)
      assert.same({ name = "a", group = "example.com", kind = "widgets" }, err.details)
      assert.is_true(errors.is_already_exists(err))
    end)

    it("NotFound", function()
      local res, err = client.get(fx.AV, fx.KIND, "default", "missing")
      assert.is_nil(res)
      assert.is_true(errors.is_not_found(err))
      assert.equal('widgets.example.com "missing" not found', err.message)
    end)

    it("[] and null round-trip through create and get", function()
      local o = fx.widget("a")
      o.spec.list = json.array({ json.null, 1 })
      local back = assert(client.get(fx.AV, fx.KIND, "default", (assert(client.create(o))).metadata.name))
      assert.equal('[]', json.encode(back.spec.items))
      assert.equal('[null,1]', json.encode(back.spec.list))
    end)
  end)

  describe("list", function()
    it("filters by namespace and label selector", function()
      assert(client.create(fx.widget("a")))
      local b = fx.widget("b"); b.metadata.labels = { app = "other" }
      assert(client.create(b))
      local c = fx.widget("c"); c.metadata.namespace = "prod"
      assert(client.create(c))
      assert.equal(3, #assert(client.list(fx.AV, fx.KIND)))
      assert.equal(2, #assert(client.list(fx.AV, fx.KIND, "default")))
      local l = assert(client.list(fx.AV, fx.KIND, nil, { label_selector = "app=demo" }))
      assert.equal(2, #l)
      assert.equal(1, #assert(client.list(fx.AV, fx.KIND, "default", "app notin (demo)")))
    end)
    it("an empty result is an empty array", function()
      assert.equal("[]", json.encode(assert(client.list(fx.AV, fx.KIND, "default"))))
    end)
  end)

  describe("update", function()
    it("bumps resourceVersion and generation on spec change", function()
      local w = assert(client.create(fx.widget("a")))
      w.spec.size = 2
      local u = assert(client.update(w))
      assert.are_not.equal(w.metadata.resourceVersion, u.metadata.resourceVersion)
      assert.equal(2, u.metadata.generation)
    end)
    it("409 Conflict on a stale resourceVersion", function()
      local w = assert(client.create(fx.widget("a")))
      local first = assert(client.update((function() local c = require("luaop.object").deep_copy(w); c.spec.size = 5; return c end)()))
      assert.is_truthy(first)
      w.spec.size = 9
      local res, err = client.update(w)
      assert.is_nil(res)
      assert.is_true(errors.is_conflict(err))
    end)
    it("a custom resource needs a resourceVersion (422)", function()
      local w = assert(client.create(fx.widget("a")))
      w.metadata.resourceVersion = nil
      local _, err = client.update(w)
      assert.equal(422, err.code)
    end)
  end)

  describe("patch", function()
    local w
    before_each(function() w = assert(client.create(fx.widget("a"))) end)

    it("merge (default): null deletes, arrays replace", function()
      local p = assert(client.patch(w, { spec = { size = json.null, items = json.array({ "x" }) } }))
      assert.is_nil(p.spec.size)
      assert.same({ "x" }, p.spec.items)
    end)
    it("json: a failed test is 422 Invalid", function()
      local ok = assert(client.patch(w, json.array({ { op = "replace", path = "/spec/size", value = 3 } }), "json"))
      assert.equal(3, ok.spec.size)
      local res, err = client.patch(w, json.array({ { op = "test", path = "/spec/size", value = 1 } }), "json")
      assert.is_nil(res)
      assert.is_true(errors.is_invalid(err))
    end)
    it("strategic on a custom resource is 415", function()
      local _, err = client.patch(w, { spec = { size = 2 } }, "strategic")
      assert.equal(415, err.code)
    end)
    it("a patch carrying a stale resourceVersion conflicts", function()
      assert(client.patch(w, { spec = { size = 2 } }))
      local _, err = client.patch(w, { metadata = { resourceVersion = w.metadata.resourceVersion }, spec = { size = 3 } })
      assert.is_true(errors.is_conflict(err))
    end)
    it("the main endpoint ignores status; patch_status writes only status", function()
      local p = assert(client.patch(w, { status = { x = 1 } }))
      assert.is_nil(p.status)
      local s = assert(client.patch_status(w, { status = { x = 1 }, spec = { size = 99 } }))
      assert.equal(1, s.status.x)
      assert.equal(1, s.spec.size)
      assert.equal(1, s.metadata.generation)
    end)
  end)

  describe("apply", function()
    it("creates when missing, then merges, with the field manager on the query", function()
      local o = fx.widget("ap")
      assert(client.apply(o, { field_manager = "my-op" }))
      o.spec.size = 4
      local r = assert(client.apply(o, { field_manager = "my-op", force = true }))
      assert.equal(4, r.spec.size)
      assert.equal("fieldManager=my-op&force=true", fake.writes[2].query)
    end)
    it("needs a field manager", function()
      assert.has_error(function() client.apply(fx.widget("x"), {}) end)
      assert.has_error(function() client.apply(fx.widget("x")) end)
    end)
  end)

  describe("delete", function()
    it("deletes; a second delete is NotFound", function()
      local w = assert(client.create(fx.widget("a")))
      assert.is_true(client.delete(w))
      local _, err = client.delete(w)
      assert.is_true(errors.is_not_found(err))
    end)
    it("with finalizers the object lingers with deletionTimestamp", function()
      local o = fx.widget("a")
      o.metadata.finalizers = json.array({ "x/y" })
      local w = assert(client.create(o))
      assert.is_true(client.delete(w))
      local g = assert(client.get(fx.AV, fx.KIND, "default", "a"))
      assert.is_string(g.metadata.deletionTimestamp)
      assert.equal(2, g.metadata.generation)
    end)
    it("a uid precondition mismatch conflicts", function()
      local w = assert(client.create(fx.widget("a")))
      local _, err = client.delete(w, { preconditions = { uid = "nope" } })
      assert.is_true(errors.is_conflict(err))
    end)
  end)

  describe("misuse raises", function()
    local cases = {
      { "get without name", function() client.get(fx.AV, fx.KIND, "default") end },
      { "get with a numeric kind", function() client.get(fx.AV, 1, "default", "a") end },
      { "create a non-table", function() client.create("x") end },
      { "create without kind", function() client.create({ apiVersion = "v1", metadata = { name = "a" } }) end },
      { "create without a name", function() client.create({ apiVersion = "v1", kind = "ConfigMap", metadata = {} }) end },
      { "update without metadata", function() client.update({ apiVersion = "v1", kind = "ConfigMap" }) end },
      { "unknown patch type", function() client.patch(fx.widget("a"), {}, "xml") end },
      { "json patch that is not an array", function() client.patch(fx.widget("a"), { op = "add" }, "json") end },
      { "force on a merge patch", function() client.patch(fx.widget("a"), {}, { type = "merge", force = true }) end },
      { "bad propagation policy", function() client.delete(fx.widget("a"), { propagation_policy = "Now" }) end },
      { "list with a bad selector", function() client.list(fx.AV, fx.KIND, nil, "a in (") end },
    }
    for _, c in ipairs(cases) do
      it(c[1], function() assert.has_error(c[2]) end)
    end

    it("get names the bad argument, at the caller's line", function()
      local bad = {
        { "api_version must be a non-empty string", { "", fx.KIND, "default", "a" } },
        { "api_version must be a non-empty string", { nil, fx.KIND, "default", "a" } },
        { "kind must be a non-empty string", { fx.AV, {}, "default", "a" } },
        { "namespace must be a non-empty string", { fx.AV, fx.KIND, "", "a" } },
        { "namespace must be a non-empty string", { fx.AV, fx.KIND, 7, "a" } },
        { "name must be a non-empty string", { fx.AV, fx.KIND, nil, "" } },
        { "opts must be a table", { fx.AV, fx.KIND, "default", "a", "live" } },
      }
      for _, b in ipairs(bad) do
        local a = b[2]
        local ok, msg = pcall(function() client.get(a[1], a[2], a[3], a[4], a[5]) end)
        assert.is_false(ok)
        assert.matches("client_spec%.lua:%d+: luaop%.client%.get: " .. b[1]:gsub("%-", "%%-"), msg)
      end
      -- the first bad argument is the one reported
      local _, msg = pcall(function() client.get("", 1, "", "") end)
      assert.matches("api_version must", msg)
    end)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
