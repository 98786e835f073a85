-- Shared fixtures for the luaop library specs.
local json = require("luaop.core").json

local M = {}

M.AV, M.KIND = "example.com/v1", "Widget"

function M.widget(name, extra)
  local o = {
    apiVersion = M.AV, kind = M.KIND,
    metadata = { name = name or "w1", namespace = "default", labels = { app = "demo" } },
    spec = { size = 1, items = json.array() },
  }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

function M.configmap(name, data)
  return { apiVersion = "v1", kind = "ConfigMap",
           metadata = { name = name, namespace = "default" }, data = data or { a = "1" } }
end

-- The whole content of the file at path (raises when it cannot be read).
function M.read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- A new temporary file (os.tmpname) holding text; returns its path. The caller removes it.
function M.write_tmp(text)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end

return M
-- SPDX-License-Identifier: Apache-2.0
