-- SPDX-License-Identifier: Apache-2.0
-- `luaop types` (issue 23 part 2): LuaLS annotations generated from a CRD's openAPIV3Schema, tested
-- as text since lua-language-server is neither in Debian nor on npm: each schema construct maps to
-- its annotation, the output depends on the schema alone, every file is valid Lua naming only
-- declared classes, and the examples' committed types are what the generator makes of their CRDs.
local core = require("luaop.core")

local LUAOP = (os.getenv("LUAOP_BUILD") or "build") .. "/luaop"
local WIDGETS = "spec/support/crds/widgets.yaml"

-- Run a shell command: its stdout+stderr and exit status.
local function run(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"rc=$?\"")
  local out = p:read("*a")
  p:close()
  local body, rc = out:match("^(.-)rc=(%d+)\n$")
  return body, tonumber(rc)
end

local read = require("spec.support.fixtures").read_file

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p " .. d) == 0)
  return d
end

local function generate(crd_path)
  local dir = tmpdir()
  local out, rc = run(LUAOP .. " types --crd " .. crd_path .. " --out " .. dir)
  assert.equal(0, rc, out)
  return dir
end

-- The lines of a file as a set.
local function lines(text)
  local set = {}
  for l in text:gmatch("([^\n]*)\n") do set[l] = true end
  return set
end

describe("luaop types", function()
  local dir, v1, beta, meta
  setup(function()
    dir = generate(WIDGETS)
    v1, beta, meta = read(dir .. "/widget_v1.lua"), read(dir .. "/widget_v1beta1.lua"), read(dir .. "/objectmeta.lua")
  end)

  local expected_v1 = {
    { "a ---@meta file", "---@meta" },
    { "the root class with the schema's description", "--- Widget is a toy." },
    { "the root class", "---@class Widget" },
    { "apiVersion as the version's literal", "---@field apiVersion \"toys.example.com/v1\"" },
    { "kind as a literal", "---@field kind \"Widget\"" },
    { "metadata as ObjectMeta", "---@field metadata k8s.ObjectMeta" },
    { "spec, optional, with its description", "---@field spec? WidgetSpec The desired widget." },
    { "status, optional", "---@field status? WidgetStatus" },
    { "the spec class", "---@class WidgetSpec" },
    { "a required integer with a multi-line description on one line", "---@field size integer How many parts. At most 10." },
    { "a required enum as a union of literals", "---@field color \"red\"|\"green\"|\"blue\" The paint." },
    { "an optional number", "---@field ratio? number" },
    { "a default in the comment", "---@field enabled? boolean (default: true)" },
    { "a string with a pattern", "---@field name? string" },
    { "int-or-string", "---@field port? integer|string" },
    { "an array of strings", "---@field tags? string[]" },
    { "an array of objects", "---@field parts? WidgetSpecPartsItem[]" },
    { "the array item class", "---@class WidgetSpecPartsItem" },
    { "a required field of an item", "---@field id string" },
    { "a map of strings", "---@field labels? table<string, string>" },
    { "a map of objects", "---@field slots? table<string, WidgetSpecSlotsValue>" },
    { "the map value class", "---@class WidgetSpecSlotsValue" },
    { "preserve-unknown", "---@field extra? table" },
    { "an embedded resource", "---@field template? table" },
    { "nested objects", "---@field box? WidgetSpecBox" },
    { "the nested nested class", "---@class WidgetSpecBoxInner" },
    { "a nested field", "---@field depth? integer" },
    { "a status enum", "---@field phase? \"Pending\"|\"Ready\"" },
  }
  for _, c in ipairs(expected_v1) do
    it("maps " .. c[1] .. ": " .. c[2], function()
      assert.is_true(lines(v1)[c[2]] ~= nil, c[2] .. " not in:\n" .. v1)
    end)
  end

  it("emits the properties of a class in byte order of their names", function()
    local names = {}
    local spec = v1:match("---@class WidgetSpec\n(.-)\n\n")
    for name in spec:gmatch("---@field ([%w_]+)") do names[#names + 1] = name end
    local sorted = {}
    for i, n in ipairs(names) do sorted[i] = n end
    table.sort(sorted)
    assert.same(sorted, names)
    assert.equal(16, #names)
  end)

  it("gives a version other than the storage version its own classes", function()
    assert.truthy(beta:find("---@class WidgetV1beta1\n", 1, true))
    assert.truthy(beta:find("---@field apiVersion \"toys.example.com/v1beta1\"\n", 1, true))
    assert.truthy(beta:find("---@class WidgetV1beta1Spec\n---@field count? integer\n", 1, true))
  end)

  it("depends on the schema alone: the same CRD with its members in another order gives the same text", function()
    local doc = require("luaop.testing").read_manifest(WIDGETS)[1]
    local other = tmpdir()
    local path = other .. "/widgets.yaml" -- JSON is YAML; the codec's member order differs from the file's
    local f = assert(io.open(path, "w"))
    f:write(core.json.encode(doc))
    f:close()
    local out, rc = run(LUAOP .. " types --crd " .. path .. " --out " .. other)
    assert.equal(0, rc, out)
    assert.equal(v1, read(other .. "/widget_v1.lua"))
    assert.equal(beta, read(other .. "/widget_v1beta1.lua"))
  end)

  it("writes valid Lua that names only LuaLS built-ins, literals and declared classes", function()
    local declared = {}
    local all = v1 .. beta .. meta
    for name in all:gmatch("---@class ([%w_%.]+)") do declared[name] = true end
    local builtin = { ["nil"] = true, any = true, boolean = true, string = true, number = true, integer = true,
                      table = true }
    for _, text in ipairs({ v1, beta, meta }) do
      assert(loadstring(text))
      for ty in text:gsub("table<string, ", "table<string,"):gmatch("---@field %S+ (%S+)") do
        for name in ty:gsub("table<string,", ""):gsub("[%[%]()>|]", " "):gmatch("%S+") do
          if not name:match("^\"") then
            assert.is_true(builtin[name] or declared[name] or false, "undeclared type " .. name .. " in " .. ty)
          end
        end
      end
    end
  end)

  it("declares k8s.ObjectMeta with the fields scripts read", function()
    for _, l in ipairs({ "---@class k8s.ObjectMeta", "---@field name? string unique within the namespace",
                         "---@field labels? table<string, string>", "---@field generation? integer bumped by the server on spec changes",
                         "---@field ownerReferences? k8s.OwnerReference[]", "---@class k8s.OwnerReference" }) do
      assert.is_true(lines(meta)[l] ~= nil, l)
    end
  end)

  it("adds an SPDX line with --spdx, and prints everything on stdout without --out", function()
    local out, rc = run(LUAOP .. " types --spdx Apache-2.0 --crd " .. WIDGETS)
    assert.equal(0, rc)
    assert.truthy(out:find("---@meta\n-- SPDX-License-Identifier: Apache-2.0\n", 1, true))
    assert.truthy(out:find("---@class WidgetV1beta1\n", 1, true))
    assert.truthy(out:find("---@class k8s.ObjectMeta\n", 1, true))
  end)

  for _, ex in ipairs({ { "memcached", "cache.example.com_memcacheds.yaml" },
                        { "replicator", "replicator.example.com_configmapreplications.yaml" } }) do
    it("the committed types of examples/" .. ex[1] .. " are current (make types)", function()
      local out, rc = run(LUAOP .. " types --check --spdx Apache-2.0 --out examples/" .. ex[1] .. "/types --crd examples/"
                          .. ex[1] .. "/crd/" .. ex[2])
      assert.equal(0, rc, out)
    end)
  end

  it("--check names a stale file and exits 1", function()
    local d = generate(WIDGETS)
    local f = assert(io.open(d .. "/widget_v1.lua", "a"))
    f:write("-- edited\n")
    f:close()
    local out, rc = run(LUAOP .. " types --check --crd " .. WIDGETS .. " --out " .. d)
    assert.equal(1, rc)
    assert.equal(d .. "/widget_v1.lua is stale: run luaop types\n", out)
  end)

  local bad = {
    { "no --crd", "", 2, "usage: luaop types" },
    { "--check without --out", "--check --crd " .. WIDGETS, 2, "usage: luaop types" },
    { "a file without a CRD", "--crd examples/memcached/samples/" .. "memcached.yaml", 1, "no CustomResourceDefinition in it" },
    { "a missing file", "--crd /nonexistent.yaml", 1, "--crd /nonexistent.yaml" },
  }
  for _, c in ipairs(bad) do
    it("fails on " .. c[1], function()
      local out, rc = run(LUAOP .. " types " .. c[2])
      assert.equal(c[3], rc)
      assert.matches(c[4], out, 1, true)
    end)
  end
end)
