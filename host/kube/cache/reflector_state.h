/* SPDX-License-Identifier: Apache-2.0 */
/* reflector_state.h — the reflector's state and the helpers that change it, shared by the watch loop
 * (reflector.c) and the list (reflector_list.c); the helpers are defined in reflector_state.c, which
 * calls neither of them. Not a public header. */
#ifndef LOP_KUBE_CACHE_REFLECTOR_STATE_H
#define LOP_KUBE_CACHE_REFLECTOR_STATE_H

#include "host/util/dispatcher.h"
#include "host/kube/cache/reflector.h"
#include "host/kube/cache/listdecoder.h"
#include "host/kube/cache/watchdecoder.h"

#include <pthread.h>
#include <stdatomic.h>

typedef enum watch_outcome {
    WO_NONE = 0,
    WO_GONE,        /* ERROR event with code 410 */
    WO_ERROR_EVENT, /* ERROR event, other code */
    WO_MALFORMED,   /* bad JSON or an event we cannot understand */
    WO_STOPPED,     /* stop requested */
} watch_outcome_t;

struct lop_reflector {
    char *name;
    lop_listwatch_t lw; /* a copy of the caller's; we own its ud */
    lop_store_t *store;
    const lop_clock_t *clock;
    lop_reflector_handlers_t h;
    pthread_mutex_t *dlock;           /* delivery lock, may be NULL */
    const lop_handler_batch_t *batch; /* may be NULL (reflector.h) */
    size_t replace_delivered;         /* changes delivered by the replace in progress (batching) */
    long page_size, idle_timeout_ms;
    size_t max_event_bytes;
    int obj_flags;
    char *api_version, *kind; /* config: the watched kind (metadata-only); NULL when none */
    uint64_t rng;

    pthread_mutex_t mu; /* guards last_rv, stats; and the stop condition */
    pthread_cond_t cond;
    char *last_rv; /* resume point; "" before the first list */
    lop_reflector_stats_t st;
    atomic_bool synced, stop;
    bool started, joined;
    pthread_t th;

    /* loop state (reflector thread only) */
    bool need_list, rv_unavailable, paginated_result;
    bool watch_list;       /* config: sync with watch-list instead of LIST */
    bool wl_disabled;      /* the server refused watch-list: LIST from now on */
    bool wl_fallback;      /* the last watch-list failed before its bookmark: LIST next */
    lop_store_t *wl_store; /* a watch-list's initial state until its bookmark; else NULL */
    bool wl_reuse;         /* the store had entries when that watch-list began */
    bool wl_unsupported;   /* that watch-list got an event its initial phase never carries */
    bool bo_used;
    int64_t bo_dur, bo_last;

    /* on the cache dispatcher (lop_reflector_start with an asynchronous listwatch) */
    lop_dispatcher_t *disp;           /* NULL: the reflector has a thread of its own (th) */
    bool disp_shared;                 /* disp was acquired (lop_dispatcher_acquire), released at stop */
    lop_dispatch_task_t task;         /* its turns on disp */
    void *wcall;                      /* the asynchronous watch or list page in flight, or NULL */
    struct lop_reflector_list *alist; /* the asynchronous list in progress (its page is wcall), or NULL */
    int64_t next_at;                  /* no step starts before this (the backoff), on the clock */
    bool dstopped;                    /* mu: the task saw stop and let go of its watch */

    /* current watch (reflector thread only) */
    char *wrv; /* the resourceVersion it started from */
    int64_t wstart;
    lop_watchdecoder_t *dec;
    lop_listdecoder_t *ldec; /* reused by every list */
    uint64_t watch_events;
    bool in_burst;
    watch_outcome_t outcome;
    lop_err_t werr;
};

/* Replace the store with objs and deliver the changes (under the delivery lock). */
void lop_reflector_replace(lop_reflector_t *r, lop_obj_t *const *objs, size_t n);
/* HasSynced becomes true; the first time, handlers.on_synced runs (under the delivery lock). */
void lop_reflector_mark_synced(lop_reflector_t *r);
/* The cached entry for a listed (or initially watched) object whose resourceVersion is the
 * cached one (a new reference), else NULL. item: the object's validated JSON bytes. */
lop_obj_t *lop_reflector_cached_same_rv(lop_reflector_t *r, const char *item, size_t len);
/* The resume point becomes rv (copied; NULL = ""), under r->mu. */
void lop_reflector_set_rv(lop_reflector_t *r, const char *rv);
/* The next number of the reflector's own generator (xorshift64*; the jitter and watch timeouts). */
uint64_t lop_reflector_rand(lop_reflector_t *r);

/* The apiVersion and kind objects are built with (lop_obj_new_item/_prefix; NULL = none): the
 * configured watched kind for a metadata-only reflector that has one, else the list's
 * (list_api/list_kind, "" when unknown or for a watch). */
static inline void lop_reflector_item_gvk(const lop_reflector_t *r, const char *list_api, const char *list_kind,
                                          const char **api, const char **kind)
{
    if (r->api_version && (r->obj_flags & LOP_OBJ_METADATA_ONLY)) {
        *api = r->api_version;
        *kind = r->kind;
        return;
    }
    *api = list_api && *list_api ? list_api : NULL;
    *kind = list_kind && *list_kind ? list_kind : NULL;
}

/* The handler batch bracket (reflector.h), when one is configured. */
static inline void lop_refl_batch_begin(const lop_reflector_t *r)
{
    if (r->batch) r->batch->begin();
}
static inline void lop_refl_batch_flush(const lop_reflector_t *r)
{
    if (r->batch) r->batch->flush();
}
static inline void lop_refl_batch_end(const lop_reflector_t *r)
{
    if (r->batch) r->batch->end();
}

#endif
