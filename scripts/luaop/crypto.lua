--- luaop.crypto: digests and base64 for scripts, backed by OpenSSL and the host's RFC 4648 codec
-- (luaop.core.crypto, bindings/core_crypto.h; the same C functions in the host and in busted).
--
-- The usual use is a checksum of a Secret or ConfigMap in the pod template, so a Deployment rolls
-- when its configuration changes (the pattern Helm charts write as
-- `checksum/config: {{ include ... | sha256sum }}`):
--
--    local sum = op.crypto.sha256_hex(op.crypto.canonical_data(secret))
--    deploy.spec.template.metadata.annotations["checksum/secret"] = sum
--
-- Context: any. Misuse (a non-string argument) raises naming it.
-- @module luaop.crypto

local type, pairs, error, sort, concat, tostring = type, pairs, error, table.sort, table.concat, tostring
local core = require("luaop.core").crypto

local _M = {}

--- SHA-256 (FIPS 180-4) of a byte string.
-- @tparam string s
-- @treturn string 64 lowercase hex digits
_M.sha256_hex = core.sha256_hex

--- HMAC-SHA-256 (RFC 2104) of a byte string under a key.
-- @tparam string key
-- @tparam string s
-- @treturn string 64 lowercase hex digits
_M.hmac_sha256_hex = core.hmac_sha256_hex

--- Base64-encode a byte string (RFC 4648).
-- @tparam string s
-- @tparam[opt] boolean url true: the URL-safe alphabet ("-_") without padding; else standard with "="
-- @treturn string
_M.base64_encode = core.base64_encode

--- Base64-decode (either alphabet, padding optional, ASCII whitespace ignored).
-- @tparam string s
-- @treturn[1] string the bytes
-- @treturn[2] nil
-- @treturn[2] table err `{code = 0, reason = "Invalid", message = ...}` when s is not base64
_M.base64_decode = core.base64_decode

--- A stable byte string for the data of a Secret or ConfigMap, to hash: every key of `data`,
-- `stringData` and `binaryData` sorted, each as `<field>/<key>=<len>:<value>` and a newline, so
-- no two different maps give the same string. The values are taken as stored (a Secret's
-- `data` stays base64).
-- @tparam table obj a decoded Secret or ConfigMap (or any table with those fields)
-- @treturn string
-- @raise when obj is not a table, or a value is not a string
function _M.canonical_data(obj)
  if type(obj) ~= "table" then error("luaop.crypto.canonical_data: obj must be a table", 2) end
  local lines = {}
  for _, field in pairs({ "data", "stringData", "binaryData" }) do
    local m = obj[field]
    if type(m) == "table" then
      for k, v in pairs(m) do
        if type(k) == "string" then
          if type(v) ~= "string" then
            error("luaop.crypto.canonical_data: " .. field .. "." .. k .. " is a " .. type(v)
                  .. ", expected a string", 2)
          end
          lines[#lines + 1] = field .. "/" .. k .. "=" .. tostring(#v) .. ":" .. v .. "\n"
        end
      end
    end
  end
  sort(lines)
  return concat(lines)
end

return _M
-- SPDX-License-Identifier: Apache-2.0
