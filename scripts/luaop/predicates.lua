--- Event predicates: filter which watch events enqueue a reconcile.
--
-- Built-ins are plain tables (`{builtin = "generation_changed"}`) that the host runs natively
-- without entering Lua; `and_`, `or_`, `not_` combine them. A Lua function
-- `function(ev) -> boolean` is also a predicate (ev = `{type = "add"|"update"|"delete",
-- object = obj, old = obj|nil}`); the host runs it in the predicate context.
-- Semantics (controller-runtime): built-ins filter updates only; add and delete events pass.
-- Context: predicate tables may be built anywhere; `eval` runs in any context.
-- @module luaop.predicates

local type, ipairs, select, error, tostring = type, ipairs, select, error, tostring
local require = require

local _M = {}

local leaf = {
  generation_changed = true, resource_version_changed = true,
  labels_changed = true, annotations_changed = true,
}

--- Passes updates whose metadata.generation changed (spec edits of CRs and most built-ins).
_M.generation_changed = { builtin = "generation_changed" }
--- Passes updates whose metadata.resourceVersion changed.
_M.resource_version_changed = { builtin = "resource_version_changed" }
--- Passes updates whose metadata.labels changed.
_M.labels_changed = { builtin = "labels_changed" }
--- Passes updates whose metadata.annotations changed.
_M.annotations_changed = { builtin = "annotations_changed" }

local function validate(p, depth)
  depth = depth or 0
  if depth > 32 then return false, "predicate nested deeper than 32" end
  if type(p) == "function" then return true end
  if type(p) ~= "table" then return false, "predicate must be a table or a function, got " .. type(p) end
  local b = p.builtin
  if leaf[b] then return true end
  if b == "and" or b == "or" or b == "not" then
    if type(p.args) ~= "table" or #p.args == 0 then return false, b .. " needs at least one argument" end
    if b == "not" and #p.args ~= 1 then return false, "not takes exactly one argument" end
    for i, a in ipairs(p.args) do
      local ok, msg = validate(a, depth + 1)
      if not ok then return false, b .. " argument " .. i .. ": " .. msg end
    end
    return true
  end
  return false, "unknown builtin '" .. tostring(b) .. "'"
end

--- Check a predicate's shape.
-- @param p predicate table or function
-- @treturn boolean ok
-- @treturn string|nil message when not ok
function _M.validate(p)
  return validate(p)
end

local function combine(name, ...)
  local args = {}
  for i = 1, select("#", ...) do
    local p = select(i, ...)
    local ok, msg = validate(p)
    if not ok then error("luaop.predicates." .. name .. "_: argument " .. i .. ": " .. msg, 3) end
    args[i] = p
  end
  if #args == 0 then error("luaop.predicates." .. name .. "_: at least one predicate required", 3) end
  return { builtin = name, args = args }
end

--- All predicates pass.
-- @param ... predicates
-- @treturn table `{builtin="and", args={...}}`
-- @raise on a malformed argument
function _M.and_(...) return combine("and", ...) end

--- Any predicate passes.
-- @param ... predicates
-- @treturn table `{builtin="or", args={...}}`
function _M.or_(...) return combine("or", ...) end

--- Negation.
-- @param p predicate
-- @treturn table `{builtin="not", args={p}}`
function _M.not_(p)
  local t = combine("not", p)
  return t
end

local function md(o) return type(o) == "table" and type(o.metadata) == "table" and o.metadata or {} end

local function eval(p, ev)
  if type(p) == "function" then return p(ev) and true or false end
  local b = p.builtin
  if b == "and" then
    for _, a in ipairs(p.args) do if not eval(a, ev) then return false end end
    return true
  elseif b == "or" then
    for _, a in ipairs(p.args) do if eval(a, ev) then return true end end
    return false
  elseif b == "not" then
    return not eval(p.args[1], ev)
  end
  if ev.type ~= "update" then return true end
  local old, new = md(ev.old), md(ev.object)
  if b == "generation_changed" then return old.generation ~= new.generation end
  if b == "resource_version_changed" then return old.resourceVersion ~= new.resourceVersion end
  local equal = require("luaop.object").equal
  if b == "labels_changed" then return not equal(old.labels or {}, new.labels or {}) end
  if b == "annotations_changed" then return not equal(old.annotations or {}, new.annotations or {}) end
  error("luaop.predicates: unknown builtin '" .. tostring(b) .. "'", 2)
end

--- Evaluate a predicate in Lua (the host evaluates built-ins natively; `luaop.testing` uses this).
-- @param p predicate
-- @tparam table ev `{type=, object=, old=}`
-- @treturn boolean
-- @raise when p is malformed
function _M.eval(p, ev)
  local ok, msg = validate(p)
  if not ok then error("luaop.predicates.eval: " .. msg, 2) end
  return eval(p, ev)
end

--- Evaluate a list of predicates (all must pass; an empty list passes).
-- @tparam table list
-- @tparam table ev
-- @treturn boolean
function _M.all(list, ev)
  for _, p in ipairs(list or {}) do
    if not _M.eval(p, ev) then return false end
  end
  return true
end

return _M
-- SPDX-License-Identifier: Apache-2.0
