/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_require.c — module resolution for the VMs: the luaop library directory (listed once per
 * process, each file read when first required) and the `require` scripts see (resolution order in engine_lua.h).
 */
#include "bindings/engine_internal.h"
#include "bindings/engine_lua.h"

#include "host/util/buf.h"

#include <lauxlib.h>

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ the library directory */

typedef struct libset {
    char dir[PATH_MAX];
    lop_script_file_t *files; /* data NULL until the file is first required (lib_find) */
    char **paths;             /* files[i]'s full path, for that read */
    size_t n, cap;
    struct libset *prev; /* replaced snapshots stay reachable: VMs may still point into them */
} libset_t;

static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;
static libset_t *lib_cur;
static bool lib_valid;
static char *lib_override;

static bool has_luaop_dir(const char *dir)
{
    char p[PATH_MAX];
    struct stat st;
    if (!dir || !*dir) return false;
    if (snprintf(p, sizeof p, "%s/luaop", dir) >= (int)sizeof p) return false;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void resolve_dir(char *out, size_t len)
{
    out[0] = '\0';
    if (lib_override) {
        snprintf(out, len, "%s", lib_override);
        return;
    }
    /* An explicit setting is used as given (no silent fallback): a wrong path then shows up in
     * the "module 'luaop' not found in the luaop library (<dir>)" message. */
    const char *env = getenv("LUAOP_LUA_PATH");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char cand[PATH_MAX + 32];
            snprintf(cand, sizeof cand, "%s/../share/luaop/lua", exe);
            if (has_luaop_dir(cand) && strlen(cand) < len) {
                snprintf(out, len, "%s", cand);
                return;
            }
        }
    }
    /* The source tree's scripts/: LOP_SOURCE_DIR is the absolute source root (CMakeLists.txt).
     * Not __FILE__: ccache's base_dir turns the source path on the command line into a relative
     * one, which would then be resolved against the process's working directory. */
#ifdef LOP_SOURCE_DIR
    char cand[PATH_MAX];
    if (snprintf(cand, sizeof cand, "%s/scripts", LOP_SOURCE_DIR) < (int)sizeof cand && has_luaop_dir(cand) &&
        strlen(cand) < len)
        snprintf(out, len, "%s", cand);
#endif
}

/* The file's bytes in a buffer of its size (kept for the process's lifetime: not rounded up to a
 * power of two); false when it cannot be read. */
static bool lib_read(const char *path, lop_script_file_t *f)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    lop_buf_t b = LOP_BUF_INIT;
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && st.st_size > 0) lop_buf_reserve_exact(&b, (size_t)st.st_size);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) lop_buf_append(&b, chunk, n);
    bool ok = !ferror(fp);
    fclose(fp);
    if (!ok) {
        lop_buf_free(&b);
        return false;
    }
    f->len = b.len;
    f->data = b.len ? lop_buf_steal(&b) : lop_xstrdup("");
    return true;
}

/* Lists the file; its bytes are read when it is first required. A process reads only the
 * modules its scripts use (`luaop run` never reads luaop.testing's ~80 KB, busted's fake API). */
static void lib_add(libset_t *ls, const char *name, const char *path)
{
    if (ls->n == ls->cap) {
        ls->cap = ls->cap ? ls->cap * 2 : 16;
        ls->files = lop_xrealloc(ls->files, ls->cap * sizeof *ls->files);
        ls->paths = lop_xrealloc(ls->paths, ls->cap * sizeof *ls->paths);
    }
    ls->files[ls->n].name = lop_xstrdup(name);
    ls->files[ls->n].len = 0;
    ls->files[ls->n].data = NULL;
    ls->paths[ls->n] = lop_xstrdup(path);
    ls->n++;
}

/* Add every *.lua under dir/rel (rel is "luaop" or "luaop/sub"), up to depth 8. The paths live
 * on the heap, not the stack: this runs on the thread building a VM (the main thread at start),
 * and 16 KiB of path buffers per level would stay resident in its stack for the process's life. */
static void lib_scan(libset_t *ls, const char *dir, const char *rel, int depth)
{
    if (depth > 8) return;
    char *path = lop_xmalloc(PATH_MAX), *sub = lop_xmalloc(PATH_MAX), *full = lop_xmalloc(2 * PATH_MAX);
    DIR *d = snprintf(path, PATH_MAX, "%s/%s", dir, rel) < PATH_MAX ? opendir(path) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (snprintf(sub, PATH_MAX, "%s/%s", rel, e->d_name) >= PATH_MAX) continue;
        snprintf(full, 2 * PATH_MAX, "%s/%s", dir, sub);
        struct stat st;
        if (stat(full, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            lib_scan(ls, dir, sub, depth + 1);
        } else {
            size_t nl = strlen(sub);
            if (nl > 4 && strcmp(sub + nl - 4, ".lua") == 0) lib_add(ls, sub, full);
        }
    }
    if (d) closedir(d);
    free(path);
    free(sub);
    free(full);
}

static libset_t *lib_get(void)
{
    pthread_mutex_lock(&lib_mu);
    if (!lib_valid) {
        libset_t *ls = lop_xcalloc(1, sizeof *ls);
        resolve_dir(ls->dir, sizeof ls->dir);
        if (ls->dir[0]) lib_scan(ls, ls->dir, "luaop", 0);
        ls->prev = lib_cur;
        lib_cur = ls;
        lib_valid = true;
    }
    libset_t *ls = lib_cur;
    pthread_mutex_unlock(&lib_mu);
    return ls;
}

void lop_lua_set_library_path(const char *dir)
{
    pthread_mutex_lock(&lib_mu);
    free(lib_override);
    lib_override = dir ? lop_xstrdup(dir) : NULL;
    lib_valid = false;
    pthread_mutex_unlock(&lib_mu);
}

void lop_lua_library_path(char *buf, size_t len)
{
    const libset_t *ls = lib_get();
    snprintf(buf, len, "%s", ls->dir);
}

/* The library file `name` with its bytes (read on its first lookup, then kept: every later VM
 * gets the same bytes), or NULL when it is not listed or cannot be read. */
static const lop_script_file_t *lib_find(libset_t *ls, const char *name)
{
    const lop_script_file_t *found = NULL;
    pthread_mutex_lock(&lib_mu);
    for (size_t i = 0; i < ls->n; i++) {
        if (strcmp(ls->files[i].name, name) != 0) continue;
        lop_script_file_t *f = &ls->files[i];
        if (f->data || lib_read(ls->paths[i], f)) found = f;
        break;
    }
    pthread_mutex_unlock(&lib_mu);
    return found;
}

/* ------------------------------------------------------------------ require */

static const char loading_sentinel = 'L';

/* "a.b.c" -> "a/b/c" pushed. Stack: +1. */
static void push_path(lua_State *L, const char *name) { luaL_gsub(L, name, ".", "/"); }

/* Load data as chunk `file`, run it with the module name (marking `name` as loading meanwhile)
 * and record its value in loaded (nil -> true, as Lua's require). Stack: +1 (the value). Raises. */
static void run_module(lua_State *L, int loaded, const char *name, const char *data, size_t len, const char *file)
{
    lua_pushlightuserdata(L, (void *)&loading_sentinel);
    lua_setfield(L, loaded, name);
    lop_lua_vm_load(L, data, len, file);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_getfield(L, loaded, name);
        if (lua_touserdata(L, -1) == (void *)&loading_sentinel) {
            lua_pop(L, 1);
            lua_pushboolean(L, 1);
        }
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, loaded, name);
}

/* require(name) -> module value. Raises when not found or when the module raises. Any context. */
static int lua_require(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    lop_lua_push_registry(L, &lop_lua_key_loaded);
    int loaded = lua_gettop(L);
    lua_getfield(L, loaded, name);
    if (lua_touserdata(L, -1) == (void *)&loading_sentinel)
        return luaL_error(L, "loop or previous error loading module '%s'", name);
    if (!lua_isnil(L, -1)) return 1;
    lua_pop(L, 1);

    push_path(L, name);
    const char *path = lua_tostring(L, -1);
    char f1[PATH_MAX], f2[PATH_MAX];
    if (strcmp(name, "luaop") == 0 || strncmp(name, "luaop.", 6) == 0) {
        libset_t *ls = lib_get();
        snprintf(f1, sizeof f1, "%s.lua", path);
        snprintf(f2, sizeof f2, "%s/init.lua", path);
        const lop_script_file_t *f = lib_find(ls, f1);
        if (!f) f = lib_find(ls, f2);
        if (!f) {
            return luaL_error(L, "module '%s' not found in the luaop library (%s; tried %s, %s)", name,
                              ls->dir[0] ? ls->dir : "no library directory found: set LUAOP_LUA_PATH", f1, f2);
        }
        run_module(L, loaded, name, f->data, f->len, f->name);
        return 1;
    }

    snprintf(f1, sizeof f1, "%s.lua", path);
    snprintf(f2, sizeof f2, "%s/init.lua", path);
    lop_lua_push_registry(L, &lop_lua_key_scripts);
    const char *files[2] = {f1, f2};
    for (int i = 0; i < 2; i++) {
        lua_getfield(L, -1, files[i]);
        if (lua_isstring(L, -1)) {
            size_t len;
            const char *data = lua_tolstring(L, -1, &len);
            run_module(L, loaded, name, data, len, files[i]);
            return 1;
        }
        lua_pop(L, 1);
    }
    lop_vm_t *vm = lop_lua_engine_vm(L);
    if (vm->lvm.unsafe_libs || strcmp(name, "cjson") == 0 || strcmp(name, "cjson.safe") == 0) {
        lua_pushlightuserdata(L, (void *)&lop_lua_vm_key_require);
        lua_rawget(L, LUA_REGISTRYINDEX);
        if (lua_isfunction(L, -1)) {
            lua_pushstring(L, name);
            lua_call(L, 1, 1);
            lua_pushvalue(L, -1);
            lua_setfield(L, loaded, name);
            return 1;
        }
    }
    return luaL_error(L, "module '%s' not found in the script set %s (tried %s, %s)", name, vm->origin, f1, f2);
}

void lop_lua_require_install(lua_State *L, const lop_script_set_t *set)
{
    lop_vm_t *vm = lop_lua_engine_vm(L);
    /* scripts: a copy of the set, so VMs never point into the caller's memory. */
    lua_pushlightuserdata(L, (void *)&lop_lua_key_scripts);
    lua_createtable(L, 0, (int)set->nfiles);
    for (size_t i = 0; i < set->nfiles; i++) {
        lua_pushlstring(L, set->files[i].data, set->files[i].len);
        lua_setfield(L, -2, set->files[i].name);
    }
    lua_rawset(L, LUA_REGISTRYINDEX);

    /* loaded: with unsafe_libs the real package.loaded; else a fresh table with the libraries. */
    lua_pushlightuserdata(L, (void *)&lop_lua_key_loaded);
    if (vm->lvm.unsafe_libs) {
        lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
    } else {
        lua_newtable(L);
        static const char *const libs[] = {"string", "table", "math", "coroutine", "bit", "os", NULL};
        for (int i = 0; libs[i]; i++) {
            lua_getglobal(L, libs[i]);
            lua_setfield(L, -2, libs[i]);
        }
        lua_pushvalue(L, LUA_GLOBALSINDEX);
        lua_setfield(L, -2, "_G");
        /* package = { loaded = loaded } so scripts that look at package.loaded work. */
        lua_createtable(L, 0, 1);
        lua_pushvalue(L, -2);
        lua_setfield(L, -2, "loaded");
        lua_setglobal(L, "package");
    }
    lua_rawset(L, LUA_REGISTRYINDEX);

    lua_pushcfunction(L, lua_require);
    lua_setglobal(L, "require");
}
