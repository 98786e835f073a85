-- Which namespaces a ConfigMapReplication copies into, and what a copy looks like.

local op = require("luaop")

local M = {}

M.LABEL = "replicator.example.com/replication"     -- on every copy: the replication's name
M.SOURCE = "replicator.example.com/source"         -- annotation on every copy: "namespace/name"

local function sorted_keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return out
end

-- A metav1.LabelSelector ({matchLabels=, matchExpressions=}) as a selector string the API server
-- and luaop.selector understand. nil → nil (no selector); {} → "" (matches everything).
-- Returns nil, message on a malformed selector.
function M.selector_string(ls)
  if ls == nil or ls == op.object.null() then return nil end
  if type(ls) ~= "table" then return nil, "namespaceSelector must be an object" end
  local parts = {}
  local ml = ls.matchLabels
  if ml ~= nil then
    if type(ml) ~= "table" then return nil, "namespaceSelector.matchLabels must be an object" end
    for _, k in ipairs(sorted_keys(ml)) do
      if type(ml[k]) ~= "string" then return nil, "namespaceSelector.matchLabels." .. k .. " must be a string" end
      parts[#parts + 1] = k .. "=" .. ml[k]
    end
  end
  for i, e in ipairs(ls.matchExpressions or {}) do
    local where = "namespaceSelector.matchExpressions[" .. i .. "]"
    if type(e) ~= "table" or type(e.key) ~= "string" or e.key == "" then return nil, where .. ".key is required" end
    local values = e.values or {}
    if e.operator == "In" or e.operator == "NotIn" then
      if #values == 0 then return nil, where .. ": " .. e.operator .. " needs values" end
      local vs = {}
      for j, v in ipairs(values) do vs[j] = v end
      table.sort(vs)
      parts[#parts + 1] = e.key .. (e.operator == "In" and " in (" or " notin (") .. table.concat(vs, ",") .. ")"
    elseif e.operator == "Exists" or e.operator == "DoesNotExist" then
      if #values > 0 then return nil, where .. ": " .. e.operator .. " takes no values" end
      parts[#parts + 1] = (e.operator == "Exists" and "" or "!") .. e.key
    else
      return nil, where .. ".operator must be In, NotIn, Exists or DoesNotExist"
    end
  end
  local s = table.concat(parts, ",")
  local ok, msg = op.selector.parse(s)
  if not ok then return nil, "namespaceSelector: " .. tostring(msg) end
  return s
end

-- Does replication r name namespace ns explicitly?
function M.lists(r, ns)
  local list = (r.spec or {}).targetNamespaces
  if type(list) ~= "table" then return false end
  for _, t in ipairs(list) do
    if t == ns then return true end
  end
  return false
end

-- The target namespaces of replication r: existing, not being deleted, listed in
-- targetNamespaces or matching namespaceSelector, never the source's own namespace.
-- Returns a sorted array, or nil, err.
function M.namespaces(r)
  local spec = r.spec or {}
  local sel, msg = M.selector_string(spec.namespaceSelector)
  if msg then return nil, op.errors.terminal(op.errors.new(nil, "InvalidSelector", msg)) end
  local all, err = op.client.list("v1", "Namespace", nil)
  if not all then return nil, err end
  local out = {}
  for _, ns in ipairs(all) do
    local name = ns.metadata.name
    local live = ns.metadata.deletionTimestamp == nil and (ns.status or {}).phase ~= "Terminating"
    if live and name ~= spec.source.namespace
       and (M.lists(r, name) or (sel ~= nil and op.selector.match(sel, ns))) then
      out[#out + 1] = name
    end
  end
  table.sort(out)
  return out
end

-- The identity of the copy in namespace ns (create_or_update reads it by this).
function M.skeleton(r, ns)
  return { apiVersion = "v1", kind = "ConfigMap",
           metadata = { namespace = ns, name = r.spec.source.name } }
end

-- Is cm a copy made by replication `name`?
function M.is_copy_of(cm, name)
  local labels = cm.metadata.labels
  return type(labels) == "table" and labels[M.LABEL] == name
end

-- Make cm a copy of src for replication r: data, binaryData, our label and annotation (other
-- labels and annotations on the copy are left alone).
function M.mutate(cm, src, r)
  local md = cm.metadata
  md.labels = md.labels or {}
  md.labels[M.LABEL] = r.metadata.name
  md.annotations = md.annotations or {}
  md.annotations[M.SOURCE] = src.metadata.namespace .. "/" .. src.metadata.name
  cm.data = src.data and op.object.deep_copy(src.data) or nil
  cm.binaryData = src.binaryData and op.object.deep_copy(src.binaryData) or nil
  cm.immutable = nil
end

return M
-- SPDX-License-Identifier: Apache-2.0
