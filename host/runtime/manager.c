/* SPDX-License-Identifier: Apache-2.0 */
/* manager.c — wiring controllers, informers and bindings; install (load/reload), start, stop.
 * See manager.h. */
#include "host/runtime/manager_internal.h"

#include "host/runtime/scripts.h"
#include "host/util/buf.h"
#include "host/util/log.h"
#include "host/kube/workqueue/workqueue.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ predicates copy */

/* Informers' handler bursts (a watch read, a relist, a replay) are workqueue batches: the adds
 * the controllers' handlers make for one burst are queued under one lock with one wake-up. */
static const lop_handler_batch_t queue_batch = {lop_workqueue_batch_begin, lop_workqueue_batch_flush,
                                                lop_workqueue_batch_end};

static void preds_free(lop_pred_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) preds_free(p[i].args, p[i].nargs);
    free(p);
}

static lop_pred_t *preds_dup(const lop_pred_t *p, size_t n)
{
    if (n == 0) return NULL;
    lop_pred_t *out = lop_xcalloc(n, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        out[i] = p[i];
        out[i].args = preds_dup(p[i].args, p[i].nargs);
    }
    return out;
}

/* ------------------------------------------------------------------ install validation */

static size_t decl_watch_count(const lop_ctrl_decl_t *d) { return 1 + d->nowns + d->nwatches; }

static const lop_watch_decl_t *decl_watch(const lop_ctrl_decl_t *d, size_t i)
{
    if (i == 0) return &d->for_;
    if (i <= d->nowns) return &d->owns[i - 1];
    return &d->watches[i - 1 - d->nowns];
}

/* Resolve every kind the declarations name; the result becomes m->plan. */
static lop_rc_t validate_vm(void *ud, lop_vm_t *vm, lop_err_t *err)
{
    lop_manager_t *m = ud;
    const lop_ctrl_decl_t *decls;
    size_t n;
    m->cfg.engine->declarations(vm, &decls, &n);
    if (n == 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "main.lua declared no controller (call luaop.controller{...})");
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += decl_watch_count(&decls[i]);
        for (size_t j = 0; j < i; j++)
            if (strcmp(decls[i].name, decls[j].name) == 0)
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "two controllers are named \"%s\"", decls[i].name);
    }
    lop_rest_mapping_t *maps = lop_xcalloc(total, sizeof *maps);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t w = 0; w < decl_watch_count(&decls[i]); w++, k++) {
            const lop_watch_decl_t *wd = decl_watch(&decls[i], w);
            lop_err_t e;
            lop_err_clear(&e);
            lop_rc_t rc = lop_restmapper_resolve(m->cfg.mapper, wd->gvk.api_version, wd->gvk.kind, &maps[k], &e);
            if (rc != LOP_OK) {
                free(maps);
                return lop_err_set(err, rc, e.code, e.reason,
                                   "controller \"%s\": kind %s %s is not served by the API server: %s", decls[i].name,
                                   wd->gvk.api_version, wd->gvk.kind, e.message);
            }
        }
    }
    lop_rc_t irc = lop_manager_index_plan(m, vm, decls, n, maps, err);
    if (irc != LOP_OK) {
        free(maps);
        return irc;
    }
    free(m->plan.mappings);
    m->plan.mappings = maps;
    m->plan.n = total;
    return LOP_OK;
}

/* ------------------------------------------------------------------ informers */

/* "group/version/resource" ("version/resource" for the core group), "+metadata" appended for a
 * metadata-only informer: the informer's name and metric label. */
static void gvr_name(const lop_rest_mapping_t *mp, bool meta_only, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s/%s%s", mp->group, *mp->group ? "/" : "", mp->version, mp->resource,
             meta_only ? "+metadata" : "");
}

/* An informer of the manager synced: tell the owner (it waits for lop_manager_synced). */
static void informer_synced(void *ud)
{
    lop_manager_t *m = ud;
    if (m->cfg.on_informer_synced) m->cfg.on_informer_synced(m->cfg.on_informer_synced_ud);
}

static inf_entry_t *inf_acquire(lop_manager_t *m, const lop_rest_mapping_t *mp, const char *ns, const char *selector,
                                bool meta_only, lop_err_t *err)
{
    if (!mp->namespaced) ns = NULL;
    if (!ns && m->nns == 1 && mp->namespaced) ns = m->nss[0];
    char key[640], idx[32] = "";
    if (!selector && !meta_only) lop_manager_index_key(m, mp, idx, sizeof idx); /* its indexes */
    snprintf(key, sizeof key, "%s/%s/%s|%s|%s%s%s", mp->group, mp->version, mp->resource, ns ? ns : "",
             selector ? selector : "", meta_only ? "|metadata" : "", idx);
    for (inf_entry_t *e = m->infs; e; e = e->next) {
        if (strcmp(e->key, key) == 0 && e->meta_only == meta_only) { /* the key may be cut short */
            e->refs++;
            return e;
        }
    }
    if (m->inf_new_hook && m->inf_new_hook(m->inf_new_hook_ud, key, err) != LOP_OK) return NULL;
    /* metadata-only: the API server sends metadata only (PartialObjectMetadata), cached as the
     * watched kind; a server that cannot gets full objects, stripped to the same entries */
    lop_listwatch_t *lw = meta_only ? lop_rest_listwatch_new_metadata(m->cfg.rest, mp, ns, selector, NULL)
                                    : lop_rest_listwatch_new(m->cfg.rest, mp, ns, selector, NULL);
    if (!lw) {
        lop_err_set(err, LOP_ERR, 0, NULL, "cannot create a list/watch for %s", key);
        return NULL;
    }
    char name[400], api_version[200];
    gvr_name(mp, meta_only, name, sizeof name);
    snprintf(api_version, sizeof api_version, "%s%s%s", mp->group, *mp->group ? "/" : "", mp->version);
    lop_informer_config_t ic = {.name = name,
                                .lw = lw,
                                .clock = m->clock,
                                .watch_list = m->cfg.watch_list,
                                .batch = &queue_batch,
                                .obj_flags = meta_only ? LOP_OBJ_METADATA_ONLY : 0,
                                .api_version = api_version,
                                .kind = mp->kind};
    lop_informer_t *inf = lop_informer_new(&ic, err);
    free(lw); /* the informer copied the struct and owns its ud */
    if (!inf) return NULL;
    inf_entry_t *e = lop_xcalloc(1, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", key);
    e->mapping = *mp;
    e->ns = ns ? lop_xstrdup(ns) : NULL;
    e->selector = selector ? lop_xstrdup(selector) : NULL;
    e->meta_only = meta_only;
    e->inf = inf;
    e->refs = 1;
    lop_manager_index_attach(m, e); /* not started yet: the store may take indexes */
    lop_reflector_handlers_t h = lop_ryw_handlers;
    h.ud = m;
    h.on_synced = informer_synced;
    e->notify_id = lop_informer_add_handler(inf, &h);
    /* its metrics are bound when the wiring is committed (inf_bind_metrics): a staged informer
     * of a reload that fails must not take over the series of a running one of the same kind */
    pthread_mutex_lock(&m->mu);
    e->next = m->infs;
    m->infs = e;
    pthread_mutex_unlock(&m->mu);
    m->stats.informers++;
    return e;
}

/* Count a committed informer in the {gvr} series of its GVR name: the sum over every informer of
 * that name (another namespace or label selector shares the series). Binding only at commit keeps
 * a staged informer of a reload that fails out of the series. */
static void inf_bind_metrics(lop_manager_t *m, inf_entry_t *e)
{
    if (!m->cfg.metrics || e->gvr_metrics) return;
    char name[400];
    gvr_name(&e->mapping, e->meta_only, name, sizeof name);
    lop_metrics_gvr_t *g = NULL;
    for (size_t i = 0; i < m->ngvr_metrics && !g; i++)
        if (strcmp(lop_metrics_gvr_name(m->gvr_metrics[i]), name) == 0) g = m->gvr_metrics[i];
    if (!g) {
        g = lop_metrics_gvr_new(m->cfg.metrics, name, NULL);
        if (!g) return;
        m->gvr_metrics = lop_xrealloc(m->gvr_metrics, (m->ngvr_metrics + 1) * sizeof *m->gvr_metrics);
        m->gvr_metrics[m->ngvr_metrics++] = g;
    }
    lop_metrics_gvr_add(g, lop_informer_store(e->inf), lop_informer_reflector(e->inf));
    e->gvr_metrics = g;
}

/* Stop counting an informer in its {gvr} series (before it is freed); the last one of its GVR
 * name takes the series away. */
static void inf_unbind_metrics(lop_manager_t *m, inf_entry_t *e)
{
    lop_metrics_gvr_t *g = e->gvr_metrics;
    if (!g) return;
    e->gvr_metrics = NULL;
    if (lop_metrics_gvr_remove(g, lop_informer_store(e->inf)) > 0) return;
    for (size_t i = 0; i < m->ngvr_metrics; i++) {
        if (m->gvr_metrics[i] == g) {
            m->gvr_metrics[i] = m->gvr_metrics[--m->ngvr_metrics];
            break;
        }
    }
    if (m->ngvr_metrics == 0) {
        free(m->gvr_metrics);
        m->gvr_metrics = NULL;
    }
    lop_metrics_gvr_free(g);
}

static void inf_release(lop_manager_t *m, inf_entry_t *e)
{
    if (--e->refs > 0) return;
    pthread_mutex_lock(&m->mu);
    for (inf_entry_t **pp = &m->infs; *pp; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    }
    pthread_mutex_unlock(&m->mu);
    lop_log(LOP_LOG_INFO, "stopping informer", "informer", e->key, NULL);
    inf_unbind_metrics(m, e);
    lop_informer_free(e->inf); /* stops it */
    lop_manager_index_entry_free(e);
    free(e->ns);
    free(e->selector);
    free(e);
    m->stats.informers--;
}

static lop_rc_t inf_start(lop_manager_t *m, inf_entry_t *e, lop_err_t *err)
{
    if (e->started) return LOP_OK;
    lop_rc_t rc = lop_informer_start(e->inf, err);
    if (rc == LOP_OK) {
        pthread_mutex_lock(&m->mu); /* cache_for reads it from worker threads */
        e->started = true;
        pthread_mutex_unlock(&m->mu);
        lop_log(LOP_LOG_INFO, "starting informer", "informer", e->key, NULL);
    }
    return rc;
}

/* ------------------------------------------------------------------ bindings & controllers */

/* Free a controller entry's bindings (and the array). Every handler goes first: a binding's
 * on_synced reads its siblings, so none may be freed while another can still be called (removing
 * a handler takes its informer's delivery lock, so no call of it is running afterwards). */
void lop_ctrl_bindings_free(ctrl_entry_t *c)
{
    for (size_t i = 0; i < c->nbindings; i++)
        lop_informer_remove_handler(c->bindings[i]->inf->inf, c->bindings[i]->handler_id);
    for (size_t i = 0; i < c->nbindings; i++) {
        binding_t *b = c->bindings[i];
        inf_release(b->m, b->inf);
        preds_free(b->preds, b->npreds);
        free(b);
    }
    free(c->bindings);
    c->bindings = NULL;
    c->nbindings = 0;
}

static void ctrl_free(lop_manager_t *m, ctrl_entry_t *c, int64_t grace_ns)
{
    lop_ctrl_bindings_free(c);
    size_t abandoned = lop_controller_stop(c->ctrl, grace_ns);
    if (abandoned) { /* its workers still run: leave the controller (and what it uses) alone */
        free(c->name);
        free(c);
        return;
    }
    lop_workqueue_set_observer(lop_controller_queue(c->ctrl), NULL, NULL);
    lop_metrics_unbind_queue(&c->queue_metrics, lop_controller_queue(c->ctrl));
    lop_metrics_unbind_controller(&c->ctrl_metrics, c->ctrl);
    lop_controller_free(c->ctrl);
    free(c->queue_obs);
    free(c->name);
    free(c);
    m->stats.controllers--;
}

static ctrl_entry_t *ctrl_find(ctrl_entry_t *list, const char *name)
{
    for (; list; list = list->next)
        if (strcmp(list->name, name) == 0) return list;
    return NULL;
}

static void on_reconciled(void *ud, const char *controller, lop_result_kind_t kind, int64_t dur)
{
    lop_manager_t *m = ud;
    __atomic_add_fetch(&m->stats.reconciles, 1, __ATOMIC_RELAXED);
    if (kind == LOP_RESULT_ERROR || kind == LOP_RESULT_TERMINAL)
        __atomic_add_fetch(&m->stats.errors, 1, __ATOMIC_RELAXED);
    if (m->cfg.metrics) lop_metrics_reconcile_observer(m->cfg.metrics, controller, kind, dur);
}

static void on_vm_memory(void *ud, const char *controller, int worker, size_t bytes)
{
    lop_manager_t *m = ud;
    if (!m->cfg.metrics) return;
    char vm[300];
    snprintf(vm, sizeof vm, "%s/%d", controller, worker);
    lop_metric_gauge_set(m->cfg.metrics->lua_memory_bytes, (const char *[]){vm}, (double)bytes, NULL);
}

static void on_queue_item(void *ud, lop_wq_observe_kind_t kind, int64_t ns)
{
    const lop_metrics_queue_t *qm = ud;
    if (kind == LOP_WQ_OBSERVE_QUEUE_LATENCY)
        lop_metrics_observe_queue_latency(qm, ns);
    else
        lop_metrics_observe_work_duration(qm, ns);
}

/* Undo a staged wiring (fresh, not committed): what it made is freed, its informers released,
 * and the controllers it took over go back to the running wiring. */
static void unstage(lop_manager_t *m, ctrl_entry_t *fresh)
{
    /* Leave the running wiring alone; undo what we built. Controllers taken over from the
     * old wiring go back to it. */
    while (fresh) {
        ctrl_entry_t *c = fresh;
        fresh = c->next;
        ctrl_entry_t *old = ctrl_find(m->ctrls, c->name);
        for (size_t i = 0; i < c->nbindings; i++) {
            inf_release(m, c->bindings[i]->inf);
            preds_free(c->bindings[i]->preds, c->bindings[i]->npreds);
            free(c->bindings[i]);
        }
        free(c->bindings);
        if (old && old->moved && old->ctrl == c->ctrl)
            __atomic_store_n(&old->moved, false, __ATOMIC_SEQ_CST);
        else { /* made by this reload: nothing of it was bound or started */
            lop_controller_free(c->ctrl);
            m->stats.controllers--;
        }
        free(c->name);
        free(c);
    }
    /* An informer that synced while its old binding stood down (moved) told nobody. Both
     * sides are sequentially consistent (moved here and in lop_binding_on_synced, HasSynced
     * in the reflector): either that callback saw moved cleared, or this sees it synced. */
    for (ctrl_entry_t *c = m->ctrls; c; c = c->next) lop_ctrl_check_synced(c);
}

static bool same_rate_limiter(const lop_ratelimit_decl_t *a, const lop_ratelimit_decl_t *b)
{
    return a->base_delay_ns == b->base_delay_ns && a->max_delay_ns == b->max_delay_ns && a->qps == b->qps &&
           a->burst == b->burst;
}

/* Bind controller c to one watch: an informer of mp (shared with every other watch of the same
 * scope) and a binding carrying the watch's predicates and mapping. A namespaced kind watched
 * with no namespace of its own under a --namespace list of several gets one informer and one
 * binding per namespace of the list: the controller's view is their union, and it waits for all
 * of them to sync (controller-runtime's multi-namespace cache). c->bindings has room for them. */
static lop_rc_t bind_watch(lop_manager_t *m, ctrl_entry_t *c, const lop_rest_mapping_t *mp, const lop_watch_decl_t *wd,
                           bool primary, lop_err_t *err)
{
    bool fan = m->nns > 1 && mp->namespaced && !wd->namespace_;
    for (size_t j = 0; j < (fan ? m->nns : 1); j++) {
        inf_entry_t *e =
            inf_acquire(m, mp, fan ? m->nss[j] : wd->namespace_, wd->label_selector, wd->metadata_only, err);
        if (!e) return LOP_ERR;
        binding_t *b = lop_xcalloc(1, sizeof *b);
        b->m = m;
        b->ctrl = c;
        b->inf = e;
        b->map = primary ? LOP_MAP_SELF : wd->map;
        b->map_lua_id = wd->map_lua_id;
        b->preds = preds_dup(wd->preds, wd->npreds);
        b->npreds = wd->npreds;
        c->bindings[c->nbindings++] = b;
    }
    return LOP_OK;
}

/* Build the wiring of a new set's declarations (vm: the set's VM, not installed yet) on the
 * side, in m->staged: controllers kept by name move to it (their old entries stand down:
 * moved), new ones are made, every watch takes its informer. Runs in the install's validation,
 * before the set becomes current, so a failure fails the install and changes nothing: what was
 * built is undone and the controllers taken over go back to the running wiring. */
static lop_rc_t wire_stage(lop_manager_t *m, lop_vm_t *vm, lop_err_t *err)
{
    const lop_ctrl_decl_t *decls;
    size_t n;
    m->cfg.engine->declarations(vm, &decls, &n);
    ctrl_entry_t *fresh = NULL, **tail = &fresh;
    lop_rc_t rc = LOP_OK;
    size_t k = 0;
    for (size_t i = 0; i < n && rc == LOP_OK; i++) {
        const lop_ctrl_decl_t *d = &decls[i];
        ctrl_entry_t *c = lop_xcalloc(1, sizeof *c);
        c->name = lop_xstrdup(d->name);
        c->primary = m->plan.mappings[k];
        c->leader_election = d->leader_election;
        c->workers = d->max_concurrent_reconciles > 0 ? d->max_concurrent_reconciles : 1;
        c->rate_limiter = d->rate_limiter;
        c->deadline_ns =
            d->reconcile_timeout_ns > 0 ? d->reconcile_timeout_ns : m->cfg.engine_opts.reconcile_timeout_ns;
        ctrl_entry_t *old = ctrl_find(m->ctrls, d->name);
        if (old && !old->moved && old->leader_election == d->leader_election &&
            old->workers == (d->max_concurrent_reconciles > 0 ? d->max_concurrent_reconciles : 1) &&
            same_rate_limiter(&old->rate_limiter, &d->rate_limiter) &&
            strcmp(old->primary.resource, c->primary.resource) == 0 &&
            strcmp(old->primary.group, c->primary.group) == 0) {
            c->ctrl = old->ctrl; /* keep the queue (and its pending requeues) and workers */
            c->started = old->started;
            c->queue_metrics = old->queue_metrics;
            c->ctrl_metrics = old->ctrl_metrics;
            c->queue_obs = old->queue_obs;
            __atomic_store_n(&old->moved, true, __ATOMIC_SEQ_CST); /* its on_synced stands down */
        } else {
            lop_controller_opts_t co = {
                .name = d->name,
                .group = c->primary.group,
                .kind = c->primary.kind,
                .workers = d->max_concurrent_reconciles,
                .clock = m->clock,
                .rate_limiter = d->rate_limiter,
                .rt = m->rt,
                .gate = d->leader_election ? m->cfg.leader_gate : NULL,
                .wait_for_sync = true,
                .observer = on_reconciled,
                .observer_ud = m,
                .memory_observer = on_vm_memory,
            };
            c->ctrl = lop_controller_new(&co);
            c->unbound = true; /* its metrics are bound by wire_commit (see inf_acquire) */
            m->stats.controllers++;
        }
        size_t nw = decl_watch_count(d);
        c->bindings = lop_xcalloc(nw * (m->nns > 1 ? m->nns : 1), sizeof *c->bindings);
        for (size_t w = 0; w < nw && rc == LOP_OK; w++, k++)
            rc = bind_watch(m, c, &m->plan.mappings[k], decl_watch(d, w), w == 0, err);
        *tail = c;
        tail = &c->next;
    }
    if (rc != LOP_OK) {
        unstage(m, fresh);
        return rc;
    }
    m->staged = fresh;
    return LOP_OK;
}

/* The install's validation: resolve every kind, then stage the wiring. Once this accepts, the
 * install cannot fail (lop_scriptrt_install): wire_commit follows. */
static lop_rc_t validate_and_stage(void *ud, lop_vm_t *vm, lop_err_t *err)
{
    lop_rc_t rc = validate_vm(ud, vm, err);
    return rc == LOP_OK ? wire_stage(ud, vm, err) : rc;
}

/* Put the staged wiring in place of the running one, once its set is current. */
static void wire_commit(lop_manager_t *m)
{
    ctrl_entry_t *fresh = m->staged;
    m->staged = NULL;
    uint64_t gen = lop_scriptrt_generation(m->rt); /* the staged set's: its Lua ids */
    lop_manager_index_commit(m, gen);
    /* Metrics of what the reload made take over their series only now that it stays. */
    for (ctrl_entry_t *c = fresh; c; c = c->next) {
        for (size_t i = 0; i < c->nbindings; i++) inf_bind_metrics(m, c->bindings[i]->inf);
        if (!c->unbound || !m->cfg.metrics) continue;
        c->unbound = false;
        lop_err_t err = {0};
        /* the reload is committed: a series that cannot be bound is logged, never fails it */
        if (lop_metrics_bind_queue(m->cfg.metrics, c->name, lop_controller_queue(c->ctrl), &c->queue_metrics, &err) !=
                LOP_OK ||
            lop_metrics_bind_controller(m->cfg.metrics, c->name, c->ctrl, c->workers, &c->ctrl_metrics, &err) != LOP_OK)
            lop_log(LOP_LOG_WARN, "controller metrics not bound", "controller", c->name, "error", err.message, NULL);
        c->queue_obs = lop_xmalloc(sizeof *c->queue_obs);
        *c->queue_obs = c->queue_metrics;
        lop_workqueue_set_observer(lop_controller_queue(c->ctrl), on_queue_item, c->queue_obs);
    }
    /* Register the new handlers first (a started informer replays its objects as adds: that
     * requeues every object once under the new logic), then drop the old wiring. */
    for (ctrl_entry_t *c = fresh; c; c = c->next) {
        for (size_t i = 0; i < c->nbindings; i++) {
            binding_t *b = c->bindings[i];
            b->gen = gen;
            lop_reflector_handlers_t h = {lop_binding_on_add, lop_binding_on_update, lop_binding_on_delete, b,
                                          lop_binding_on_synced};
            b->handler_id = lop_informer_add_handler(b->inf->inf, &h);
        }
    }
    ctrl_entry_t *old = m->ctrls;
    pthread_mutex_lock(&m->mu);
    m->ctrls = fresh;
    pthread_mutex_unlock(&m->mu);
    while (old) {
        ctrl_entry_t *c = old;
        old = c->next;
        if (c->moved) { /* its controller moved to the new wiring */
            lop_ctrl_bindings_free(c);
            free(c->name);
            free(c);
        } else {
            lop_log(LOP_LOG_INFO, "controller removed by reload; draining", "controller", c->name, NULL);
            ctrl_free(m, c, 0); /* without bound: the reconcile deadline bounds the wait */
        }
    }
    /* Workers wait for their controller's sources: the new bindings told their controllers of
     * informers that synced after registering; this covers those that synced before, and an
     * old binding that stood down (moved) in between. */
    for (ctrl_entry_t *c = m->ctrls; c; c = c->next) lop_ctrl_check_synced(c);
    /* No handler of the old wiring runs any more: its event VM can go. */
    lop_scriptrt_event_release_prev(m->rt);
}

/* m->namespace_ ("a,b") into m->nss: commas separate, blanks around a name and empty items are
 * dropped, a repeated name is kept once. */
static void split_namespaces(lop_manager_t *m)
{
    for (const char *p = m->namespace_; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *next = end ? end + 1 : p + len;
        while (len && (*p == ' ' || *p == '\t')) p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
        bool dup = len == 0;
        for (size_t i = 0; i < m->nns && !dup; i++) dup = strlen(m->nss[i]) == len && !strncmp(m->nss[i], p, len);
        if (!dup) {
            m->nss = lop_xrealloc(m->nss, (m->nns + 1) * sizeof *m->nss);
            m->nss[m->nns++] = lop_xstrndup(p, len);
        }
        p = next;
    }
}

bool lop_manager_ns_cached(const lop_manager_t *m, const char *ns)
{
    if (m->nns == 0) return true;
    for (size_t i = 0; ns && i < m->nns; i++)
        if (strcmp(m->nss[i], ns) == 0) return true;
    return false;
}

/* ------------------------------------------------------------------ public */

lop_rc_t lop_manager_new(const lop_manager_config_t *cfg, lop_manager_t **out, lop_err_t *err)
{
    *out = NULL;
    if (!cfg->rest || !cfg->mapper || !cfg->engine)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "manager: rest client, mapper and engine are required");
    lop_manager_t *m = lop_xcalloc(1, sizeof *m);
    m->cfg = *cfg;
    m->namespace_ = cfg->namespace_ && *cfg->namespace_ ? lop_xstrdup(cfg->namespace_) : NULL;
    split_namespaces(m);
    m->identity = lop_xstrdup(cfg->identity ? cfg->identity : "luaop");
    m->cfg.namespace_ = m->namespace_;
    m->cfg.identity = m->identity;
    m->clock = cfg->clock ? cfg->clock : &lop_clock_system;
    m->cfg.engine_opts.clock = m->clock;
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->ryw_mu, NULL);
    lop_cond_init(&m->ryw_cond);
    m->recorder = lop_recorder_new(cfg->rest, cfg->component ? cfg->component : "luaop", m->identity, m->clock);
    lop_manager_host_api_init(m, &m->host);
    m->rt = lop_scriptrt_new(cfg->engine, &m->cfg.engine_opts, &m->host);
    *out = m;
    return LOP_OK;
}

lop_rc_t lop_manager_install(lop_manager_t *m, lop_script_set_t *set, lop_err_t *err)
{
    char version[17];
    snprintf(version, sizeof version, "%s", set->version);
    char old_version[32];
    lop_scriptrt_version(m->rt, old_version, sizeof old_version);
    /* The wiring is staged by the validation: a failure there (an informer that cannot be
     * made) leaves the running set and wiring alone, and set to the caller. */
    snprintf(m->staging_version, sizeof m->staging_version, "%s", set->version);
    lop_rc_t rc = lop_scriptrt_install(m->rt, set, validate_and_stage, m, err);
    if (rc != LOP_OK && m->staged) { /* accepted, then refused: not today, but never half-wired */
        unstage(m, m->staged);
        m->staged = NULL;
    }
    if (rc != LOP_OK) {
        m->stats.reloads_failed++;
        if (m->cfg.metrics)
            lop_metric_counter_add(m->cfg.metrics->script_reload_total, (const char *[]){"failure"}, 1, NULL);
        return rc;
    }
    wire_commit(m);
    m->stats.reloads_ok++;
    if (m->cfg.metrics) {
        lop_metric_counter_add(m->cfg.metrics->script_reload_total, (const char *[]){"success"}, 1, NULL);
        lop_err_t verr = {0};
        if (lop_metrics_std_set_active_version(m->cfg.metrics, old_version[0] ? old_version : NULL, version, &verr) !=
            LOP_OK)
            lop_log(LOP_LOG_WARN, "script version metric not set", "version", version, "error", verr.message, NULL);
    }
    if (m->started) {
        lop_err_t e;
        if (lop_manager_start(m, &e) != LOP_OK)
            lop_log(LOP_LOG_ERROR, "starting after reload failed", "error", e.message, NULL);
    }
    lop_log(LOP_LOG_INFO, "scripts installed", "version", version, "controllers",
            m->stats.controllers == 1 ? "1" : "several", NULL);
    return LOP_OK;
}

lop_rc_t lop_manager_start(lop_manager_t *m, lop_err_t *err)
{
    for (inf_entry_t *e = m->infs; e; e = e->next) {
        lop_rc_t rc = inf_start(m, e, err);
        if (rc != LOP_OK) return rc;
    }
    for (ctrl_entry_t *c = m->ctrls; c; c = c->next) {
        if (c->started) continue;
        lop_rc_t rc = lop_controller_start(c->ctrl, err);
        if (rc != LOP_OK) return rc;
        c->started = true;
        lop_log(LOP_LOG_INFO, "starting controller", "controller", c->name, NULL);
    }
    m->started = true;
    return LOP_OK;
}

bool lop_manager_synced(lop_manager_t *m)
{
    pthread_mutex_lock(&m->mu);
    bool ok = true;
    for (inf_entry_t *e = m->infs; e && ok; e = e->next) ok = lop_informer_has_synced(e->inf);
    pthread_mutex_unlock(&m->mu);
    return ok;
}

size_t lop_manager_unsynced(lop_manager_t *m, char *buf, size_t len)
{
    size_t n = 0, at = 0;
    if (len) buf[0] = '\0';
    pthread_mutex_lock(&m->mu);
    for (inf_entry_t *e = m->infs; e; e = e->next) {
        if (lop_informer_has_synced(e->inf)) continue;
        if (at < len) {
            int w = snprintf(buf + at, len - at, "%s%s", n ? ", " : "", e->key);
            at = w < 0 ? len : at + (size_t)w;
        }
        n++;
    }
    pthread_mutex_unlock(&m->mu);
    return n;
}

size_t lop_manager_pending(lop_manager_t *m)
{
    size_t n = 0;
    pthread_mutex_lock(&m->mu);
    for (ctrl_entry_t *c = m->ctrls; c; c = c->next) {
        lop_workqueue_stats_t st;
        lop_workqueue_stats(lop_controller_queue(c->ctrl), &st);
        n += st.depth + st.processing;
    }
    pthread_mutex_unlock(&m->mu);
    return n;
}

size_t lop_manager_failing(lop_manager_t *m, lop_buf_t *out)
{
    size_t n = 0;
    pthread_mutex_lock(&m->mu);
    for (ctrl_entry_t *c = m->ctrls; c; c = c->next) n += lop_controller_failing(c->ctrl, out);
    pthread_mutex_unlock(&m->mu);
    return n;
}

size_t lop_manager_stop(lop_manager_t *m, int64_t grace_ns)
{
    /* Stop intake first: every queue stops taking work at once; then wait for the in-flight
     * reconciles of all controllers within one shared grace period — with the informers still
     * running, so a reconcile that writes can see its write in the cache (read-your-writes)
     * instead of waiting out its timeout; then stop the informers. */
    for (ctrl_entry_t *c = m->ctrls; c; c = c->next) lop_controller_shutdown_intake(c->ctrl);
    int64_t deadline = INT64_MAX;
    if (grace_ns > 0) {
        int64_t now = lop_clock_mono(m->clock);
        deadline = grace_ns > INT64_MAX - now ? INT64_MAX : now + grace_ns;
    }
    size_t abandoned = 0;
    for (ctrl_entry_t *c = m->ctrls; c; c = c->next) {
        abandoned += lop_controller_stop_until(c->ctrl, deadline);
        c->started = false;
    }
    for (inf_entry_t *e = m->infs; e; e = e->next) {
        pthread_mutex_lock(&m->mu);
        bool started = e->started;
        e->started = false; /* reads from the cache now fall back to live requests */
        pthread_mutex_unlock(&m->mu);
        if (started) lop_informer_stop(e->inf);
    }
    m->started = false;
    m->abandoned += abandoned;
    return abandoned;
}

void lop_manager_free(lop_manager_t *m)
{
    if (!m) return;
    if (m->abandoned) return; /* workers still run reconciles: the process is exiting */
    lop_manager_stop(m, 0);
    while (m->ctrls) {
        ctrl_entry_t *c = m->ctrls;
        m->ctrls = c->next;
        ctrl_free(m, c, 0);
    }
    lop_scriptrt_free(m->rt);
    lop_recorder_free(m->recorder);
    free(m->plan.mappings);
    lop_manager_index_plan_free(&m->iplan);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->ryw_mu);
    pthread_cond_destroy(&m->ryw_cond);
    for (size_t i = 0; i < m->nns; i++) free(m->nss[i]);
    free(m->nss);
    free(m->namespace_);
    free(m->identity);
    free(m);
}

void lop_manager_stats(lop_manager_t *m, lop_manager_stats_t *out)
{
    *out = m->stats;
    out->reconciles = __atomic_load_n(&m->stats.reconciles, __ATOMIC_RELAXED);
    out->errors = __atomic_load_n(&m->stats.errors, __ATOMIC_RELAXED);
}

void lop_manager_version(lop_manager_t *m, char *buf, size_t len) { lop_scriptrt_version(m->rt, buf, len); }

lop_recorder_t *lop_manager_recorder(lop_manager_t *m) { return m->recorder; }

lop_scriptrt_t *lop_manager_scriptrt(lop_manager_t *m) { return m->rt; }
