-- Specs for luaop.core.json, the lossless JSON codec (docs/lua-core.md "JSON"), loaded from the
-- plain C module build/lua/luaop/core.so: the same C code the host VMs use.
local core = require("luaop.core")
local json = core.json

describe("luaop.core.json round-trips", function()
  local cases = {
    { "empty array stays an array", "[]" },
    { "empty object stays an object", "{}" },
    { "nested empties", '{"c":[[],{},[[]],{"d":{}}]}' },
    { "null array elements keep their position", "[null,1,null]" },
    { "integers up to 2^53", "[0,-1,9007199254740992,-9007199254740992]" },
    { "integers beyond 2^53 keep their digits", "[9007199254740993,-123456789012345678901234567890]" },
    { "floats", "[0.1,1.5,-2.25,1e+300,1e-300]" },
    { "strings with escapes", '["a\\"b","\\\\","\\n\\t\\r\\b\\f","\\u0001"]' },
    { "booleans", "[true,false]" },
    { "unicode passes through", '["é","😀","日本"]' },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      assert.are.equal(c[2], json.encode(json.decode(c[2])))
    end)
  end

  it("a null object member becomes an absent key", function()
    local v = json.decode('{"a":null,"b":1}')
    assert.is_nil(v.a)
    assert.are.equal('{"b":1}', json.encode(v))
  end)

  it("a null array element is the null sentinel", function()
    local v = json.decode("[null]")
    assert.are.equal(json.null, v[1])
    assert.are.equal("userdata", type(json.null))
  end)

  it("json.null encodes as null (for merge patches)", function()
    assert.are.equal('{"a":null}', json.encode({ a = json.null }))
  end)

  it("decoded arrays carry the array marker; objects are plain tables", function()
    local v = json.decode('{"a":[1]}')
    assert.are.equal(json.array_mt, getmetatable(v.a))
    assert.is_nil(getmetatable(v))
    assert.is_true(json.is_array(v.a))
    assert.is_false(json.is_array(v))
  end)

  it("a copied marker keeps an emptied array an array", function()
    local v = json.decode("[1,2]")
    local copy = setmetatable({}, getmetatable(v))
    assert.are.equal("[]", json.encode(copy))
  end)
end)

describe("luaop.core.json numbers", function()
  it("integers up to 2^53 are Lua numbers", function()
    assert.are.equal("number", type(json.decode("9007199254740992")))
  end)
  it("integers beyond 2^53 are bigints that compare by value", function()
    local b = json.decode("9007199254740993")
    assert.is_true(json.is_bigint(b))
    assert.are.equal("9007199254740993", tostring(b))
    assert.are.equal(json.bigint("0009007199254740993"), b)
    assert.is_true(json.bigint("-1") < b)
    assert.are.equal("x9007199254740993", "x" .. b)
  end)
  it("json.bigint rejects junk", function()
    assert.has_error(function() json.bigint("12a") end)
  end)
  it("floats round-trip to the same double", function()
    for _, x in ipairs({ 0.1, 1 / 3, 2 ^ -1074, 1.7976931348623157e308, -123.456 }) do
      assert.are.equal(x, json.decode(json.encode(x)))
    end
  end)
end)

describe("luaop.core.json encode errors name the key path", function()
  local cases = {
    { "mixed table", { spec = { containers = { {}, { env = { 1, x = 2 } } } } },
      "json: cannot encode a mixed table (both integer and string keys) at spec.containers[2].env" },
    { "sparse array", { a = { [1] = 1, [3] = 3 } },
      "json: cannot encode a sparse array (2 elements, highest index 3) at a" },
    { "function value", { metadata = { labels = { ["app.kubernetes.io/name"] = print } } },
      'json: cannot encode a function at metadata.labels["app.kubernetes.io/name"]' },
    { "boolean key", { a = { [true] = 1 } }, "json: cannot encode a table with a boolean key at a" },
    { "NaN", { x = { 0 / 0 } }, "json: cannot encode NaN at x[1]" },
    { "inf", { x = 1 / 0 }, "json: cannot encode inf at x" },
    { "string key in a marked array", { a = json.array({ x = 1 }) },
      "json: cannot encode an array-marked table with string keys at a" },
    { "integer key in a marked object", { a = json.object({ 1 }) },
      "json: cannot encode an object-marked table with an integer key at a" },
    { "top level function", print, "json: cannot encode a function at (root)" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local ok, err = pcall(json.encode, c[2])
      assert.is_false(ok)
      assert.are.equal(c[3], err)
    end)
  end

  it("a cycle", function()
    local t = { spec = {} }
    t.spec.back = t
    local ok, err = pcall(json.encode, t)
    assert.is_false(ok)
    assert.are.equal("json: cannot encode a table that contains itself (cycle) at spec.back", err)
  end)

  it("invalid UTF-8", function()
    local ok, err = pcall(json.encode, { s = "\255" })
    assert.is_false(ok)
    assert.are.equal("json: cannot encode a string with invalid UTF-8 at s", err)
  end)
end)

describe("luaop.core.json depth limit", function()
  local function nest(n) return string.rep("[", n) .. string.rep("]", n) end
  it("decodes 200 levels", function()
    assert.are.equal(nest(200), json.encode(json.decode(nest(200))))
  end)
  it("refuses 201 levels when decoding", function()
    local ok, err = pcall(json.decode, nest(201))
    assert.is_false(ok)
    assert.are.equal("json: nesting deeper than 200 at byte 200", err)
  end)
  it("refuses 201 levels when encoding", function()
    local t = {}
    local cur = t
    for _ = 1, 200 do cur.a = {}; cur = cur.a end
    local ok, err = pcall(json.encode, t)
    assert.is_false(ok)
    assert.matches("^json: cannot encode a value nested deeper than 200 at a%.a%.", err)
  end)
end)

describe("luaop.core.json decode errors name the byte offset", function()
  local cases = {
    { "[1,]", "json: unexpected character ']', expected a value at byte 3" },
    { '{"a" 1}', "json: unexpected character '1', expected ':' at byte 5" },
    { '{"a":1', "json: unexpected end of input at byte 6" },
    { "[1] x", "json: unexpected character 'x', expected end of input at byte 4" },
    { "01", "json: invalid number (leading zero) at byte 0" },
    { "1e999", "json: number out of range at byte 0" },
    { '"\\x"', "json: invalid escape in string at byte 1" },
    { '"a\nb"', "json: control character in string at byte 2" },
    { '"\255"', "json: invalid UTF-8 in string at byte 1" },
    { '"\237\160\128"', "json: invalid UTF-8 in string at byte 1" },
    { '"\\ud800"', "json: invalid \\u escape (high surrogate without low surrogate) at byte 1" },
    { '"\\udc00"', "json: invalid \\u escape (lone low surrogate) at byte 1" },
    { '"\\u12g4"', "json: invalid \\u escape at byte 1" },
    { "nul", "json: unexpected character 'n', expected a value at byte 0" },
    { "", "json: unexpected end of input at byte 0" },
  }
  for _, c in ipairs(cases) do
    it(("rejects %q"):format(c[1]), function()
      local ok, err = pcall(json.decode, c[1])
      assert.is_false(ok)
      assert.are.equal(c[2], err)
    end)
  end
end)

describe("luaop.core.json unicode escapes", function()
  local cases = {
    { '"\\u00e9"', "é" },
    { '"\\u65e5"', "日" },
    { '"\\ud83d\\ude00"', "😀" },
    { '"\\u0000"', "\0" },
    { '"\\/"', "/" },
  }
  for _, c in ipairs(cases) do
    it(("decodes %s"):format(c[1]), function()
      assert.are.equal(c[2], json.decode(c[1]))
    end)
  end
  it("encodes control characters as \\u escapes", function()
    assert.are.equal('"\\u0000\\u001f"', json.encode("\0\31"))
  end)
end)

describe("luaop.core clock", function()
  it("formats metav1.Time and MicroTime", function()
    assert.are.equal("1970-01-01T00:00:00Z", core.format_time(0))
    assert.are.equal("2025-03-01T10:05:12.650001Z", core.format_microtime(1740823512.650001))
  end)
  it("now and mono are numbers", function()
    assert.are.equal("number", type(core.now()))
    assert.are.equal("number", type(core.mono()))
  end)
end)

describe("luaop.core.json encode options", function()
  it("sort_keys orders object members by key bytes, at every level", function()
    local v = json.decode('{"b":1,"a":{"z":[{"y":1,"x":2}],"B":null,"A":true},"aa":2}')
    assert.are.equal('{"a":{"A":true,"z":[{"x":2,"y":1}]},"aa":2,"b":1}', json.encode(v, { sort_keys = true }))
  end)
  it("sort_keys still names bad keys", function()
    local ok, err = pcall(json.encode, { a = { x = 1, [2] = 3 } }, { sort_keys = true })
    assert.is_false(ok)
    assert.are.equal("json: cannot encode a mixed table (both integer and string keys) at a", err)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
