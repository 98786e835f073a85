-- luaop.testing.apiserver() (envtest): the harness itself — options, manifests, the watch made by
-- relisting, the rounds over several controllers, stop. The examples' apiserver_spec.lua files run
-- whole operators on it.
local testing = require("luaop.testing")
local json = require("luaop.core").json

local function crd(kind, plural, scope)
  return {
    apiVersion = "apiextensions.k8s.io/v1", kind = "CustomResourceDefinition",
    metadata = { name = plural .. ".example.com" },
    spec = {
      group = "example.com", scope = scope or "Namespaced",
      names = { kind = kind, plural = plural, singular = kind:lower(), listKind = kind .. "List" },
      versions = json.array({ {
        name = "v1", served = true, storage = true, subresources = { status = json.object() },
        schema = { openAPIV3Schema = { type = "object", ["x-kubernetes-preserve-unknown-fields"] = true } },
      } }),
    },
  }
end

local write_tmp = require("spec.support.fixtures").write_tmp

-- A script set in a temp dir: main.lua with the given source.
local function script_set(src)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir) == 0)
  local f = assert(io.open(dir .. "/main.lua", "w"))
  f:write(src)
  f:close()
  return dir
end

describe("luaop.testing.apiserver options", function()
  local cases = {
    { "opts not a table", 1, "opts must be a table" },
    { "crds not an array", { crds = "x.yaml" }, "opts.crds must be an array of manifest paths" },
    { "manifests not an array", { manifests = "x.yaml" }, "opts.manifests must be an array of manifest paths" },
    { "scripts not a path", { scripts = 3 }, "opts.scripts must be a directory path" },
  }
  for _, c in ipairs(cases) do
    it("a bad option raises naming it: " .. c[1], function()
      local ok, err = pcall(testing.apiserver, c[2])
      assert.is_false(ok)
      assert.matches(c[3], err, 1, true)
    end)
  end

  it("stop is idempotent and later use raises", function()
    local e2 = testing.apiserver()
    e2:stop()
    e2:stop()
    local ok, err = pcall(e2.apply_manifest, e2, {})
    assert.is_false(ok)
    assert.matches("apply_manifest after env:stop()", err, 1, true)
    assert.is_nil(testing.current_fake())
  end)

  it("a manifest that fails to apply names the file and the object, and the server is stopped", function()
    local path = write_tmp("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n")
    local ok, err = pcall(testing.apiserver, { manifests = { path } })
    os.remove(path)
    assert.is_false(ok)
    assert.matches(path .. ": creating ConfigMap Bad_Name: ", err, 1, true)
    assert.is_nil(testing.current_fake())
  end)
end)

describe("luaop.testing.apiserver env", function()
  local env, dir
  setup(function()
    dir = script_set([[
local op = require("luaop")
op.controller {
  name = "widgets",
  for_ = { api_version = "example.com/v1", kind = "Widget" },
  owns = { { api_version = "v1", kind = "ConfigMap" } },
  reconcile = function(req)
    local w, err = op.client.get("example.com/v1", "Widget", req.namespace, req.name)
    if not w then return op.errors.is_not_found(err) and op.result.done() or nil, err end
    local cm = op.client.get("v1", "ConfigMap", req.namespace, req.name)
    local want = tostring(w.spec.size)
    if not cm then
      local c = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = req.name, namespace = req.namespace },
                  data = { size = want } }
      op.owner.set_controller_reference(w, c)
      return select(2, op.client.create(c))
    elseif cm.data.size ~= want then
      return select(2, op.client.patch(cm, { data = { size = want } }))
    end
  end,
}
op.controller {
  name = "stamps",
  for_ = { api_version = "v1", kind = "ConfigMap" },
  reconcile = function(req)
    local cm = op.client.get("v1", "ConfigMap", req.namespace, req.name)
    if cm and cm.data and cm.data.size and (cm.metadata.labels or {}).stamped ~= cm.data.size then
      return select(2, op.client.patch(cm, { metadata = { labels = { stamped = cm.data.size } } }))
    end
  end,
}
]])
    env = testing.apiserver({ crds = { { crd("Widget", "widgets") } }, scripts = dir })
  end)
  teardown(function()
    env:stop()
    os.execute("rm -rf " .. dir)
  end)

  local function widget(name, size)
    return { apiVersion = "example.com/v1", kind = "Widget", metadata = { name = name, namespace = "default" },
             spec = { size = size } }
  end

  it("runs every controller round after round until nothing changes", function()
    env:apply_manifest({ widget("w1", 1) })
    local s = env:run_until_stable()
    local cm = assert(env.client.get("v1", "ConfigMap", "default", "w1"))
    assert.equal("1", cm.data.size)
    assert.equal("1", cm.metadata.labels.stamped)        -- the second controller saw the first's write
    local by = {}
    for _, r in ipairs(s.results) do by[r.controller] = (by[r.controller] or 0) + 1 end
    assert.is_true(by.widgets >= 1 and by.stamps >= 1)
    assert.equal(0, env:run_until_stable().reconciles)  -- stable means stable
  end)

  it("a change by another client is a watch event (relisted from the server)", function()
    local w = assert(env.client.get("example.com/v1", "Widget", "default", "w1"))
    local before = #env.writes
    assert(env.client.patch(w, { spec = { size = 5 } }))
    env:run_until_stable("widgets")
    assert.equal("5", assert(env.client.get("v1", "ConfigMap", "default", "w1")).data.size)
    assert.is_true(#env.writes > before + 1)
  end)

  it("an owned object deleted on the server maps back to its owner", function()
    assert(env.client.delete(assert(env.client.get("v1", "ConfigMap", "default", "w1"))))
    env:run_until_stable()
    assert.equal("5", assert(env.client.get("v1", "ConfigMap", "default", "w1")).data.size)
  end)

  it("requests use the CRD's names.plural (Redis is served as redis, not redises)", function()
    env:apply_manifest({ crd("Redis", "redis") })
    local r = { apiVersion = "example.com/v1", kind = "Redis", metadata = { name = "r1", namespace = "default" } }
    assert(env.client.create(r))
    assert.equal("r1", assert(env.client.get("example.com/v1", "Redis", "default", "r1")).metadata.name)
    local _, err = env.client.get("example.com/v1", "Redis", "default", "r2")
    assert.equal('redis.example.com "r2" not found', err.message)
    assert.equal("redis", err.details.kind)
  end)

end)
-- SPDX-License-Identifier: Apache-2.0
