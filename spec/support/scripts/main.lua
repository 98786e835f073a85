-- A tiny script set for luaop.testing.load: main.lua requires a file of the set.
local op = require("luaop")
local names = require("lib.names")

op.controller {
  name = names.controller,
  for_ = { api_version = "v1", kind = "ConfigMap" },
  reconcile = function(req)
    local cm = op.client.get("v1", "ConfigMap", req.namespace, req.name)
    if not cm then return op.result.done() end
    if (cm.data or {}).seen ~= "yes" then
      cm.data = cm.data or {}
      cm.data.seen = "yes"
      local _, err = op.client.update(cm)
      if err then return nil, err end
    end
  end,
}
-- SPDX-License-Identifier: Apache-2.0
