-- Specs for luaop.core.apiserver and luaop.core.rest (bindings/module/core_envtest.h): the local
-- API server started in this process and the host's REST client against it.
local core = require("luaop.core")
local json = core.json

describe("luaop.core.apiserver", function()
  it("serves on a free loopback port and stops idempotently", function()
    local a, b = assert(core.apiserver.start()), assert(core.apiserver.start())
    assert.matches("^http://127%.0%.0%.1:%d+$", a:url())
    assert.equal(a:url(), "http://127.0.0.1:" .. a:port())
    assert.are_not.equal(a:port(), b:port())
    a:stop()
    a:stop()
    b:stop()
  end)

  it("a stopped server raises when asked for its URL", function()
    local s = assert(core.apiserver.start())
    s:stop()
    local ok, err = pcall(s.url, s)
    assert.is_false(ok)
    assert.matches("the server was stopped", err, 1, true)
  end)

  local bad = {
    { "listen not a string", { listen = 1 }, "opts.listen must be a string" },
    { "history below 1", { history = 0 }, "opts.history must be a whole number >= 1" },
    { "history not whole", { history = 1.5 }, "opts.history must be a whole number >= 1" },
    { "history_bytes a string", { history_bytes = "1Mi" }, "opts.history_bytes must be a whole number >= 1" },
    { "decode_cache_bytes below 1", { decode_cache_bytes = -1 }, "opts.decode_cache_bytes must be a whole number >= 1" },
    { "an unknown log level", { log_level = "loud" }, "opts.log_level must be debug, info, warn or error" },
  }
  for _, c in ipairs(bad) do
    it("a bad option raises naming it: " .. c[1], function()
      local ok, err = pcall(core.apiserver.start, c[2])
      assert.is_false(ok)
      assert.matches(c[3], err, 1, true)
    end)
  end

  it("an unusable listen address is nil, err", function()
    local s, err = core.apiserver.start({ listen = "not-an-address" })
    assert.is_nil(s)
    assert.is_string(err.message)
    assert.is_string(err.rc)
  end)
end)

describe("luaop.core.rest against the local API server", function()
  local srv, rest
  setup(function()
    srv = assert(core.apiserver.start())
    rest = assert(core.rest.new(srv:url()))
  end)
  teardown(function()
    rest:close()
    srv:stop()
  end)

  it("create and get return the code and the decoded object (lossless)", function()
    local body = json.encode({ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "c1" },
                               data = { a = "1" } })
    local code, obj = rest:request("create", "v1", "ConfigMap", "default", nil, nil, nil, nil, body)
    assert.equal(201, code)
    assert.is_string(obj.metadata.uid)
    local gcode, got = rest:request("get", "v1", "ConfigMap", "default", "c1")
    assert.equal(200, gcode)
    assert.equal("1", got.data.a)
    local lcode, list = rest:request("list", "v1", "ConfigMap", nil, nil, nil, nil, "labelSelector=x%3Dy")
    assert.equal(200, lcode)
    assert.equal("[]", json.encode(list.items))
  end)

  it("a missing object is nil, err shaped like the host's core.request", function()
    local code, err = rest:request("get", "v1", "ConfigMap", "default", "nope")
    assert.is_nil(code)
    assert.equal(404, err.code)
    assert.equal("NotFound", err.reason)
    assert.equal('configmaps "nope" not found', err.message)
    assert.equal("configmaps", err.details.kind)
    assert.equal("not found", err.rc)
  end)

  it("a kind discovery does not know is a 404 naming it", function()
    local code, err = rest:request("get", "example.com/v1", "Nothing", "default", "x")
    assert.is_nil(code)
    assert.equal(404, err.code)
    assert.matches("Nothing", err.message, 1, true)
  end)

  it("patch types map to their content types", function()
    local body = json.encode({ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "p1" } })
    assert(rest:request("create", "v1", "ConfigMap", "default", nil, nil, nil, nil, body))
    local code, obj = rest:request("patch", "v1", "ConfigMap", "default", "p1", nil, "merge", nil, '{"data":{"k":"v"}}')
    assert.equal(200, code)
    assert.equal("v", obj.data.k)
    code, obj = rest:request("patch", "v1", "ConfigMap", "default", "p1", nil, "json", nil,
                             '[{"op":"replace","path":"/data/k","value":"w"}]')
    assert.equal(200, code)
    assert.equal("w", obj.data.k)
  end)

  local misuse = {
    { "an unknown verb", { "watch", "v1", "ConfigMap" }, "invalid option 'watch'" },
    { "a patch without a patch type", { "patch", "v1", "ConfigMap", "default", "x" }, "patch needs a patch_type" },
    { "an unknown patch type", { "patch", "v1", "ConfigMap", "default", "x", nil, "xml" }, "invalid option 'xml'" },
    { "a non-string kind", { "get", "v1", {} }, "bad argument #4" }, -- #1 is the client
  }
  for _, c in ipairs(misuse) do
    it("misuse raises: " .. c[1], function()
      local ok, err = pcall(rest.request, rest, unpack(c[2], 1, 7))
      assert.is_false(ok)
      assert.matches(c[3], err, 1, true)
    end)
  end

  it("a closed client raises", function()
    local r = assert(core.rest.new(srv:url()))
    r:close()
    r:close()
    local ok, err = pcall(r.request, r, "get", "v1", "ConfigMap", "default", "c1")
    assert.is_false(ok)
    assert.matches("the client was closed", err, 1, true)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
