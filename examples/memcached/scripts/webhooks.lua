-- The Memcached webhooks (issue 21 part 9): the conversion between v1alpha1 and v1, a defaulter and
-- a validator for v1, the storage version the reconciler reads.
--
--   v1alpha1  spec.size                  (no port: v1's spec.port is kept in an annotation)
--   v1        spec.replicas, spec.port   (port: memcached's listening port, immutable)
--
-- The conversion is lossless both ways: v1 -> v1alpha1 -> v1 gives back the same object, and so
-- does v1alpha1 -> v1 -> v1alpha1 (the annotation appears only while the object is in v1alpha1).

local op = require("luaop")

local _M = {}

local GROUP, KIND = "cache.example.com", "Memcached"
local V1, V1ALPHA1 = GROUP .. "/v1", GROUP .. "/v1alpha1"
local PORT_ANNOTATION = GROUP .. "/v1-port"

_M.DEFAULT_REPLICAS, _M.MAX_REPLICAS, _M.DEFAULT_PORT = 1, 10, 11211

local function copy(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = copy(x) end
  return setmetatable(out, getmetatable(v)) -- keeps the codec's array/object marker
end

local function is_empty(t)
  return next(t) == nil
end

-- v1alpha1 -> v1: size becomes replicas; a port kept in the annotation comes back.
local function to_v1(obj)
  local out = copy(obj)
  local spec = out.spec or {}
  spec.replicas, spec.size = spec.size, nil
  local ann = out.metadata and out.metadata.annotations
  if ann and ann[PORT_ANNOTATION] then
    spec.port = tonumber(ann[PORT_ANNOTATION])
    ann[PORT_ANNOTATION] = nil
    if is_empty(ann) then out.metadata.annotations = nil end
  end
  out.spec = spec
  return out
end

-- v1 -> v1alpha1: replicas becomes size; port, which v1alpha1 has not, goes into an annotation.
local function to_v1alpha1(obj)
  local out = copy(obj)
  local spec = out.spec or {}
  spec.size, spec.replicas = spec.replicas, nil
  if spec.port ~= nil then
    out.metadata = out.metadata or {}
    out.metadata.annotations = out.metadata.annotations or {}
    out.metadata.annotations[PORT_ANNOTATION] = tostring(spec.port)
    spec.port = nil
  end
  out.spec = spec
  return out
end

--- Declare the conversion, the defaulter and the validator (main.lua calls this at load).
function _M.declare()
  op.webhook.conversion { group = GROUP, kind = KIND, convert = _M.convert }
  local MC = { api_version = V1, kind = KIND }
  op.webhook.defaulter { for_ = MC, default = _M.default }
  op.webhook.validator { for_ = MC, validate_create = _M.validate_create, validate_update = _M.validate_update }
end

--- The conversion webhook's function: v1alpha1 <-> v1.
function _M.convert(obj, to)
  if to == V1 and obj.apiVersion == V1ALPHA1 then return to_v1(obj) end
  if to == V1ALPHA1 and obj.apiVersion == V1 then return to_v1alpha1(obj) end
  error("cannot convert " .. tostring(obj.apiVersion) .. " to " .. tostring(to))
end

--- The defaulter (v1): replicas 1 and port 11211 when absent.
function _M.default(obj)
  obj.spec = obj.spec or {}
  if obj.spec.replicas == nil then obj.spec.replicas = _M.DEFAULT_REPLICAS end
  if obj.spec.port == nil then obj.spec.port = _M.DEFAULT_PORT end
end

local function check_spec(obj)
  local n = obj.spec and obj.spec.replicas
  if type(n) ~= "number" or n ~= math.floor(n) or n < 0 or n > _M.MAX_REPLICAS then
    return false, string.format("spec.replicas must be an integer from 0 to %d, got %s", _M.MAX_REPLICAS, tostring(n))
  end
  local p = obj.spec.port
  if p ~= nil and (type(p) ~= "number" or p ~= math.floor(p) or p < 1 or p > 65535) then
    return false, "spec.port must be a port number (1-65535), got " .. tostring(p)
  end
  return true
end

--- The validator (v1): bounds on replicas and port; port immutable once set.
function _M.validate_create(obj)
  local ok, why = check_spec(obj)
  if not ok then return false, why end
end

function _M.validate_update(new, old)
  local ok, why = check_spec(new)
  if not ok then return false, why end
  local was, now = old.spec and old.spec.port, new.spec and new.spec.port
  if was ~= nil and now ~= was then
    return false, string.format("spec.port is immutable (was %s, got %s)", tostring(was), tostring(now))
  end
end

return _M
-- SPDX-License-Identifier: Apache-2.0
