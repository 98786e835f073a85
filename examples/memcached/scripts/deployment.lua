-- The Deployment a Memcached owns: its identity and the fields the operator manages.

local op = require("luaop")

local M = {}

local IMAGE = "memcached:1.6.26-alpine3.19"

function M.labels(m)
  return {
    ["app.kubernetes.io/name"] = "memcached",
    ["app.kubernetes.io/instance"] = m.metadata.name,
    ["app.kubernetes.io/managed-by"] = "luaop",
    ["app.kubernetes.io/part-of"] = "memcached-operator",
  }
end

-- Only the identity: create_or_update reads the current object by it.
function M.skeleton(m)
  return { apiVersion = "apps/v1", kind = "Deployment",
           metadata = { name = m.metadata.name, namespace = m.metadata.namespace } }
end

local function pod_template(labels)
  local arr = op.object.array
  return {
    metadata = { labels = labels },
    spec = {
      securityContext = { runAsNonRoot = true, seccompProfile = { type = "RuntimeDefault" } },
      containers = arr({ {
        name = "memcached",
        image = IMAGE,
        imagePullPolicy = "IfNotPresent",
        command = arr({ "memcached", "--memory-limit=64", "-o", "modern", "-v" }),
        ports = arr({ { containerPort = 11211, name = "memcached" } }),
        securityContext = {
          runAsNonRoot = true, runAsUser = 1001, allowPrivilegeEscalation = false,
          capabilities = { drop = arr({ "ALL" }) },
        },
      } }),
    },
  }
end

-- Set what the operator owns. On a new object: everything. On an existing one: only labels and
-- replicas, so fields the API server defaults (strategy, template defaults) never look like drift.
function M.mutate(d, m, size)
  local labels = M.labels(m)
  d.metadata.labels = d.metadata.labels or {}
  for k, v in pairs(labels) do d.metadata.labels[k] = v end
  if d.metadata.uid == nil then
    d.spec = {
      replicas = size,
      selector = { matchLabels = labels },
      template = pod_template(labels),
    }
  else
    d.spec.replicas = size
  end
end

return M
-- SPDX-License-Identifier: Apache-2.0
