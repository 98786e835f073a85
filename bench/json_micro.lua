-- json_micro.lua — MB/s of luaop's Lua codec (build/lua/luaop/core.so) next to Debian's
-- lua-cjson on a Pod, a ConfigMap and a list of Pods (1,000 by default) (the fixtures of bench/fixtures/).
--   luajit bench/json_micro.lua FIXTURES_DIR SECONDS [LIST_ITEMS]   (LUA_CPATH must find luaop.core, cjson)
-- Prints one line per document: doc=... bytes=... luaop_decode=MB/s cjson_decode=... luaop_encode=... cjson_encode=...
-- Encode rates count the bytes each encoder produced.
local core = require("luaop.core")
local cjson = require("cjson")

-- Count mode, for callgrind (bench.py subtracts a run with N = 0):
--   luajit bench/json_micro.lua FIXTURES_DIR count DOC OP N LIST_ITEMS
--   DOC: pod|configmap|list; OP: luaop_decode|cjson_decode|luaop_encode|cjson_encode
local dir, secs, nitems = arg[1], tonumber(arg[2] or "0.5"), tonumber(arg[3] or "1000")
local count_mode = arg[2] == "count"
if count_mode then nitems = tonumber(arg[6] or "1000") end

local function fixture(name)
  local f = assert(io.open(dir .. "/" .. name, "rb"))
  local s = f:read("*a"):gsub("\n+$", "")
  f:close()
  return (s:gsub("@NS@", "default"):gsub("@NAME@", "obj-1"):gsub("@I@", "1"))
end

local pod = fixture("pod.json")
local items = {}
for i = 1, nitems do items[i] = pod end
local docs = {
  { "pod", pod },
  { "configmap", fixture("configmap.json") },
  { "list", '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":['
            .. table.concat(items, ",") .. "]}" },
}

if count_mode then
  local docname, op, n = arg[3], arg[4], tonumber(arg[5])
  local s
  for _, d in ipairs(docs) do if d[1] == docname then s = d[2] end end
  assert(s, "unknown document " .. tostring(docname))
  local lv, cv = core.json.decode(s), cjson.decode(s)
  local f = ({
    luaop_decode = function() return core.json.decode(s) end,
    cjson_decode = function() return cjson.decode(s) end,
    luaop_encode = function() return core.json.encode(lv) end,
    cjson_encode = function() return cjson.encode(cv) end,
  })[op]
  assert(f, "unknown op " .. tostring(op))
  for _ = 1, n do f() end
  print(string.format("doc=%s op=%s n=%d bytes=%d", docname, op, n, #s))
  return
end

local clock = os.clock
-- Run f repeatedly for about secs of CPU time; return MB/s for `bytes` per call.
local function rate(f, bytes)
  collectgarbage("collect")
  local n, t0 = 0, clock()
  local t
  repeat
    for _ = 1, 4 do f() end
    n = n + 4
    t = clock() - t0
  until t >= secs
  return bytes * n / t / 1e6
end

for _, d in ipairs(docs) do
  local name, s = d[1], d[2]
  local jd = core.json.decode
  local lv, cv = jd(s), cjson.decode(s)
  local le, ce = core.json.encode(lv), cjson.encode(cv)
  local r = {
    luaop_decode = rate(function() return jd(s) end, #s),
    cjson_decode = rate(function() return cjson.decode(s) end, #s),
    luaop_encode = rate(function() return core.json.encode(lv) end, #le),
    cjson_encode = rate(function() return cjson.encode(cv) end, #ce),
  }
  print(string.format("doc=%s bytes=%d luaop_decode=%.1f cjson_decode=%.1f luaop_encode=%.1f cjson_encode=%.1f",
    name, #s, r.luaop_decode, r.cjson_decode, r.luaop_encode, r.cjson_encode))
end
-- SPDX-License-Identifier: Apache-2.0
