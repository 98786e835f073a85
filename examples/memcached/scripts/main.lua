-- The memcached operator of the kubebuilder tutorial, on the luaop toolkit.
--
-- For each Memcached (cache.example.com/v1, the storage version; v1alpha1 is served through the
-- conversion webhook in webhooks.lua, with a defaulter and a validator) it owns one Deployment
-- running memcached with spec.replicas replicas, keeps the replica count in sync (when spec.size changes or someone edits
-- the Deployment), reports the conditions Available / Progressing / Degraded with
-- observedGeneration, records Events, and uses a finalizer to report the deletion before the
-- Deployment is garbage-collected.

local op = require("luaop")
local deployment = require("deployment")
local webhooks = require("webhooks")

local API, KIND = "cache.example.com/v1", "Memcached"
local FINALIZER = "cache.example.com/finalizer"

local client, conditions, errors, events = op.client, op.conditions, op.errors, op.events
local log, result, status, finalizers = op.log, op.result, op.status, op.finalizers

-- Conditions from the Deployment's observed state.
local function observe(o, dep, size)
  local st = dep and dep.status or {}
  local available = st.availableReplicas or 0
  local updated = st.updatedReplicas or 0
  local synced = dep ~= nil and (dep.spec.replicas == size)
    and (st.observedGeneration or 0) >= (dep.metadata.generation or 0)
  if dep == nil then
    conditions.set(o, { type = "Available", status = "False", reason = "DeploymentMissing",
                        message = "the Deployment does not exist yet" })
  elseif available >= size then
    conditions.set(o, { type = "Available", status = "True", reason = "MinimumReplicasAvailable",
                        message = string.format("%d of %d replicas available", available, size) })
  else
    conditions.set(o, { type = "Available", status = "False", reason = "MinimumReplicasUnavailable",
                        message = string.format("%d of %d replicas available", available, size) })
  end
  if synced and updated >= size and available >= size then
    conditions.set(o, { type = "Progressing", status = "False", reason = "ReconcileComplete",
                        message = string.format("Deployment has %d replicas", size) })
  else
    conditions.set(o, { type = "Progressing", status = "True", reason = "ScalingReplicas",
                        message = string.format("scaling to %d replicas", size) })
  end
  conditions.set(o, { type = "Degraded", status = "False", reason = "AsExpected", message = "" })
end

local function degraded(m, reason, err)
  local msg = errors.format(err)
  events.record(m, "Warning", reason, msg)
  status.update(m, function(o)
    conditions.set(o, { type = "Degraded", status = "True", reason = reason, message = msg })
  end)
  return nil, err
end

local function cleanup(m)
  events.record(m, "Warning", "Deleting",
    string.format("Custom Resource %s is being deleted from the namespace %s", m.metadata.name, m.metadata.namespace))
  local _, err = status.update(m, function(o)
    conditions.set(o, { type = "Degraded", status = "True", reason = "Finalizing",
                        message = "performing finalizer operations before deletion" })
  end)
  if err and not errors.is_not_found(err) then return nil, err end
  -- The Deployment carries a controller reference: the garbage collector deletes it.
  return true
end

local function reconcile(req)
  -- the LuaLS class generated from the CRD (types/memcached_v1.lua, `make types`)
  ---@type Memcached|nil
  local m, err = client.get(API, KIND, req.namespace, req.name)
  if not m then
    if errors.is_not_found(err) then return result.done() end -- deleted: the GC removes the Deployment
    return nil, err
  end

  local deleting, ferr = finalizers.finalize(m, FINALIZER, cleanup)
  if ferr then return nil, ferr end
  if deleting then return result.done() end

  local size = (m.spec or {}).replicas
  if type(size) ~= "number" or size < 0 or size ~= math.floor(size) then
    local e = errors.terminal(errors.new(nil, "InvalidSize", "spec.replicas must be an integer >= 0"))
    degraded(m, "InvalidSize", e)
    return nil, e
  end

  local dep = deployment.skeleton(m)
  local own_err, old_replicas
  local what, derr = op.ops.create_or_update(dep, function(d)
    old_replicas = d.spec and d.spec.replicas
    deployment.mutate(d, m, size)
    local ok, e = op.owner.set_controller_reference(m, d)
    if not ok then own_err = e end
  end)
  if own_err then return degraded(m, "DeploymentNotOwned", errors.terminal(own_err)) end
  if not what then return degraded(m, "DeploymentWriteFailed", derr) end
  if what == "created" then
    events.record(m, "Normal", "Created", "created Deployment " .. dep.metadata.name)
    log.info("created deployment", { deployment = dep.metadata.name, replicas = size })
  elseif what == "updated" then
    if old_replicas ~= size then
      events.record(m, "Normal", "Scaled", string.format("Deployment %s scaled from %s to %d replicas",
                                                         dep.metadata.name, tostring(old_replicas), size))
    end
    log.info("updated deployment", { deployment = dep.metadata.name, replicas = size, was = old_replicas })
  end

  local _, serr = status.update(m, function(o) observe(o, dep, size) end)
  if serr then return nil, serr end
  return result.done()
end

webhooks.declare()

op.controller {
  name = "memcached",
  for_ = { api_version = API, kind = KIND, predicates = { op.predicates.generation_changed } },
  owns = { { api_version = "apps/v1", kind = "Deployment" } },
  reconcile = reconcile,
}
-- SPDX-License-Identifier: Apache-2.0
