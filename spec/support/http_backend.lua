-- Spec-only luaop backend that talks to the local API server (`luaop apiserver`) over loopback
-- HTTP with libcurl (through LuaJIT's ffi; libcurl is a project dependency), so the same spec
-- cases run against the fake and the real server. Bodies go through the real luaop.core codec.
local json = require("luaop.core").json
local ffi = require("ffi")

ffi.cdef[[
typedef void CURL;
struct curl_slist;
CURL *curl_easy_init(void);
void curl_easy_cleanup(CURL *h);
int curl_easy_setopt(CURL *h, int opt, ...);
int curl_easy_perform(CURL *h);
int curl_easy_getinfo(CURL *h, int info, ...);
const char *curl_easy_strerror(int code);
struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s);
void curl_slist_free_all(struct curl_slist *l);
]]

local OPT = { URL = 10002, WRITEFUNCTION = 20011, POSTFIELDS = 10015, HTTPHEADER = 10023,
              CUSTOMREQUEST = 10036, POSTFIELDSIZE = 60, NOPROXY = 10177 }
local INFO_RESPONSE_CODE = 0x200000 + 2

local libcurl
local function curl()
  if not libcurl then
    local ok, lib = pcall(ffi.load, "curl")
    if not ok then lib = ffi.load("libcurl.so.4") end
    libcurl = lib
  end
  return libcurl
end

local M = {}

local function shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function urlencode(s)
  return (tostring(s):gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", c:byte()) end))
end

local function plural(kind)
  local k = kind:lower()
  if k:match("[^aeiou]y$") then return k:sub(1, -2) .. "ies" end
  if k:match("s$") or k:match("x$") or k:match("ch$") or k:match("sh$") then return k .. "es" end
  return k .. "s"
end

local CONTENT_TYPES = {
  merge = "application/merge-patch+json",
  json = "application/json-patch+json",
  strategic = "application/strategic-merge-patch+json",
  apply = "application/apply-patch+yaml",
}

local METHODS = { get = "GET", list = "GET", create = "POST", update = "PUT", patch = "PATCH", delete = "DELETE" }

--- Start `luaop apiserver` on a free loopback port.
-- @treturn table server `{url=, pid=, stop=function}`
function M.start_server()
  local bin = os.getenv("LUAOP") or "build/luaop"
  local f = io.open(bin, "r")
  if not f then error("http_backend: the luaop binary is not at " .. bin .. " (build first, or set LUAOP)") end
  f:close()
  local cmd = "{ " .. shell_quote(bin) .. " apiserver --listen 127.0.0.1:0 2>&1 & echo \"pid $!\"; wait; } "
           .. "| { IFS= read -r a; echo \"$a\"; IFS= read -r b; echo \"$b\"; exec cat >/dev/null; }"
  local p = assert(io.popen(cmd, "r"))
  local url, pid
  for _ = 1, 2 do
    local line = p:read("*l")
    if not line then break end
    pid = pid or line:match("^pid (%d+)$")
    url = url or line:match("listening on (http://127%.0%.0%.1:%d+)")
  end
  if not url or not pid then
    p:close()
    error("http_backend: luaop apiserver did not start (no 'listening on' line)")
  end
  local server = { url = url, pid = pid }
  function server.stop()
    os.execute("kill " .. pid .. " 2>/dev/null")
    p:close()
  end
  return server
end

local function path_for(av, kind, ns, name, sub)
  local base
  if av:find("/") then base = "/apis/" .. av else base = "/api/" .. av end
  local p = base
  if ns and ns ~= "" then p = p .. "/namespaces/" .. ns end
  p = p .. "/" .. plural(kind)
  if name then p = p .. "/" .. name end
  if sub then p = p .. "/" .. sub end
  return p
end

--- One HTTP call. @return code, decoded body (or nil)
function M.call(url, method, path, content_type, body)
  local c = curl()
  local h = c.curl_easy_init()
  if h == nil then error("http_backend: curl_easy_init failed") end
  local chunks = {}
  local cb = ffi.cast("size_t (*)(char *, size_t, size_t, void *)", function(ptr, size, n)
    chunks[#chunks + 1] = ffi.string(ptr, size * n)
    return size * n
  end)
  local headers = nil
  c.curl_easy_setopt(h, OPT.URL, url .. path)
  c.curl_easy_setopt(h, OPT.NOPROXY, "*")
  c.curl_easy_setopt(h, OPT.CUSTOMREQUEST, method)
  c.curl_easy_setopt(h, OPT.WRITEFUNCTION, cb)
  if body then
    headers = c.curl_slist_append(nil, "Content-Type: " .. (content_type or "application/json"))
    c.curl_easy_setopt(h, OPT.HTTPHEADER, headers)
    c.curl_easy_setopt(h, OPT.POSTFIELDSIZE, ffi.cast("long", #body))
    c.curl_easy_setopt(h, OPT.POSTFIELDS, body)
  end
  local rc = c.curl_easy_perform(h)
  local code = ffi.new("long[1]")
  c.curl_easy_getinfo(h, INFO_RESPONSE_CODE, code)
  if headers ~= nil then c.curl_slist_free_all(headers) end
  c.curl_easy_cleanup(h)
  cb:free()
  if rc ~= 0 then error("http_backend: " .. method .. " " .. path .. ": " .. ffi.string(c.curl_easy_strerror(rc))) end
  local text = table.concat(chunks)
  local decoded = nil
  if text ~= "" then decoded = json.decode(text) end
  return tonumber(code[0]), decoded
end

local function as_err(code, body)
  if type(body) == "table" and body.kind == "Status" then
    return { code = body.code or code, reason = body.reason, message = body.message, details = body.details }
  end
  return { code = code, message = "HTTP " .. code }
end

--- A backend table (luaop.backend shape) for the server at url.
function M.new(url)
  local b = { events = {}, logs = {}, sleeps = {}, writes = 0 }
  function b.request(verb, av, kind, ns, name, sub, pt, query, body)
    local method = METHODS[verb] or error("http_backend: unknown verb " .. tostring(verb))
    if verb ~= "get" and verb ~= "list" then b.writes = b.writes + 1 end
    local path = path_for(av, kind, ns, name, sub)
    if query and query ~= "" then path = path .. "?" .. query end
    local text = nil
    if body ~= nil then text = type(body) == "string" and body or json.encode(body) end
    local code, res = M.call(url, method, path, pt and CONTENT_TYPES[pt] or "application/json", text)
    if code >= 200 and code < 300 then return code, res end
    return nil, as_err(code, res)
  end
  function b.get(av, kind, ns, name)
    local code, res = b.request("get", av, kind, ns, name)
    if not code then return nil, res end
    return res
  end
  function b.list(av, kind, ns, selector)
    local path = path_for(av, kind, ns, nil, nil)
    if selector and selector ~= "" then path = path .. "?labelSelector=" .. urlencode(selector) end
    local code, res = M.call(url, "GET", path)
    if code ~= 200 then return nil, as_err(code, res) end
    local items = json.array()
    for i, it in ipairs(res.items or {}) do
      it.apiVersion, it.kind = it.apiVersion or av, it.kind or kind
      items[i] = it
    end
    return items
  end
  function b.event(obj, etype, reason, message)
    b.events[#b.events + 1] = { type = etype, reason = reason, message = message }
    return true
  end
  function b.log(level, msg, fields) b.logs[#b.logs + 1] = { level = level, msg = msg, fields = fields } end
  function b.now() return os.time() end
  function b.mono() return os.time() end
  function b.sleep(s) b.sleeps[#b.sleeps + 1] = s end
  function b.is_leader() return true end
  function b.identity() return "luaop-spec" end
  function b.context() return nil end
  function b.register_controller() error("http_backend: no controllers here") end
  return b
end

--- POST every document of a manifest file (YAML or JSON) to its collection.
-- @treturn table the last created object
function M.apply_manifest(url, file, ns)
  local res
  for _, obj in ipairs(require("luaop.testing").read_manifest(file)) do
    local path = path_for(obj.apiVersion, obj.kind, obj.metadata.namespace or ns, nil, nil)
    local code
    code, res = M.call(url, "POST", path, "application/json", json.encode(obj))
    if code ~= 201 and code ~= 200 then
      error("http_backend: creating " .. file .. " failed: " .. tostring(code) .. " " .. tostring(res and res.message))
    end
  end
  return res
end

--- Create a CRD for example.com/v1 `kind` (namespaced, status subresource, any fields).
function M.create_crd(url, kind)
  local p = plural(kind)
  local crd = {
    apiVersion = "apiextensions.k8s.io/v1", kind = "CustomResourceDefinition",
    metadata = { name = p .. ".example.com" },
    spec = {
      group = "example.com", scope = "Namespaced",
      names = { kind = kind, plural = p, singular = kind:lower(), listKind = kind .. "List" },
      versions = json.array({ {
        name = "v1", served = true, storage = true, subresources = { status = json.object() },
        schema = { openAPIV3Schema = { type = "object", ["x-kubernetes-preserve-unknown-fields"] = true } },
      } }),
    },
  }
  local code, res = M.call(url, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "application/json", json.encode(crd))
  if code ~= 201 and code ~= 200 then
    error("http_backend: creating the CRD failed: " .. tostring(code) .. " " .. tostring(res and res.message))
  end
end

return M
-- SPDX-License-Identifier: Apache-2.0
