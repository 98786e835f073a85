/* SPDX-License-Identifier: Apache-2.0 */
/* reflector_list.c — the reflector's paginated, streamed LIST and store replacement (see reflector.h). */
#include "host/kube/cache/reflector_list.h"
#include "host/kube/cache/reflector_state.h"

#include "host/codec/jsonscan.h"
#include "host/kube/cache/listdecoder.h"
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
    for (size_t i = 0; i < ov->n; i++) lop_obj_unref(ov->v[i]);
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

/* The state of one list (all its pages). */
typedef struct list_run {
    lop_reflector_t *r;
    lop_listdecoder_t *dec;
    objvec_t *ov;
    bool reuse;       /* the store had entries when the list began: unchanged items reuse them */
    bool item_failed; /* an item could not be built: item_err says why */
    lop_err_t item_err;
    bool dec_failed; /* the decoder failed: dec_err says why */
    lop_err_t dec_err;
    uint64_t reused;
} list_run_t;

/* Items of this page (ov[first..]) built before the list's kind/apiVersion arrived, when they
 * carry none themselves: completed now (a body that puts items first and leaves kind out of
 * them; the API server's custom resource lists put items first but with their kind). */
static lop_rc_t complete_kinds(list_run_t *lr, size_t first, lop_err_t *err)
{
    const char *kind, *api;
    lop_reflector_item_gvk(lr->r, lop_listdecoder_api_version(lr->dec), lop_listdecoder_item_kind(lr->dec), &api,
                           &kind);
    for (size_t i = first; i < lr->ov->n; i++) {
        lop_obj_t *o = lr->ov->v[i];
        if ((o->kind[0] || !kind) && (o->api_version[0] || !api)) continue;
        lop_obj_t *full = NULL;
        if (lop_obj_new_item(o->json, o->json_len, lr->r->obj_flags | LOP_OBJ_TRUSTED, api, kind, &full, err) != LOP_OK)
            return LOP_EINVAL;
        lop_obj_unref(o);
        lr->ov->v[i] = full;
    }
    return LOP_OK;
}

static int on_item(void *ud, const char *item, size_t len, size_t *end)
{
    list_run_t *lr = ud;
    lop_reflector_t *r = lr->r;
    if (atomic_load(&r->stop)) return 1;
    /* The decoder leaves items unvalidated: building one validates it in the same pass. A relist
     * validates first, then may share the cached entry instead of building. An unchecked item
     * (end set: the bytes at hand from its '{') that fails either way is refused, not an error:
     * the decoder then tracks it and hands it over whole. */
    int trusted = 0;
    lop_obj_t *o = NULL;
    if (lr->reuse) {
        size_t s, e;
        if (lop_jscan_value(item, len, 0, &s, &e) != 0 || (!end && e != len)) {
            if (end) return LOP_LIST_RETRY;
            lop_err_set(&lr->item_err, LOP_EINVAL, 0, NULL, "malformed or truncated JSON");
            lr->item_failed = true;
            return 1;
        }
        if (end) *end = len = e;
        end = NULL; /* validated: built from exactly its bytes */
        trusted = LOP_OBJ_TRUSTED;
        o = lop_reflector_cached_same_rv(r, item, len);
    }
    if (o) {
        lr->reused++;
    } else {
        const char *kind, *api;
        lop_reflector_item_gvk(r, lop_listdecoder_api_version(lr->dec), lop_listdecoder_item_kind(lr->dec), &api,
                               &kind);
        lop_rc_t rc = end ? lop_obj_new_prefix(item, len, r->obj_flags, api, kind, end, &o, &lr->item_err)
                          : lop_obj_new_item(item, len, r->obj_flags | trusted, api, kind, &o, &lr->item_err);
        if (rc != LOP_OK) {
            if (end) return LOP_LIST_RETRY;
            lr->item_failed = true;
            return 1;
        }
    }
    objvec_push(lr->ov, o);
    return 0;
}

static int on_list_bytes(void *ud, const char *data, size_t len)
{
    list_run_t *lr = ud;
    if (atomic_load(&lr->r->stop)) return 1;
    lop_rc_t rc = lop_listdecoder_feed(lr->dec, data, len, &lr->dec_err);
    if (rc == LOP_EINVAL) lr->dec_failed = true;
    return rc != LOP_OK;
}

/* The rc of a page whose decoding or item building failed (or LOP_OK). */
static lop_rc_t page_failure(list_run_t *lr, lop_err_t *err)
{
    if (lr->item_failed) {
        lop_err_set(err, LOP_EINVAL, 0, NULL, "list item %zu of the page: %s", lop_listdecoder_items(lr->dec),
                    lr->item_err.message);
        return LOP_EINVAL;
    }
    if (lr->dec_failed) {
        if (err) *err = lr->dec_err;
        return LOP_EINVAL;
    }
    return LOP_OK;
}

/* The state of a list in progress (every page; the pager's and the unavailable-resourceVersion
 * fallbacks), between the turns that fetch its pages. */
struct lop_reflector_list {
    list_run_t lr;
    objvec_t ov;
    lop_buf_t body;
    char *orig_rv, *rv, *token;
    lop_list_opts_t o;
    int page;
    bool retried_unset;
    size_t first; /* lr.ov's count when the page began */
};

/* Get ready to fetch the page l->o: a reset decoder. */
static void page_begin(lop_reflector_list_t *l)
{
    lop_listdecoder_reset(l->lr.dec);
    l->lr.item_failed = l->lr.dec_failed = false;
    l->first = l->ov.n;
}

/* The page fetched (rc of the request, its body streamed through on_list_bytes, or collected in
 * l->body): its rc once decoded and completed. */
static lop_rc_t page_fetched(lop_reflector_list_t *l, lop_rc_t rc, bool collected, lop_err_t *err)
{
    list_run_t *lr = &l->lr;
    if (collected && rc == LOP_OK && !atomic_load(&lr->r->stop)) {
        rc = lop_listdecoder_feed(lr->dec, l->body.data ? l->body.data : "", l->body.len, &lr->dec_err);
        if (rc == LOP_EINVAL) lr->dec_failed = true; /* (an error of the request itself keeps its own err) */
    }
    lop_rc_t fr = page_failure(lr, err);
    if (fr != LOP_OK) return fr;
    if (rc != LOP_OK) return rc;
    rc = lop_listdecoder_finish(lr->dec, err);
    return rc == LOP_OK ? complete_kinds(lr, l->first, err) : rc;
}

/* "too large resource version" is a 504 Timeout (we branch on code and reason, never on
 * the message; a plain 504 on a list at a specific RV is retried the same way). */
static bool too_large_rv(const lop_err_t *e) { return e->code == 504 && strcmp(e->reason, "Timeout") == 0; }

lop_reflector_list_t *lop_reflector_list_begin(lop_reflector_t *r)
{
    lop_reflector_list_t *l = lop_xcalloc(1, sizeof *l);
    pthread_mutex_lock(&r->mu);
    l->orig_rv = lop_xstrdup(r->rv_unavailable ? "" : (r->last_rv[0] ? r->last_rv : "0"));
    r->st.lists++;
    pthread_mutex_unlock(&r->mu);
    lop_buf_init(&l->body);
    l->lr = (list_run_t){.r = r, .ov = &l->ov};
    if (!r->ldec) {
        r->ldec = lop_listdecoder_new(r->max_event_bytes, on_item, &l->lr);
        lop_listdecoder_set_validate(r->ldec, false);
    } else
        lop_listdecoder_set_callback(r->ldec, on_item, &l->lr);
    l->lr.dec = r->ldec;
    lop_store_stats_t ss;
    lop_store_stats(r->store, &ss);
    l->lr.reuse = ss.count > 0;
    /* client-go: page unless a specific RV is asked for (served from the watch cache) */
    bool paged = !l->orig_rv[0] || strcmp(l->orig_rv, "0") == 0 || r->paginated_result;
    l->o = (lop_list_opts_t){l->orig_rv[0] ? l->orig_rv : NULL, NULL, paged ? r->page_size : 0, NULL};
    page_begin(l);
    return l;
}

const lop_list_opts_t *lop_reflector_list_opts(const lop_reflector_list_t *l) { return &l->o; }

int lop_reflector_list_on_bytes(void *ud, const char *data, size_t len)
{
    return on_list_bytes(&((lop_reflector_list_t *)ud)->lr, data, len);
}

lop_list_step_t lop_reflector_list_page_done(lop_reflector_list_t *l, lop_rc_t rc, bool collected, lop_rc_t *out,
                                             lop_err_t *err)
{
    lop_reflector_t *r = l->lr.r;
    rc = page_fetched(l, rc, collected, err);
    pthread_mutex_lock(&r->mu);
    r->st.list_pages++;
    pthread_mutex_unlock(&r->mu);
    int page = l->page;
    if (atomic_load(&r->stop)) {
        rc = LOP_ECLOSED;
    } else if (rc == LOP_EGONE && page > 0) {
        /* pager: the snapshot of a continue token expired → one full list at the original RV */
        lop_logf(LOP_LOG_INFO, "reflector %s: continue token expired, falling back to a full list", r->name);
        pthread_mutex_lock(&r->mu);
        r->st.list_fallbacks++;
        pthread_mutex_unlock(&r->mu);
        objvec_clear(&l->ov);
        l->o = (lop_list_opts_t){l->orig_rv[0] ? l->orig_rv : NULL, NULL, 0, NULL};
        l->page = 0;
        goto next;
    } else if (rc != LOP_OK) {
        if ((rc == LOP_EGONE || (err && too_large_rv(err))) && page == 0 && l->orig_rv[0] && !l->retried_unset) {
            /* our RV is unavailable: relist at once with a consistent read */
            r->rv_unavailable = true;
            l->retried_unset = true;
            l->orig_rv[0] = '\0';
            objvec_clear(&l->ov);
            l->o = (lop_list_opts_t){NULL, NULL, r->page_size, NULL};
            l->page = 0;
            goto next;
        }
    } else {
        free(l->rv);
        l->rv = lop_xstrdup(lop_listdecoder_resource_version(l->lr.dec));
        const char *cont = lop_listdecoder_continue(l->lr.dec);
        if (cont[0]) {
            if (page == 0) r->paginated_result = true;
            free(l->token);
            l->token = lop_xstrdup(cont);
            l->o = (lop_list_opts_t){NULL, NULL, l->o.limit ? l->o.limit : r->page_size, l->token}; /* no RV */
            l->page++;
            goto next;
        }
    }
    if (rc == LOP_OK) {
        lop_reflector_replace(r, l->ov.v, l->ov.n);
        lop_reflector_set_rv(r, l->rv);
        r->rv_unavailable = false;
        lop_reflector_mark_synced(r);
        pthread_mutex_lock(&r->mu);
        r->st.list_reused += l->lr.reused;
        pthread_mutex_unlock(&r->mu);
    }
    *out = rc;
    return LOP_LIST_DONE;
next:
    if (err) lop_err_clear(err);
    page_begin(l);
    return LOP_LIST_NEXT_PAGE;
}

void lop_reflector_list_free(lop_reflector_list_t *l)
{
    if (!l) return;
    objvec_clear(&l->ov);
    free(l->ov.v);
    free(l->rv);
    free(l->token);
    free(l->orig_rv);
    lop_buf_free(&l->body);
    free(l);
}

lop_rc_t lop_reflector_do_list(lop_reflector_t *r, lop_err_t *err)
{
    lop_reflector_list_t *l = lop_reflector_list_begin(r);
    lop_rc_t rc = LOP_OK;
    for (;;) {
        if (err) lop_err_clear(err);
        lop_rc_t prc;
        bool collected = !r->lw.list_stream;
        if (collected) {
            lop_buf_reset(&l->body);
            prc = r->lw.list(r->lw.ud, &l->o, &l->body, err);
        } else {
            prc = r->lw.list_stream(r->lw.ud, &l->o, lop_reflector_list_on_bytes, l, err);
        }
        if (lop_reflector_list_page_done(l, prc, collected, &rc, err) == LOP_LIST_DONE) break;
    }
    lop_reflector_list_free(l);
    return rc;
}
