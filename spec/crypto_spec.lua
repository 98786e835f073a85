-- luaop.crypto (luaop.core.crypto, bindings/core_crypto.h) in busted: the same C functions as in
-- the host, and the "checksum a Secret into a pod-template annotation" pattern end to end through
-- the fake, so a Deployment rolls when its Secret changes.
local testing = require("luaop.testing")
local client = require("luaop.client")
local op = require("luaop")
local crypto = require("luaop.crypto")
local json = require("luaop.core").json

-- An independent SHA-256: coreutils' sha256sum over the same bytes.
local function sha256sum(s)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
  local p = assert(io.popen("sha256sum " .. path))
  local out = p:read("*a")
  p:close()
  os.remove(path)
  return out:match("^(%x+)")
end

describe("luaop.crypto functions", function()
  it("are luaop.core.crypto, the host's C functions", function()
    assert.equal(require("luaop.core").crypto.sha256_hex, crypto.sha256_hex)
    assert.equal(crypto, op.crypto)
  end)

  it("sha256_hex and hmac_sha256_hex match published vectors and sha256sum", function()
    assert.equal("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", crypto.sha256_hex("abc"))
    assert.equal("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
                 crypto.hmac_sha256_hex("Jefe", "what do ya want for nothing?")) -- RFC 4231 case 2
    local bytes = "a\0b\255" .. string.rep("x", 1000)
    assert.equal(sha256sum(bytes), crypto.sha256_hex(bytes))
  end)

  it("base64 round-trips bytes in both alphabets; bad input is nil, err", function()
    assert.equal("aHVudGVyMg==", crypto.base64_encode("hunter2"))
    assert.equal("__4", crypto.base64_encode("\255\254", true))
    assert.equal("hunter2", crypto.base64_decode("aHVudGVy\nMg"))
    local v, err = crypto.base64_decode("*not*")
    assert.is_nil(v)
    assert.equal("Invalid", err.reason)
    assert.has_error(function() crypto.base64_encode(nil) end)
  end)

  it("canonical_data is stable under key order and tells different maps apart", function()
    local a = crypto.canonical_data({ data = { b = "2", a = "1" } })
    local b = crypto.canonical_data({ data = { a = "1", b = "2" } })
    assert.equal(a, b)
    assert.equal("data/a=1:1\ndata/b=1:2\n", a)
    assert.are_not.equal(crypto.canonical_data({ data = { a = "1=b" } }),
                         crypto.canonical_data({ data = { a = "1", b = "" } }))
    assert.has_error(function() crypto.canonical_data({ data = { a = 1 } }) end,
                     "luaop.crypto.canonical_data: data.a is a number, expected a string")
  end)
end)

describe("checksum a Secret into a pod-template annotation", function()
  local fake
  local ANN = "checksum/secret"

  before_each(function()
    fake = testing.new()
    -- Reconcile Deployments that name a Secret in the "example.com/secret" annotation; a Secret's
    -- change maps to every Deployment of its namespace that names it.
    op.controller({
      name = "secret-checksum",
      for_ = { api_version = "apps/v1", kind = "Deployment" },
      watches = { {
        api_version = "v1", kind = "Secret",
        map = function(secret)
          local out = {}
          for _, d in ipairs(op.client.list("apps/v1", "Deployment", secret.metadata.namespace)) do
            local a = d.metadata.annotations
            if a and a["example.com/secret"] == secret.metadata.name then
              out[#out + 1] = { namespace = d.metadata.namespace, name = d.metadata.name }
            end
          end
          return out
        end,
      } },
      reconcile = function(req)
        local d, err = op.client.get("apps/v1", "Deployment", req.namespace, req.name)
        if not d then return op.errors.is_not_found(err) and op.result.done() or nil, err end
        local ref = (d.metadata.annotations or {})["example.com/secret"]
        if not ref then return op.result.done() end
        local s, serr = op.client.get("v1", "Secret", req.namespace, ref)
        if not s then return nil, serr end
        local sum = op.crypto.sha256_hex(op.crypto.canonical_data(s))
        local tmeta = d.spec.template.metadata
        tmeta.annotations = tmeta.annotations or {}
        if tmeta.annotations[ANN] == sum then return op.result.done() end
        tmeta.annotations[ANN] = sum
        local _, uerr = op.client.update(d)
        if uerr then return nil, uerr end
        return op.result.done()
      end,
    })
  end)

  local function deployment()
    return {
      apiVersion = "apps/v1", kind = "Deployment",
      metadata = { name = "web", namespace = "default", annotations = { ["example.com/secret"] = "creds" } },
      spec = {
        selector = { matchLabels = { app = "web" } },
        template = {
          metadata = { labels = { app = "web" } },
          spec = { containers = json.array({ { name = "web", image = "nginx" } }) },
        },
      },
    }
  end

  local function secret(pw)
    return { apiVersion = "v1", kind = "Secret", metadata = { name = "creds", namespace = "default" },
             data = { password = crypto.base64_encode(pw), user = crypto.base64_encode("admin") } }
  end

  local function annotation()
    local d = fake:get_object("apps/v1", "Deployment", "default", "web")
    return (d.spec.template.metadata.annotations or {})[ANN], d.metadata.generation
  end

  it("sets the checksum of the Secret's data and changes it (rolling the pods) when the Secret changes", function()
    assert(client.create(secret("hunter2")))
    assert(client.create(deployment()))
    testing.run_until_stable("secret-checksum")
    local sum1, gen1 = annotation()
    -- the checksum of exactly the stored data, computed independently
    local expected = sha256sum("data/password=12:aHVudGVyMg==\ndata/user=8:YWRtaW4=\n")
    assert.equal(expected, sum1)

    -- an unrelated write to the Secret's metadata keeps the checksum: no new rollout
    fake:edit("v1", "Secret", "default", "creds", function(o) o.metadata.labels = { touched = "yes" } end)
    testing.run_until_stable("secret-checksum")
    local same, gen_same = annotation()
    assert.equal(sum1, same)
    assert.equal(gen1, gen_same)

    -- a new password: a new checksum in the template, so a new generation (the pods roll)
    fake:edit("v1", "Secret", "default", "creds", function(o) o.data.password = crypto.base64_encode("hunter3") end)
    testing.run_until_stable("secret-checksum")
    local sum2, gen2 = annotation()
    assert.are_not.equal(sum1, sum2)
    assert.equal(64, #sum2)
    assert.is_true(gen2 > gen1)
  end)
end)
-- SPDX-License-Identifier: Apache-2.0
