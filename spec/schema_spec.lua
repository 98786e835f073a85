-- SPDX-License-Identifier: Apache-2.0
-- luaop.core.schema and the fake's CRD validation (issue 23 part 2): the fake validates, defaults
-- and prunes custom resources with the local API server's own validator, so a spec gets the 422
-- causes the server gives. Each case is run against the fake and against luaop.testing.apiserver()
-- (the real local server) and the answers compared.
local testing = require("luaop.testing")
local core = require("luaop.core")

local CRD = "spec/support/crds/widgets.yaml"
local API, KIND, NS = "toys.example.com/v1", "Widget", "default"

-- A plain copy (no array/object markers), so fake and server answers compare by value.
local function plain(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = plain(x) end
  return out
end

local function widget(name, spec)
  return { apiVersion = API, kind = KIND, metadata = { name = name, namespace = NS }, spec = spec }
end

-- The server reports causes in the member order of the body it gets; the fake's validator sorts
-- the members, so the server is sent them sorted too.
local function encode(v) return core.json.encode(v, { sort_keys = true }) end

local function crd_doc() return testing.read_manifest(CRD)[1] end

describe("luaop.core.schema", function()
  it("compiles every version of a CRD, given as a table or as JSON text", function()
    assert.same({ "v1", "v1beta1" }, plain(core.schema.compile(crd_doc()):versions()))
    assert.same({ "v1", "v1beta1" }, plain(core.schema.compile(core.json.encode(crd_doc())):versions()))
  end)

  it("returns no causes, the defaulted and pruned object and the pruned paths for a valid object", function()
    local v = core.schema.compile(crd_doc())
    local obj = widget("w", { size = 2, color = "red", junk = 1 })
    obj.metadata.bogus = "x"
    local causes, result, pruned = v:validate(obj)
    assert.same({}, plain(causes))
    assert.same({ size = 2, color = "red", minSize = 0, enabled = true }, plain(result.spec))
    assert.is_nil(result.metadata.bogus)
    table.sort(pruned)
    assert.same({ "metadata.bogus", "spec.junk" }, plain(pruned))
    assert.equal(1, obj.spec.junk, "the argument is not modified")
  end)

  it("lists every cause as the API server words it", function()
    local v = core.schema.compile(crd_doc())
    local causes = v:validate(widget("w", { size = 11, color = "pink" }))
    local fields = {}
    for i, c in ipairs(causes) do fields[i] = c.field .. " " .. c.reason end
    assert.same({ "spec.color FieldValueNotSupported", "spec.size FieldValueInvalid" }, fields)
    assert.matches("should be less than or equal to 10", causes[2].message, 1, true)
  end)

  it("evaluates transition and CEL rules with the old object", function()
    local v = core.schema.compile(crd_doc())
    local causes = v:validate(widget("w", { size = 1, minSize = 3, color = "red" }))
    assert.equal(1, #causes)
    assert.equal("spec", causes[1].field)
    assert.matches("size must be at least minSize", causes[1].message, 1, true)
  end)

  local misuse = {
    { "not a CRD", function() core.schema.compile({ kind = "ConfigMap" }) end, "not a CustomResourceDefinition" },
    { "an object of another group", function()
      core.schema.compile(crd_doc()):validate({ apiVersion = "other.example.com/v1", kind = KIND })
    end, "is not of group toys.example.com" },
    { "a version the CRD lacks", function()
      core.schema.compile(crd_doc()):validate({ apiVersion = "toys.example.com/v9", kind = KIND })
    end, "no schema for toys.example.com/v9" },
    { "obj not a table", function() core.schema.compile(crd_doc()):validate("x") end, "table expected" },
  }
  for _, c in ipairs(misuse) do
    it("raises on misuse: " .. c[1], function()
      local ok, err = pcall(c[2])
      assert.is_false(ok)
      assert.matches(c[3], err, 1, true)
    end)
  end
end)

describe("the fake validates custom resources as the API server does", function()
  local fake, env

  before_each(function()
    fake = testing.new()
    testing.apply_manifest(CRD)
    env = testing.apiserver({ crds = { CRD } }) -- installs its own fake and backend; ours stays usable
  end)
  after_each(function()
    env:stop()
    testing.reset()
  end)

  -- The same request against both: returns the fake's and the server's (code, body-or-error).
  local function both(verb, name, sub, pt, body)
    local fc, fr = fake:request(verb, API, KIND, NS, name, sub, pt, nil, body)
    local sc, sr = env.rest:request(verb, API, KIND, NS, name, sub, pt, nil, body and encode(body) or nil)
    return { code = fc or fr.code, body = fr }, { code = sc or sr.code, body = sr }
  end

  local function same_causes(f, s)
    assert.equal(422, s.code)
    assert.equal(422, f.code)
    assert.equal("Invalid", f.body.reason)
    assert.same(plain(s.body.details.causes), plain(f.body.details.causes))
    assert.same(plain(s.body.details), plain(f.body.details))
    assert.equal(s.body.message, f.body.message)
  end

  local invalid_creates = {
    { "a missing required field and an enum", { size = 1 } },
    { "a type error and a bound", { size = "big", color = "red", minSize = -1, ratio = "x" } },
    { "a pattern, a length, too many items", { size = 1, color = "red", name = "Abcdefghij", tags = { "a", "b", "c", "d" } } },
    { "a required field of an array item and a map value's type", { size = 1, color = "blue", parts = { { weight = 1 } },
                                                                     labels = { a = 1 } } },
    { "a CEL rule", { size = 1, minSize = 2, color = "green" } },
    { "int-or-string given a boolean, nested types", { size = 1, color = "red", port = true, box = { inner = { depth = "x" } } } },
  }
  for _, c in ipairs(invalid_creates) do
    it("create: " .. c[1] .. " gets the server's 422 causes", function()
      same_causes(both("create", nil, nil, nil, widget("w", c[2])))
    end)
  end

  it("create: defaults and pruning give the same stored object", function()
    local f, s = both("create", nil, nil, nil, widget("w", { size = 3, color = "red", junk = { x = 1 },
                                                              extra = { anything = { 1, 2 } } }))
    assert.equal(201, f.code)
    assert.equal(201, s.code)
    assert.same(plain(s.body.spec), plain(f.body.spec))
  end)

  describe("on existing objects", function()
    before_each(function()
      local f, s = both("create", nil, nil, nil, widget("w", { size = 3, color = "red" }))
      assert.equal(201, f.code)
      assert.equal(201, s.code)
    end)

    it("update: a bound and an enum", function()
      local fo = select(2, fake:request("get", API, KIND, NS, "w"))
      local so = select(2, env.rest:request("get", API, KIND, NS, "w"))
      fo.spec.size, fo.spec.color = 99, "black"
      so.spec.size, so.spec.color = 99, "black"
      local fc, fr = fake:request("update", API, KIND, NS, "w", nil, nil, nil, fo)
      local sc, sr = env.rest:request("update", API, KIND, NS, "w", nil, nil, nil, encode(so))
      same_causes({ code = fc or fr.code, body = fr }, { code = sc or sr.code, body = sr })
    end)

    it("merge patch: a pattern and a map of objects", function()
      same_causes(both("patch", "w", nil, "merge", { spec = { name = "NO", slots = { a = { capacity = "x" } } } }))
    end)

    it("json patch removing a required field", function()
      same_causes(both("patch", "w", nil, "json", { { op = "remove", path = "/spec/color" } }))
    end)

    it("status merge patch: an enum in the status", function()
      same_causes(both("patch", "w", "status", "merge", { status = { phase = "Gone" } }))
    end)

    it("a valid status patch is stored, pruned alike", function()
      local f, s = both("patch", "w", "status", "merge", { status = { phase = "Ready", nope = 1 } })
      assert.equal(200, f.code)
      assert.equal(200, s.code)
      assert.same(plain(s.body.status), plain(f.body.status))
    end)
  end)
end)
