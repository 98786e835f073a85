/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lpattern.c — Lua 5.1 patterns with a step budget and a depth bound (lpattern.h).
 *
 * The matcher walks the pattern with an explicit end (so a pattern may hold any byte), recursing
 * only where Lua's semantics need a choice point: quantifiers, captures, '?'. Every recursion
 * counts against LOP_LUA_PATTERN_MAX_DEPTH, every step against the deadline check.
 */
#include "bindings/lpattern.h"

#include "bindings/vm.h"

#include <lauxlib.h>

#include <ctype.h>
#include <stddef.h>
#include <string.h>

#define ESC          '%'
#define SPECIALS     "^$*+?.([%-"
#define CAP_OPEN     (-1) /* a capture whose ')' has not been reached */
#define CAP_POSITION (-2) /* "()" */
#define MAX_CAPTURES 32   /* LUA_MAXCAPTURES */

typedef struct mstate {
    const char *src, *src_end; /* the subject */
    const char *pat_end;
    lua_State *L;
    int level; /* captures open or closed so far */
    int depth;
    unsigned steps;
    struct {
        const char *init;
        ptrdiff_t len; /* or CAP_OPEN / CAP_POSITION */
    } cap[MAX_CAPTURES];
} mstate_t;

static inline void step(mstate_t *ms)
{
    if (++ms->steps % LOP_LUA_PATTERN_CHECK_STEPS == 0) lop_lua_vm_check_deadline(ms->L);
}

static int capture_index(mstate_t *ms, int c)
{
    int i = c - '1';
    if (i < 0 || i >= ms->level || ms->cap[i].len == CAP_OPEN) return luaL_error(ms->L, "invalid capture index");
    return i;
}

static int open_capture(mstate_t *ms)
{
    for (int i = ms->level - 1; i >= 0; i--)
        if (ms->cap[i].len == CAP_OPEN) return i;
    return luaL_error(ms->L, "invalid pattern capture");
}

/* One past the single-character class at p: "x", "%x", "[...]". */
static const char *class_end(mstate_t *ms, const char *p)
{
    char c = *p++;
    if (c == ESC) {
        if (p >= ms->pat_end) luaL_error(ms->L, "malformed pattern (ends with '%%')");
        return p + 1;
    }
    if (c == '[') {
        if (p < ms->pat_end && *p == '^') p++;
        do { /* the first character of a set is taken as is, even ']' */
            if (p >= ms->pat_end) luaL_error(ms->L, "malformed pattern (missing ']')");
            if (*(p++) == ESC && p < ms->pat_end) p++;
        } while (p >= ms->pat_end || *p != ']');
        return p + 1;
    }
    return p;
}

/* Whether c is in the class letter cl (%a, %d, ...; upper case = the complement). */
static bool in_class(int c, int cl)
{
    bool r;
    switch (tolower(cl)) {
    case 'a': r = isalpha(c); break;
    case 'c': r = iscntrl(c); break;
    case 'd': r = isdigit(c); break;
    case 'l': r = islower(c); break;
    case 'p': r = ispunct(c); break;
    case 's': r = isspace(c); break;
    case 'u': r = isupper(c); break;
    case 'w': r = isalnum(c); break;
    case 'x': r = isxdigit(c); break;
    case 'z': r = c == 0; break;
    default: return cl == c;
    }
    return isupper(cl) ? !r : r;
}

/* Whether c is in the set from p ('[') to ec (its ']'). */
static bool in_set(int c, const char *p, const char *ec)
{
    bool want = true;
    if (*(p + 1) == '^') {
        want = false;
        p++;
    }
    while (++p < ec) {
        if (*p == ESC) {
            p++;
            if (in_class(c, (unsigned char)*p)) return want;
        } else if (*(p + 1) == '-' && p + 2 < ec) {
            p += 2;
            if ((unsigned char)*(p - 2) <= c && c <= (unsigned char)*p) return want;
        } else if ((unsigned char)*p == c) {
            return want;
        }
    }
    return !want;
}

static bool single(mstate_t *ms, const char *s, const char *p, const char *ep)
{
    if (s >= ms->src_end) return false;
    int c = (unsigned char)*s;
    switch (*p) {
    case '.': return true;
    case ESC: return in_class(c, (unsigned char)*(p + 1));
    case '[': return in_set(c, p, ep - 1);
    default: return (unsigned char)*p == c;
    }
}

static const char *match(mstate_t *ms, const char *s, const char *p);

static const char *balance(mstate_t *ms, const char *s, const char *p)
{
    if (p + 1 >= ms->pat_end) luaL_error(ms->L, "unbalanced pattern"); /* LuaJIT's message */
    if (s >= ms->src_end || *s != *p) return NULL;
    char open = *p, close = *(p + 1);
    int depth = 1;
    while (++s < ms->src_end) {
        step(ms);
        if (*s == close) {
            if (--depth == 0) return s + 1;
        } else if (*s == open) {
            depth++;
        }
    }
    return NULL;
}

static const char *max_expand(mstate_t *ms, const char *s, const char *p, const char *ep)
{
    ptrdiff_t i = 0;
    while (single(ms, s + i, p, ep)) {
        step(ms);
        i++;
    }
    for (; i >= 0; i--) { /* the longest run first, then shorter ones */
        const char *r = match(ms, s + i, ep + 1);
        if (r) return r;
    }
    return NULL;
}

static const char *min_expand(mstate_t *ms, const char *s, const char *p, const char *ep)
{
    for (;;) {
        const char *r = match(ms, s, ep + 1);
        if (r) return r;
        if (!single(ms, s, p, ep)) return NULL;
        s++;
    }
}

static const char *start_capture(mstate_t *ms, const char *s, const char *p, ptrdiff_t what)
{
    if (ms->level >= MAX_CAPTURES) luaL_error(ms->L, "too many captures");
    ms->cap[ms->level].init = s;
    ms->cap[ms->level].len = what;
    ms->level++;
    const char *r = match(ms, s, p);
    if (!r) ms->level--; /* undo */
    return r;
}

static const char *end_capture(mstate_t *ms, const char *s, const char *p)
{
    int l = open_capture(ms);
    ms->cap[l].len = s - ms->cap[l].init;
    const char *r = match(ms, s, p);
    if (!r) ms->cap[l].len = CAP_OPEN;
    return r;
}

static const char *back_reference(mstate_t *ms, const char *s, int c)
{
    int l = capture_index(ms, c);
    size_t len = (size_t)ms->cap[l].len;
    if ((size_t)(ms->src_end - s) >= len && memcmp(ms->cap[l].init, s, len) == 0) return s + len;
    return NULL;
}

/* %f[set]: the transition from a character not in set to one in it (the subject's ends count as
 * '\0'). */
static const char *frontier(mstate_t *ms, const char *s, const char **pp)
{
    const char *p = *pp + 2;
    if (p >= ms->pat_end || *p != '[') luaL_error(ms->L, "missing '[' after '%%f' in pattern");
    const char *ep = class_end(ms, p);
    int prev = s == ms->src ? 0 : (unsigned char)*(s - 1);
    int cur = s < ms->src_end ? (unsigned char)*s : 0;
    if (in_set(prev, p, ep - 1) || !in_set(cur, p, ep - 1)) return NULL;
    *pp = ep;
    return s;
}

/* An item with its suffix (?, *, +, -, or none) at p. Returns the match end, or sets *next
 * (and returns s past the item) when matching continues after it without a choice. */
static const char *item(mstate_t *ms, const char *s, const char *p, const char **next, bool *go_on)
{
    const char *ep = class_end(ms, p);
    bool m = single(ms, s, p, ep);
    char suffix = ep < ms->pat_end ? *ep : '\0';
    *go_on = false;
    switch (suffix) {
    case '?': {
        const char *r;
        if (m && (r = match(ms, s + 1, ep + 1))) return r;
        *next = ep + 1;
        *go_on = true;
        return s;
    }
    case '*': return max_expand(ms, s, p, ep);
    case '+': return m ? max_expand(ms, s + 1, p, ep) : NULL;
    case '-': return min_expand(ms, s, p, ep);
    default:
        if (!m) return NULL;
        *next = ep;
        *go_on = true;
        return s + 1;
    }
}

static const char *match(mstate_t *ms, const char *s, const char *p)
{
    if (++ms->depth > LOP_LUA_PATTERN_MAX_DEPTH) luaL_error(ms->L, "pattern too complex");
    const char *r = NULL;
    for (;;) {
        step(ms);
        if (p == ms->pat_end) {
            r = s;
            break;
        }
        if (*p == '(') {
            r = p + 1 < ms->pat_end && *(p + 1) == ')' ? start_capture(ms, s, p + 2, CAP_POSITION)
                                                       : start_capture(ms, s, p + 1, CAP_OPEN);
            break;
        }
        if (*p == ')') {
            r = end_capture(ms, s, p + 1);
            break;
        }
        if (*p == '$' && p + 1 == ms->pat_end) {
            r = s == ms->src_end ? s : NULL;
            break;
        }
        if (*p == ESC && p + 1 < ms->pat_end && *(p + 1) == 'b') {
            s = balance(ms, s, p + 2);
            if (!s) break;
            p += 4;
            continue;
        }
        if (*p == ESC && p + 1 < ms->pat_end && *(p + 1) == 'f') {
            if (!frontier(ms, s, &p)) break;
            continue;
        }
        if (*p == ESC && p + 1 < ms->pat_end && isdigit((unsigned char)*(p + 1))) {
            s = back_reference(ms, s, (unsigned char)*(p + 1));
            if (!s) break;
            p += 2;
            continue;
        }
        bool go_on;
        const char *next = NULL;
        const char *e = item(ms, s, p, &next, &go_on);
        if (!go_on) {
            r = e;
            break;
        }
        s = e;
        p = next;
    }
    ms->depth--;
    return r;
}

/* ------------------------------------------------------------------ captures */

static void push_capture(mstate_t *ms, int i, const char *s, const char *e)
{
    if (i >= ms->level) {
        if (i != 0) luaL_error(ms->L, "invalid capture index");
        lua_pushlstring(ms->L, s, (size_t)(e - s)); /* the whole match */
        return;
    }
    ptrdiff_t l = ms->cap[i].len;
    if (l == CAP_OPEN) luaL_error(ms->L, "unfinished capture");
    if (l == CAP_POSITION)
        lua_pushinteger(ms->L, ms->cap[i].init - ms->src + 1);
    else
        lua_pushlstring(ms->L, ms->cap[i].init, (size_t)l);
}

static int push_captures(mstate_t *ms, const char *s, const char *e)
{
    int n = ms->level == 0 && s ? 1 : ms->level;
    luaL_checkstack(ms->L, n, "too many captures");
    for (int i = 0; i < n; i++) push_capture(ms, i, s, e);
    return n;
}

static void ms_init(mstate_t *ms, lua_State *L, const char *s, size_t ls, const char *p, size_t lp)
{
    ms->L = L;
    ms->src = s;
    ms->src_end = s + ls;
    ms->pat_end = p + lp;
    ms->level = 0;
    ms->depth = 0;
    ms->steps = 0;
}

/* ------------------------------------------------------------------ find, match, gmatch, gsub */

/* A 1-based, possibly negative position -> 0-based offset from the start, clamped at 0. */
static ptrdiff_t start_at(lua_Integer pos, size_t len)
{
    if (pos < 0) pos += (lua_Integer)len + 1;
    return pos > 0 ? (ptrdiff_t)pos - 1 : 0;
}

static int find_aux(lua_State *L, bool find)
{
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    ptrdiff_t init = start_at(luaL_optinteger(L, 3, 1), ls);
    if ((size_t)init > ls) init = (ptrdiff_t)ls;                  /* past the end: from the end (Lua 5.1, LuaJIT) */
    if (find && (lua_toboolean(L, 4) || !strpbrk(p, SPECIALS))) { /* a plain search */
        const char *hit = lp == 0 ? s + init : memmem(s + init, ls - (size_t)init, p, lp);
        if (!hit) {
            lua_pushnil(L);
            return 1;
        }
        lua_pushinteger(L, hit - s + 1);
        lua_pushinteger(L, hit - s + (ptrdiff_t)lp);
        return 2;
    }
    mstate_t ms;
    bool anchor = lp > 0 && *p == '^';
    if (anchor) p++, lp--;
    ms_init(&ms, L, s, ls, p, lp);
    const char *from = s + init;
    do {
        ms.level = 0;
        ms.depth = 0;
        const char *e = match(&ms, from, p);
        if (e) {
            if (!find) return push_captures(&ms, from, e);
            lua_pushinteger(L, from - s + 1);
            lua_pushinteger(L, e - s);
            return push_captures(&ms, NULL, NULL) + 2;
        }
    } while (from++ < ms.src_end && !anchor);
    lua_pushnil(L);
    return 1;
}

int lop_lua_str_find(lua_State *L) { return find_aux(L, true); }
int lop_lua_str_match(lua_State *L) { return find_aux(L, false); }

static int gmatch_next(lua_State *L)
{
    size_t ls, lp;
    const char *s = lua_tolstring(L, lua_upvalueindex(1), &ls);
    const char *p = lua_tolstring(L, lua_upvalueindex(2), &lp);
    mstate_t ms;
    ms_init(&ms, L, s, ls, p, lp);
    for (const char *from = s + lua_tointeger(L, lua_upvalueindex(3)); from <= ms.src_end; from++) {
        ms.level = 0;
        ms.depth = 0;
        const char *e = match(&ms, from, p);
        if (e) {
            lua_Integer next = e - s;
            if (e == from) next++; /* an empty match: move on one */
            lua_pushinteger(L, next);
            lua_replace(L, lua_upvalueindex(3));
            return push_captures(&ms, from, e);
        }
        step(&ms);
    }
    return 0;
}

int lop_lua_str_gmatch(lua_State *L)
{
    luaL_checkstring(L, 1);
    luaL_checkstring(L, 2);
    lua_settop(L, 2);
    lua_pushinteger(L, 0);
    lua_pushcclosure(L, gmatch_next, 3);
    return 1;
}

/* The replacement string at index 3 with %0-%9 and %% (any other %x is x, as in Lua 5.1). */
static void add_string(mstate_t *ms, luaL_Buffer *b, const char *s, const char *e)
{
    size_t l;
    const char *r = lua_tolstring(ms->L, 3, &l);
    for (size_t i = 0; i < l; i++) {
        if (r[i] != ESC || i + 1 == l) {
            luaL_addchar(b, r[i]);
        } else if (!isdigit((unsigned char)r[++i])) {
            luaL_addchar(b, r[i]);
        } else if (r[i] == '0') {
            luaL_addlstring(b, s, (size_t)(e - s));
        } else {
            push_capture(ms, r[i] - '1', s, e);
            luaL_addvalue(b); /* a position capture is a number: added as its digits */
        }
    }
}

static void add_value(mstate_t *ms, luaL_Buffer *b, const char *s, const char *e)
{
    lua_State *L = ms->L;
    switch (lua_type(L, 3)) {
    case LUA_TNUMBER:
    case LUA_TSTRING: add_string(ms, b, s, e); return;
    case LUA_TFUNCTION: {
        lua_pushvalue(L, 3);
        int n = push_captures(ms, s, e);
        lua_call(L, n, 1);
        break;
    }
    default: /* a table */
        push_capture(ms, 0, s, e);
        lua_gettable(L, 3);
        break;
    }
    if (!lua_toboolean(L, -1)) { /* nil or false: keep the match */
        lua_pop(L, 1);
        lua_pushlstring(L, s, (size_t)(e - s));
    } else if (!lua_isstring(L, -1)) {
        luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    }
    luaL_addvalue(b);
}

int lop_lua_str_gsub(lua_State *L)
{
    size_t ls, lp;
    const char *src = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    int tr = lua_type(L, 3);
    lua_Integer max_n = luaL_optinteger(L, 4, (lua_Integer)ls + 1);
    luaL_argcheck(L, tr == LUA_TNUMBER || tr == LUA_TSTRING || tr == LUA_TFUNCTION || tr == LUA_TTABLE, 3,
                  "string/function/table expected");
    bool anchor = lp > 0 && *p == '^';
    if (anchor) p++, lp--;
    mstate_t ms;
    ms_init(&ms, L, src, ls, p, lp);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_Integer n = 0;
    while (n < max_n) {
        ms.level = 0;
        ms.depth = 0;
        const char *e = match(&ms, src, p);
        if (e) {
            n++;
            add_value(&ms, &b, src, e);
        }
        if (e && e > src)
            src = e;
        else if (src < ms.src_end)
            luaL_addchar(&b, *src++);
        else
            break;
        if (anchor) break;
    }
    luaL_addlstring(&b, src, (size_t)(ms.src_end - src));
    luaL_pushresult(&b);
    lua_pushinteger(L, n);
    return 2;
}

void lop_lua_patterns_install(lua_State *L, int idx)
{
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
    static const luaL_Reg fns[] = {{"find", lop_lua_str_find},
                                   {"match", lop_lua_str_match},
                                   {"gmatch", lop_lua_str_gmatch},
                                   {"gsub", lop_lua_str_gsub}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        lua_pushcfunction(L, fns[i].func);
        lua_setfield(L, idx, fns[i].name);
    }
}
