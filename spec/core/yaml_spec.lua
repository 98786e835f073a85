-- SPDX-License-Identifier: Apache-2.0
-- Specs for luaop.core.yaml (bindings/core_yaml.h), the host's YAML reader (host/codec/yaml.c)
-- in the plain C module, and for luaop.testing.read_manifest, which now reads through it.
local core = require("luaop.core")
local testing = require("luaop.testing")
local json = core.json

local write_tmp = require("spec.support.fixtures").write_tmp

-- plain scalars as the host resolves them (as kubectl does: go-yaml v2's YAML 1.1 reading),
-- each as its JSON form; "agreement with kubectl" below checks every one against kubectl itself
local SCALARS = {
  { "on is true", "on", "true" },
  { "yes is true", "yes", "true" },
  { "no, off, y and n are booleans", "[no, off, y, n, Yes, OFF]", "[false,false,true,false,true,false]" },
  { "010 is octal eight", "010", "8" },
  { "09 is not octal: nine", "09", "9" },
  { "underscores in numbers are dropped", "1_000", "1000" },
  { "0o10 is octal eight", "0o10", "8" },
  { "0x10 is hex sixteen", "0x10", "16" },
  { "an unquoted date stays a string", "2024-01-02", '"2024-01-02"' },
  { "an unquoted timestamp stays a string", "2024-01-02T03:04:05Z", '"2024-01-02T03:04:05Z"' },
  { "true/false in the three spellings", "[true, True, FALSE]", "[true,true,false]" },
  { "null spellings", "[null, ~, Null, NULL]", "[null,null,null,null]" },
  { "floats", "[1.5, 1.5e3, .5]", "[1.5,1500,0.5]" },
  { "quoted scalars are strings", "['on', \"010\", '2024-01-02']", '["on","010","2024-01-02"]' },
  { "an empty flow sequence stays an array", "[]", "[]" },
  { "an empty flow mapping stays an object", "{}", "{}" },
  { "integers beyond 2^53 keep their digits", "9007199254740993", "9007199254740993" },
}

describe("luaop.core.yaml.decode resolves plain scalars like the host", function()
  for _, c in ipairs(SCALARS) do
    it(c[1], function()
      local docs = core.yaml.decode("v: " .. c[2] .. "\n")
      assert.equal(1, #docs)
      assert.equal(c[3], json.encode(docs[1].v))
    end)
  end
end)

describe("luaop.core.yaml.decode documents", function()
  it("returns every non-empty document of a stream, in order, as an array", function()
    local docs = core.yaml.decode("a: 1\n---\n---\n# only a comment\n---\n- x\n")
    assert.equal('[{"a":1},["x"]]', json.encode(docs))
    assert.is_true(json.is_array(docs))
  end)

  it("an empty stream is an empty array", function()
    assert.equal("[]", json.encode(core.yaml.decode("")))
  end)

  it("gives the same value as core.json.decode of the JSON form", function()
    local y = core.yaml.decode("spec:\n  items: []\n  size: 3\n  big: 123456789012345678\n  list: [a, ~]\n")[1]
    local j = json.decode('{"spec":{"items":[],"size":3,"big":123456789012345678,"list":["a",null]}}')
    assert.equal(json.encode(j, { sort_keys = true }), json.encode(y, { sort_keys = true }))
    assert.is_true(json.is_bigint(y.spec.big))
    assert.equal(json.null, y.spec.list[2])
  end)

  it("expands anchors and aliases", function()
    local d = core.yaml.decode("a: &x {k: v}\nb: *x\n")[1]
    assert.equal("v", d.b.k)
  end)

  it("a null member is an absent key", function()
    local d = core.yaml.decode("a: null\nb: 1\n")[1]
    assert.is_nil(d.a)
    assert.equal(1, d.b)
  end)
end)

describe("luaop.core.yaml.decode errors", function()
  local cases = {
    { "a mapping value where none is allowed", "a: b: c\n", "f.yaml", "^yaml: f%.yaml:1:5: mapping values are not allowed" },
    { "an unclosed flow sequence", "a: [1, 2\n", nil, "^yaml: <string>:2:1: did not find expected ',' or ']'" },
    { "a bad indentation", "a:\n  b: 1\n c: 2\n", "x", "^yaml: x:3:2: " },
  }
  for _, c in ipairs(cases) do
    it("names origin, line and column: " .. c[1], function()
      local ok, err = pcall(core.yaml.decode, c[2], c[3])
      assert.is_false(ok)
      assert.matches(c[4], err)
    end)
  end

  it("an alias bomb fails naming the alias", function()
    local lines = { "a0: &a0 [x, x, x, x, x, x, x, x, x, x]" }
    for i = 1, 8 do
      lines[#lines + 1] = ("a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]")
        :format(i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1)
    end
    local ok, err = pcall(core.yaml.decode, table.concat(lines, "\n") .. "\n", "bomb.yaml")
    assert.is_false(ok)
    assert.matches("^yaml: bomb%.yaml:%d+: alias %*a%d", err)
  end)

  it("a non-string input raises naming the argument", function()
    local ok, err = pcall(core.yaml.decode, {})
    assert.is_false(ok)
    assert.matches("bad argument #1", err, 1, true)
  end)
end)

describe("luaop.testing.read_manifest reads through the host's YAML reader", function()
  it("agrees with luaop.core.yaml.decode on every scalar case (no python3 involved)", function()
    local lines = {}
    for i, c in ipairs(SCALARS) do lines[i] = ("v%d: %s"):format(i, c[2]) end
    local text = table.concat(lines, "\n") .. "\n"
    local path = write_tmp(text)
    local docs = testing.read_manifest(path)
    os.remove(path)
    local want = core.yaml.decode(text)
    assert.equal(json.encode(want, { sort_keys = true }), json.encode(docs, { sort_keys = true }))
    for i, c in ipairs(SCALARS) do assert.equal(c[3], json.encode(docs[1]["v" .. i])) end
  end)

  it("a parse error names the file, line and column", function()
    local path = write_tmp("a: 1\nb: [unclosed\n")
    local ok, err = pcall(testing.read_manifest, path)
    os.remove(path)
    assert.is_false(ok)
    assert.matches("luaop.testing.read_manifest: yaml: " .. path .. ":3:1: ", err, 1, true)
  end)
end)

-- kubectl's own reading of a manifest (client side, no server: `annotate --local -o json`), the
-- spec section of a ConfigMap holding the cases as v1, v2, ...
local function kubectl_reads(cases)
  local lines = { "apiVersion: v1", "kind: ConfigMap", "metadata: {name: t}", "spec:" }
  for i, c in ipairs(cases) do lines[#lines + 1] = ("  v%d: %s"):format(i, c[2]) end
  local path = write_tmp(table.concat(lines, "\n") .. "\n")
  local p = assert(io.popen("kubectl annotate --local -f " .. path .. " checked=yes -o json 2>&1"))
  local out = p:read("*a")
  p:close()
  os.remove(path)
  local ok, obj = pcall(json.decode, out)
  assert(ok and type(obj) == "table" and obj.spec, "kubectl annotate --local failed: " .. out)
  return obj.spec
end

describe("luaop.core.yaml agreement with kubectl", function()
  it("reads every scalar case as kubectl does (booleans, octals, dates, quoted scalars, floats, nulls, empties, big integers)", function()
    local spec = kubectl_reads(SCALARS)
    for i, c in ipairs(SCALARS) do
      local host = core.yaml.decode("v: " .. c[2] .. "\n")[1].v
      assert.equal(json.encode(spec["v" .. i]), json.encode(host), c[1])
    end
  end)
end)
