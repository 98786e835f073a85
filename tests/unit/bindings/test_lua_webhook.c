/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for webhooks in the LuaJIT engine (bindings/engine_webhook.c over
 * scripts/luaop/webhook.lua): declarations as engine.h describes them, admission results (allow,
 * deny with reason, warnings, a defaulter's changed object, a raise naming file:line), conversion,
 * and declaration errors pointing at the user's main.lua line. */
#include "bindings/engine_lua.h"
#include "host/util/buf.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lop_fake_clock_t fclock;

static const char main_lua[] =
    "local op = require('luaop')\n"
    "local fv = { api_version = 'cache.example.com/v1', kind = 'Memcached' }\n"
    "op.webhook.defaulter { for_ = fv, default = function(obj, req)\n"
    "  obj.spec = obj.spec or {}\n"
    "  obj.spec.size = obj.spec.size or 1\n"
    "  if req.dryRun then req.warn('dry run') end\n"
    "end }\n"
    "op.webhook.validator { for_ = fv, timeout_seconds = 5,\n"
    "  validate_create = function(obj) if (obj.spec.size or 0) > 5 then return false, 'size must be <= 5' end end,\n"
    "  validate_update = function(new, old, req)\n"
    "    if new.spec.size == 13 then error('unlucky') end\n"
    "    if new.spec.size == 14 then return 'yes' end\n"
    "    req.warn('updated')\n"
    "  end,\n"
    "  validate_delete = function(old) return false end }\n"
    "op.webhook.conversion { group = 'cache.example.com', kind = 'Memcached', convert = function(obj, to)\n"
    "  if to == 'cache.example.com/v1' then return { spec = { replicas = obj.spec.size } } end\n"
    "  return { spec = { size = obj.spec.replicas } }\n"
    "end }\n"
    "op.webhook.validating { name = 'pods.policy.example.com', failure_policy = 'Ignore',\n"
    "  rules = { { operations = { 'CREATE' }, api_groups = { '' }, api_versions = { 'v1' }, resources = { 'pods' },\n"
    "    scope = 'Namespaced' } },\n"
    "  admit = function(req) return nil end }\n";

static lop_vm_t *load(const char *src, lop_err_t *err)
{
    lop_script_file_t f = {.name = "main.lua", .data = (char *)src, .len = strlen(src)};
    lop_script_set_t set = {.files = &f, .nfiles = 1};
    strcpy(set.origin, "dir /tmp/test");
    lop_engine_opts_t o = {
        .reconcile_timeout_ns = 10 * LOP_NS_PER_S, .load_timeout_ns = 10 * LOP_NS_PER_S, .clock = &fclock.base};
    return lop_lua_engine()->vm_new(&set, &o, NULL, err);
}

static const lop_webhook_decl_t *find(lop_vm_t *vm, const char *name)
{
    const lop_webhook_decl_t *d;
    size_t n;
    lop_lua_engine()->webhook_declarations(vm, &d, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(d[i].name, name) == 0) return &d[i];
    return NULL;
}

static void test_declarations(void)
{
    lop_err_t err;
    lop_vm_t *vm = load(main_lua, &err);
    T_CHECK(vm != NULL);
    if (!vm) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    const lop_webhook_decl_t *m = find(vm, "mmemcached.cache.example.com");
    T_CHECK(m != NULL);
    if (m) {
        T_EQ_INT(m->type, LOP_WEBHOOK_MUTATING);
        T_CHECK(m->defaulter && !m->validator);
        T_EQ_STR(m->path, "/mutate-cache-example-com-v1-memcached");
        T_EQ_STR(m->gvk.api_version, "cache.example.com/v1");
        T_EQ_STR(m->gvk.kind, "Memcached");
        T_EQ_INT(m->nrules, 1);
        T_EQ_STR(m->rules[0].resources[0], "memcacheds");
        T_EQ_STR(m->rules[0].operations[1], "UPDATE");
        T_CHECK(m->rules[0].operations[2] == NULL);
        T_EQ_INT(m->timeout_seconds, 10);
        T_EQ_STR(m->failure_policy, "Fail");
        T_EQ_STR(m->side_effects, "None");
    }
    const lop_webhook_decl_t *v = find(vm, "vmemcached.cache.example.com");
    T_CHECK(v != NULL);
    if (v) {
        T_EQ_INT(v->type, LOP_WEBHOOK_VALIDATING);
        T_EQ_STR(v->path, "/validate-cache-example-com-v1-memcached");
        T_EQ_STR(v->rules[0].operations[2], "DELETE"); /* validate_delete given */
        T_EQ_INT(v->timeout_seconds, 5);
    }
    const lop_webhook_decl_t *c = find(vm, "conversion.memcached.cache.example.com");
    T_CHECK(c != NULL);
    if (c) {
        T_EQ_INT(c->type, LOP_WEBHOOK_CONVERSION);
        T_EQ_STR(c->path, "/convert");
        T_EQ_STR(c->gvk.api_version, "cache.example.com");
    }
    const lop_webhook_decl_t *g = find(vm, "pods.policy.example.com");
    T_CHECK(g != NULL);
    if (g) {
        T_EQ_STR(g->path, "/validating-pods-policy-example-com");
        T_EQ_STR(g->failure_policy, "Ignore");
        T_EQ_STR(g->rules[0].api_groups[0], "");
        T_EQ_STR(g->rules[0].scope, "Namespaced");
        T_CHECK(g->gvk.kind == NULL);
    }
    lop_lua_engine()->vm_free(vm);
}

/* An AdmissionRequest for a Memcached of the given size. */
static void review(char *buf, size_t cap, const char *op, int size, int old_size, bool dry_run)
{
    snprintf(buf, cap,
             "{\"uid\":\"u-1\",\"operation\":\"%s\",\"dryRun\":%s,\"namespace\":\"default\","
             "\"object\":{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"Memcached\","
             "\"metadata\":{\"name\":\"m\"},\"spec\":{\"size\":%d,\"list\":[]}},"
             "\"oldObject\":{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"Memcached\","
             "\"metadata\":{\"name\":\"m\"},\"spec\":{\"size\":%d}}}",
             op, dry_run ? "true" : "false", size, old_size);
}

static void test_admission(void)
{
    const lop_engine_t *e = lop_lua_engine();
    lop_err_t err;
    lop_vm_t *vm = load(main_lua, &err);
    T_CHECK(vm != NULL);
    if (!vm) return;
    int vid = find(vm, "vmemcached.cache.example.com")->lua_id;
    int mid = find(vm, "mmemcached.cache.example.com")->lua_id;
    char rq[1024];
    lop_admission_result_t r;
    bool broken = true;

    review(rq, sizeof rq, "CREATE", 3, 0, false);
    T_EQ_INT(e->admit(vm, vid, rq, strlen(rq), 0, &r, &broken, &err), LOP_OK);
    T_CHECK(r.allowed && !broken && r.nwarnings == 0 && r.patched_json == NULL);
    lop_admission_result_free(&r);

    review(rq, sizeof rq, "CREATE", 9, 0, false);
    T_EQ_INT(e->admit(vm, vid, rq, strlen(rq), 0, &r, &broken, &err), LOP_OK);
    T_CHECK(!r.allowed);
    T_EQ_INT(r.code, 403);
    T_EQ_STR(r.message, "size must be <= 5");
    lop_admission_result_free(&r);

    review(rq, sizeof rq, "UPDATE", 4, 3, false);
    T_EQ_INT(e->admit(vm, vid, rq, strlen(rq), 0, &r, &broken, &err), LOP_OK);
    T_CHECK(r.allowed);
    T_EQ_INT(r.nwarnings, 1);
    if (r.nwarnings) T_EQ_STR(r.warnings[0], "updated");
    lop_admission_result_free(&r);

    /* a raise: denied with 500, naming the webhook and main.lua:11 */
    review(rq, sizeof rq, "UPDATE", 13, 3, false);
    T_EQ_INT(e->admit(vm, vid, rq, strlen(rq), 0, &r, &broken, &err), LOP_OK);
    T_CHECK(!r.allowed && !broken);
    T_EQ_INT(r.code, 500);
    T_CHECK(strstr(r.message, "webhook 'vmemcached.cache.example.com': main.lua:11: unlucky") != NULL);
    T_CHECK(strchr(r.message, '\n') == NULL); /* no traceback in what kubectl shows */
    lop_admission_result_free(&r);

    /* a return value that means nothing: a clear error, not a silent allow */
    review(rq, sizeof rq, "UPDATE", 14, 3, false);
    T_EQ_INT(e->admit(vm, vid, rq, strlen(rq), 0, &r, &broken, &err), LOP_OK);
    T_CHECK(!r.allowed && strstr(r.message, "validate_update returned a string") != NULL);
    lop_admission_result_free(&r);

    review(rq, sizeof rq, "DELETE", 1, 1, false);
    T_EQ_INT(e->admit(vm, vid, rq, strlen(rq), 0, &r, &broken, &err), LOP_OK);
    T_CHECK(!r.allowed && strstr(r.message, "validate_delete denied the request") != NULL);
    lop_admission_result_free(&r);

    /* the defaulter: the object after, [] kept as [], a warning on dry run */
    const char *nosize = "{\"uid\":\"u\",\"operation\":\"CREATE\",\"dryRun\":true,\"object\":{\"apiVersion\":"
                         "\"cache.example.com/v1\",\"kind\":\"Memcached\",\"metadata\":{\"name\":\"m\"},"
                         "\"spec\":{\"list\":[]}}}";
    T_EQ_INT(e->admit(vm, mid, nosize, strlen(nosize), 0, &r, &broken, &err), LOP_OK);
    T_CHECK(r.allowed && r.patched_json != NULL);
    if (r.patched_json) {
        T_CHECK(strstr(r.patched_json, "\"size\":1") != NULL);
        T_CHECK(strstr(r.patched_json, "\"list\":[]") != NULL);
    }
    T_EQ_INT(r.nwarnings, 1);
    lop_admission_result_free(&r);

    T_EQ_INT(e->admit(vm, vid, "[1]", 3, 0, &r, &broken, &err), LOP_EINVAL);
    e->vm_free(vm);
}

static void test_conversion(void)
{
    const lop_engine_t *e = lop_lua_engine();
    lop_err_t err;
    lop_vm_t *vm = load(main_lua, &err);
    T_CHECK(vm != NULL);
    if (!vm) return;
    int cid = find(vm, "conversion.memcached.cache.example.com")->lua_id;
    const char *v1a1 = "{\"apiVersion\":\"cache.example.com/v1alpha1\",\"kind\":\"Memcached\","
                       "\"metadata\":{\"name\":\"m\",\"uid\":\"x\"},\"spec\":{\"size\":3}}";
    char *out = NULL;
    size_t n = 0;
    bool broken = true;
    T_EQ_INT(e->convert(vm, cid, v1a1, strlen(v1a1), "cache.example.com/v1", 0, &out, &n, &broken, &err), LOP_OK);
    T_CHECK(out && !broken);
    if (out) {
        T_CHECK(strstr(out, "\"apiVersion\":\"cache.example.com/v1\"") != NULL);
        T_CHECK(strstr(out, "\"kind\":\"Memcached\"") != NULL);
        T_CHECK(strstr(out, "\"uid\":\"x\"") != NULL); /* metadata carried over */
        T_CHECK(strstr(out, "\"replicas\":3") != NULL);
        T_EQ_INT(n, strlen(out));
    }
    /* and back */
    char *back = NULL;
    T_EQ_INT(e->convert(vm, cid, out, n, "cache.example.com/v1alpha1", 0, &back, &n, &broken, &err), LOP_OK);
    T_CHECK(back && strstr(back, "\"size\":3") != NULL && strstr(back, "v1alpha1") != NULL);
    free(out);
    free(back);
    /* a conversion that raises: an error naming the webhook */
    const char *bad = "{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"Memcached\",\"metadata\":{}}";
    T_CHECK(e->convert(vm, cid, bad, strlen(bad), "cache.example.com/v1alpha1", 0, &out, &n, &broken, &err) != LOP_OK);
    T_CHECK(out == NULL);
    T_CHECK(strstr(err.message, "webhook 'conversion.memcached.cache.example.com': main.lua:18:") != NULL);
    e->vm_free(vm);
}

static void expect_load_error(const char *src, const char *want)
{
    lop_err_t err;
    lop_vm_t *vm = load(src, &err);
    T_CHECK(vm == NULL);
    if (vm) {
        lop_lua_engine()->vm_free(vm);
        return;
    }
    if (!strstr(err.message, want)) fprintf(stderr, "got: %s\nwant: %s\n", err.message, want);
    T_CHECK(strstr(err.message, want) != NULL);
}

static void test_declaration_errors(void)
{
    expect_load_error(
        "local op = require('luaop')\n"
        "op.webhook.validator { for_ = { api_version = 'a.b/v1', kind = 'K' }, validate = function() end }\n",
        "main.lua:2: luaop.webhook.validator: unknown field 'validate' (did you mean 'validate_create'?)");
    expect_load_error("local op = require('luaop')\n"
                      "op.webhook.defaulter { for_ = { api_version = 'a.b/v1', kind = 'K' } }\n",
                      "main.lua:2: luaop.webhook.defaulter: default must be a function(obj, req), not a nil");
    expect_load_error("local op = require('luaop')\n"
                      "local f = { api_version = 'a.b/v1', kind = 'K' }\n"
                      "op.webhook.defaulter { for_ = f, default = function() end }\n"
                      "op.webhook.defaulter { for_ = f, default = function() end, name = 'other.a.b' }\n",
                      "path /mutate-a-b-v1-k is already served by webhook 'mk.a.b'");
    expect_load_error("local op = require('luaop')\n"
                      "op.webhook.validator { for_ = { api_version = 'a.b/v1', kind = 'K' }, timeout_seconds = 31,\n"
                      "  validate_create = function() end }\n",
                      "timeout_seconds must be an integer from 1 to 30");
}

int main(void)
{
    lop_fake_clock_init(&fclock, 0);
    T_RUN(test_declarations);
    T_RUN(test_admission);
    T_RUN(test_conversion);
    T_RUN(test_declaration_errors);
    return T_DONE();
}
