/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_pool.c — VM slots for the webhook server (webhook_pool.h).
 */
#include "host/runtime/webhook/webhook_pool.h"

#include "host/util/buf.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct lop_webhook_pool {
    lop_scriptrt_t *rt;
    pthread_mutex_t mu;
    pthread_cond_t freed;
    int n;
    lop_vm_slot_t *slots;
    bool *busy;
};

lop_webhook_pool_t *lop_webhook_pool_new(lop_scriptrt_t *rt, int nvms)
{
    lop_webhook_pool_t *p = lop_xcalloc(1, sizeof *p);
    p->rt = rt;
    p->n = nvms > 0 ? nvms : 1;
    p->slots = lop_xcalloc((size_t)p->n, sizeof *p->slots);
    p->busy = lop_xcalloc((size_t)p->n, sizeof *p->busy);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->freed, NULL);
    return p;
}

void lop_webhook_pool_free(lop_webhook_pool_t *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++) lop_vm_slot_release(p->rt, &p->slots[i]);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->freed);
    free(p->slots);
    free(p->busy);
    free(p);
}

/* A free slot, waiting for one when all are busy (the server bounds the callers anyway). */
static int slot_take(lop_webhook_pool_t *p)
{
    pthread_mutex_lock(&p->mu);
    for (;;) {
        for (int i = 0; i < p->n; i++)
            if (!p->busy[i]) {
                p->busy[i] = true;
                pthread_mutex_unlock(&p->mu);
                return i;
            }
        pthread_cond_wait(&p->freed, &p->mu);
    }
}

static void slot_give(lop_webhook_pool_t *p, int i, bool broken)
{
    if (broken) lop_scriptrt_vm_broken(p->rt, &p->slots[i]); /* rebuilt on its next use */
    pthread_mutex_lock(&p->mu);
    p->busy[i] = false;
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->mu);
}

void lop_webhook_pool_give_back(lop_webhook_pool_t *p)
{
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->n; i++)
        if (!p->busy[i]) lop_vm_slot_return(p->rt, &p->slots[i]);
    pthread_mutex_unlock(&p->mu);
}

/* 80% of timeoutSeconds: the answer reaches the API server before its own timeout. */
static int64_t deadline_ns(const lop_webhook_decl_t *d)
{
    int s = d->timeout_seconds > 0 ? d->timeout_seconds : 10;
    return (int64_t)s * LOP_NS_PER_S / 10 * 8;
}

static const lop_webhook_decl_t *find_admission(const lop_engine_t *e, lop_vm_t *vm, const char *path)
{
    const lop_webhook_decl_t *d = NULL;
    size_t n = 0;
    if (e->webhook_declarations) e->webhook_declarations(vm, &d, &n);
    for (size_t i = 0; i < n; i++)
        if (d[i].type != LOP_WEBHOOK_CONVERSION && strcmp(d[i].path, path) == 0) return &d[i];
    return NULL;
}

static const lop_webhook_decl_t *find_conversion(const lop_engine_t *e, lop_vm_t *vm, const char *group,
                                                 const char *kind)
{
    const lop_webhook_decl_t *d = NULL;
    size_t n = 0;
    if (e->webhook_declarations) e->webhook_declarations(vm, &d, &n);
    for (size_t i = 0; i < n; i++)
        if (d[i].type == LOP_WEBHOOK_CONVERSION && d[i].gvk.api_version && d[i].gvk.kind &&
            strcmp(d[i].gvk.api_version, group) == 0 && strcmp(d[i].gvk.kind, kind) == 0)
            return &d[i];
    return NULL;
}

lop_rc_t lop_webhook_pool_admit(void *ud, const char *path, const char *request_json, size_t len,
                                lop_admission_result_t *res, lop_err_t *err)
{
    lop_webhook_pool_t *p = ud;
    const lop_engine_t *e = lop_scriptrt_engine(p->rt);
    memset(res, 0, sizeof *res);
    int i = slot_take(p);
    lop_vm_t *vm = lop_scriptrt_vm(p->rt, &p->slots[i], err);
    if (!vm) {
        slot_give(p, i, false);
        return LOP_ERR;
    }
    const lop_webhook_decl_t *d = e->admit ? find_admission(e, vm, path) : NULL;
    if (!d) {
        slot_give(p, i, false);
        return lop_err_set(err, LOP_ENOTFOUND, 404, "NotFound", "no webhook is served at %s", path);
    }
    bool broken = false;
    lop_rc_t rc = e->admit(vm, d->lua_id, request_json, len, deadline_ns(d), res, &broken, err);
    slot_give(p, i, broken);
    return rc;
}

/* group and kind of a JSON object ("cache.example.com/v1" -> "cache.example.com"; "v1" -> "").
 * False when either is missing. */
static bool group_kind(const char *json, size_t len, char *group, size_t glen, char *kind, size_t klen)
{
    json_t *o = json_loadb(json, len, 0, NULL);
    const char *av = json_string_value(json_object_get(o, "apiVersion"));
    const char *k = json_string_value(json_object_get(o, "kind"));
    bool ok = av && k && *av && *k;
    if (ok) {
        const char *slash = strchr(av, '/');
        snprintf(group, glen, "%.*s", slash ? (int)(slash - av) : 0, av);
        snprintf(kind, klen, "%s", k);
    }
    json_decref(o);
    return ok;
}

lop_rc_t lop_webhook_pool_convert(void *ud, const char *obj_json, size_t len, const char *desired_api_version,
                                  char **out, size_t *out_len, lop_err_t *err)
{
    lop_webhook_pool_t *p = ud;
    const lop_engine_t *e = lop_scriptrt_engine(p->rt);
    *out = NULL;
    *out_len = 0;
    char group[256], kind[128];
    if (!group_kind(obj_json, len, group, sizeof group, kind, sizeof kind))
        return lop_err_set(err, LOP_EINVAL, 400, "BadRequest", "the object to convert has no apiVersion or kind");
    int i = slot_take(p);
    lop_vm_t *vm = lop_scriptrt_vm(p->rt, &p->slots[i], err);
    if (!vm) {
        slot_give(p, i, false);
        return LOP_ERR;
    }
    const lop_webhook_decl_t *d = e->convert ? find_conversion(e, vm, group, kind) : NULL;
    if (!d) {
        slot_give(p, i, false);
        return lop_err_set(err, LOP_ENOTFOUND, 404, "NotFound", "no conversion webhook is declared for %s in group %s",
                           kind, group[0] ? group : "(core)");
    }
    bool broken = false;
    lop_rc_t rc =
        e->convert(vm, d->lua_id, obj_json, len, desired_api_version, deadline_ns(d), out, out_len, &broken, err);
    slot_give(p, i, broken);
    return rc;
}

size_t lop_webhook_pool_declarations(lop_webhook_pool_t *p,
                                     void (*fn)(void *ud, const lop_webhook_decl_t *decls, size_t n), void *ud)
{
    const lop_engine_t *e = lop_scriptrt_engine(p->rt);
    lop_err_t err;
    int i = slot_take(p);
    lop_vm_t *vm = lop_scriptrt_vm(p->rt, &p->slots[i], &err);
    const lop_webhook_decl_t *d = NULL;
    size_t n = 0;
    if (vm && e->webhook_declarations) e->webhook_declarations(vm, &d, &n);
    if (fn && n) fn(ud, d, n);
    slot_give(p, i, false);
    return n;
}
