/* SPDX-License-Identifier: Apache-2.0 */
/* as_delete.c — DELETE and DELETE collection (apiserver pkg/registry/generic/registry/store.go Delete;
 * kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/): options, preconditions,
 * finalizers and deletionTimestamp, propagation policies, a synchronous owner-reference garbage
 * collector and namespace termination. */
#include "apiserver/as_delete.h"

#include "apiserver/as_decode.h"
#include "apiserver/as_admission.h"
#include "apiserver/as_convert.h"

#include "apiserver/as_crd.h"
#include "apiserver/as_registry.h"
#include "apiserver/as_select.h"
#include "apiserver/as_status.h"
#include "apiserver/as_store.h"
#include "apiserver/as_util.h"
#include "apiserver/as_view.h"

#include "host/codec/jsonstr.h"
#include "host/util/log.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void remove_str(json_t *arr, const char *s)
{
    for (size_t i = json_array_size(arr); i-- > 0;) {
        json_t *v = json_array_get(arr, i);
        if (json_is_string(v) && !strcmp(json_string_value(v), s)) json_array_remove(arr, i);
    }
}

static as_res_t *res_for_coll(lop_apiserver_t *srv, as_coll_t *c)
{
    for (size_t i = 0; i < srv->nres; i++)
        if (srv->res[i]->coll == c) return srv->res[i];
    return NULL;
}

/* Delete (or mark deleting) the object at key. policy NULL = Background. Returns the resulting
 * object (borrowed: store object, or the deleted state) and sets *removed. NULL if missing. */
static json_t *delete_object(lop_apiserver_t *srv, as_res_t *res, const char *key, const char *policy, bool *removed)
{
    as_entry_t *e = as_store_find(res->coll, key);
    *removed = false;
    if (!e) return NULL;
    json_t *old = as_entry_obj(srv, e);
    json_t *n = json_deep_copy(old);
    json_t *m = as_meta(n);
    json_t *fin = json_object_get(m, "finalizers");
    if (!json_is_array(fin)) {
        fin = json_array();
        json_object_set_new(m, "finalizers", fin);
    }
    bool is_ns = !strcmp(res->plural, "namespaces") && !res->group[0];
    if (policy && !strcmp(policy, "Foreground")) {
        remove_str(fin, "orphan");
        if (!lop_json_str_in(fin, "foregroundDeletion")) json_array_append_new(fin, json_string("foregroundDeletion"));
    } else if (policy && !strcmp(policy, "Orphan")) {
        remove_str(fin, "foregroundDeletion");
        if (!lop_json_str_in(fin, "orphan")) json_array_append_new(fin, json_string("orphan"));
    } else if (policy) {
        remove_str(fin, "orphan");
        remove_str(fin, "foregroundDeletion");
    }
    if (json_array_size(fin) == 0 && !is_ns) {
        json_decref(n);
        json_t *gone = as_store_commit(srv, res->coll, key, NULL);
        *removed = true;
        if (!strcmp(res->plural, "customresourcedefinitions")) as_crd_changed(srv, gone, true);
        as_gc_schedule(srv);
        return gone;
    }
    if (json_array_size(fin) == 0) json_object_del(m, "finalizers");
    if (!json_object_get(m, "deletionTimestamp")) {
        char t[32];
        json_object_set_new(m, "deletionTimestamp", json_string(as_now_time(t, sizeof t)));
        json_object_set_new(m, "deletionGracePeriodSeconds", json_integer(0));
        json_t *g = json_object_get(m, "generation");
        if (json_is_integer(g) && json_integer_value(g) > 0)
            json_object_set_new(m, "generation", json_integer(json_integer_value(g) + 1));
    }
    if (is_ns) {
        json_t *st = json_object_get(n, "status");
        if (!json_is_object(st)) {
            st = json_object();
            json_object_set_new(n, "status", st);
        }
        json_object_set_new(st, "phase", json_string("Terminating"));
    }
    json_t *stored = old;
    if (!json_equal(old, n)) {
        if (!res->is_cr) {
            json_t *o = as_order_builtin(n);
            json_decref(n);
            n = o;
        }
        stored = as_store_commit(srv, res->coll, key, n);
    } else {
        json_decref(n);
    }
    as_gc_schedule(srv);
    return stored;
}

static const char *body_or_query(as_req_t *q, json_t *opts, const char *key)
{
    json_t *v = opts ? json_object_get(opts, key) : NULL;
    if (json_is_string(v)) return json_string_value(v);
    return as_query(q, key);
}

static bool dry_all(as_req_t *q, json_t *opts)
{
    json_t *d = opts ? json_object_get(opts, "dryRun") : NULL;
    if (json_is_array(d) && json_array_size(d) > 0) return true;
    const char *s = as_query(q, "dryRun");
    return s && !strcmp(s, "All");
}

void as_handle_delete(as_req_t *q)
{
    lop_apiserver_t *srv = q->srv;
    as_res_t *res = q->res;
    json_t *opts = NULL;
    if (q->body_len > 0) {
        json_error_t je;
        opts = json_loadb(q->body, q->body_len, 0, &je);
        if (!json_is_object(opts)) {
            json_decref(opts);
            as_reply_status(q, 400, "BadRequest", NULL,
                            "the object provided is unrecognized or malformed: DeleteOptions");
            return;
        }
    }
    const char *policy = body_or_query(q, opts, "propagationPolicy");
    if (policy && strcmp(policy, "Orphan") && strcmp(policy, "Background") && strcmp(policy, "Foreground")) {
        char d[300];
        snprintf(d, sizeof d,
                 "Unsupported value: \"%s\": supported values: \"Foreground\", \"Background\", "
                 "\"Orphan\"",
                 policy);
        as_reply_invalid(q, "DeleteOptions.meta.k8s.io", "DeleteOptions", "meta.k8s.io", "", "FieldValueNotSupported",
                         "propagationPolicy", d);
        json_decref(opts);
        return;
    }
    char key[600];
    as_make_key(res, q->ns, q->name, key, sizeof key);
    as_entry_t *e = as_store_find(res->coll, key);
    if (!e) {
        json_decref(opts);
        as_reply_notfound(q, res, q->name);
        return;
    }
    if (!strcmp(res->plural, "namespaces") && !res->group[0] &&
        (!strcmp(q->name, "default") || !strcmp(q->name, "kube-system") || !strcmp(q->name, "kube-public"))) {
        json_decref(opts);
        as_reply_status(q, 403, "Forbidden", as_details(q->name, NULL, "namespaces"),
                        "namespaces \"%s\" is forbidden: this namespace may not be deleted", q->name);
        return;
    }
    json_t *pre = opts ? json_object_get(opts, "preconditions") : NULL;
    char qk[300];
    as_qualified_kind(res, qk, sizeof qk);
    const char *puid = json_string_value(json_object_get(pre, "uid"));
    const char *prv = json_string_value(json_object_get(pre, "resourceVersion"));
    json_t *cur = as_entry_obj(srv, e);
    if (puid && strcmp(puid, as_meta_str(cur, "uid"))) {
        as_reply_status(q, 409, "Conflict", as_details(q->name, res->group, res->plural),
                        "Operation cannot be fulfilled on %s \"%s\": the UID in the precondition "
                        "(%s) does not match the UID in record (%s). The object might have been "
                        "deleted and then recreated",
                        qk, q->name, puid, as_meta_str(cur, "uid"));
        json_decref(opts);
        return;
    }
    if (prv && strcmp(prv, as_meta_str(cur, "resourceVersion"))) {
        as_reply_status(q, 409, "Conflict", as_details(q->name, res->group, res->plural),
                        "Operation cannot be fulfilled on %s \"%s\": the ResourceVersion in the "
                        "precondition (%s) does not match the ResourceVersion in record (%s). The "
                        "object might have been modified",
                        qk, q->name, prv, as_meta_str(cur, "resourceVersion"));
        json_decref(opts);
        return;
    }
    bool dry = dry_all(q, opts);
    char *pol = policy ? lop_xstrdup(policy) : NULL;
    json_decref(opts);
    char msg[2600];
    json_t *live = as_convert(srv, res, cur, res->api_version, msg, sizeof msg);
    if (!live) {
        free(pol);
        as_reply_status(q, 500, "InternalError", NULL, "%s", msg);
        return;
    }
    bool admitted = as_admit_mutate(q, "DELETE", NULL, live, dry) && as_admit_validate(q, "DELETE", NULL, live, dry);
    if (!admitted || dry) {
        free(pol);
        if (admitted) as_reply_json(q, 200, as_served_obj(res, live), res->is_cr);
        json_decref(live);
        return;
    }
    json_decref(live);
    bool removed;
    json_t *obj = delete_object(srv, res, key, pol, &removed);
    free(pol);
    json_incref(obj);
    if (removed && !res->delete_returns_obj) {
        json_t *d = as_details(q->name, res->group, res->plural);
        json_object_set_new(d, "uid", json_string(as_meta_str(obj, "uid")));
        as_reply_json(q, 200, as_status_new(200, NULL, NULL, d), false);
    } else {
        json_t *shown = as_convert(srv, res, obj, res->api_version, msg, sizeof msg);
        if (shown)
            as_reply_json(q, 200, as_served_obj(res, shown), res->is_cr);
        else
            as_reply_status(q, 500, "InternalError", NULL, "%s", msg);
        json_decref(shown);
    }
    json_decref(obj);
}

void as_handle_deletecollection(as_req_t *q)
{
    lop_apiserver_t *srv = q->srv;
    as_res_t *res = q->res;
    lop_label_selector_t *ls;
    lop_field_selector_t *fs;
    if (as_parse_selectors(q, &ls, &fs) < 0) return;
    const char *policy = as_query(q, "propagationPolicy");
    bool dry = as_query(q, "dryRun") != NULL;
    as_coll_t *c = res->coll;
    size_t nkeys = 0;
    char **keys = lop_xcalloc(c->n + 1, sizeof *keys);
    const char *ns = q->ns[0] ? q->ns : NULL;
    for (size_t i = 0; i < c->n; i++)
        if (as_blob_matches(srv, res, ns, ls, fs, c->items[i].key, c->items[i].wire, false))
            keys[nkeys++] = lop_xstrdup(c->items[i].key);
    json_t *items = json_array();
    for (size_t i = 0; i < nkeys; i++) {
        as_entry_t *e = as_store_find(c, keys[i]);
        if (e && dry) {
            json_array_append(items, as_entry_obj(srv, e));
        } else if (e) {
            bool removed;
            json_t *o = delete_object(srv, res, keys[i], policy, &removed);
            if (o) json_array_append(items, o);
        }
        free(keys[i]);
    }
    free(keys);
    lop_label_selector_free(ls);
    lop_field_selector_free(fs);
    json_t *list = json_object();
    json_object_set_new(list, "kind", json_string(res->list_kind));
    json_object_set_new(list, "apiVersion", json_string(res->api_version));
    json_t *m = json_object();
    char rv[32];
    snprintf(rv, sizeof rv, "%lld", (long long)srv->rev);
    json_object_set_new(m, "resourceVersion", json_string(rv));
    json_object_set_new(list, "metadata", m);
    json_object_set_new(list, "items", items);
    as_reply_json(q, 200, list, res->is_cr);
}

/* ---- garbage collector and namespace controller (run after the request, on the loop) ---- */

typedef struct uidset {
    char **v;
    size_t n, cap;
} uidset_t;

static int cmpstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool uid_exists(uidset_t *s, const char *uid) { return bsearch(&uid, s->v, s->n, sizeof *s->v, cmpstr) != NULL; }

static void collect_uids(lop_apiserver_t *srv, uidset_t *s)
{
    s->n = 0;
    for (size_t i = 0; i < srv->ncolls; i++) {
        as_coll_t *c = srv->colls[i];
        for (size_t j = 0; j < c->n; j++) {
            const char *u = c->items[j].wire->facts->uid;
            if (!u) continue;
            if (s->n == s->cap) {
                s->cap = s->cap ? s->cap * 2 : 256;
                s->v = lop_xrealloc(s->v, s->cap * sizeof *s->v);
            }
            s->v[s->n++] = (char *)u;
        }
    }
    qsort(s->v, s->n, sizeof *s->v, cmpstr);
}

/* Find a stored object by uid: returns its entry and coll. */
static as_entry_t *find_uid(lop_apiserver_t *srv, const char *uid, as_coll_t **cout)
{
    for (size_t i = 0; i < srv->ncolls; i++) {
        as_coll_t *c = srv->colls[i];
        for (size_t j = 0; j < c->n; j++) {
            const char *u = c->items[j].wire->facts->uid;
            if (u && !strcmp(u, uid)) {
                *cout = c;
                return &c->items[j];
            }
        }
    }
    return NULL;
}

static bool has_finalizer(const json_t *obj, const char *f)
{
    json_t *fin = json_object_get(json_object_get(obj, "metadata"), "finalizers");
    return json_is_array(fin) && lop_json_str_in(fin, f);
}

/* Remove finalizer f from the object at c/key (deleting it if it was the last and it is
 * being deleted). Returns true when something changed. */
static bool drop_finalizer(lop_apiserver_t *srv, as_coll_t *c, const char *key, const char *f)
{
    as_entry_t *e = as_store_find(c, key);
    if (!e || !has_finalizer(as_entry_obj(srv, e), f)) return false;
    json_t *n = json_deep_copy(as_entry_obj(srv, e));
    json_t *fin = json_object_get(json_object_get(n, "metadata"), "finalizers");
    remove_str(fin, f);
    if (json_array_size(fin) == 0 && as_meta_str(n, "deletionTimestamp")) {
        json_decref(n);
        char *k = lop_xstrdup(key);
        json_t *gone = as_store_commit(srv, c, k, NULL);
        as_res_t *res = res_for_coll(srv, c);
        if (gone && res && !strcmp(res->plural, "customresourcedefinitions")) as_crd_changed(srv, gone, true);
        free(k);
        return true;
    }
    as_store_commit(srv, c, key, n);
    return true;
}

/* One pass; returns true when it changed anything. */
static bool gc_pass(lop_apiserver_t *srv)
{
    uidset_t live = {0};
    collect_uids(srv, &live);
    bool changed = false;
    for (size_t ci = 0; ci < srv->ncolls && !changed; ci++) {
        as_coll_t *c = srv->colls[ci];
        as_res_t *res = res_for_coll(srv, c);
        if (!res) continue;
        for (size_t j = 0; j < c->n && !changed; j++) {
            const as_facts_t *f = c->items[j].wire->facts;
            if (!f->owner_refs || f->deleting) continue;
            bool any_live = false, owner_fg = false;
            for (size_t k = 0; k < f->nowners; k++) {
                const char *u = f->owner_uids[k];
                if (!uid_exists(&live, u)) continue;
                as_coll_t *oc;
                as_entry_t *oe = find_uid(srv, u, &oc);
                if (oe && oe->wire->facts->deleting && oe->wire->facts->fin_foreground)
                    owner_fg = true;
                else
                    any_live = true;
            }
            if (!any_live) {
                char *key = lop_xstrdup(c->items[j].key);
                bool removed;
                delete_object(srv, res, key, owner_fg ? "Foreground" : "Background", &removed);
                free(key);
                changed = true;
            }
        }
    }
    /* owners waiting on dependents: foreground and orphan finalizers */
    for (size_t ci = 0; ci < srv->ncolls && !changed; ci++) {
        as_coll_t *c = srv->colls[ci];
        for (size_t j = 0; j < c->n && !changed; j++) {
            const as_facts_t *of = c->items[j].wire->facts;
            if (!of->deleting) continue;
            bool fg = of->fin_foreground;
            bool orphan = of->fin_orphan;
            if (!fg && !orphan) continue;
            const char *uid = of->uid;
            if (!uid) continue;
            bool blocking = false;
            for (size_t di = 0; di < srv->ncolls; di++) {
                as_coll_t *dc = srv->colls[di];
                for (size_t dj = 0; dj < dc->n; dj++) {
                    const as_facts_t *df = dc->items[dj].wire->facts;
                    bool owned = false;
                    for (size_t k = 0; k < df->nowners && !owned; k++) owned = !strcmp(df->owner_uids[k], uid);
                    if (!owned) continue;
                    json_t *dobj = as_entry_obj(srv, &dc->items[dj]);
                    json_t *refs = json_object_get(json_object_get(dobj, "metadata"), "ownerReferences");
                    size_t k;
                    json_t *r;
                    json_array_foreach(refs, k, r)
                    {
                        const char *u = json_string_value(json_object_get(r, "uid"));
                        if (!u || strcmp(u, uid)) continue;
                        if (orphan) {
                            json_t *n = json_deep_copy(dobj), *nm = json_object_get(n, "metadata");
                            json_array_remove(json_object_get(nm, "ownerReferences"), k);
                            /* the garbage collector's patch leaves no empty list (omitempty) */
                            if (!json_array_size(json_object_get(nm, "ownerReferences")))
                                json_object_del(nm, "ownerReferences");
                            char *key = lop_xstrdup(dc->items[dj].key);
                            as_store_commit(srv, dc, key, n);
                            free(key);
                            changed = true;
                        } else {
                            blocking = true;
                        }
                        break;
                    }
                    if (changed) break;
                }
                if (changed) break;
            }
            if (!changed) {
                char *key = lop_xstrdup(c->items[j].key);
                if (orphan)
                    changed = drop_finalizer(srv, c, key, "orphan");
                else if (!blocking)
                    changed = drop_finalizer(srv, c, key, "foregroundDeletion");
                free(key);
            }
        }
    }
    free(live.v);
    return changed;
}

/* Namespace controller: delete the contents of terminating namespaces; remove an empty one. */
static bool ns_pass(lop_apiserver_t *srv)
{
    as_coll_t *nsc = as_coll_get(srv, "", "namespaces", false);
    if (!nsc) return false;
    for (size_t i = 0; i < nsc->n; i++) {
        if (!nsc->items[i].wire->facts->deleting) continue;
        const char *name = nsc->items[i].key; /* cluster-scoped: the key is the name */
        size_t nl = strlen(name);
        bool remaining = false, changed = false;
        for (size_t ci = 0; ci < srv->ncolls; ci++) {
            as_coll_t *c = srv->colls[ci];
            as_res_t *res = res_for_coll(srv, c);
            if (!res || !res->namespaced) continue;
            for (size_t j = 0; j < c->n; j++) {
                const char *k = c->items[j].key;
                if (strncmp(k, name, nl) || k[nl] != '/') continue;
                remaining = true;
                if (!c->items[j].wire->facts->deleting) {
                    char *key = lop_xstrdup(k);
                    bool removed;
                    delete_object(srv, res, key, NULL, &removed);
                    free(key);
                    changed = true;
                    break;
                }
            }
            if (changed) return true;
        }
        if (!remaining) {
            char *key = lop_xstrdup(nsc->items[i].key);
            as_store_commit(srv, nsc, key, NULL);
            free(key);
            return true;
        }
    }
    return false;
}

static void gc_run(lop_apiserver_t *srv)
{
    srv->gc_pending = false;
    for (int guard = 0; guard < 100000; guard++) {
        if (gc_pass(srv)) continue;
        if (ns_pass(srv)) continue;
        break;
    }
}

static void gc_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gc_run(arg);
}

void as_gc_schedule(lop_apiserver_t *srv)
{
    if (srv->gc_pending) return;
    srv->gc_pending = true;
    /* run after the current request has been answered, so the Terminating / deleting state is
     * visible in the response and to watchers before the collector acts */
    struct timeval tv = {0, 0};
    event_base_once(srv->base, -1, EV_TIMEOUT, gc_cb, srv, &tv);
}
