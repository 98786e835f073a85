/* SPDX-License-Identifier: Apache-2.0 */
/*
 * manager_index.c — the manager's field indexes (op.index; controller-runtime's
 * FieldIndexer.IndexField on the manager's cache): the install validator resolves the set's index
 * declarations (lop_manager_index_plan), the wiring gives every informer that caches an indexed
 * kind in full one lop_fieldindex per declared index before the informer starts
 * (lop_manager_index_attach; host/kube/cache/fieldindex.h, values from fieldpath.h), and the
 * informer key carries the kind's index declarations, so that a reload that adds, removes or
 * changes an index of a kind builds new informers of that kind (listed afresh, indexed from the
 * first object) while a reload that keeps them shares the running informers.
 *
 * An extract index (op.index{extract = function(obj)}) runs its Lua function on the informer's
 * thread for every object it caches, in an event VM of its own ("index <name>", the way each
 * controller's predicates and map functions have theirs: docs/execution-model.md) under the
 * predicate deadline; a function that fails leaves that object out of the index (logged). Its
 * informer key carries the set's version (a function cannot be compared), so every reload
 * re-lists the kinds that have one.
 * Installing thread only (like manager.c's wiring), except the extract function (informer threads).
 */
#include "host/runtime/manager_internal.h"

#include "host/kube/cache/fieldindex.h"
#include "host/kube/cache/fieldpath.h"
#include "host/util/buf.h"
#include "host/util/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool same_gvr(const lop_rest_mapping_t *a, const lop_rest_mapping_t *b)
{
    return strcmp(a->group, b->group) == 0 && strcmp(a->version, b->version) == 0 &&
           strcmp(a->resource, b->resource) == 0;
}

void lop_manager_index_plan_free(index_plan_t *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].name);
        free(p->v[i].field);
    }
    free(p->v);
    p->v = NULL;
    p->n = 0;
}

/* Whether some watch of the declarations caches mp in full: an informer of it serves reads. */
static bool watched_in_full(const lop_ctrl_decl_t *decls, size_t n, const lop_rest_mapping_t *maps,
                            const lop_rest_mapping_t *mp)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const lop_ctrl_decl_t *d = &decls[i];
        for (size_t w = 0; w < 1 + d->nowns + d->nwatches; w++, k++) {
            const lop_watch_decl_t *wd = w == 0          ? &d->for_
                                         : w <= d->nowns ? &d->owns[w - 1]
                                                         : &d->watches[w - 1 - d->nowns];
            if (!wd->metadata_only && !wd->label_selector && same_gvr(&maps[k], mp)) return true;
        }
    }
    return false;
}

lop_rc_t lop_manager_index_plan(lop_manager_t *m, lop_vm_t *vm, const lop_ctrl_decl_t *decls, size_t n,
                                const lop_rest_mapping_t *maps, lop_err_t *err)
{
    const lop_index_decl_t *ix = NULL;
    size_t nix = 0;
    if (m->cfg.engine->index_declarations) m->cfg.engine->index_declarations(vm, &ix, &nix);
    index_plan_t p = {lop_xcalloc(nix ? nix : 1, sizeof *p.v), 0};
    for (size_t i = 0; i < nix; i++) {
        index_plan_ent_t *e = &p.v[p.n];
        lop_err_t e2;
        lop_err_clear(&e2);
        lop_rc_t rc = lop_restmapper_resolve(m->cfg.mapper, ix[i].gvk.api_version, ix[i].gvk.kind, &e->mp, &e2);
        if (rc != LOP_OK) {
            lop_manager_index_plan_free(&p);
            return lop_err_set(err, rc, e2.code, e2.reason,
                               "op.index '%s': kind %s %s is not served by the API server: %s", ix[i].name,
                               ix[i].gvk.api_version, ix[i].gvk.kind, e2.message);
        }
        if (!watched_in_full(decls, n, maps, &e->mp)) {
            lop_manager_index_plan_free(&p);
            return lop_err_set(err, LOP_EINVAL, 0, NULL,
                               "op.index '%s': no controller watches %s %s in full (for_, owns or watches without "
                               "label_selector or metadata_only): the index lives in that kind's informer cache",
                               ix[i].name, ix[i].gvk.api_version, ix[i].gvk.kind);
        }
        size_t same = 0;
        for (size_t j = 0; j < p.n; j++) {
            if (!same_gvr(&p.v[j].mp, &e->mp)) continue;
            same++;
            if (strcmp(p.v[j].name, ix[i].name) == 0) {
                lop_manager_index_plan_free(&p);
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "op.index '%s': declared twice for %s %s", ix[i].name,
                                   ix[i].gvk.api_version, ix[i].gvk.kind);
            }
        }
        if (same == LOP_STORE_MAX_FIELD_INDEXES) {
            lop_manager_index_plan_free(&p);
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "op.index '%s': %s %s has more than %d indexes", ix[i].name,
                               ix[i].gvk.api_version, ix[i].gvk.kind, LOP_STORE_MAX_FIELD_INDEXES);
        }
        e->name = lop_xstrdup(ix[i].name);
        e->field = ix[i].field ? lop_xstrdup(ix[i].field) : NULL;
        e->extract_lua_id = ix[i].extract_lua_id;
        if (!e->field && (e->extract_lua_id <= 0 || !m->cfg.engine->index_values)) {
            free(e->name);
            lop_manager_index_plan_free(&p);
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "op.index '%s': no field path and no extract function",
                               ix[i].name);
        }
        p.n++;
    }
    lop_manager_index_plan_free(&m->iplan);
    m->iplan = p;
    return LOP_OK;
}

void lop_manager_index_key(const lop_manager_t *m, const lop_rest_mapping_t *mp, char *buf, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over "name\0field\0" of each index, in order */
    bool any = false;
    for (size_t i = 0; i < m->iplan.n; i++) {
        const index_plan_ent_t *e = &m->iplan.v[i];
        if (!same_gvr(&e->mp, mp)) continue;
        any = true;
        for (const char *s = e->name;; s++) {
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
            if (!*s) break;
        }
        /* an extract function: the set's version stands for it */
        for (const char *s = e->field ? e->field : m->staging_version;; s++) {
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
            if (!*s) break;
        }
    }
    if (any)
        snprintf(buf, len, "|idx:%016" PRIx64, h);
    else if (len)
        buf[0] = '\0';
}

/* The ud of an extract index's function. gen is set by lop_manager_index_commit before the
 * informer starts, read-only afterwards. */
typedef struct index_extract {
    lop_manager_t *m;
    char *name;
    char vm_name[160]; /* its event VM: "index <name>" */
    int lua_id;
    uint64_t gen; /* 0 until committed */
} index_extract_t;

/* lop_fieldindex_fn of an extract index: the Lua function's values, keyed by namespace. */
static int extract_index_fn(void *ud, const lop_obj_t *o, char ***vals)
{
    index_extract_t *x = ud;
    lop_manager_t *m = x->m;
    *vals = NULL;
    lop_err_t err;
    lop_err_clear(&err);
    lop_event_vm_t *slot = NULL;
    lop_vm_t *vm = NULL;
    char **raw = NULL;
    int n = 0;
    lop_rc_t rc = lop_scriptrt_event_acquire(m->rt, x->gen, x->vm_name, &vm, &slot, &err);
    if (rc == LOP_OK) rc = m->cfg.engine->index_values(vm, x->lua_id, o->json, o->json_len, &raw, &n, &err);
    lop_scriptrt_event_release(m->rt, slot, rc == LOP_ENOMEM);
    if (rc == LOP_EGONE) return -1; /* its wiring is being removed: this index is about to go */
    if (rc != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "index extract function failed; the object is left out of the index", "index", x->name,
                "namespace", o->namespace_, "name", o->name, "error", err.message, NULL);
        return -1;
    }
    return lop_fieldpath_ns_keys(o, raw, n, vals);
}

void lop_manager_index_attach(lop_manager_t *m, inf_entry_t *e)
{
    if (e->selector || e->meta_only) return;
    for (size_t i = 0; i < m->iplan.n; i++) {
        const index_plan_ent_t *p = &m->iplan.v[i];
        if (!same_gvr(&p->mp, &e->mapping)) continue;
        lop_fieldpath_t *fp = NULL;
        index_extract_t *ex = NULL;
        lop_fieldindex_t *x;
        if (p->field) {
            lop_err_t err;
            lop_err_clear(&err);
            if (lop_fieldpath_compile(p->field, &fp, &err) != LOP_OK) { /* the engine compiled it already */
                lop_log(LOP_LOG_ERROR, "field index not built", "index", p->name, "error", err.message, NULL);
                continue;
            }
            x = lop_fieldindex_new(p->name, lop_fieldpath_index_fn, fp);
        } else {
            ex = lop_xcalloc(1, sizeof *ex);
            ex->m = m;
            ex->name = lop_xstrdup(p->name);
            snprintf(ex->vm_name, sizeof ex->vm_name, "index %s", p->name);
            ex->lua_id = p->extract_lua_id;
            x = lop_fieldindex_new(p->name, extract_index_fn, ex);
        }
        if (!lop_store_add_field_index(lop_informer_store(e->inf), x)) { /* the plan checked name and count */
            lop_fieldindex_free(x);
            lop_fieldpath_free(fp);
            if (ex) free(ex->name);
            free(ex);
            continue;
        }
        e->index_paths = lop_xrealloc(e->index_paths, (e->nindexes + 1) * sizeof *e->index_paths);
        e->index_extracts = lop_xrealloc(e->index_extracts, (e->nindexes + 1) * sizeof *e->index_extracts);
        e->index_names = lop_xrealloc(e->index_names, (e->nindexes + 1) * sizeof *e->index_names);
        e->index_paths[e->nindexes] = fp;
        e->index_extracts[e->nindexes] = ex;
        e->index_names[e->nindexes++] = lop_xstrdup(p->name);
    }
}

void lop_manager_index_commit(lop_manager_t *m, uint64_t gen)
{
    for (inf_entry_t *e = m->infs; e; e = e->next)
        for (size_t i = 0; i < e->nindexes; i++)
            if (e->index_extracts[i] && e->index_extracts[i]->gen == 0) e->index_extracts[i]->gen = gen;
}

void lop_manager_index_entry_free(inf_entry_t *e)
{
    for (size_t i = 0; i < e->nindexes; i++) {
        lop_fieldpath_free(e->index_paths[i]);
        if (e->index_extracts[i]) free(e->index_extracts[i]->name);
        free(e->index_extracts[i]);
        free(e->index_names[i]);
    }
    free(e->index_paths);
    free(e->index_extracts);
    free(e->index_names);
    e->index_extracts = NULL;
    e->index_paths = NULL;
    e->index_names = NULL;
    e->nindexes = 0;
}

bool lop_manager_index_has(const inf_entry_t *e, const char *name)
{
    for (size_t i = 0; i < e->nindexes; i++)
        if (strcmp(e->index_names[i], name) == 0) return true;
    return false;
}
