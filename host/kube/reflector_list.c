/* reflector_list.c — the reflector's paginated LIST and store replacement (see reflector.h). */
#include "host/kube/reflector_impl.h"

#include "host/kube/jsonscan.h"
#include "host/util/buf.h"
#include "host/util/log.h"

#include <stdlib.h>
#include <string.h>

typedef struct objvec {
    lop_obj_t **v;
    size_t n, cap;
} objvec_t;

static void objvec_clear(objvec_t *ov)
{
    for (size_t i = 0; i < ov->n; i++)
        lop_obj_unref(ov->v[i]);
    ov->n = 0;
}

static void objvec_push(objvec_t *ov, lop_obj_t *o)
{
    if (ov->n == ov->cap) {
        ov->cap = ov->cap ? ov->cap * 2 : 64;
        ov->v = lop_xrealloc(ov->v, ov->cap * sizeof *ov->v);
    }
    ov->v[ov->n++] = o;
}

static char *str_member(const char *p, size_t n, size_t obj, const char *key)
{
    size_t s, e;
    if (lop_jscan_find(p, n, obj, key, &s, &e) != 1 || p[s] != '"')
        return NULL;
    json_t *j = json_loadb(p + s, e - s, JSON_DECODE_ANY, NULL);
    char *r = j && json_is_string(j) ? lop_xstrdup(json_string_value(j)) : NULL;
    json_decref(j);
    return r;
}

/* Parse one page: append items to ov; return rv and continue token (malloc'd, may be ""). */
static lop_rc_t parse_page(lop_reflector_t *r, const char *p, size_t n, objvec_t *ov, char **rv, char **cont,
                           lop_err_t *err)
{
    size_t s, e, ms, me, is, ie;
    *rv = *cont = NULL;
    if (lop_jscan_value(p, n, 0, &s, &e) != 0 || p[s] != '{')
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "list response is not a JSON object");
    if (lop_jscan_find(p, n, s, "metadata", &ms, &me) != 1 || p[ms] != '{')
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "list response has no metadata");
    *rv = str_member(p, n, ms, "resourceVersion");
    *cont = str_member(p, n, ms, "continue");
    if (!*cont)
        *cont = lop_xstrdup("");
    if (!*rv || !**rv)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "list response has no metadata.resourceVersion");
    int fi = lop_jscan_find(p, n, s, "items", &is, &ie);
    if (fi < 0 || (fi == 1 && p[is] != '[' && p[is] != 'n'))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "list response items is not an array");
    if (fi == 0 || p[is] == 'n')
        return LOP_OK; /* tolerate a missing or null items */
    /* built-in list items carry no kind/apiVersion (C.17): take them from the list */
    char *lkind = str_member(p, n, s, "kind"), *lapi = str_member(p, n, s, "apiVersion");
    if (lkind) {
        size_t kl = strlen(lkind);
        if (kl > 4 && strcmp(lkind + kl - 4, "List") == 0)
            lkind[kl - 4] = '\0';
        else
            lkind[0] = '\0';
    }
    lop_jscan_iter_t it;
    /* lop_jscan_find validated the whole items array: walk it without validating again */
    lop_jscan_array_begin_trusted(&it, p, n, is);
    int rr;
    lop_rc_t rc = LOP_OK;
    while ((rr = lop_jscan_array_next(&it)) == 1) {
        lop_obj_t *o = NULL;
        rc = lop_obj_new_item(p + it.val_start, it.val_end - it.val_start, r->obj_flags | LOP_OBJ_TRUSTED, lapi,
                              lkind, &o, err);
        if (rc != LOP_OK)
            break;
        objvec_push(ov, o);
    }
    if (rc == LOP_OK && rr < 0)
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "list response items: malformed JSON");
    free(lkind);
    free(lapi);
    return rc;
}

static void deliver(void *ud, lop_store_change_t what, lop_obj_t *old, lop_obj_t *new_)
{
    lop_reflector_t *r = ud;
    if (what == LOP_STORE_ADDED) {
        if (r->h.on_add)
            r->h.on_add(r->h.ud, new_);
    } else if (what == LOP_STORE_UPDATED) {
        if (r->h.on_update)
            r->h.on_update(r->h.ud, old, new_);
    } else if (r->h.on_delete) {
        r->h.on_delete(r->h.ud, old, true);
    }
}

/* E.9: "too large resource version" is a 504 Timeout (we branch on code and reason, never on
 * the message; a plain 504 on a list at a specific RV is retried the same way). */
static bool too_large_rv(const lop_err_t *e) { return e->code == 504 && strcmp(e->reason, "Timeout") == 0; }

lop_rc_t lop_reflector_do_list(lop_reflector_t *r, lop_err_t *err)
{
    char *orig_rv;
    pthread_mutex_lock(&r->mu);
    orig_rv = lop_xstrdup(r->rv_unavailable ? "" : (r->last_rv[0] ? r->last_rv : "0"));
    r->st.lists++;
    pthread_mutex_unlock(&r->mu);

    objvec_t ov = {0};
    lop_buf_t body = LOP_BUF_INIT;
    char *rv = NULL, *cont = NULL, *token = NULL;
    lop_rc_t rc;
    /* client-go: page unless a specific RV is asked for (served from the watch cache) */
    bool paged = !orig_rv[0] || strcmp(orig_rv, "0") == 0 || r->paginated_result;
    lop_list_opts_t o = {orig_rv[0] ? orig_rv : NULL, NULL, paged ? r->page_size : 0, NULL};
    bool retried_unset = false;
    for (int page = 0;; page++) {
        lop_buf_reset(&body);
        if (err)
            lop_err_clear(err);
        rc = r->lw.list(r->lw.ud, &o, &body, err);
        pthread_mutex_lock(&r->mu);
        r->st.list_pages++;
        pthread_mutex_unlock(&r->mu);
        if (rc == LOP_EGONE && page > 0) {
            /* pager: the snapshot of a continue token expired → one full list at the original RV */
            lop_logf(LOP_LOG_INFO, "reflector %s: continue token expired, falling back to a full list", r->name);
            pthread_mutex_lock(&r->mu);
            r->st.list_fallbacks++;
            pthread_mutex_unlock(&r->mu);
            objvec_clear(&ov);
            o = (lop_list_opts_t){orig_rv[0] ? orig_rv : NULL, NULL, 0, NULL};
            page = -1;
            continue;
        }
        if (rc != LOP_OK) {
            if ((rc == LOP_EGONE || (err && too_large_rv(err))) && page == 0 && orig_rv[0] && !retried_unset) {
                /* our RV is unavailable: relist at once with a consistent read */
                r->rv_unavailable = true;
                retried_unset = true;
                orig_rv[0] = '\0';
                objvec_clear(&ov);
                o = (lop_list_opts_t){NULL, NULL, r->page_size, NULL};
                page = -1;
                continue;
            }
            break;
        }
        free(rv);
        free(cont);
        rc = parse_page(r, body.data, body.len, &ov, &rv, &cont, err);
        if (rc != LOP_OK)
            break;
        if (!cont[0])
            break;
        if (page == 0)
            r->paginated_result = true;
        free(token);
        token = lop_xstrdup(cont);
        o = (lop_list_opts_t){NULL, NULL, o.limit ? o.limit : r->page_size, token}; /* E.15: no RV */
    }
    if (rc == LOP_OK) {
        if (r->dlock)
            pthread_mutex_lock(r->dlock);
        lop_store_replace(r->store, ov.v, ov.n, deliver, r);
        if (r->dlock)
            pthread_mutex_unlock(r->dlock);
        lop_reflector_set_rv(r, rv);
        r->rv_unavailable = false;
        atomic_store(&r->synced, true);
    }
    objvec_clear(&ov);
    free(ov.v);
    free(rv);
    free(cont);
    free(token);
    free(orig_rv);
    lop_buf_free(&body);
    return rc;
}
