/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/runtime/webhook/webhook_pool: a review goes to the declaration served at
 * its path with 80% of timeoutSeconds as its deadline; conversion is chosen by group and kind;
 * unknown paths and kinds are LOP_ENOTFOUND; a reload takes effect on the next call; a VM the
 * engine calls broken is rebuilt; with nothing to serve the pool gives its VMs back. A C fake engine stands in for Lua. */
#include "host/runtime/scriptrt.h"
#include "host/runtime/scripts.h"
#include "host/runtime/webhook/webhook_pool.h"
#include "host/util/buf.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A fake VM declares two webhooks; version is main.lua's number. */
typedef struct fake_vm {
    int version;
    lop_webhook_decl_t decls[2];
} fake_vm_t;

static int vms_built;
static int64_t last_timeout;
static bool break_next;

static lop_vm_t *fake_vm_new(const lop_script_set_t *set, const lop_engine_opts_t *opts, const lop_host_api_t *host,
                             lop_err_t *err)
{
    const lop_script_file_t *f = lop_scripts_find(set, "main.lua");
    fake_vm_t *vm = lop_xcalloc(1, sizeof *vm);
    vm->version = atoi(f->data);
    vm->decls[0] = (lop_webhook_decl_t){.type = LOP_WEBHOOK_VALIDATING,
                                        .name = "vwidget.example.com",
                                        .path = "/validate-example-com-v1-widget",
                                        .timeout_seconds = 5,
                                        .lua_id = 1};
    vm->decls[1] = (lop_webhook_decl_t){.type = LOP_WEBHOOK_CONVERSION,
                                        .name = "conversion.widget.example.com",
                                        .path = "/convert",
                                        .gvk = {"example.com", "Widget"},
                                        .lua_id = 2};
    vms_built++;
    return (lop_vm_t *)vm;
}

static void fake_vm_free(lop_vm_t *vm) { free(vm); }

static void fake_decls(lop_vm_t *vm, const lop_webhook_decl_t **d, size_t *n)
{
    *d = ((fake_vm_t *)vm)->decls;
    *n = 2;
}

static lop_rc_t fake_admit(lop_vm_t *vm, int lua_id, const char *rq, size_t len, int64_t timeout_ns,
                           lop_admission_result_t *res, bool *vm_broken, lop_err_t *err)
{
    last_timeout = timeout_ns;
    res->allowed = false;
    res->code = 403;
    snprintf(res->message, sizeof res->message, "v%d id %d saw %.*s", ((fake_vm_t *)vm)->version, lua_id, (int)len, rq);
    *vm_broken = break_next;
    break_next = false;
    return LOP_OK;
}

static lop_rc_t fake_convert(lop_vm_t *vm, int lua_id, const char *obj, size_t len, const char *to, int64_t timeout_ns,
                             char **out, size_t *out_len, bool *vm_broken, lop_err_t *err)
{
    last_timeout = timeout_ns;
    lop_buf_t b = {0};
    lop_buf_printf(&b, "{\"apiVersion\":\"%s\",\"id\":%d}", to, lua_id);
    *out_len = b.len;
    *out = lop_buf_steal(&b);
    *vm_broken = false;
    return LOP_OK;
}

static const lop_engine_t fake_engine = {.name = "fake",
                                         .vm_new = fake_vm_new,
                                         .vm_free = fake_vm_free,
                                         .webhook_declarations = fake_decls,
                                         .admit = fake_admit,
                                         .convert = fake_convert};

static lop_engine_opts_t opts;
static lop_host_api_t host;

static lop_script_set_t *set_with(const char *main)
{
    lop_script_file_t f = {"main.lua", (char *)main, strlen(main)};
    return lop_scripts_from_files(&f, 1, "test");
}

static void test_admit_and_convert(void)
{
    lop_scriptrt_t *rt = lop_scriptrt_new(&fake_engine, &opts, &host);
    lop_err_t err;
    T_EQ_INT(lop_scriptrt_install(rt, set_with("1"), NULL, NULL, &err), LOP_OK);
    lop_webhook_pool_t *p = lop_webhook_pool_new(rt, 2);
    lop_admission_result_t r;
    T_EQ_INT(lop_webhook_pool_admit(p, "/validate-example-com-v1-widget", "{}", 2, &r, &err), LOP_OK);
    T_EQ_STR(r.message, "v1 id 1 saw {}");
    T_EQ_INT(last_timeout, 4 * LOP_NS_PER_S); /* 80% of timeoutSeconds 5 */
    lop_admission_result_free(&r);
    T_EQ_INT(lop_webhook_pool_admit(p, "/nothing", "{}", 2, &r, &err), LOP_ENOTFOUND);
    T_CHECK(strstr(err.message, "no webhook is served at /nothing") != NULL);
    T_EQ_INT(lop_webhook_pool_admit(p, "/convert", "{}", 2, &r, &err), LOP_ENOTFOUND); /* not an admission path */

    const char *w = "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\"}";
    char *out = NULL;
    size_t n = 0;
    T_EQ_INT(lop_webhook_pool_convert(p, w, strlen(w), "example.com/v2", &out, &n, &err), LOP_OK);
    T_EQ_STR(out, "{\"apiVersion\":\"example.com/v2\",\"id\":2}");
    T_EQ_INT(n, strlen(out));
    T_EQ_INT(last_timeout, 8 * LOP_NS_PER_S); /* the default timeoutSeconds, 10 */
    free(out);
    const char *g = "{\"apiVersion\":\"other.com/v1\",\"kind\":\"Widget\"}";
    T_EQ_INT(lop_webhook_pool_convert(p, g, strlen(g), "other.com/v2", &out, &n, &err), LOP_ENOTFOUND);
    T_CHECK(strstr(err.message, "no conversion webhook is declared for Widget in group other.com") != NULL);
    T_EQ_INT(lop_webhook_pool_convert(p, "[]", 2, "x/v1", &out, &n, &err), LOP_EINVAL);
    T_EQ_INT(lop_webhook_pool_declarations(p, NULL, NULL), 2);
    lop_webhook_pool_free(p);
    lop_scriptrt_free(rt);
}

static void test_reload_and_broken_vm(void)
{
    vms_built = 0;
    lop_scriptrt_t *rt = lop_scriptrt_new(&fake_engine, &opts, &host);
    lop_err_t err;
    T_EQ_INT(lop_scriptrt_install(rt, set_with("1"), NULL, NULL, &err), LOP_OK);
    lop_webhook_pool_t *p = lop_webhook_pool_new(rt, 1);
    lop_admission_result_t r;
    const char *path = "/validate-example-com-v1-widget";
    T_EQ_INT(lop_webhook_pool_admit(p, path, "{}", 2, &r, &err), LOP_OK);
    lop_admission_result_free(&r);
    int built = vms_built;
    T_EQ_INT(lop_scriptrt_install(rt, set_with("2"), NULL, NULL, &err), LOP_OK);
    T_EQ_INT(lop_webhook_pool_admit(p, path, "{}", 2, &r, &err), LOP_OK);
    T_EQ_STR(r.message, "v2 id 1 saw {}"); /* the slot followed the reload */
    lop_admission_result_free(&r);
    built = vms_built;
    break_next = true;
    T_EQ_INT(lop_webhook_pool_admit(p, path, "{}", 2, &r, &err), LOP_OK);
    lop_admission_result_free(&r);
    T_EQ_INT(lop_webhook_pool_admit(p, path, "{}", 2, &r, &err), LOP_OK);
    lop_admission_result_free(&r);
    T_EQ_INT(vms_built, built + 1); /* the broken one was rebuilt, once */
    lop_webhook_pool_free(p);
    lop_scriptrt_free(rt);
}

/* With no webhook server (the script set declares none), the VMs the pool built to read the
 * declarations go back to the runtime: the first reconcile worker takes one over and builds
 * nothing, so the process holds no VM that serves no one. A slot in use keeps its VM; after a
 * reload a given-back VM of the old generation is freed, not handed on. */
static void test_give_back_when_nothing_is_served(void)
{
    vms_built = 0;
    lop_scriptrt_t *rt = lop_scriptrt_new(&fake_engine, &opts, &host);
    lop_err_t err;
    T_EQ_INT(lop_scriptrt_install(rt, set_with("1"), NULL, NULL, &err), LOP_OK);
    lop_webhook_pool_t *p = lop_webhook_pool_new(rt, 2);
    T_EQ_INT(lop_webhook_pool_declarations(p, NULL, NULL), 2);
    T_EQ_INT(vms_built, 1); /* the install's VM, taken over by the pool's slot */
    lop_webhook_pool_give_back(p);
    lop_vm_slot_t worker = {NULL, 0};
    lop_vm_t *vm = lop_scriptrt_vm(rt, &worker, &err);
    T_CHECK(vm != NULL);
    T_EQ_INT(((fake_vm_t *)vm)->version, 1);
    T_EQ_INT(vms_built, 1); /* the worker took the given-back VM */
    lop_admission_result_t r;
    T_EQ_INT(lop_webhook_pool_admit(p, "/validate-example-com-v1-widget", "{}", 2, &r, &err), LOP_OK);
    lop_admission_result_free(&r);
    T_EQ_INT(vms_built, 2); /* the pool builds again when a review does come */
    T_EQ_INT(lop_webhook_pool_declarations(p, NULL, NULL), 2);
    T_EQ_INT(lop_scriptrt_install(rt, set_with("2"), NULL, NULL, &err), LOP_OK);
    T_EQ_INT(vms_built, 3);
    lop_webhook_pool_give_back(p); /* generation 1's VM: freed, the runtime keeps generation 2's */
    lop_vm_slot_t second = {NULL, 0};
    vm = lop_scriptrt_vm(rt, &second, &err);
    T_EQ_INT(((fake_vm_t *)vm)->version, 2);
    T_EQ_INT(vms_built, 3); /* the new install's */
    lop_vm_slot_release(rt, &worker);
    lop_vm_slot_release(rt, &second);
    lop_webhook_pool_free(p);
    lop_scriptrt_free(rt);
}

int main(void)
{
    T_RUN(test_admit_and_convert);
    T_RUN(test_reload_and_broken_vm);
    T_RUN(test_give_back_when_nothing_is_served);
    return T_DONE();
}
