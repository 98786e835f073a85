/* SPDX-License-Identifier: Apache-2.0 */
/* hostapi.c — lop_host_api_t for the scripts: cache reads (with read-your-writes), REST requests
 * mapped through discovery, Events, leader state. Called from worker and informer threads.
 *
 * Read-your-writes: after a successful write of a kind the manager caches, the writing thread
 * waits (up to 5 s) until the informer has delivered the written resourceVersion (or the
 * deletion), so the next cache read in this or the next reconcile sees the write. Watches
 * deliver events in resourceVersion order, so seeing our RV means the cache is at least as new
 * as our write. A write that deletes the object (a DELETE without finalizers, or the update that
 * removes the last finalizer of a deleting object) waits for the object to leave the cache. The cache itself is only ever fed by the watch (never edited from responses),
 * so it cannot go backwards. */
#include "host/runtime/manager_internal.h"

#include "host/codec/jsonscan.h"
#include "host/kube/cache/fieldindex.h"
#include "host/kube/cache/fieldpath.h"
#include "host/kube/client/rest_object.h"

#include "host/util/buf.h"
#include "host/util/log.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define RYW_TIMEOUT_NS (5 * LOP_NS_PER_S)

/* A write in flight: registered before the request is sent, so every informer event for its
 * namespace/name from then on is noted. The cache keeps only the latest state: when another
 * writer changes the object right after ours, the cache goes past our resourceVersion without
 * ever holding it at a moment we look; the noted resourceVersions show it was delivered. */
#define RYW_SEEN 16
typedef struct ryw_waiter {
    const char *ns, *name;   /* borrowed for the write; ns NULL = any (cluster-scoped) */
    char seen[RYW_SEEN][32]; /* resourceVersions delivered for ns/name since registration */
    int nseen;
    bool deleted; /* a delete of ns/name was delivered */
    struct ryw_waiter *next;
} ryw_waiter_t;

static void ryw_note(void *ud, const lop_obj_t *o, bool deleted)
{
    lop_manager_t *m = ud;
    pthread_mutex_lock(&m->ryw_mu);
    for (ryw_waiter_t *w = m->ryw_waiters; o && w; w = w->next) {
        if (strcmp(w->name, o->name) != 0 || (w->ns && strcmp(w->ns, o->namespace_) != 0)) continue;
        if (deleted)
            w->deleted = true;
        else if (w->nseen < RYW_SEEN && strlen(o->rv) < sizeof w->seen[0])
            strcpy(w->seen[w->nseen++], o->rv);
    }
    pthread_cond_broadcast(&m->ryw_cond);
    pthread_mutex_unlock(&m->ryw_mu);
}
static void ryw_add(void *ud, lop_obj_t *o) { ryw_note(ud, o, false); }
static void ryw_update(void *ud, lop_obj_t *o, lop_obj_t *n)
{
    (void)o;
    ryw_note(ud, n, false);
}
static void ryw_delete(void *ud, lop_obj_t *o, bool t)
{
    (void)t;
    ryw_note(ud, o, true);
}

static void ryw_register(lop_manager_t *m, ryw_waiter_t *w, const char *ns, const char *name)
{
    memset(w, 0, sizeof *w);
    w->ns = ns;
    w->name = name;
    pthread_mutex_lock(&m->ryw_mu);
    w->next = m->ryw_waiters;
    m->ryw_waiters = w;
    pthread_mutex_unlock(&m->ryw_mu);
}

static void ryw_unregister(lop_manager_t *m, ryw_waiter_t *w)
{
    pthread_mutex_lock(&m->ryw_mu);
    for (ryw_waiter_t **p = &m->ryw_waiters; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    pthread_mutex_unlock(&m->ryw_mu);
}

/* Caller holds ryw_mu. */
static bool ryw_seen(const ryw_waiter_t *w, const char *rv, bool deleted)
{
    if (!w) return false;
    if (deleted) return w->deleted;
    for (int i = 0; i < w->nseen; i++)
        if (strcmp(w->seen[i], rv) == 0) return true;
    return false;
}
const lop_reflector_handlers_t lop_ryw_handlers = {ryw_add, ryw_update, ryw_delete, NULL, NULL};

/* The informer that caches every object of this kind in ns (NULL if none). Caller holds m->mu. */
static inf_entry_t *cache_for(lop_manager_t *m, const lop_rest_mapping_t *mp, const char *ns)
{
    for (inf_entry_t *e = m->infs; e; e = e->next) {
        if (e->selector || e->meta_only || !e->started) continue; /* holds all of every object only */
        if (strcmp(e->mapping.group, mp->group) != 0 || strcmp(e->mapping.version, mp->version) != 0 ||
            strcmp(e->mapping.resource, mp->resource) != 0)
            continue;
        if (e->ns && (!ns || strcmp(e->ns, ns) != 0)) continue;
        return e;
    }
    return NULL;
}

/* The store key ("ns/name", or "name"), truncated to len - 1 bytes (names are far shorter). Not
 * snprintf: this runs on every cache read. */
static void cache_key(char *buf, size_t len, const lop_rest_mapping_t *mp, const char *ns, const char *name)
{
    size_t n = 0;
    if (mp->namespaced && ns && *ns) {
        size_t nl = strlen(ns);
        if (nl > len - 1) nl = len - 1;
        memcpy(buf, ns, nl);
        n = nl;
        if (n < len - 1) buf[n++] = '/';
    }
    size_t k = strlen(name);
    if (k > len - 1 - n) k = len - 1 - n;
    memcpy(buf + n, name, k);
    buf[n + k] = '\0';
}

/*
 * Whether reads of this informer's kind can be served from its store. HasSynced turns true only
 * once the first list has been delivered to every handler, but the reflector applies that list
 * to the store in one step before delivering any of it (reflector.h "Delivery"), and the store
 * is empty until then (the first list precedes any watch event). Workers run while the informer
 * is still handing the list out, so a reconcile started by one of those first events used to fall
 * back to a live GET for every read until the last event was delivered (10,000 Pods: ~20 ms of
 * round trips, and objects of another shape — managedFields not stripped — than the cache gives a
 * moment later). A non-empty store therefore counts as synced.
 */
static bool cache_ready(lop_informer_t *inf)
{
    if (lop_informer_has_synced(inf)) return true;
    lop_store_stats_t st;
    lop_store_stats(lop_informer_store(inf), &st);
    return st.count > 0;
}

/* Whether the cache holds this namespaced kind for the --namespace list only (some started
 * informer of the kind is scoped to one of its namespaces), so that a read of another namespace
 * is refused rather than sent to the API server. Caller holds m->mu. */
static bool kind_cached_in_list(lop_manager_t *m, const lop_rest_mapping_t *mp)
{
    if (m->nns == 0 || !mp->namespaced) return false;
    for (inf_entry_t *e = m->infs; e; e = e->next) {
        if (e->selector || e->meta_only || !e->started || !e->ns || !lop_manager_ns_cached(m, e->ns)) continue;
        if (strcmp(e->mapping.group, mp->group) == 0 && strcmp(e->mapping.version, mp->version) == 0 &&
            strcmp(e->mapping.resource, mp->resource) == 0)
            return true;
    }
    return false;
}

/* A read of a namespace outside the --namespace list (controller-runtime's "unknown namespace for
 * the cache"): an error naming the list. */
static lop_rc_t unknown_namespace(lop_manager_t *m, const char *verb, const lop_rest_mapping_t *mp, const char *ns,
                                  lop_err_t *err)
{
    lop_buf_t list = {0};
    for (size_t i = 0; i < m->nns; i++) lop_buf_printf(&list, "%s%s", i ? ", " : "", m->nss[i]);
    lop_rc_t rc = lop_err_set(err, LOP_EINVAL, 0, "BadRequest",
                              "unable to %s %s%s%s in namespace \"%s\": unknown namespace for the cache, which "
                              "holds namespaces %s only (--namespace)",
                              verb, mp->resource, *mp->group ? "." : "", mp->group, ns, list.data ? list.data : "");
    lop_buf_free(&list);
    return rc;
}

static lop_rc_t host_cache_get(void *ud, const char *api_version, const char *kind, const char *ns, const char *name,
                               lop_blob_t *out, lop_err_t *err)
{
    lop_manager_t *m = ud;
    lop_rest_mapping_t mp;
    lop_rc_t rc = lop_restmapper_resolve(m->cfg.mapper, api_version, kind, &mp, err);
    if (rc != LOP_OK) return rc;
    pthread_mutex_lock(&m->mu);
    inf_entry_t *e = cache_for(m, &mp, ns);
    lop_obj_t *o = NULL;
    if (e && cache_ready(e->inf)) {
        char key[600];
        cache_key(key, sizeof key, &mp, ns, name);
        o = lop_store_get(lop_informer_store(e->inf), key);
    } else {
        e = NULL;
    }
    bool outside = !e && ns && *ns && !lop_manager_ns_cached(m, ns) && kind_cached_in_list(m, &mp);
    pthread_mutex_unlock(&m->mu);
    if (outside) return unknown_namespace(m, "get", &mp, ns, err);
    if (!e) return LOP_EAGAIN;
    if (!o) {
        return lop_err_set(err, LOP_ENOTFOUND, 404, "NotFound", "%s%s%s \"%s\" not found", mp.resource,
                           *mp.group ? "." : "", mp.group, name);
    }
    out->json = o->json;
    out->len = o->json_len;
    out->ref = o;
    return LOP_OK;
}

/* A list across all namespaces of a kind the cache holds per namespace of the --namespace list:
 * the union of those informers' stores, grouped by namespace in the list's order. False (out left
 * empty) unless every namespace of the list has a ready informer of the kind. Caller holds m->mu. */
static bool list_namespaces(lop_manager_t *m, const lop_rest_mapping_t *mp, const lop_label_selector_t *sel,
                            lop_obj_list_t *out)
{
    if (!kind_cached_in_list(m, mp)) return false;
    inf_entry_t **per = lop_xcalloc(m->nns, sizeof *per);
    bool all = true;
    for (size_t i = 0; i < m->nns && all; i++) {
        per[i] = cache_for(m, mp, m->nss[i]);
        all = per[i] && per[i]->ns && cache_ready(per[i]->inf);
    }
    for (size_t i = 0; i < m->nns && all; i++) {
        lop_obj_list_t part = {NULL, 0};
        lop_store_list_selector(lop_informer_store(per[i]->inf), m->nss[i], sel, &part);
        out->items = lop_xrealloc(out->items, (out->n + part.n + 1) * sizeof *out->items);
        memcpy(out->items + out->n, part.items, part.n * sizeof *part.items); /* the references move */
        out->n += part.n;
        free(part.items);
    }
    free(per);
    return all;
}

/* The start both cache lists share: no items yet, the kind's mapping, the label selector parsed
 * (*sel NULL when there is none; the caller frees it). */
static lop_rc_t cache_list_begin(lop_manager_t *m, const char *api_version, const char *kind,
                                 const char *label_selector, lop_rest_mapping_t *mp, lop_label_selector_t **sel,
                                 lop_blob_t **items, size_t *n, lop_err_t *err)
{
    *items = NULL;
    *n = 0;
    *sel = NULL;
    lop_rc_t rc = lop_restmapper_resolve(m->cfg.mapper, api_version, kind, mp, err);
    if (rc != LOP_OK) return rc;
    if (label_selector && *label_selector) return lop_label_selector_parse(label_selector, sel, err);
    return LOP_OK;
}

static lop_rc_t host_cache_list(void *ud, const char *api_version, const char *kind, const char *ns,
                                const char *label_selector, lop_blob_t **items, size_t *n, lop_err_t *err)
{
    lop_manager_t *m = ud;
    lop_rest_mapping_t mp;
    lop_label_selector_t *sel = NULL;
    lop_rc_t rc = cache_list_begin(m, api_version, kind, label_selector, &mp, &sel, items, n, err);
    if (rc != LOP_OK) return rc;
    pthread_mutex_lock(&m->mu);
    inf_entry_t *e = cache_for(m, &mp, ns && *ns ? ns : NULL);
    lop_obj_list_t list = {NULL, 0};
    bool ok = false, outside = false;
    if (e && cache_ready(e->inf)) {
        lop_store_list_selector(lop_informer_store(e->inf), ns && *ns ? ns : NULL, sel, &list);
        ok = true;
    } else if (!e && !(ns && *ns)) {
        ok = list_namespaces(m, &mp, sel, &list);
    } else if (!e) {
        outside = !lop_manager_ns_cached(m, ns) && kind_cached_in_list(m, &mp);
    }
    pthread_mutex_unlock(&m->mu);
    lop_label_selector_free(sel);
    if (outside) return unknown_namespace(m, "list", &mp, ns, err);
    if (!ok) return LOP_EAGAIN;
    *items = lop_xcalloc(list.n ? list.n : 1, sizeof **items);
    for (size_t i = 0; i < list.n; i++) {
        (*items)[i].json = list.items[i]->json;
        (*items)[i].len = list.items[i]->json_len;
        (*items)[i].ref = lop_obj_ref(list.items[i]);
    }
    *n = list.n;
    lop_obj_list_free(&list);
    return LOP_OK;
}

/* A started informer of mp's kind in full whose store has the field index `index`, scoped to
 * scope (NULL: one that holds every namespace; else one of all namespaces or of that one), ready
 * to serve reads. Caller holds m->mu. */
static inf_entry_t *index_cache_for(lop_manager_t *m, const lop_rest_mapping_t *mp, const char *scope,
                                    const char *index, bool exact)
{
    for (inf_entry_t *e = m->infs; e; e = e->next) {
        if (e->selector || e->meta_only || !e->started || !lop_manager_index_has(e, index)) continue;
        if (strcmp(e->mapping.group, mp->group) != 0 || strcmp(e->mapping.version, mp->version) != 0 ||
            strcmp(e->mapping.resource, mp->resource) != 0)
            continue;
        if (exact ? (!e->ns != !scope || (scope && strcmp(e->ns, scope) != 0))
                  : (e->ns && (!scope || strcmp(e->ns, scope) != 0)))
            continue;
        if (!cache_ready(e->inf)) continue;
        return e;
    }
    return NULL;
}

/* The names of the field indexes the informers of mp's kind have, "a, b" (or "none"). Caller
 * holds m->mu. */
static void index_names(lop_manager_t *m, const lop_rest_mapping_t *mp, lop_buf_t *out)
{
    for (inf_entry_t *e = m->infs; e; e = e->next) {
        if (strcmp(e->mapping.group, mp->group) != 0 || strcmp(e->mapping.version, mp->version) != 0 ||
            strcmp(e->mapping.resource, mp->resource) != 0)
            continue;
        for (size_t i = 0; i < e->nindexes; i++) {
            char quoted[200];
            snprintf(quoted, sizeof quoted, "'%s'", e->index_names[i]);
            if (out->data && strstr(out->data, quoted)) continue;
            lop_buf_printf(out, "%s%s", out->len ? ", " : "", quoted);
        }
    }
    if (!out->len) lop_buf_printf(out, "none");
}

/* Append the objects of e's index under value (the lookup key of ns) that match sel to out. */
static void index_find(inf_entry_t *e, const char *index, const char *ns, const char *value,
                       const lop_label_selector_t *sel, lop_obj_list_t *out)
{
    lop_fieldindex_t *x = lop_store_field_index(lop_informer_store(e->inf), index);
    if (!x) return;
    char *key = lop_fieldpath_lookup_key(ns, value);
    lop_obj_list_t part = {NULL, 0};
    lop_fieldindex_find(x, key, &part);
    free(key);
    out->items = lop_xrealloc(out->items, (out->n + part.n + 1) * sizeof *out->items);
    for (size_t i = 0; i < part.n; i++) {
        if (sel && !lop_label_selector_match_json(sel, json_object_get(lop_obj_metadata(part.items[i]), "labels"))) {
            lop_obj_unref(part.items[i]);
            continue;
        }
        out->items[out->n++] = part.items[i]; /* the reference moves */
    }
    free(part.items);
}

/* client.MatchingFields served by the cache's field index (engine.h cache_list_index). */
static lop_rc_t host_cache_list_index(void *ud, const char *api_version, const char *kind, const char *ns,
                                      const char *index, const char *value, const char *label_selector,
                                      lop_blob_t **items, size_t *n, lop_err_t *err)
{
    lop_manager_t *m = ud;
    lop_rest_mapping_t mp;
    lop_label_selector_t *sel = NULL;
    lop_rc_t rc = cache_list_begin(m, api_version, kind, label_selector, &mp, &sel, items, n, err);
    if (rc != LOP_OK) return rc;
    if (!mp.namespaced || (ns && !*ns)) ns = NULL;
    lop_obj_list_t list = {NULL, 0};
    bool ok = false, outside = false, known = false;
    lop_buf_t names = {0};
    pthread_mutex_lock(&m->mu);
    for (inf_entry_t *e = m->infs; e && !known; e = e->next)
        known = lop_manager_index_has(e, index) && strcmp(e->mapping.resource, mp.resource) == 0 &&
                strcmp(e->mapping.group, mp.group) == 0 && strcmp(e->mapping.version, mp.version) == 0;
    if (!known) {
        index_names(m, &mp, &names);
    } else if (ns && !lop_manager_ns_cached(m, ns)) {
        outside = true;
    } else {
        inf_entry_t *e = index_cache_for(m, &mp, ns, index, false);
        if (e) {
            index_find(e, index, ns, value, sel, &list);
            ok = true;
        } else if (!ns && m->nns >= 1) { /* the union of the --namespace list's informers */
            ok = true;
            for (size_t i = 0; i < m->nns && ok; i++) ok = index_cache_for(m, &mp, m->nss[i], index, true) != NULL;
            for (size_t i = 0; i < m->nns && ok; i++)
                index_find(index_cache_for(m, &mp, m->nss[i], index, true), index, NULL, value, sel, &list);
        }
    }
    pthread_mutex_unlock(&m->mu);
    lop_label_selector_free(sel);
    if (!known) {
        rc = lop_err_set(err, LOP_EINVAL, 0, "UnknownIndex", "op.client.list: %s %s has no index '%s' (declared: %s)",
                         api_version, kind, index, names.data);
        lop_buf_free(&names);
        return rc;
    }
    if (outside) return unknown_namespace(m, "list", &mp, ns, err);
    if (!ok) {
        lop_obj_list_free(&list);
        return lop_err_set(err, LOP_EAGAIN, 503, "ServiceUnavailable",
                           "index '%s' of %s %s: the cache has not synced yet", index, api_version, kind);
    }
    *items = lop_xcalloc(list.n ? list.n : 1, sizeof **items);
    for (size_t i = 0; i < list.n; i++) {
        (*items)[i].json = list.items[i]->json;
        (*items)[i].len = list.items[i]->json_len;
        (*items)[i].ref = list.items[i]; /* the list's reference moves to the blob */
    }
    *n = list.n;
    free(list.items);
    return LOP_OK;
}

static void host_release(void *ud, lop_blob_t *b)
{
    (void)ud;
    lop_obj_unref(b->ref);
    b->ref = NULL;
    b->json = NULL;
    b->len = 0;
}

/* Wait until the cache of this kind shows rv for key (or, for a delete, no longer has key), or
 * the informer delivered it (w, may be NULL) even if a later change has replaced it since.
 * Waits at most RYW_TIMEOUT_NS and never past deadline (monotonic ns; 0 = none): the wait is
 * a courtesy to the script and must not cost it its own reconcile deadline. */
static void wait_for_cache(lop_manager_t *m, const lop_rest_mapping_t *mp, const char *ns, const char *name,
                           const char *rv, bool deleted, const ryw_waiter_t *w, int64_t call_deadline)
{
    char key[600];
    cache_key(key, sizeof key, mp, ns, name);
    int64_t deadline = lop_clock_mono(m->clock) + RYW_TIMEOUT_NS;
    if (call_deadline > 0 && call_deadline < deadline) deadline = call_deadline;
    pthread_mutex_lock(&m->ryw_mu);
    for (;;) {
        pthread_mutex_lock(&m->mu);
        inf_entry_t *e = cache_for(m, mp, ns);
        bool done = true;
        if (e) {
            lop_obj_t *o = lop_store_get(lop_informer_store(e->inf), key);
            done = deleted ? o == NULL : (o && strcmp(o->rv, rv) == 0);
            lop_obj_unref(o);
        }
        pthread_mutex_unlock(&m->mu);
        if (done || ryw_seen(w, rv, deleted)) break;
        if (lop_clock_wait_until(m->clock, &m->ryw_cond, &m->ryw_mu, deadline)) {
            lop_log(LOP_LOG_DEBUG, "cache did not catch up with a write in time", "key", key, NULL);
            break;
        }
    }
    pthread_mutex_unlock(&m->ryw_mu);
}

/* True when a successful update/patch response shows the write deleted the object: it removed the
 * last finalizer of an object being deleted with grace 0. The server answers with
 * the object as submitted (its old resourceVersion, which the cache already holds) and watchers
 * see only a DELETED event, so read-your-writes must wait for the deletion, not for that RV.
 * Namespaces are excluded: they stay Terminating until their content is gone. */
static bool removed_last_finalizer(const lop_rest_mapping_t *mp, const json_t *meta)
{
    if (!json_object_get(meta, "deletionTimestamp")) return false;
    if (!*mp->group && strcmp(mp->resource, "namespaces") == 0) return false;
    const json_t *fin = json_object_get(meta, "finalizers");
    if (fin && json_array_size(fin) > 0) return false;
    const json_t *grace = json_object_get(meta, "deletionGracePeriodSeconds");
    return !grace || json_integer_value(grace) == 0;
}

/* Decode the value at p[a, b) into `into` under key (a JSON value span from the scanner). */
static void set_span(json_t *into, const char *key, const char *p, size_t a, size_t b)
{
    json_t *v = json_loadb(p + a, b - a, JSON_DECODE_ANY, NULL);
    if (v) json_object_set_new(into, key, v);
}

/* What read-your-writes needs from a write's response, without building the whole object in
 * jansson (its managedFields and spec/status made that the largest CPU cost of a write on the
 * client): {"kind": ..., "metadata": {name, resourceVersion, deletionTimestamp, finalizers,
 * deletionGracePeriodSeconds}} with only the members present. NULL when body is not a JSON
 * object (or is malformed before the members are found). A repeated key keeps its last value, as
 * json_loadb does. Caller owns the result. */
static json_t *write_summary(const char *body, size_t len)
{
    static const char *const keep[] = {"name", "resourceVersion", "deletionTimestamp", "finalizers",
                                       "deletionGracePeriodSeconds"};
    if (!body) return NULL;
    lop_jscan_iter_t it;
    if (lop_jscan_object_begin(&it, body, len, 0) != 0) return NULL;
    json_t *out = json_object();
    json_t *meta = json_object();
    json_object_set_new(out, "metadata", meta);
    int r;
    while ((r = lop_jscan_object_next(&it)) == 1) {
        if (lop_jscan_key_is(&it, "kind")) {
            set_span(out, "kind", body, it.val_start, it.val_end);
        } else if (lop_jscan_key_is(&it, "metadata")) {
            json_object_clear(meta);
            lop_jscan_iter_t mi;
            if (lop_jscan_object_begin(&mi, body, it.val_end, it.val_start) != 0) continue;
            while (lop_jscan_object_next(&mi) == 1)
                for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
                    if (lop_jscan_key_is(&mi, keep[k])) set_span(meta, keep[k], body, mi.val_start, mi.val_end);
        }
    }
    if (r < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* Whether a write from this controller's reconcile needs leadership: every write does when
 * leader election is on, except those of controllers declared with leader_election = false. */
static bool needs_leadership(lop_manager_t *m, const char *controller)
{
    if (!m->cfg.leader_gate) return false;
    if (!controller) return true;
    bool needs = true;
    pthread_mutex_lock(&m->mu);
    for (ctrl_entry_t *c = m->ctrls; c; c = c->next)
        if (strcmp(c->name, controller) == 0) needs = c->leader_election;
    pthread_mutex_unlock(&m->mu);
    return needs;
}

/* How long (ns) this replica may still write as the leader: INT64_MAX without a judge of its
 * own, <= 0 when the gate is closed or the elector says leadership is over. */
static int64_t leading_left_ns(lop_manager_t *m)
{
    if (!lop_gate_is_open(m->cfg.leader_gate)) return 0;
    return m->cfg.leading_left_ns ? m->cfg.leading_left_ns(m->cfg.leading_left_ud) : INT64_MAX;
}

static bool is_write(const char *verb) { return strcmp(verb, "get") != 0 && strcmp(verb, "list") != 0; }

/* One REST call through lop_rest_object (mapping, paths, field manager, patch types), plus the
 * host's rules: no writes while not leading; read-your-writes for cached kinds. */
static lop_rc_t host_request(void *ud, const lop_api_request_t *req, lop_api_response_t *resp, lop_err_t *err)
{
    lop_manager_t *m = ud;
    resp->code = 0;
    resp->body = NULL;
    resp->len = 0;
    const char *verb = req->verb ? req->verb : "";
    bool apply = strcmp(verb, "patch") == 0 && req->patch_type && strcmp(req->patch_type, "apply") == 0;
    int64_t lead_left = is_write(verb) && needs_leadership(m, req->controller) ? leading_left_ns(m) : INT64_MAX;
    if (lead_left <= 0)
        return lop_err_set(err, LOP_ECLOSED, 0, "NotLeader", "this replica is not the leader: write refused");
    lop_object_req_t oreq = {
        .verb = apply ? "apply" : verb,
        .api_version = req->api_version,
        .kind = req->kind,
        .ns = req->namespace_ && *req->namespace_ ? req->namespace_ : NULL,
        .name = req->name,
        .subresource = req->subresource,
        .patch_type = apply ? NULL : req->patch_type,
        .query = req->query,
        .body = req->body,
        .len = req->body_len,
        /* what is left of the reconcile's deadline, rounded up to whole ms */
        .deadline_ms = req->timeout_ns > 0 ? (long)((req->timeout_ns + LOP_NS_PER_MS - 1) / LOP_NS_PER_MS) : 0,
    };
    /* a leader's write must be on the wire before its renew deadline; its answer may come later */
    if (lead_left != INT64_MAX) oreq.send_by_ns = lop_clock_mono(&lop_clock_system) + lead_left;
    lop_rest_resp_t r = LOP_REST_RESP_INIT;
    lop_rest_mapping_t mp;
    memset(&mp, 0, sizeof mp);
    ryw_waiter_t waiter, *w = NULL;
    char *created = NULL; /* a create names its object in the body */
    if (strcmp(verb, "create") == 0 && !(req->name && *req->name) && req->body) {
        json_t *b = json_loadb(req->body, req->body_len, 0, NULL);
        const char *n = json_string_value(json_object_get(json_object_get(b, "metadata"), "name"));
        if (n && *n) created = lop_xstrdup(n);
        json_decref(b);
    }
    const char *wname = created ? created : req->name;
    if (is_write(verb) && wname && *wname) {
        w = &waiter;
        ryw_register(m, w, oreq.ns, wname);
    }
    int64_t call_deadline = req->timeout_ns > 0 ? lop_clock_mono(m->clock) + req->timeout_ns : 0;
    lop_rc_t rc = lop_rest_object(m->cfg.rest, m->cfg.mapper, &oreq, &r, &mp, err);
    if (rc == LOP_ECLOSED && oreq.send_by_ns && lop_clock_mono(&lop_clock_system) > oreq.send_by_ns)
        rc = lop_err_set(err, LOP_ECLOSED, 0, "NotLeader",
                         "this replica's leadership ended before the write could be sent: not sent");
    resp->code = r.code;
    resp->len = r.body.len;
    resp->body = lop_buf_steal(&r.body);
    lop_rest_resp_cleanup(&r);
    if (rc == LOP_OK && is_write(verb)) {
        /* read-your-writes for cached kinds */
        json_t *obj = write_summary(resp->body, resp->len);
        json_t *meta = json_object_get(obj, "metadata");
        const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
        const char *name = json_string_value(json_object_get(meta, "name"));
        const char *kind = json_string_value(json_object_get(obj, "kind"));
        bool is_status = kind && strcmp(kind, "Status") == 0;
        bool deleted = strcmp(verb, "delete") == 0 && (is_status || !json_object_get(meta, "deletionTimestamp"));
        if (!deleted && !is_status && removed_last_finalizer(&mp, meta)) deleted = true;
        if (!name || is_status) name = req->name;
        const char *ns = mp.namespaced ? oreq.ns : NULL;
        if (name && (rv || deleted))
            wait_for_cache(m, &mp, ns, name, rv ? rv : "", deleted, w && strcmp(name, wname) == 0 ? w : NULL,
                           call_deadline);
        json_decref(obj);
    }
    if (w) ryw_unregister(m, w);
    free(created);
    return rc;
}

static lop_rc_t host_record_event(void *ud, const char *obj_json, size_t len, const char *type, const char *reason,
                                  const char *message, lop_err_t *err)
{
    lop_manager_t *m = ud;
    return lop_recorder_record(m->recorder, obj_json, len, type, reason, message, err);
}

static bool host_is_leader(void *ud)
{
    lop_manager_t *m = ud;
    return !m->cfg.leader_gate || leading_left_ns(m) > 0;
}

static const char *host_identity(void *ud)
{
    lop_manager_t *m = ud;
    return m->identity;
}

void lop_manager_host_api_init(lop_manager_t *m, lop_host_api_t *api)
{
    api->ud = m;
    api->cache_get = host_cache_get;
    api->cache_list = host_cache_list;
    api->cache_list_index = host_cache_list_index;
    api->release = host_release;
    api->request = host_request;
    api->record_event = host_record_event;
    api->is_leader = host_is_leader;
    api->identity = host_identity;
    lop_manager_host_api_metrics_init(m, api);
}
