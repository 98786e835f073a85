/* SPDX-License-Identifier: Apache-2.0 */
/* reflector.c — the reflector's watch loop, event handling, backoff and thread (see reflector.h). */
#include "host/kube/cache/reflector_list.h"
#include "host/kube/cache/reflector_state.h"

#include "host/codec/jsonscan.h"
#include "host/util/buf.h"
#include "host/util/log.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define BACKOFF_INITIAL     (800 * LOP_NS_PER_MS)
#define BACKOFF_CAP         (30 * LOP_NS_PER_S)
#define BACKOFF_RESET       (120 * LOP_NS_PER_S)
#define MIN_WATCH_TIMEOUT_S 300
#define SHORT_WATCH         (1 * LOP_NS_PER_S)

static double rand01(lop_reflector_t *r) { return (double)(lop_reflector_rand(r) >> 11) / 9007199254740992.0; }

/* client-go's exponential backoff manager: 800 ms ×2, cap 30 s, jitter 1.0, reset after 2 min. */
static int64_t backoff(lop_reflector_t *r)
{
    int64_t now = lop_clock_mono(r->clock);
    if (!r->bo_used || now - r->bo_last > BACKOFF_RESET) r->bo_dur = BACKOFF_INITIAL;
    r->bo_used = true;
    r->bo_last = now;
    int64_t d = r->bo_dur;
    r->bo_dur = r->bo_dur * 2 > BACKOFF_CAP ? BACKOFF_CAP : r->bo_dur * 2;
    d += (int64_t)(rand01(r) * (double)d);
    pthread_mutex_lock(&r->mu);
    r->st.watch_errors++;
    r->st.last_backoff_ns = d;
    pthread_mutex_unlock(&r->mu);
    return d;
}

lop_reflector_t *lop_reflector_new(const lop_reflector_config_t *cfg, lop_err_t *err)
{
    if (!cfg || !cfg->lw || !cfg->store || !cfg->lw->list || !cfg->lw->watch) {
        if (cfg && cfg->lw && cfg->lw->free) cfg->lw->free(cfg->lw->ud);
        lop_err_set(err, LOP_EINVAL, 0, NULL, "reflector: a listwatch (with list and watch) and a store are required");
        return NULL;
    }
    lop_reflector_t *r = lop_xcalloc(1, sizeof *r);
    r->name = lop_xstrdup(cfg->name ? cfg->name : "");
    r->lw = *cfg->lw;
    r->store = cfg->store;
    r->clock = cfg->clock ? cfg->clock : &lop_clock_system;
    r->h = cfg->handlers;
    r->dlock = cfg->delivery_lock;
    r->batch = cfg->batch;
    r->page_size = cfg->page_size > 0 ? cfg->page_size : 500;
    r->idle_timeout_ms = cfg->idle_timeout_ms;
    r->max_event_bytes = cfg->max_event_bytes;
    r->watch_list = cfg->watch_list;
    r->disp = cfg->dispatcher;
    r->obj_flags = cfg->obj_flags;
    if (cfg->api_version && *cfg->api_version && cfg->kind && *cfg->kind) {
        r->api_version = lop_xstrdup(cfg->api_version);
        r->kind = lop_xstrdup(cfg->kind);
    }
    r->rng = cfg->seed ? cfg->seed : ((uint64_t)lop_clock_mono(&lop_clock_system) ^ (uint64_t)(uintptr_t)r) | 1;
    pthread_mutex_init(&r->mu, NULL);
    lop_cond_init(&r->cond);
    r->last_rv = lop_xstrdup("");
    r->need_list = true;
    return r;
}

void lop_reflector_free(lop_reflector_t *r)
{
    if (!r) return;
    lop_reflector_stop(r);
    if (r->lw.free) r->lw.free(r->lw.ud);
    lop_watchdecoder_free(r->dec);
    lop_reflector_list_free(r->alist);
    lop_listdecoder_free(r->ldec);
    lop_store_free(r->wl_store);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->mu);
    free(r->last_rv);
    free(r->wrv);
    free(r->name);
    free(r->api_version);
    free(r->kind);
    free(r);
}

bool lop_reflector_has_synced(lop_reflector_t *r) { return atomic_load(&r->synced); }

void lop_reflector_last_rv(lop_reflector_t *r, char *buf, size_t len)
{
    pthread_mutex_lock(&r->mu);
    snprintf(buf, len, "%s", r->last_rv);
    pthread_mutex_unlock(&r->mu);
}

void lop_reflector_stats(lop_reflector_t *r, lop_reflector_stats_t *out)
{
    pthread_mutex_lock(&r->mu);
    *out = r->st;
    pthread_mutex_unlock(&r->mu);
}

/* ---- watch events ---- */

static void dlock(lop_reflector_t *r)
{
    if (r->dlock) pthread_mutex_lock(r->dlock);
}

static void dunlock(lop_reflector_t *r)
{
    if (r->dlock) pthread_mutex_unlock(r->dlock);
}

static void apply_upsert(lop_reflector_t *r, lop_obj_t *o)
{
    lop_obj_t *old = NULL;
    dlock(r);
    lop_store_put(r->store, o, &old);
    if (old) {
        if (r->h.on_update) r->h.on_update(r->h.ud, old, o);
        lop_obj_unref(old);
    } else if (r->h.on_add) {
        r->h.on_add(r->h.ud, o);
    }
    dunlock(r);
}

/* Remove o's key from s; returns the removed entry (the caller drops it) or NULL. */
static lop_obj_t *delete_key_of(lop_store_t *s, const lop_obj_t *o)
{
    char small[256];
    int n = lop_obj_key(o, small, sizeof small);
    char *key = (size_t)n < sizeof small ? small : lop_xmalloc((size_t)n + 1);
    if (key != small) lop_obj_key(o, key, (size_t)n + 1);
    lop_obj_t *gone = lop_store_delete(s, key);
    if (key != small) free(key);
    return gone;
}

static void apply_delete(lop_reflector_t *r, lop_obj_t *o)
{
    dlock(r);
    lop_obj_unref(delete_key_of(r->store, o));
    if (r->h.on_delete) r->h.on_delete(r->h.ud, o, false);
    dunlock(r);
}

/* A watch-list event before its bookmark: kept aside in wl_store, no handler runs. */
static void wl_apply(lop_reflector_t *r, lop_obj_t *o, bool deleted)
{
    if (deleted)
        lop_obj_unref(delete_key_of(r->wl_store, o));
    else
        lop_store_put(r->wl_store, o, NULL);
}

/* The initial-events-end bookmark of a watch-list: its state replaces the store, as a list. */
static void watch_list_synced(lop_reflector_t *r)
{
    lop_obj_list_t l;
    lop_store_list(r->wl_store, &l);
    lop_store_free(r->wl_store);
    r->wl_store = NULL;
    /* counted before the handlers see the replace (as a list is counted when it starts) */
    pthread_mutex_lock(&r->mu);
    r->st.watch_lists++;
    pthread_mutex_unlock(&r->mu);
    lop_reflector_replace(r, l.items, l.n);
    char n[32];
    snprintf(n, sizeof n, "%zu", l.n);
    lop_log(LOP_LOG_INFO, "synced by watch-list", "reflector", r->name, "objects", n, NULL);
    lop_obj_list_free(&l);
    r->need_list = false;
    r->rv_unavailable = false;
    lop_reflector_mark_synced(r);
}

static int malformed(lop_reflector_t *r, const char *what, const char *detail)
{
    r->outcome = WO_MALFORMED;
    lop_err_set(&r->werr, LOP_EINVAL, 0, NULL, "%s%s", what, detail);
    return 1;
}

/* One pass over a watch event: validates every byte, finds the type, and builds the object
 * from the "object" member in the walk that validates it (unless the type says otherwise).
 * Returns NULL, or the cause when doc is not one valid event object. *o may be set either way. */
static const char *parse_event(lop_reflector_t *r, const char *doc, size_t len, size_t *ts, size_t *te, size_t *os,
                               size_t *oe, lop_obj_t **o, lop_err_t *oerr, const char **detail)
{
    *detail = "";
    lop_jscan_iter_t it;
    if (lop_jscan_object_begin(&it, doc, len, 0) != 0) return "watch event is not a JSON object";
    int k;
    while ((k = lop_jscan_object_key(&it)) == 1) {
        size_t vs = it.val_start, ve;
        bool is_obj = lop_jscan_key_is(&it, "object");
        /* the type comes first from the API server: build the object in this walk, except for
         * an ERROR (a Status) and a watch-list's ADDED that may share the cached entry */
        bool build = is_obj && doc[vs] == '{' && *te > *ts && !(r->wl_store && r->wl_reuse) &&
                     !(*te - *ts == 7 && !memcmp(doc + *ts, "\"ERROR\"", 7));
        if (build) {
            lop_obj_unref(*o); /* a repeated member: the last one wins */
            *o = NULL;
            size_t end;
            const char *api, *kind;
            lop_reflector_item_gvk(r, NULL, NULL, &api, &kind);
            if (lop_obj_new_prefix(doc + vs, len - vs, r->obj_flags, api, kind, &end, o, oerr) != LOP_OK) {
                *detail = oerr->message;
                return "watch event object: ";
            }
            ve = vs + end;
        } else {
            size_t s0;
            if (lop_jscan_value(doc, len, vs, &s0, &ve) != 0) return "watch event: malformed JSON";
            if (is_obj) {
                lop_obj_unref(*o);
                *o = NULL;
            }
        }
        if (is_obj)
            *os = vs, *oe = ve;
        else if (lop_jscan_key_is(&it, "type"))
            *ts = vs, *te = ve;
        it.pos = ve;
    }
    if (k < 0) return "watch event: malformed JSON";
    if (lop_jscan_ws(doc, len, it.pos) != len) return "watch event: trailing bytes after the JSON object";
    return NULL;
}

static int on_event(void *ud, const char *doc, size_t len, bool checked)
{
    lop_reflector_t *r = ud;
    if (atomic_load(&r->stop)) {
        r->outcome = WO_STOPPED;
        return 1;
    }
    size_t ts = 0, te = 0, os = 0, oe = 0;
    lop_obj_t *o = NULL;
    lop_err_t oerr;
    const char *detail, *bad = parse_event(r, doc, len, &ts, &te, &os, &oe, &o, &oerr, &detail);
    if (bad) {
        lop_obj_unref(o);
        if (!checked) /* maybe not the whole event (a newline inside it): the decoder tracks it */
            return LOP_DOC_RETRY;
        return malformed(r, bad, detail);
    }
    if (te <= ts || doc[ts] != '"') {
        lop_obj_unref(o);
        return malformed(r, "watch event without a type", "");
    }
    if (oe <= os || doc[os] != '{') {
        lop_obj_unref(o);
        return malformed(r, "watch event without an object", "");
    }
    char type[16];
    size_t tl = te - ts - 2;
    if (tl >= sizeof type || memchr(doc + ts + 1, '\\', tl)) {
        lop_obj_unref(o);
        return malformed(r, tl >= sizeof type ? "watch event type too long" : "watch event of unknown type", "");
    }
    memcpy(type, doc + ts + 1, tl);
    type[tl] = '\0';

    if (strcmp(type, "ERROR") == 0) {
        lop_obj_unref(o);
        json_t *st = json_loadb(doc + os, oe - os, 0, NULL);
        json_t *code = st ? json_object_get(st, "code") : NULL;
        const char *reason = st ? json_string_value(json_object_get(st, "reason")) : NULL;
        const char *msg = st ? json_string_value(json_object_get(st, "message")) : NULL;
        int c = json_is_integer(code) ? (int)json_integer_value(code) : 0;
        r->outcome = c == 410 ? WO_GONE : WO_ERROR_EVENT;
        lop_err_set(&r->werr, c == 410 ? LOP_EGONE : lop_rc_from_http(c, reason), c, reason, "%s",
                    msg ? msg : "watch ERROR event");
        json_decref(st);
        return 1;
    }
    bool bookmark = strcmp(type, "BOOKMARK") == 0;
    bool added = strcmp(type, "ADDED") == 0, modified = strcmp(type, "MODIFIED") == 0,
         deleted = strcmp(type, "DELETED") == 0;
    if (!bookmark && !added && !modified && !deleted) {
        lop_obj_unref(o);
        return malformed(r, "watch event of unknown type ", type);
    }
    /* A server that ignores sendInitialEvents (before 1.27) answers with a plain watch: its
     * initial state never ends with the annotated bookmark. Spot it at the first event that a
     * watch-list's initial phase never carries (MODIFIED, DELETED, a plain BOOKMARK). */
    if (r->wl_store && (modified || deleted)) {
        lop_obj_unref(o);
        r->wl_unsupported = true;
        return 1;
    }
    /* not built in the walk (the object came before the type, or a watch-list's initial state,
     * which shares the cached entries that did not change, as a relist does): the bytes are
     * validated by now */
    if (!o && r->wl_store && added && r->wl_reuse) o = lop_reflector_cached_same_rv(r, doc + os, oe - os);
    const char *api, *kind;
    lop_reflector_item_gvk(r, NULL, NULL, &api, &kind);
    if (!o && lop_obj_new_item(doc + os, oe - os, r->obj_flags | LOP_OBJ_TRUSTED, api, kind, &o, &oerr) != LOP_OK)
        return malformed(r, "watch event object: ", oerr.message);
    if (bookmark) {
        const char *end = lop_obj_annotation(o, "k8s.io/initial-events-end");
        if (end && strcmp(end, "true") == 0) {
            r->in_burst = false;
            if (r->wl_store) watch_list_synced(r);
        } else if (r->wl_store) {
            r->wl_unsupported = true; /* a plain bookmark before the end of the initial state */
            lop_obj_unref(o);
            return 1;
        }
        pthread_mutex_lock(&r->mu);
        r->st.bookmarks++;
        pthread_mutex_unlock(&r->mu);
    } else {
        if (!o->name[0]) {
            lop_obj_unref(o);
            return malformed(r, "watch event object without metadata.name", "");
        }
        if (!added) r->in_burst = false;
        /* counted before it is applied: whoever sees the handler run sees the event counted */
        r->watch_events++;
        pthread_mutex_lock(&r->mu);
        r->st.events++;
        pthread_mutex_unlock(&r->mu);
        if (r->wl_store) /* the initial state is delivered at its bookmark, as one replace */
            wl_apply(r, o, deleted);
        else if (deleted)
            apply_delete(r, o);
        else
            apply_upsert(r, o);
    }
    /* RVs of the initial ADDED burst of an RV-less watch are not resume points */
    if (!r->in_burst && o->rv[0]) lop_reflector_set_rv(r, o->rv);
    lop_obj_unref(o);
    return 0;
}

static int on_bytes(void *ud, const char *data, size_t len)
{
    lop_reflector_t *r = ud;
    if (atomic_load(&r->stop)) {
        r->outcome = WO_STOPPED;
        return 1;
    }
    lop_err_t err;
    /* the handlers' calls for the events of these bytes form one burst for the handler
     * batch (reflector.h), which the runtime binds to publish their enqueues together */
    lop_refl_batch_begin(r);
    lop_rc_t rc = lop_watchdecoder_feed(r->dec, data, len, &err);
    lop_refl_batch_end(r);
    if (rc == LOP_EINVAL) {
        r->outcome = WO_MALFORMED;
        r->werr = err;
        return 1;
    }
    return rc == LOP_ECLOSED ? 1 : 0;
}

/* The stream ended: an event held for a newline that never came (only a broken stream holds a
 * complete one, see watchdecoder.h) is decoded now, as it was when every byte was tracked. */
static void finish_stream(lop_reflector_t *r)
{
    if (r->outcome != WO_NONE || atomic_load(&r->stop)) return;
    lop_err_t err;
    lop_refl_batch_begin(r);
    lop_rc_t rc = lop_watchdecoder_finish(r->dec, &err);
    lop_refl_batch_end(r);
    if (rc == LOP_EINVAL) {
        r->outcome = WO_MALFORMED;
        r->werr = err;
    }
}

/* A watch-list that did not reach its bookmark: drop its state, LIST next (at once). */
static lop_rc_t watch_list_failed(lop_reflector_t *r, lop_rc_t rc, const lop_err_t *err, int64_t *wait_ns)
{
    lop_store_free(r->wl_store);
    r->wl_store = NULL;
    r->wl_fallback = true;
    *wait_ns = 0;
    pthread_mutex_lock(&r->mu);
    r->st.watch_list_fallbacks++;
    pthread_mutex_unlock(&r->mu);
    const char *why = r->outcome != WO_NONE ? r->werr.message : rc != LOP_OK ? err->message : "stream ended";
    if (r->wl_unsupported || (rc != LOP_OK && r->outcome == WO_NONE && err->code == 422)) {
        /* 422: "sendInitialEvents is forbidden ... unless the WatchList feature gate is enabled";
         * other failures (404 of a CRD not there yet, 403, 5xx) only fall
         * back for this sync, as client-go does */
        r->wl_disabled = true;
        if (r->wl_unsupported) why = "an event other than ADDED came before the initial-events-end bookmark";
        lop_log(LOP_LOG_WARN, "the API server does not serve watch-list; syncing with LIST from now on", "reflector",
                r->name, "error", why, NULL);
    } else {
        lop_log(LOP_LOG_WARN, "watch-list ended before its initial-events-end bookmark; falling back to LIST",
                "reflector", r->name, "error", why, NULL);
    }
    return LOP_OK;
}

/* Everything a watch needs before it starts: its options (o->resource_version points into r->wrv,
 * valid until the next watch), a reset decoder, the counters. */
static void watch_begin(lop_reflector_t *r, lop_watch_opts_t *o)
{
    pthread_mutex_lock(&r->mu);
    free(r->wrv);
    r->wrv = lop_xstrdup(r->wl_store && r->rv_unavailable ? "" : r->last_rv);
    r->st.watches++;
    pthread_mutex_unlock(&r->mu);
    const char *rv = r->wrv;
    long timeout_s = MIN_WATCH_TIMEOUT_S + (long)(lop_reflector_rand(r) % MIN_WATCH_TIMEOUT_S);
    long idle = r->idle_timeout_ms == 0 ? (timeout_s + 30) * 1000 : r->idle_timeout_ms < 0 ? 0 : r->idle_timeout_ms;
    *o = (lop_watch_opts_t){rv[0] ? rv : NULL, true, timeout_s, r->wl_store != NULL, idle};
    if (!r->dec) r->dec = lop_watchdecoder_new(r->max_event_bytes, on_event, r);
    lop_watchdecoder_reset(r->dec);
    r->watch_events = 0;
    r->in_burst = r->wl_store || !rv[0] || strcmp(rv, "0") == 0;
    r->outcome = WO_NONE;
    lop_err_clear(&r->werr);
    r->wstart = lop_clock_mono(r->clock);
}

/* The watch begun by watch_begin ended with rc (err): what the loop does next (*wait_ns). */
static lop_rc_t watch_end(lop_reflector_t *r, lop_rc_t rc, lop_err_t *errp, int64_t *wait_ns)
{
    lop_err_t err = *errp;
    int64_t took = lop_clock_mono(r->clock) - r->wstart;
    finish_stream(r);
    *wait_ns = 0;
    if (atomic_load(&r->stop)) return LOP_ECLOSED;
    if (r->wl_store && r->outcome != WO_STOPPED) return watch_list_failed(r, rc, &err, wait_ns);
    switch (r->outcome) {
    case WO_GONE:
        lop_log(LOP_LOG_INFO, "watch expired (ERROR 410), relisting", "reflector", r->name, "message", r->werr.message,
                NULL);
        goto gone;
    case WO_ERROR_EVENT:
        lop_log(LOP_LOG_WARN, "watch ERROR event, rewatching after backoff", "reflector", r->name, "message",
                r->werr.message, NULL);
        *wait_ns = backoff(r);
        return LOP_OK;
    case WO_MALFORMED:
        lop_log(LOP_LOG_WARN, "malformed watch stream, restarting the watch", "reflector", r->name, "error",
                r->werr.message, NULL);
        pthread_mutex_lock(&r->mu);
        r->st.malformed++;
        pthread_mutex_unlock(&r->mu);
        *wait_ns = backoff(r);
        return LOP_OK;
    case WO_STOPPED: return LOP_ECLOSED;
    case WO_NONE: break;
    }
    if (rc == LOP_EGONE) {
        lop_log(LOP_LOG_INFO, "watch expired (HTTP 410), relisting", "reflector", r->name, "message", err.message,
                NULL);
        goto gone;
    }
    if (rc == LOP_OK && lop_watchdecoder_partial(r->dec)) {
        lop_log(LOP_LOG_WARN, "watch stream ended inside an event, rewatching", "reflector", r->name, NULL);
        *wait_ns = backoff(r);
        return LOP_OK;
    }
    if (rc == LOP_OK) {
        if (r->watch_events == 0 && took < SHORT_WATCH) {
            lop_log(LOP_LOG_WARN, "very short watch (no events, under 1 s), backing off", "reflector", r->name, NULL);
            *wait_ns = backoff(r);
        }
        return LOP_OK;
    }
    lop_log(LOP_LOG_WARN, "watch failed, rewatching after backoff", "reflector", r->name, "rc", lop_rc_str(rc), "error",
            err.message, NULL);
    *wait_ns = backoff(r);
    return LOP_OK;
gone:
    pthread_mutex_lock(&r->mu);
    r->st.relists_410++;
    pthread_mutex_unlock(&r->mu);
    r->need_list = true;
    *wait_ns = backoff(r);
    return LOP_OK;
}

static lop_rc_t do_watch(lop_reflector_t *r, int64_t *wait_ns)
{
    lop_watch_opts_t o;
    watch_begin(r, &o);
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc = r->lw.watch(r->lw.ud, &o, on_bytes, r, &err);
    return watch_end(r, rc, &err, wait_ns);
}

/* A watch-list sync begins: its initial state goes to a store of its own until the bookmark. */
static void watch_list_begin(lop_reflector_t *r)
{
    r->wl_store = lop_store_new();
    r->wl_unsupported = false;
    lop_store_stats_t ss;
    lop_store_stats(r->store, &ss);
    r->wl_reuse = ss.count > 0;
}

/* A list ended with rc (err): LOP_OK with *wait_ns for the next step, or LOP_ECLOSED. */
static lop_rc_t list_result(lop_reflector_t *r, lop_rc_t rc, const lop_err_t *errp, int64_t *wait_ns)
{
    lop_err_t err = *errp;
    if (atomic_load(&r->stop)) return LOP_ECLOSED;
    if (rc == LOP_OK) {
        r->need_list = false;
        return LOP_OK;
    }
    lop_log(LOP_LOG_WARN, "list failed, retrying after backoff", "reflector", r->name, "rc", lop_rc_str(rc), "error",
            err.message, NULL);
    *wait_ns = backoff(r);
    return LOP_OK;
}

/* The list of a step (need_list, no watch-list): LOP_OK with *wait_ns, or LOP_ECLOSED. */
static lop_rc_t list_step(lop_reflector_t *r, int64_t *wait_ns)
{
    r->wl_fallback = false;
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc = lop_reflector_do_list(r, &err);
    return list_result(r, rc, &err, wait_ns);
}

/* Whether the next step is a watch (or a watch-list), not a list. */
static bool next_is_watch(const lop_reflector_t *r)
{
    return !r->need_list || (r->watch_list && !r->wl_disabled && !r->wl_fallback);
}

lop_rc_t lop_reflector_step(lop_reflector_t *r, int64_t *wait_ns)
{
    *wait_ns = 0;
    if (atomic_load(&r->stop)) return LOP_ECLOSED;
    if (!r->need_list) return do_watch(r, wait_ns);
    if (next_is_watch(r)) {
        watch_list_begin(r);
        return do_watch(r, wait_ns);
    }
    return list_step(r, wait_ns);
}

/* ---- thread ---- */

static void *run(void *arg)
{
    lop_reflector_t *r = arg;
    while (!atomic_load(&r->stop)) {
        int64_t wait = 0;
        if (lop_reflector_step(r, &wait) == LOP_ECLOSED) break;
        if (wait <= 0) continue;
        pthread_mutex_lock(&r->mu);
        int64_t deadline = lop_clock_mono(r->clock) + wait;
        while (!atomic_load(&r->stop) && !lop_clock_wait_until(r->clock, &r->cond, &r->mu, deadline))
            ;
        pthread_mutex_unlock(&r->mu);
    }
    return NULL;
}

/* ---- on the cache dispatcher ---- */

static lop_reflector_t *of_task(lop_dispatch_task_t *t)
{
    return (lop_reflector_t *)(void *)((char *)t - offsetof(lop_reflector_t, task));
}

/* The watch has bytes or has ended (any thread, the transport's I/O thread under its lock). */
static void notify_cb(void *ud)
{
    lop_reflector_t *r = ud;
    lop_dispatch_kick(&r->task);
}

/* Stop was asked: let go of the watch, tell lop_reflector_stop. */
static void async_stopped(lop_reflector_t *r)
{
    if (r->wcall) {
        r->lw.call_end(r->lw.ud, r->wcall);
        r->wcall = NULL;
    }
    lop_reflector_list_free(r->alist);
    r->alist = NULL;
    pthread_mutex_lock(&r->mu);
    r->dstopped = true;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
}

/* The asynchronous list is over (rc, err): 1 with *wait_ns for the next step, -1 when stopped. */
static int async_list_over(lop_reflector_t *r, lop_rc_t rc, const lop_err_t *err, int64_t *wait_ns)
{
    lop_reflector_list_free(r->alist);
    r->alist = NULL;
    return list_result(r, rc, err, wait_ns) == LOP_ECLOSED ? -1 : 1;
}

/* Start fetching the current page of the asynchronous list: 0 when it is in flight (r->wcall),
 * else as async_list_over (a page that could not start ends the list, or moves to the next
 * page as a failed fetch would). */
static int async_list_fetch(lop_reflector_t *r, int64_t *wait_ns)
{
    for (;;) {
        lop_err_t err;
        lop_err_clear(&err);
        void *call = NULL;
        lop_rc_t rc = r->lw.list_stream_start(r->lw.ud, lop_reflector_list_opts(r->alist), notify_cb, r, &call, &err);
        if (rc == LOP_OK) {
            r->wcall = call;
            return 0;
        }
        lop_rc_t out = LOP_OK;
        if (lop_reflector_list_page_done(r->alist, rc, false, &out, &err) == LOP_LIST_NEXT_PAGE) continue;
        return async_list_over(r, out, &err, wait_ns);
    }
}

/* The next step after wait_ns (the backoff), or at once. */
static void async_next(lop_reflector_t *r, int64_t wait_ns)
{
    r->next_at = wait_ns > 0 ? lop_clock_mono(r->clock) + wait_ns : 0;
    lop_dispatch_after(&r->task, wait_ns);
}

/* One turn on a dispatcher thread: pump the watch or list page in flight, or begin the next step
 * (what lop_reflector_step does, with each watch and page split at its start and its end). A
 * listwatch without list_stream_start lists whole within one turn. */
static void async_run(lop_dispatch_task_t *t)
{
    lop_reflector_t *r = of_task(t);
    if (r->dstopped) return;
    if (atomic_load(&r->stop)) {
        async_stopped(r);
        return;
    }
    int64_t wait = 0;
    lop_err_t err;
    lop_err_clear(&err);
    if (r->wcall) {
        lop_rc_t rc = LOP_OK;
        int64_t next = INT64_MAX;
        bool list = r->alist != NULL;
        bool ended = list ? r->lw.call_pump(r->lw.ud, r->wcall, lop_reflector_list_on_bytes, r->alist, &rc, &next, &err)
                          : r->lw.call_pump(r->lw.ud, r->wcall, on_bytes, r, &rc, &next, &err);
        if (!ended) {
            if (next != INT64_MAX) lop_dispatch_after(t, next);
            return;
        }
        r->lw.call_end(r->lw.ud, r->wcall);
        r->wcall = NULL;
        if (list) {
            lop_rc_t out = LOP_OK;
            int k = lop_reflector_list_page_done(r->alist, rc, false, &out, &err) == LOP_LIST_NEXT_PAGE
                        ? async_list_fetch(r, &wait)
                        : async_list_over(r, out, &err, &wait);
            if (k == 0)
                lop_dispatch_kick(t); /* the next page: its first pump sends it */
            else if (k < 0)
                async_stopped(r);
            else
                async_next(r, wait);
            return;
        }
        if (watch_end(r, rc, &err, &wait) == LOP_ECLOSED) {
            async_stopped(r);
            return;
        }
        async_next(r, wait);
        return;
    }
    int64_t now = lop_clock_mono(r->clock);
    if (r->next_at > now) { /* a kick that came during the backoff (a notify of the last watch) */
        lop_dispatch_after(t, r->next_at - now);
        return;
    }
    if (next_is_watch(r)) {
        if (r->need_list) watch_list_begin(r);
        lop_watch_opts_t o;
        watch_begin(r, &o);
        void *call = NULL;
        lop_rc_t rc = r->lw.watch_start(r->lw.ud, &o, notify_cb, r, &call, &err);
        if (rc == LOP_OK) {
            r->wcall = call;
            lop_dispatch_kick(t); /* the first pump sends it */
            return;
        }
        if (watch_end(r, rc, &err, &wait) == LOP_ECLOSED) {
            async_stopped(r);
            return;
        }
    } else if (r->lw.list_stream_start) { /* the list's pages pumped in turns as the watch's bytes */
        r->wl_fallback = false;
        r->alist = lop_reflector_list_begin(r);
        int k = async_list_fetch(r, &wait);
        if (k == 0) {
            lop_dispatch_kick(t);
            return;
        }
        if (k < 0) {
            async_stopped(r);
            return;
        }
    } else if (list_step(r, &wait) == LOP_ECLOSED) { /* a blocking list within this turn */
        async_stopped(r);
        return;
    }
    async_next(r, wait);
}

/* LUAOP_REFLECTOR_OWN_THREAD=1: every reflector on a thread of its own, as before the dispatcher
 * (to compare; see bench/README.md). */
static bool own_thread_forced(void)
{
    const char *v = getenv("LUAOP_REFLECTOR_OWN_THREAD");
    return v && strcmp(v, "1") == 0;
}

lop_rc_t lop_reflector_start(lop_reflector_t *r, lop_err_t *err)
{
    if (r->started) return lop_err_set(err, LOP_EINVAL, 0, NULL, "reflector %s already started", r->name);
    if (r->lw.watch_start && r->lw.call_pump && r->lw.call_end && !own_thread_forced()) {
        if (!r->disp) {
            r->disp = lop_dispatcher_acquire(r->clock, err);
            if (!r->disp) return LOP_ERR;
            r->disp_shared = true;
        }
        lop_dispatch_init(r->disp, &r->task, async_run);
        r->started = true;
        lop_dispatch_kick(&r->task);
        return LOP_OK;
    }
    r->disp = NULL; /* a blocking listwatch: its own thread */
    if (pthread_create(&r->th, NULL, run, r) != 0)
        return lop_err_set(err, LOP_ERR, 0, NULL, "reflector %s: cannot create its thread", r->name);
    r->started = true;
    return LOP_OK;
}

void lop_reflector_stop(lop_reflector_t *r)
{
    atomic_store(&r->stop, true);
    pthread_mutex_lock(&r->mu);
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mu);
    if (!r->started || r->joined) return;
    /* One cancel: it is sticky (listwatch.h), so the list or watch running now returns and one
     * the loop would start later returns before it sends, much as client-go's closed stop
     * channel ends a ListAndWatch for good. The REST listwatch's cancel wakes every exchange of
     * its shared client (lop_rest_client_wake) once; the waits below are for the loop's own
     * signal (the task's last turn, the thread's end), never a timed re-cancel that would wake
     * them again while the loop winds down. Not under mu: the wake kicks the task. */
    if (r->lw.cancel) r->lw.cancel(r->lw.ud);
    if (r->disp) {
        /* a turn running now runs once more after it (dispatcher.h) and sees stop */
        lop_dispatch_kick(&r->task);
        pthread_mutex_lock(&r->mu);
        while (!r->dstopped) pthread_cond_wait(&r->cond, &r->mu);
        pthread_mutex_unlock(&r->mu);
        lop_dispatch_detach(&r->task);
        if (r->disp_shared) {
            lop_dispatcher_release(r->disp);
            r->disp = NULL;
            r->disp_shared = false;
        }
        r->joined = true;
        return;
    }
    pthread_join(r->th, NULL); /* its backoff wait ended on the broadcast above, its call on the cancel */
    r->joined = true;
}
