/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the LuaJIT engine (bindings/engine_lua.h) with a fake lop_host_api_t: load
 * errors name file:line, declarations, reconcile result mapping, predicates and map functions,
 * the host functions of luaop.core, require resolution. */
#include "bindings/engine_lua.h"
#include "host/util/buf.h"
#include "t.h"

#include <lauxlib.h>
#include <lualib.h>
#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ fake host */

typedef struct fake_host {
    int cache_gets, cache_lists, requests, events, releases;
    char last_query[256];
    char last_verb[16];
    char last_body[256];
    char last_event_reason[64];
    int64_t timeouts[8];   /* lop_api_request_t.timeout_ns of the first requests */
    int64_t request_steps; /* each request moves the fake clock by this (a slow call) */
} fake_host_t;

static fake_host_t fh;
static lop_fake_clock_t fclock;

static const char cm_json[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\",\"namespace\":\"default\","
    "\"generation\":12345678901234567890},\"data\":{\"k\":\"v\"},\"list\":[]}";

static lop_rc_t f_cache_get(void *ud, const char *av, const char *kind, const char *ns, const char *name,
                            lop_blob_t *out, lop_err_t *err)
{
    fh.cache_gets++;
    if (strcmp(kind, "Secret") == 0) return LOP_EAGAIN; /* not cached: live GET */
    if (strcmp(name, "a") != 0)
        return lop_err_set(err, LOP_ENOTFOUND, 404, "NotFound", "configmaps \"%s\" not found", name);
    out->json = cm_json;
    out->len = strlen(cm_json);
    out->ref = (void *)1;
    return LOP_OK;
}

static lop_rc_t f_cache_list(void *ud, const char *av, const char *kind, const char *ns, const char *sel,
                             lop_blob_t **items, size_t *n, lop_err_t *err)
{
    fh.cache_lists++;
    if (strcmp(kind, "Secret") == 0) return LOP_EAGAIN;
    *items = lop_xcalloc(2, sizeof **items);
    for (int i = 0; i < 2; i++) {
        (*items)[i].json = cm_json;
        (*items)[i].len = strlen(cm_json);
    }
    *n = 2;
    return LOP_OK;
}

static void f_release(void *ud, lop_blob_t *b) { fh.releases++; }

static lop_rc_t f_request(void *ud, const lop_api_request_t *rq, lop_api_response_t *resp, lop_err_t *err)
{
    if (fh.requests < 8) fh.timeouts[fh.requests] = rq->timeout_ns;
    fh.requests++;
    if (fh.request_steps) lop_fake_clock_step(&fclock, fh.request_steps);
    snprintf(fh.last_verb, sizeof fh.last_verb, "%s", rq->verb);
    snprintf(fh.last_query, sizeof fh.last_query, "%s", rq->query ? rq->query : "");
    snprintf(fh.last_body, sizeof fh.last_body, "%.*s", (int)rq->body_len, rq->body ? rq->body : "");
    const char *body;
    int code = 200;
    lop_rc_t rc = LOP_OK;
    if (strcmp(rq->verb, "list") == 0) {
        if (!strstr(rq->query, "continue="))
            body = "{\"kind\":\"SecretList\",\"metadata\":{\"continue\":\"tok "
                   "en\"},\"items\":[{\"metadata\":{\"name\":\"s1\"}}]}";
        else
            body = "{\"kind\":\"SecretList\",\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"s2\"}}]}";
    } else if (rq->name && strcmp(rq->name, "conflict") == 0) {
        body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Conflict\",\"code\":409,"
               "\"details\":{\"name\":\"conflict\",\"kind\":\"configmaps\"}}";
        code = 409;
        rc = lop_err_set(err, LOP_ECONFLICT, 409, "Conflict", "the object has been modified");
    } else {
        body = "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"live\"}}";
    }
    resp->code = code;
    resp->body = lop_xstrdup(body);
    resp->len = strlen(body);
    return rc;
}

static lop_rc_t f_event(void *ud, const char *obj, size_t len, const char *type, const char *reason,
                        const char *message, lop_err_t *err)
{
    fh.events++;
    snprintf(fh.last_event_reason, sizeof fh.last_event_reason, "%s/%s", type, reason);
    return LOP_OK;
}

static bool f_is_leader(void *ud) { return true; }
static const char *f_identity(void *ud) { return "pod-1"; }

static const lop_host_api_t host = {NULL,        f_cache_get, f_cache_list, f_release, f_request, f_event,
                                    f_is_leader, f_identity,  NULL,         NULL,      NULL};

/* ------------------------------------------------------------------ helpers */

static lop_engine_opts_t opts(void)
{
    lop_engine_opts_t o = {0};
    o.reconcile_timeout_ns = 10 * LOP_NS_PER_S;
    o.load_timeout_ns = 10 * LOP_NS_PER_S;
    o.clock = &fclock.base;
    return o;
}

typedef struct set_builder {
    lop_script_file_t files[8];
    lop_script_set_t set;
} set_builder_t;

static lop_script_set_t *mkset(set_builder_t *b, const char *main_src, const char *name2, const char *src2)
{
    memset(b, 0, sizeof *b);
    b->files[0].name = "main.lua";
    b->files[0].data = (char *)main_src;
    b->files[0].len = strlen(main_src);
    b->set.files = b->files;
    b->set.nfiles = 1;
    if (name2) {
        b->files[1].name = (char *)name2;
        b->files[1].data = (char *)src2;
        b->files[1].len = strlen(src2);
        b->set.nfiles = 2;
    }
    strcpy(b->set.origin, "dir /tmp/test");
    return &b->set;
}

static const lop_reconcile_req_t req = {"default", "a", "rid-7"};

/* ------------------------------------------------------------------ load errors */

static void test_load_errors_name_file_line(void)
{
    const lop_engine_t *e = lop_lua_engine();
    const struct {
        const char *main, *name2, *src2, *want;
    } cases[] = {
        {"local x = 1\nlocal y = = 2\n", NULL, NULL, "main.lua:2:"},
        {"local x = 1\n\nerror('boom')\n", NULL, NULL, "main.lua:3: boom"},
        {"local u = require('lib.util')\n", "lib/util.lua", "local M = {}\nM.x = nil + 1\nreturn M\n",
         "lib/util.lua:2: attempt to perform arithmetic"},
        {"\nrequire('missing.mod')\n", NULL, NULL, "main.lua:2: module 'missing.mod' not found in the script set"},
        {"local core = require('luaop.core')\ncore.register_controller{ name = 'm', for_ = { api_version = 'v1' },"
         " reconcile = function() end }\n",
         NULL, NULL, "main.lua:2: controller 'm': for_ kind must be a non-empty string"},
        {"local core = require('luaop.core')\ncore.register_controller{ name = 'm', for_ = { api_version = 'v1', kind "
         "= 'A' },"
         " owns = { { api_version = 'v1', kind = 'B', predicates = { { builtin = 'nope' } } } },"
         " reconcile = function() end }\n",
         NULL, NULL, "main.lua:2: controller 'm': owns[1].predicates[1] unknown builtin 'nope'"},
        {"local core = require('luaop.core')\n\ncore.get('v1', 'ConfigMap', 'default', 'a')\n", NULL, NULL,
         "main.lua:3: core.get may not be called while main.lua loads"},
        /* every file is compiled, also one that nothing requires */
        {"return 1\n", "other.lua", "local x = = 1\n", "other.lua:1:"},
        {"return 1\n", "other.lua", "return 2\n", NULL}, /* no error: a set without controllers loads */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        set_builder_t b;
        lop_engine_opts_t o = opts();
        lop_err_t err;
        lop_err_clear(&err);
        lop_vm_t *vm = e->vm_new(mkset(&b, cases[i].main, cases[i].name2, cases[i].src2), &o, &host, &err);
        if (!cases[i].want) {
            T_CHECK(vm != NULL);
        } else {
            T_CHECK(vm == NULL);
            if (strncmp(err.message, cases[i].want, strlen(cases[i].want)) != 0) {
                fprintf(stderr, "case %zu: got \"%s\"\n", i, err.message);
                T_CHECK(0);
            }
        }
        if (vm) e->vm_free(vm);
    }
    set_builder_t b;
    lop_engine_opts_t o = opts();
    lop_err_t err;
    b.set.nfiles = 0;
    mkset(&b, "", NULL, NULL);
    b.files[0].name = "other.lua";
    T_CHECK(e->vm_new(&b.set, &o, &host, &err) == NULL);
    T_CHECK(strstr(err.message, "has no main.lua") != NULL);
}

/* ------------------------------------------------------------------ declarations */

static const char decl_main[] =
    "local core = require('luaop.core')\n"
    "core.register_controller{\n"
    "  name = 'memcached',\n"
    "  for_ = { api_version = 'cache.example.com/v1alpha1', kind = 'Memcached',\n"
    "           predicates = { { builtin = 'generation_changed' },\n"
    "                          { builtin = 'or', args = { { builtin = 'labels_changed' }, function(ev) return ev.type "
    "== 'add' end } } } },\n"
    "  owns = { { api_version = 'apps/v1', kind = 'Deployment', namespace = 'ns1', label_selector = 'app=x' } },\n"
    "  watches = { { api_version = 'v1', kind = 'ConfigMap', map = function(obj) return { { namespace = "
    "obj.metadata.namespace, name = 'm-' .. obj.metadata.name } } end,\n"
    "                predicates = { function(ev) return ev.object.metadata.name ~= 'skip' end } } },\n"
    "  max_concurrent_reconciles = 3, leader_election = false, reconcile_timeout = 2.5,\n"
    "  reconcile = function(req) return nil end,\n"
    "}\n"
    "core.register_controller{ name = 'second', for_ = { api_version = 'v1', kind = 'Secret' }, reconcile = function() "
    "end }\n";

static void test_declarations(void)
{
    const lop_engine_t *e = lop_lua_engine();
    set_builder_t b;
    lop_engine_opts_t o = opts();
    lop_err_t err;
    lop_vm_t *vm = e->vm_new(mkset(&b, decl_main, NULL, NULL), &o, &host, &err);
    T_CHECK(vm != NULL);
    if (!vm) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    const lop_ctrl_decl_t *d;
    size_t n;
    e->declarations(vm, &d, &n);
    T_EQ_INT(n, 2);
    T_EQ_STR(d[0].name, "memcached");
    T_EQ_STR(d[0].for_.gvk.api_version, "cache.example.com/v1alpha1");
    T_EQ_STR(d[0].for_.gvk.kind, "Memcached");
    T_EQ_INT(d[0].for_.map, LOP_MAP_SELF);
    T_EQ_INT(d[0].for_.npreds, 2);
    T_EQ_INT(d[0].for_.preds[0].kind, LOP_PRED_GENERATION_CHANGED);
    T_EQ_INT(d[0].for_.preds[1].kind, LOP_PRED_OR);
    T_EQ_INT(d[0].for_.preds[1].nargs, 2);
    T_EQ_INT(d[0].for_.preds[1].args[0].kind, LOP_PRED_LABELS_CHANGED);
    T_EQ_INT(d[0].for_.preds[1].args[1].kind, LOP_PRED_LUA);
    T_EQ_INT(d[0].for_.preds[1].args[1].lua_id, 1);
    T_EQ_INT(d[0].nowns, 1);
    T_EQ_INT(d[0].owns[0].map, LOP_MAP_OWNER);
    T_EQ_STR(d[0].owns[0].namespace_, "ns1");
    T_EQ_STR(d[0].owns[0].label_selector, "app=x");
    T_EQ_INT(d[0].nwatches, 1);
    T_EQ_INT(d[0].watches[0].map, LOP_MAP_LUA);
    T_EQ_INT(d[0].watches[0].preds[0].lua_id, 2); /* predicates before the map, in spec order */
    T_EQ_INT(d[0].watches[0].map_lua_id, 3);
    T_EQ_INT(d[0].max_concurrent_reconciles, 3);
    T_CHECK(!d[0].leader_election);
    T_EQ_INT(d[0].reconcile_timeout_ns, 2500 * LOP_NS_PER_MS);
    T_EQ_STR(d[1].name, "second");
    T_CHECK(d[1].leader_election);
    T_EQ_INT(d[1].max_concurrent_reconciles, 1);
    T_EQ_INT(d[1].nowns, 0);

    /* Lua predicates, with the event decoded lazily. */
    const char *obj = "{\"metadata\":{\"name\":\"skip\",\"namespace\":\"ns\"}}";
    const char *obj2 = "{\"metadata\":{\"name\":\"keep\",\"namespace\":\"ns\"}}";
    lop_event_view_t ev = {LOP_EV_ADD, NULL, 0, obj, strlen(obj)};
    bool pass = true;
    T_EQ_INT(e->predicate(vm, 1, &ev, &pass, &err), LOP_OK);
    T_CHECK(pass); /* ev.type == 'add' */
    ev.type = LOP_EV_UPDATE;
    ev.old_json = obj;
    ev.old_len = strlen(obj);
    T_EQ_INT(e->predicate(vm, 1, &ev, &pass, &err), LOP_OK);
    T_CHECK(!pass);
    T_EQ_INT(e->predicate(vm, 2, &ev, &pass, &err), LOP_OK);
    T_CHECK(!pass); /* name == skip */
    ev.obj_json = obj2;
    ev.obj_len = strlen(obj2);
    T_EQ_INT(e->predicate(vm, 2, &ev, &pass, &err), LOP_OK);
    T_CHECK(pass);
    T_CHECK(e->predicate(vm, 99, &ev, &pass, &err) != LOP_OK);

    /* Map function. */
    lop_request_list_t out;
    T_EQ_INT(e->map(vm, 3, &ev, &out, &err), LOP_OK);
    T_EQ_INT(out.n, 1);
    if (out.n == 1) {
        T_EQ_STR(out.namespaces[0], "ns");
        T_EQ_STR(out.names[0], "m-keep");
    }
    lop_request_list_free(&out);
    e->vm_free(vm);
}

static void test_predicate_and_map_errors(void)
{
    const lop_engine_t *e = lop_lua_engine();
    const char *src =
        "local core = require('luaop.core')\n"
        "local stash\n"
        "core.register_controller{ name = 'p', for_ = { api_version = 'v1', kind = 'A', predicates = {\n"
        "  function(ev) stash = ev return true end,\n"
        "  function(ev) return stash.object ~= nil end,\n"
        "  function(ev) error('pred boom') end } },\n"
        "  watches = { { api_version = 'v1', kind = 'B', map = function(obj) return { { name = 42 } } end } },\n"
        "  reconcile = function() end }\n";
    set_builder_t b;
    lop_engine_opts_t o = opts();
    lop_err_t err;
    lop_vm_t *vm = e->vm_new(mkset(&b, src, NULL, NULL), &o, &host, &err);
    T_CHECK(vm != NULL);
    if (!vm) return;
    const char *obj = "{\"metadata\":{\"name\":\"x\"}}";
    lop_event_view_t ev = {LOP_EV_ADD, NULL, 0, obj, strlen(obj)};
    bool pass = false;
    T_EQ_INT(e->predicate(vm, 1, &ev, &pass, &err), LOP_OK);
    /* A stashed event is no longer readable: the JSON it pointed at was only borrowed. */
    T_CHECK(e->predicate(vm, 2, &ev, &pass, &err) != LOP_OK);
    T_CHECK(strstr(err.message, "event.object read after the predicate or map function returned") != NULL);
    T_CHECK(pass); /* on error the host lets the event pass */
    T_CHECK(e->predicate(vm, 3, &ev, &pass, &err) != LOP_OK);
    T_CHECK(strstr(err.message, "controller 'p' for_.predicates[3]: main.lua:6: pred boom") != NULL);
    lop_request_list_t out;
    T_CHECK(e->map(vm, 4, &ev, &out, &err) != LOP_OK);
    T_CHECK(strstr(err.message, "name must be a non-empty string") != NULL);
    T_EQ_INT(out.n, 0);
    e->vm_free(vm);
}

/* ------------------------------------------------------------------ reconcile results */

/* The cases of spec/support/result_cases.lua (shared with spec/result_agreement_spec.lua, which
 * runs them through luaop.testing), run through the real engine. */
typedef struct result_case {
    char body[256], msg[128];
    lop_result_kind_t kind;
    int64_t after_ns;
} result_case_t;

static lop_result_kind_t kind_named(const char *k)
{
    if (!strcmp(k, "requeue")) return LOP_RESULT_REQUEUE;
    if (!strcmp(k, "requeue_after")) return LOP_RESULT_REQUEUE_AFTER;
    if (!strcmp(k, "error")) return LOP_RESULT_ERROR;
    if (!strcmp(k, "terminal")) return LOP_RESULT_TERMINAL;
    return LOP_RESULT_DONE;
}

static size_t load_result_cases(result_case_t *out, size_t max)
{
    char path[1024];
    const char *src = getenv("LUAOP_SRC");
    snprintf(path, sizeof path, "%s/spec/support/result_cases.lua", src ? src : ".");
    lua_State *L = luaL_newstate();
    size_t n = 0;
    if (luaL_dofile(L, path) != 0) {
        fprintf(stderr, "%s: %s\n", path, lua_tostring(L, -1));
    } else {
        for (int i = 1; n < max; i++) {
            lua_rawgeti(L, -1, i);
            if (lua_isnil(L, -1)) {
                lua_pop(L, 1);
                break;
            }
            result_case_t *c = &out[n++];
            lua_getfield(L, -1, "body");
            snprintf(c->body, sizeof c->body, "%s", lua_tostring(L, -1));
            lua_getfield(L, -2, "kind");
            c->kind = kind_named(lua_tostring(L, -1));
            lua_getfield(L, -3, "after");
            c->after_ns = (int64_t)llround(lua_tonumber(L, -1) * 1e9);
            lua_getfield(L, -4, "msg");
            snprintf(c->msg, sizeof c->msg, "%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
            lua_pop(L, 5);
        }
    }
    lua_close(L);
    return n;
}

static void test_reconcile_result_mapping(void)
{
    const lop_engine_t *e = lop_lua_engine();
    static result_case_t cases[64];
    size_t ncases = load_result_cases(cases, 64);
    T_CHECK(ncases >= 20);
    for (size_t i = 0; i < ncases; i++) {
        char src[1024];
        snprintf(src, sizeof src,
                 "local core = require('luaop.core')\n"
                 "core.register_controller{ name = 'c', for_ = { api_version = 'v1', kind = 'A' },\n"
                 "  reconcile = function(req)\n"
                 "    %.255s\n"
                 "  end }\n",
                 cases[i].body);
        set_builder_t b;
        lop_engine_opts_t o = opts();
        lop_err_t err;
        lop_vm_t *vm = e->vm_new(mkset(&b, src, NULL, NULL), &o, &host, &err);
        T_CHECK(vm != NULL);
        if (!vm) continue;
        lop_reconcile_result_t res;
        e->reconcile(vm, "c", &req, &res);
        if (res.kind != cases[i].kind || res.requeue_after_ns != cases[i].after_ns ||
            strncmp(res.message, cases[i].msg, strlen(cases[i].msg)) != 0) {
            fprintf(stderr, "case %zu (%s): kind %d after %lld msg \"%s\"\n", i, cases[i].body, res.kind,
                    (long long)res.requeue_after_ns, res.message);
            T_CHECK(0);
        }
        T_CHECK(!res.timed_out && !res.vm_broken);
        e->vm_free(vm);
    }
}

/* ------------------------------------------------------------------ host functions */

static const char host_main[] =
    "local core = require('luaop.core')\n"
    "local json = core.json\n"
    "local function check(c, what) if not c then error('check failed: ' .. what, 2) end end\n"
    "core.register_controller{ name = 'h', for_ = { api_version = 'v1', kind = 'ConfigMap' },\n"
    "  reconcile = function(req)\n"
    "    check(req.namespace == 'default' and req.name == 'a' and req.id == 'rid-7', 'req')\n"
    "    local ctx = core.context()\n"
    "    check(ctx.controller == 'h' and ctx.reconcile_id == 'rid-7', 'context')\n"
    "    local cm = core.get('v1', 'ConfigMap', 'default', 'a')\n"
    "    check(cm.data.k == 'v', 'get')\n"
    "    check(tostring(cm.metadata.generation) == '12345678901234567890', 'bigint')\n"
    "    check(json.encode(cm.list) == '[]', 'empty list stays []')\n"
    "    local none, err = core.get('v1', 'ConfigMap', 'default', 'zz')\n"
    "    check(none == nil and err.code == 404 and err.reason == 'NotFound', 'not found')\n"
    "    local s = core.get('v1', 'Secret', 'default', 'x')\n"
    "    check(s.metadata.name == 'live', 'live get')\n"
    "    local l = core.list('v1', 'ConfigMap', 'default')\n"
    "    check(#l == 2 and json.is_array(l), 'cache list')\n"
    "    local sl = core.list('v1', 'Secret', 'default', 'app in (a,b)')\n"
    "    check(#sl == 2 and sl[2].metadata.name == 's2' and sl[1].kind == 'Secret' and sl[1].apiVersion == 'v1', 'live "
    "list pages')\n"
    "    local code, body = core.request('create', 'v1', 'Secret', 'default', nil, nil, nil, nil, json.encode({ a = 1 "
    "}))\n"
    "    check(code == 200 and body.metadata.name == 'live', 'request')\n"
    "    local c2, e2 = core.request('update', 'v1', 'ConfigMap', 'default', 'conflict', nil, nil, nil, '{}')\n"
    "    check(c2 == nil and e2.code == 409 and e2.reason == 'Conflict' and e2.details.name == 'conflict', "
    "'conflict')\n"
    "    check(core.event(cm, 'Warning', 'Failed', 'msg') == true, 'event')\n"
    "    check(not pcall(core.event, cm, 'Bogus', 'r', 'm'), 'event type checked')\n"
    "    check(not pcall(core.request, 'frobnicate', 'v1', 'A'), 'verb checked')\n"
    "    core.sleep(0)\n"
    "    check(core.is_leader() == true and core.identity() == 'pod-1', 'leader')\n"
    "    check(core.format_time() == '2025-03-01T10:00:00Z', 'injected clock')\n"
    "    core.log('info', 'reconciled', { replicas = 3, ok = true, obj = { a = 1 } })\n"
    "    check(not pcall(core.register_controller, {}), 'register outside load')\n"
    "    return { requeue_after = 30 }\n"
    "  end }\n";

static void test_host_functions(void)
{
    const lop_engine_t *e = lop_lua_engine();
    memset(&fh, 0, sizeof fh);
    set_builder_t b;
    lop_engine_opts_t o = opts();
    lop_err_t err;
    lop_vm_t *vm = e->vm_new(mkset(&b, host_main, NULL, NULL), &o, &host, &err);
    T_CHECK(vm != NULL);
    if (!vm) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    lop_reconcile_result_t res;
    e->reconcile(vm, "h", &req, &res);
    T_EQ_INT(res.kind, LOP_RESULT_REQUEUE_AFTER);
    if (res.kind != LOP_RESULT_REQUEUE_AFTER) fprintf(stderr, "%s\n", res.message);
    T_EQ_INT(res.requeue_after_ns, 30 * LOP_NS_PER_S);
    T_EQ_INT(fh.releases, 3); /* one get + two list items */
    T_EQ_INT(fh.events, 1);
    T_EQ_STR(fh.last_event_reason, "Warning/Failed");
    T_EQ_STR(fh.last_body, "{}");
    T_EQ_INT(fh.requests, 5); /* live get, 2 list pages, create, update */
    for (int i = 0; i < 5; i++) T_EQ_INT(fh.timeouts[i], 10 * LOP_NS_PER_S); /* the clock stood still */
    e->vm_free(vm);
}

/* Each client call gets what is left of the reconcile's deadline (the host bounds the call,
 * Retry-After waits included, by it), and a call made after the deadline raises without reaching
 * the host: with 2.5 s and calls that take 1 s each, the host sees 2.5 s, 1.5 s, 0.5 s, then the
 * fourth call raises "reconcile deadline exceeded". */
static const char deadline_main[] =
    "local core = require('luaop.core')\n"
    "core.register_controller{ name = 'd', for_ = { api_version = 'v1', kind = 'ConfigMap' },\n"
    "  reconcile_timeout = 2.5,\n"
    "  reconcile = function(req)\n"
    "    for i = 1, 4 do core.request('get', 'v1', 'Secret', 'default', 's') end\n"
    "  end }\n";

static void test_requests_get_what_is_left_of_the_deadline(void)
{
    const lop_engine_t *e = lop_lua_engine();
    memset(&fh, 0, sizeof fh);
    fh.request_steps = LOP_NS_PER_S;
    set_builder_t b;
    lop_engine_opts_t o = opts();
    lop_err_t err;
    lop_vm_t *vm = e->vm_new(mkset(&b, deadline_main, NULL, NULL), &o, &host, &err);
    T_CHECK(vm != NULL);
    if (!vm) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    lop_reconcile_result_t res;
    e->reconcile(vm, "d", &req, &res);
    T_EQ_INT(res.kind, LOP_RESULT_ERROR);
    T_CHECK(res.timed_out);
    T_CHECK(strstr(res.message, "reconcile deadline exceeded") != NULL);
    T_EQ_INT(fh.requests, 3);
    T_EQ_INT(fh.timeouts[0], 2500 * LOP_NS_PER_MS);
    T_EQ_INT(fh.timeouts[1], 1500 * LOP_NS_PER_MS);
    T_EQ_INT(fh.timeouts[2], 500 * LOP_NS_PER_MS);
    e->vm_free(vm);
}

/* ------------------------------------------------------------------ require and the library */

static void write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(s, f);
    fclose(f);
}

static void test_luaop_library_cannot_be_shadowed(void)
{
    char dir[] = "/tmp/lop_lua_libXXXXXX";
    if (!mkdtemp(dir)) {
        T_CHECK(0);
        return;
    }
    char p[256];
    snprintf(p, sizeof p, "%s/luaop", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/luaop/init.lua", dir);
    write_file(p, "local M = { name = 'lib' }\nM.helper = require('luaop.helper')\nreturn M\n");
    snprintf(p, sizeof p, "%s/luaop/helper.lua", dir);
    write_file(p, "return { answer = 42 }\n");
    lop_lua_set_library_path(dir);

    const lop_engine_t *e = lop_lua_engine();
    set_builder_t b;
    const char *src = "local op = require('luaop')\n"
                      "assert(op.name == 'lib', 'library luaop')\n"
                      "assert(op.helper.answer == 42, 'library helper')\n"
                      "assert(require('luaop.helper') == op.helper, 'cached')\n"
                      "assert(require('luaop.core').json, 'core')\n"
                      "assert(package.loaded['luaop'] == op, 'package.loaded')\n";
    mkset(&b, src, "luaop/helper.lua", "return { answer = 'shadowed' }\n");
    lop_engine_opts_t o = opts();
    lop_err_t err;
    lop_vm_t *vm = e->vm_new(&b.set, &o, &host, &err);
    T_CHECK(vm != NULL);
    if (!vm)
        fprintf(stderr, "%s\n", err.message);
    else
        e->vm_free(vm);

    mkset(&b, "\nrequire('luaop.nothere')\n", NULL, NULL);
    vm = e->vm_new(&b.set, &o, &host, &err);
    T_CHECK(vm == NULL);
    T_CHECK(strstr(err.message, "main.lua:2: module 'luaop.nothere' not found in the luaop library") != NULL);

    char used[512];
    lop_lua_library_path(used, sizeof used);
    T_EQ_STR(used, dir);
    lop_lua_set_library_path(NULL);
    snprintf(p, sizeof p, "%s/luaop/init.lua", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/luaop/helper.lua", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/luaop", dir);
    rmdir(p);
    rmdir(dir);
}

/* The library is listed once, but a file is read when a VM first requires it, and its bytes are
 * then what every later VM gets: a module no VM has required is not held (luaop run never reads
 * luaop.testing), and once read a module does not change under later VMs. Shown by editing both
 * files on disk after the first VM: the required one keeps its first bytes, the other one, first
 * required by the second VM, has the new ones (it was not read when the directory was listed). */
static void test_library_files_are_read_when_first_required(void)
{
    char dir[] = "/tmp/lop_lua_libXXXXXX";
    if (!mkdtemp(dir)) {
        T_CHECK(0);
        return;
    }
    char p[256], used_path[256], unused_path[256];
    snprintf(p, sizeof p, "%s/luaop", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/luaop/init.lua", dir);
    write_file(p, "return { name = 'lib' }\n");
    snprintf(used_path, sizeof used_path, "%s/luaop/used.lua", dir);
    write_file(used_path, "return 1\n");
    snprintf(unused_path, sizeof unused_path, "%s/luaop/later.lua", dir);
    write_file(unused_path, "return 1\n");
    lop_lua_set_library_path(dir);

    const lop_engine_t *e = lop_lua_engine();
    set_builder_t b;
    lop_engine_opts_t o = opts();
    lop_err_t err;
    mkset(&b, "assert(require('luaop.used') == 1, 'used, first read')\n", NULL, NULL);
    lop_vm_t *vm = e->vm_new(&b.set, &o, &host, &err);
    T_CHECK(vm != NULL);
    if (vm) e->vm_free(vm);

    write_file(used_path, "return 2\n");
    write_file(unused_path, "return 2\n");
    mkset(&b,
          "assert(require('luaop.used') == 1, 'used: the bytes first read')\n"
          "assert(require('luaop.later') == 2, 'later: read now, not when listed')\n",
          NULL, NULL);
    vm = e->vm_new(&b.set, &o, &host, &err);
    T_CHECK(vm != NULL);
    if (!vm)
        fprintf(stderr, "%s\n", err.message);
    else
        e->vm_free(vm);

    lop_lua_set_library_path(NULL);
    snprintf(p, sizeof p, "%s/luaop/init.lua", dir);
    unlink(p);
    unlink(used_path);
    unlink(unused_path);
    snprintf(p, sizeof p, "%s/luaop", dir);
    rmdir(p);
    rmdir(dir);
}

int main(void)
{
    lop_fake_clock_init(&fclock, 0);
    T_RUN(test_load_errors_name_file_line);
    T_RUN(test_declarations);
    T_RUN(test_predicate_and_map_errors);
    T_RUN(test_reconcile_result_mapping);
    T_RUN(test_host_functions);
    T_RUN(test_requests_get_what_is_left_of_the_deadline);
    T_RUN(test_luaop_library_cannot_be_shadowed);
    T_RUN(test_library_files_are_read_when_first_required);
    return T_DONE();
}
