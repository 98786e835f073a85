-- SPDX-License-Identifier: Apache-2.0
-- Field indexes (op.index, op.client.list{index = ...}): declarations, the field-path values,
-- and the lookups, run as the same cases against luaop.testing's fake and against the local API
-- server (luaop.testing.apiserver(): a live LIST filtered by the host's own field-path evaluator,
-- luaop.core.fieldpath). The host's cache path (host/kube/cache/fieldindex.c through
-- hostapi.c) is held to the same cases by tests/integration/test_fieldindex.py.
local testing = require("luaop.testing")
local op = require("luaop")
local client = require("luaop.client")
local core = require("luaop.core")
local json = core.json

local AV, KIND = "apps/v1", "Deployment"
local FIELD = "spec.template.spec.volumes[*].secret.secretName"

-- A Deployment in ns whose pod template mounts the Secrets named in secrets.
local function deploy(ns, name, secrets, labels)
  local vols = json.array()
  for i, s in ipairs(secrets) do vols[i] = { name = "v" .. i, secret = { secretName = s } } end
  return {
    apiVersion = AV, kind = KIND,
    metadata = { namespace = ns, name = name, labels = labels or { app = name } },
    spec = {
      replicas = #secrets,
      selector = { matchLabels = { app = name } },
      template = {
        metadata = { labels = { app = name } },
        spec = { containers = json.array({ { name = "c", image = "busybox" } }), volumes = vols },
      },
    },
  }
end

local function names(items)
  local out = {}
  for i, o in ipairs(items) do out[i] = o.metadata.namespace .. "/" .. o.metadata.name end
  return out
end

-- A Lua extract function: the Secrets named by the containers' env (valueFrom.secretKeyRef), and
-- the tier label as a number when it is one; raises on an object labelled explode=yes (which is
-- then left out of the index, in the host and in the fake).
local function env_secrets(d)
  if d.metadata.labels and d.metadata.labels.explode == "yes" then error("boom") end
  local out = {}
  for _, c in ipairs(d.spec.template.spec.containers or {}) do
    for _, e in ipairs(c.env or {}) do
      local ref = e.valueFrom and e.valueFrom.secretKeyRef
      if ref then out[#out + 1] = ref.name end
    end
  end
  if d.metadata.labels and tonumber(d.metadata.labels.tier) then out[#out + 1] = tonumber(d.metadata.labels.tier) end
  return out
end

local function declare()
  op.index({ name = "secretRef", api_version = AV, kind = KIND, field = FIELD })
  op.index({ name = "replicas", api_version = AV, kind = KIND, field = "spec.replicas" })
  op.index({ name = "envSecret", api_version = AV, kind = KIND, extract = env_secrets })
  op.controller({ name = "deploys", for_ = { api_version = AV, kind = KIND }, reconcile = function() end })
end

-- The cases both backends run (objects created by `seed`).
local function with_env(d, secret)
  d.spec.template.spec.containers[1].env = json.array({
    { name = "K", valueFrom = { secretKeyRef = { name = secret, key = "k" } } }, { name = "PLAIN", value = "x" } })
  return d
end

local function seed()
  assert(client.create(with_env(deploy("a", "web", { "db-creds", "tls" }), "api-key")))
  assert(client.create(deploy("a", "api", { "db-creds", "db-creds" }, { app = "api", tier = "back" })))
  assert(client.create(deploy("a", "cache", { "other" }, { app = "cache", tier = "7" })))
  assert(client.create(with_env(deploy("b", "web", { "db-creds" }), "api-key")))
  assert(client.create(with_env(deploy("b", "bad", {}, { app = "bad", explode = "yes" }), "api-key")))
end

local cases = {
  { "within the namespace asked for", function()
      assert.same({ "a/api", "a/web" }, names(assert(client.list(AV, KIND, "a", { index = { secretRef = "db-creds" } }))))
      assert.same({ "b/web" }, names(assert(client.list(AV, KIND, "b", { index = { secretRef = "db-creds" } }))))
    end },
  { "across all namespaces (namespace nil), sorted by namespace/name", function()
      assert.same({ "a/api", "a/web", "b/web" },
        names(assert(client.list(AV, KIND, nil, { index = { secretRef = "db-creds" } }))))
    end },
  { "the opts table as the third argument, namespace in it", function()
      assert.same({ "a/web" }, names(assert(client.list(AV, KIND, { namespace = "a", index = { secretRef = "tls" } }))))
    end },
  { "an object listing a value twice is returned once", function()
      local got = names(assert(client.list(AV, KIND, "a", { index = { secretRef = "db-creds" } })))
      assert.equal(2, #got)
    end },
  { "a value nobody carries: an empty JSON array", function()
      local got = assert(client.list(AV, KIND, "a", { index = { secretRef = "nope" } }))
      assert.equal(0, #got)
      assert.equal("[]", json.encode(got))
    end },
  { "scalars as strings: a number matches its decimal form, given as a string or a number", function()
      assert.same({ "a/api", "a/web" }, names(assert(client.list(AV, KIND, "a", { index = { replicas = "2" } }))))
      assert.same({ "a/api", "a/web" }, names(assert(client.list(AV, KIND, "a", { index = { replicas = 2 } }))))
      assert.same({ "a/cache" }, names(assert(client.list(AV, KIND, "a", { index = { replicas = 1 } }))))
    end },
  { "with a label selector: both must match", function()
      assert.same({ "a/api" }, names(assert(client.list(AV, KIND, "a",
        { index = { secretRef = "db-creds" }, label_selector = "tier=back" }))))
    end },
  { "an unknown index raises naming it and the declared ones", function()
      local ok, err = pcall(client.list, AV, KIND, "a", { index = { secretref = "x" } })
      assert.is_false(ok)
      assert.matches("apps/v1 Deployment has no index 'secretref' (declared: 'secretRef', 'replicas', 'envSecret')",
        err, 1, true)
    end },
  { "an extract function's values; an object whose extract raises is left out", function()
      assert.same({ "a/web", "b/web" }, names(assert(client.list(AV, KIND, nil, { index = { envSecret = "api-key" } }))))
      assert.same({ "a/cache" }, names(assert(client.list(AV, KIND, "a", { index = { envSecret = 7 } }))))
      assert.same({}, names(assert(client.list(AV, KIND, "b", { index = { envSecret = "x" } }))))
    end },
  { "an index option of another shape raises", function()
      assert.has_error(function() client.list(AV, KIND, "a", { index = {} }) end,
        "luaop.client.list: index must name exactly one index ({secretRef = \"db-creds\"})")
      assert.has_error(function() client.list(AV, KIND, "a", { index = { secretRef = "x", replicas = "1" } }) end,
        "luaop.client.list: index must name exactly one index ({secretRef = \"db-creds\"})")
      assert.has_error(function() client.list(AV, KIND, "a", { index = { secretRef = {} } }) end,
        "luaop.client.list: index 'secretRef' value must be a string, not a table")
    end },
}

describe("field index lookups: luaop.testing fake", function()
  before_each(function()
    testing.new()
    declare()
    seed()
  end)
  after_each(function() testing.reset() end)
  for _, c in ipairs(cases) do it(c[1], c[2]) end

  it("an update that moves a value moves the object (computed at read time)", function()
    local w = assert(client.get(AV, KIND, "a", "web"))
    w.spec.template.spec.volumes[1].secret.secretName = "rotated"
    assert(client.update(w))
    assert.same({ "a/api" }, names(assert(client.list(AV, KIND, "a", { index = { secretRef = "db-creds" } }))))
    assert.same({ "a/web" }, names(assert(client.list(AV, KIND, "a", { index = { secretRef = "rotated" } }))))
  end)
end)

describe("field index lookups: local API server", function()
  local env
  setup(function()
    env = testing.apiserver({})
    declare()
    for _, ns in ipairs({ "a", "b" }) do
      assert(client.create({ apiVersion = "v1", kind = "Namespace", metadata = { name = ns } }))
    end
    seed()
  end)
  teardown(function() env:stop() end)
  for _, c in ipairs(cases) do it(c[1], c[2]) end
end)

describe("op.index declarations", function()
  before_each(function() testing.new() end)
  after_each(function() testing.reset() end)

  local base = { name = "secretRef", api_version = AV, kind = KIND, field = FIELD }
  local function with(over)
    local d = {}
    for k, v in pairs(base) do d[k] = v end
    for k, v in pairs(over) do d[k] = v end
    return d
  end
  local bad = {
    { "unknown key, with a hint", with({ path = "x" }), "op.index: unknown field 'path' (did you mean 'field'?)" },
    { "both field and extract", with({ extract = function() end }),
      "op.index 'secretRef': declare either field (a path) or extract (a function), not both" },
    { "extract not a function", { name = "e", api_version = AV, kind = KIND, extract = "x" },
      "op.index 'e': declare either field (a path) or extract (a function), not both" },
    { "empty name", with({ name = "" }), "op.index: name must be a non-empty string" },
    { "kind not a Kind", with({ kind = "deployment" }), "op.index 'secretRef': kind must be a Kind name" },
    { "no field", with({ field = "" }), "op.index 'secretRef': field must be a field path" },
    { "a path that does not compile", with({ field = "spec..x" }),
      "op.index 'secretRef': field path \"spec..x\": empty member at 5" },
    { "an unterminated subscript", with({ field = "spec.volumes[*" }),
      "op.index 'secretRef': field path \"spec.volumes[*\": '[*' without ']' at 12" },
  }
  for _, c in ipairs(bad) do
    it("raises: " .. c[1], function()
      local ok, err = pcall(op.index, c[2])
      assert.is_false(ok)
      assert.matches(c[3], err, 1, true)
    end)
  end

  it("raises on a name declared twice for the kind; the same name on another kind is fine", function()
    op.index(base)
    local ok, err = pcall(op.index, base)
    assert.is_false(ok)
    assert.matches("op.index 'secretRef': declared twice for apps/v1 Deployment", err, 1, true)
    op.index(with({ api_version = "apps/v1", kind = "StatefulSet" }))
  end)

  it("errors point at the caller's line", function()
    local ok, err = pcall(function() op.index(with({ kind = 1 })) end)
    assert.is_false(ok)
    assert.matches("fieldindex_spec.lua:%d+: op.index 'secretRef': kind", err)
  end)

  it("may not be called in a reconcile", function()
    op.controller({ name = "late", for_ = { api_version = AV, kind = KIND }, reconcile = function()
      op.index(with({ name = "late" }))
    end })
    assert(client.create(deploy("a", "web", {})))
    local res = testing.reconcile("late", { namespace = "a", name = "web" })
    assert.equal("error", res.kind)
    assert.matches("op.index may only be called while main.lua loads", res.err.message, 1, true)
  end)

  it("a script set whose index is on a kind no controller watches in full fails to load", function()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. dir)
    local f = assert(io.open(dir .. "/main.lua", "w"))
    f:write([[
local op = require("luaop")
op.index({ name = "secretRef", api_version = "apps/v1", kind = "Deployment", field = "spec.x" })
op.controller({ name = "meta", for_ = { api_version = "apps/v1", kind = "Deployment", metadata_only = true },
  reconcile = function() end })
]])
    f:close()
    local ok, err = pcall(testing.load, dir)
    os.remove(dir .. "/main.lua")
    os.remove(dir)
    assert.is_false(ok)
    assert.matches("op.index 'secretRef': no controller watches apps/v1 Deployment in full", err, 1, true)
  end)
end)

describe("luaop.core.fieldpath (the host's evaluator)", function()
  local obj = deploy("a", "web", { "db-creds", "tls" })
  obj.metadata.labels["app.kubernetes.io/name"] = "web"
  obj.spec.paused = false
  local paths = {
    { FIELD, { "db-creds", "tls" } },
    { "spec.template.spec.volumes[1].secret.secretName", { "tls" } },
    { "metadata.labels['app.kubernetes.io/name']", { "web" } },
    { "spec.replicas", { "2" } },
    { "spec.paused", { "false" } },
    { "spec.template", {} },
    { "spec.absent[*].x", {} },
  }
  for _, c in ipairs(paths) do
    it(c[1], function() assert.same(c[2], core.fieldpath(c[1], obj)) end)
  end
  it("takes JSON text too", function()
    assert.same({ "1", "x" }, core.fieldpath("a[*]", '{"a":[1,"x",null,{}]}'))
  end)
end)

describe("a watches map function finds the objects that reference a Secret through the index", function()
  before_each(function() testing.new() end)
  after_each(function() testing.reset() end)

  it("enqueues the Deployments that mount the Secret, in its namespace only", function()
    local seen = {}
    op.index({ name = "secretRef", api_version = AV, kind = KIND, field = FIELD })
    op.controller({
      name = "secret-users",
      for_ = { api_version = AV, kind = KIND },
      watches = { { api_version = "v1", kind = "Secret", map = function(secret)
        local reqs = {}
        local ds = assert(client.list(AV, KIND, secret.metadata.namespace,
          { index = { secretRef = secret.metadata.name } }))
        for i, d in ipairs(ds) do reqs[i] = { namespace = d.metadata.namespace, name = d.metadata.name } end
        return reqs
      end } },
      reconcile = function(req) seen[#seen + 1] = req.namespace .. "/" .. req.name end,
    })
    assert(client.create(deploy("a", "web", { "db-creds" })))
    assert(client.create(deploy("a", "other", { "tls" })))
    assert(client.create(deploy("b", "web", { "db-creds" })))
    testing.run_until_stable("secret-users")
    seen = {}
    assert(client.create({ apiVersion = "v1", kind = "Secret", metadata = { namespace = "a", name = "db-creds" } }))
    testing.run_until_stable("secret-users")
    assert.same({ "a/web" }, seen)
  end)
end)
