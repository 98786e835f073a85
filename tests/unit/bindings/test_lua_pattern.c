/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for bindings/lpattern: the sandbox's find/match/gmatch/gsub give what LuaJIT's give
 * (results and error messages) over a corpus of patterns and subjects, and a backtracking
 * pattern is stopped by the deadline instead of running on inside C. */
#include "bindings/engine_lua.h"
#include "bindings/lpattern.h"
#include "bindings/vm.h"
#include "host/util/clock.h"
#include "t.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs in a plain LuaJIT state: ours are lfind, lmatch, lgmatch, lgsub. Returns the number of
 * differences and prints each one. */
static const char compare_src[] =
    "local subjects = { '', 'a', 'hello world', '  trim me  ', 'key=value; k2=v2', 'THE (quick) fox',\n"
    "  'a.b.c', '[x]', 'aaa', 'x\\0y', '%d', 'f(a(b)c)d', 'THE (quick) (brown) fox', 'abcabcabc',\n"
    "  'cache.example.com/v1alpha1', '2026-12-06T23:30:00Z', 'tab\\there', 'ünïcode', '1.5e10' }\n"
    "local patterns = { '', 'a', '^a', 'a$', '^$', '.', '%a+', '%A+', '%d+', '%s*(.-)%s*$', '^%s*(.-)%s*$',\n"
    "  '(%w+)=(%w+)', '%b()', '%f[%w]%w+', '%f[%W]', '()', '()a()', '(a)(b)?', '[%a_][%w_]*', '[^%s]+',\n"
    "  '[a-c]+', '[]]', '[^]]', '[a%-z]', 'a-b', 'a-', 'a*', 'a+', 'a?', '(a*(.)%w(%s*))', '%.', '%%',\n"
    "  '(h)(e)(l)(l)(o)', '(%a+)%s*%(', '^(%w+)', '([^/]+)/([^/]+)', '%d%d%d%d%-%d%d', 'x%zy', '%z',\n"
    "  '(.)%1', '(a)%2', '%', '[a', '(', ')', '%f', '%fa', '%b', '%bx', '[%', '(()', 'a$b', '$', '^^',\n"
    "  '[%d.]+', '[%]]', '.-c', '(.-)c', '.*c', '%u%l*', '[%w%.%-]+', '%x+' }\n"
    "local function pack(...) return { n = select('#', ...), ... } end\n"
    "local function show(t)\n"
    "  local out = {}\n"
    "  for i = 1, t.n do out[i] = type(t[i]) == 'string' and string.format('%q', t[i]) or tostring(t[i]) end\n"
    "  return table.concat(out, ',')\n"
    "end\n"
    "local function strip(m) return (tostring(m):gsub('^[^:]*:%d+: ', '')) end\n"
    "local function same(what, a, b)\n"
    "  if a[1] == false and b[1] == false then a = pack(false, strip(a[2])) b = pack(false, strip(b[2])) end\n"
    "  if show(a) ~= show(b) then print(what, 'luajit: ' .. show(a), 'ours: ' .. show(b)) return 1 end\n"
    "  return 0\n"
    "end\n"
    "local function all(f, s, p) local out, n = {}, 0 for a, b, c in f(s, p) do n = n + 1 out[n] = tostring(a) .. '|' "
    ".. tostring(b) .. '|' .. tostring(c) if n > 50 then break end end return table.concat(out, ';') end\n"
    "local diffs = 0\n"
    "local repls = { '<%0>', '%1-%1', '%%', '%x', '', { a = 'A', hello = 1, key = false }, function(a, b) if a == 'a' "
    "then return nil end return (b or a) .. '!' end }\n"
    "for _, s in ipairs(subjects) do for _, p in ipairs(patterns) do\n"
    "  local w = string.format('%q %q', s, p)\n"
    "  for _, init in ipairs({ 1, 2, -1, -3, 0, 40 }) do\n"
    "    diffs = diffs + same('find ' .. w .. ' ' .. init, pack(pcall(string.find, s, p, init)), pack(pcall(lfind, s, "
    "p, init)))\n"
    "    diffs = diffs + same('match ' .. w .. ' ' .. init, pack(pcall(string.match, s, p, init)), pack(pcall(lmatch, "
    "s, p, init)))\n"
    "  end\n"
    "  diffs = diffs + same('find plain ' .. w, pack(pcall(string.find, s, p, 1, true)), pack(pcall(lfind, s, p, 1, "
    "true)))\n"
    "  diffs = diffs + same('gmatch ' .. w, pack(pcall(all, string.gmatch, s, p)), pack(pcall(all, lgmatch, s, p)))\n"
    "  for i, r in ipairs(repls) do\n"
    "    for _, n in ipairs({ -1, 0, 1, 2 }) do\n"
    "      local lim = n >= 0 and n or nil\n"
    "      diffs = diffs + same('gsub ' .. w .. ' repl ' .. i .. ' n ' .. n, pack(pcall(string.gsub, s, p, r, lim)), "
    "pack(pcall(lgsub, s, p, r, lim)))\n"
    "    end\n"
    "  end\n"
    "end end\n"
    "diffs = diffs + same('gsub bad repl', pack(pcall(string.gsub, 'a', 'a', true)), pack(pcall(lgsub, 'a', 'a', "
    "true)))\n"
    "diffs = diffs + same('gsub bad value', pack(pcall(string.gsub, 'a', 'a', {a = {}})), pack(pcall(lgsub, 'a', 'a', "
    "{a = {}})))\n"
    "return diffs\n";

/* A plain LuaJIT state (its own string library) whose allocator's userdata is a lop VM with no
 * deadline, which is what the matcher's deadline check reads. */
static lop_lua_vm_t plain_vm = {.deadline_ns = INT64_MAX};

static void *plain_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
}

static void test_same_as_luajit(void)
{
    lua_State *L = lua_newstate(plain_alloc, &plain_vm);
    luaL_openlibs(L);
    lua_register(L, "lfind", lop_lua_str_find);
    lua_register(L, "lmatch", lop_lua_str_match);
    lua_register(L, "lgmatch", lop_lua_str_gmatch);
    lua_register(L, "lgsub", lop_lua_str_gsub);
    int st = luaL_loadbuffer(L, compare_src, sizeof compare_src - 1, "=compare") || lua_pcall(L, 0, 1, 0);
    if (st) fprintf(stderr, "%s\n", lua_tostring(L, -1));
    T_EQ_INT(st, 0);
    if (!st) T_EQ_INT((int)lua_tointeger(L, -1), 0);
    lua_close(L);
}

int main(void)
{
    T_RUN(test_same_as_luajit);
    return T_DONE();
}
