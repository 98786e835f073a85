-- ConfigMap replicator: a cluster-scoped ConfigMapReplication (replicator.example.com/v1alpha1)
-- copies one source ConfigMap into many namespaces.
--
-- What memcached does not show: a cluster-scoped primary; `watches` with Lua map functions
-- (a ConfigMap event enqueues every replication that uses it as its source or made it as a
-- copy; a Namespace appearing or changing labels enqueues the replications that may target it);
-- dependents in other namespaces tracked by label and removed by a finalizer; status with the
-- list of synced namespaces.

local op = require("luaop")
local targets = require("targets")

-- The copies are written through the client, not declared with `owns` (they live in other
-- namespaces, so no owner reference): say so for `luaop check --rbac`.
-- +kubebuilder:rbac:groups="",resources=configmaps,verbs=create;update;patch;delete

local API, KIND = "replicator.example.com/v1alpha1", "ConfigMapReplication"
local FINALIZER = "replicator.example.com/cleanup"

local client, conditions, errors, events = op.client, op.conditions, op.errors, op.events
local log, result, status, finalizers = op.log, op.result, op.status, op.finalizers

-- The copies replication `name` made, in every namespace.
local function copies_of(name)
  return client.list("v1", "ConfigMap", nil, { label_selector = targets.LABEL .. "=" .. name })
end

-- Delete one copy; gone already counts as deleted. The uid precondition makes sure a ConfigMap
-- someone recreated under the same name meanwhile is left alone.
local function delete_copy(cm)
  local ok, err = client.delete(cm, { preconditions = { uid = cm.metadata.uid } })
  if ok or errors.is_not_found(err) then return true end
  return nil, err
end

local function cleanup(r)
  local list, err = copies_of(r.metadata.name)
  if not list then return nil, err end
  local removed = {}
  for _, cm in ipairs(list) do
    local ok, derr = delete_copy(cm)
    if not ok then return nil, derr end
    removed[#removed + 1] = cm.metadata.namespace
  end
  table.sort(removed)
  local src = type(r.spec) == "table" and type(r.spec.source) == "table" and r.spec.source or {}
  local of = ""
  if type(src.namespace) == "string" and type(src.name) == "string" then
    of = " of " .. src.namespace .. "/" .. src.name
  end
  events.record(r, "Normal", "CleanedUp", string.format("deleted %d %s%s%s", #removed,
    #removed == 1 and "copy" or "copies", of, #removed > 0 and (" from " .. table.concat(removed, ", ")) or ""))
  log.info("replication deleted, copies removed", { replication = r.metadata.name, copies = #removed })
  return true
end

-- Write the status: Ready and the synced namespaces. A Warning event when Ready turns False with
-- a new reason (not on every reconcile that finds the same problem).
local function report(r, synced, ready, reason, message)
  local before = conditions.get(r, "Ready")
  local _, err = status.update(r, function(o)
    o.status.syncedNamespaces = op.object.array(synced)
    conditions.set(o, { type = "Ready", status = ready and "True" or "False", reason = reason, message = message })
  end)
  if not ready and not (before and before.status == "False" and before.reason == reason) then
    events.record(r, "Warning", reason, message)
  end
  return err
end

local function reconcile(req)
  -- the LuaLS class generated from the CRD (types/, `make types`)
  ---@type ConfigMapReplication|nil
  local r, err = client.get(API, KIND, nil, req.name)
  if not r then
    if errors.is_not_found(err) then return result.done() end
    return nil, err
  end

  local deleting, ferr = finalizers.finalize(r, FINALIZER, cleanup)
  if ferr then return nil, ferr end
  if deleting then return result.done() end

  local src_ref = type(r.spec) == "table" and r.spec.source
  if type(src_ref) ~= "table" or type(src_ref.namespace) ~= "string" or src_ref.namespace == ""
     or type(src_ref.name) ~= "string" or src_ref.name == "" then
    -- the CRD schema requires both; a server without schema validation could still store this
    local e = errors.terminal(errors.new(nil, "InvalidSpec", "spec.source.namespace and spec.source.name are required"))
    report(r, {}, false, e.reason, e.message)
    return nil, e
  end
  local want, terr = targets.namespaces(r)
  if not want then
    if errors.is_terminal(terr) then report(r, {}, false, terr.reason, terr.message) end
    return nil, terr
  end

  local src, serr = client.get("v1", "ConfigMap", src_ref.namespace, src_ref.name)
  if not src then
    if not errors.is_not_found(serr) then return nil, serr end
    -- Copies already made stay as they are; the ConfigMap watch brings us back when it appears.
    local werr = report(r, {}, false, "SourceNotFound", string.format(
      "source ConfigMap %s/%s not found; existing copies are kept", src_ref.namespace, src_ref.name))
    if werr then return nil, werr end
    return result.done()
  end

  -- Copy into every target. A ConfigMap of the same name that is not our copy is left alone.
  local synced, conflicts, changed, first_err = {}, {}, {}, nil
  for _, ns in ipairs(want) do
    local foreign = false
    local what, werr = op.ops.create_or_update(targets.skeleton(r, ns), function(cm)
      if cm.metadata.uid ~= nil and not targets.is_copy_of(cm, r.metadata.name) then
        foreign = true
        return
      end
      targets.mutate(cm, src, r)
    end)
    if foreign then
      conflicts[#conflicts + 1] = ns
    elseif not what then
      -- NotFound: the namespace went away between the list and the write, not a target any more
      if not errors.is_not_found(werr) then first_err = first_err or werr end
    else
      synced[#synced + 1] = ns
      if what ~= "unchanged" then changed[#changed + 1] = ns end
    end
  end

  -- Remove copies that are no longer wanted (namespace dropped from the targets, source renamed).
  local wanted = {}
  for _, ns in ipairs(synced) do wanted[ns] = true end
  local have, lerr = copies_of(r.metadata.name)
  if not have then return nil, lerr end
  local removed = {}
  for _, cm in ipairs(have) do
    if not (wanted[cm.metadata.namespace] and cm.metadata.name == src_ref.name) then
      local ok, derr = delete_copy(cm)
      if ok then removed[#removed + 1] = cm.metadata.namespace .. "/" .. cm.metadata.name
      else first_err = first_err or derr end
    end
  end

  if #changed > 0 then
    events.record(r, "Normal", "Synced", string.format("copied %s/%s into %s", src_ref.namespace,
      src_ref.name, table.concat(changed, ", ")))
    log.info("copies written", { replication = r.metadata.name, namespaces = changed })
  end
  if #removed > 0 then
    table.sort(removed)
    events.record(r, "Normal", "Removed", "deleted copies no longer targeted: " .. table.concat(removed, ", "))
  end

  local werr
  if first_err then
    werr = report(r, synced, false, "SyncFailed", errors.format(first_err))
  elseif #conflicts > 0 then
    werr = report(r, synced, false, "TargetConflict", string.format(
      "a ConfigMap named %s that this replication did not create exists in %s", src_ref.name,
      table.concat(conflicts, ", ")))
  else
    werr = report(r, synced, true, "Synced", string.format("%d namespaces in sync", #synced))
  end
  if first_err then return nil, first_err end
  if werr then return nil, werr end
  return result.done()
end

-- Map functions (run on the watch events of ConfigMaps and Namespaces).
local function replications()
  return client.list(API, KIND, nil) or {}
end

local function map_configmap(cm)
  local out, seen = {}, {}
  local function add(name)
    if not seen[name] then
      seen[name] = true
      out[#out + 1] = { name = name }
    end
  end
  local labels = cm.metadata.labels
  if type(labels) == "table" and type(labels[targets.LABEL]) == "string" then add(labels[targets.LABEL]) end
  for _, r in ipairs(replications()) do
    local s = (r.spec or {}).source or {}
    if s.namespace == cm.metadata.namespace and s.name == cm.metadata.name then add(r.metadata.name) end
  end
  return out
end

local function map_namespace(ns)
  local out = {}
  for _, r in ipairs(replications()) do
    local spec = r.spec or {}
    if spec.namespaceSelector ~= nil or targets.lists(r, ns.metadata.name) then
      out[#out + 1] = { name = r.metadata.name }
    end
  end
  return out
end

op.controller {
  name = "replicator",
  for_ = { api_version = API, kind = KIND, predicates = { op.predicates.generation_changed } },
  watches = {
    { api_version = "v1", kind = "ConfigMap", map = map_configmap },
    -- adds and deletes always pass; updates only when the labels changed
    { api_version = "v1", kind = "Namespace", map = map_namespace,
      predicates = { op.predicates.labels_changed } },
  },
  reconcile = reconcile,
}
-- SPDX-License-Identifier: Apache-2.0
