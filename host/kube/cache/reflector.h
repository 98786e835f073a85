/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reflector.h — keeps a store in sync with the API server for one listwatch, with client-go's
 * reflector semantics (tools/cache/reflector.go; api-concepts#efficient-detection-of-changes):
 *
 *  - LIST in pages (limit 500, continue tokens; a 410 on a continue page falls back to one full
 *    list at the original resourceVersion, as client-go's pager does). The first list asks for
 *    RV "0"; after a 410 on list (or "too large RV") it asks for RV unset (a consistent read).
 *    The list replaces the store: objects gone from it are delivered as deletes with
 *    is_tombstone = true (deleted while we were not watching).
 *  - Unlike client-go, a page is decoded while it streams in (listdecoder.h; when the listwatch
 *    has list_stream): objects are built as their bytes arrive and the page body is never held
 *    whole. On a relist, a listed object whose resourceVersion equals the cached entry's keeps
 *    that entry (same bytes, same lop_obj_t: on_update then gets old == new), so the old and the
 *    new cache are resident together only for objects that changed. (Equal resourceVersion is
 *    taken as equal content, which holds for every etcd-backed resource; an aggregated API that
 *    serves a constant resourceVersion would keep its first cached bytes until they change.)
 *  - Watch events: the envelope's members are walked without validating the ones not read; the
 *    type and the object are validated (the object by the pass that builds it).
 *  - WATCH from the list's RV with allowWatchBookmarks and timeoutSeconds random in [300, 600).
 *    Every event's object RV (and every bookmark's) becomes the resume point, except RVs seen
 *    during the initial ADDED burst of a watch started without an RV.
 *  - A clean end of stream re-watches from the resume point at once. A watch that ends in under
 *    1 s with no events ("very short watch"), a transport error, an ERROR event whose code is not
 *    410, malformed JSON on the stream or an idle stream (watchdog: idle_timeout_ms passed to the
 *    listwatch) → back off, then re-watch from the resume point. HTTP 410 on the watch or an
 *    ERROR event with code 410 in a 200 stream → back off, then relist.
 *  - Backoff: 800 ms, ×2 per failure, jitter 1.0 (each wait is in [d, 2d)), cap 30 s, reset to
 *    800 ms when no failure happened for 2 minutes.
 *
 * Delivery: every change is applied to the store first, then to the handlers (on the thread
 * running the reflector — its own or a dispatcher thread, one call at a time — in stream order): ADDED/MODIFIED → on_add, or on_update(old, new) when the
 * key was cached; DELETED → on_delete(last state, false); relist → adds/updates for listed
 * objects, then on_delete(last known state, true) for vanished ones. Objects passed to handlers
 * are borrowed for the call (lop_obj_ref to keep one). HasSynced turns true after the first list
 * has been delivered.
 *
 * Threads: when the listwatch has the asynchronous watch (listwatch.h watch_start; the REST
 * listwatch has it) lop_reflector_start runs the loop as a task of the cache dispatcher
 * (dispatcher.h): a watch costs no thread, its bytes are pumped in turns on one of the
 * dispatcher's few threads when the transport's I/O thread says they arrived, and the backoff
 * waits are the dispatcher's timers on the reflector's clock; LIST pages too when the listwatch
 * has list_stream_start (else a list runs whole within one turn, occupying one dispatcher
 * thread while it lasts). Otherwise
 * (the tests' blocking fakes, or LUAOP_REFLECTOR_OWN_THREAD=1 in the environment) the loop runs
 * on a thread of its own. Handlers run on whichever of those threads delivers, one call at a
 * time per reflector, and must not stop a reflector of the same dispatcher. lop_reflector_stop
 * cancels the listwatch once (the cancel is sticky, listwatch.h) and waits, without polling, until
 * the loop has let go of it (its last turn, or its thread's end). Without start, a test drives it
 * with lop_reflector_step (synchronous, one
 * list or one watch per call, returning the wait the loop would make, never sleeping).
 * lop_reflector_has_synced/last_rv/stats are safe from any thread.
 */
#ifndef LOP_KUBE_CACHE_REFLECTOR_H
#define LOP_KUBE_CACHE_REFLECTOR_H

#include "host/kube/cache/listwatch.h"
#include "host/kube/cache/object.h"
#include "host/kube/cache/store.h"
#include "host/util/clock.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct lop_reflector lop_reflector_t;

/*
 * An optional bracket around a burst of handler calls: the events of one read of the watch
 * stream, a relist's replace, an informer's replay of its store to a new handler. The cache calls
 * it and knows nothing of what it does; host/runtime/manager.c binds it to the workqueue's
 * thread-local batching, so the requests the handlers enqueue for a burst are queued under one
 * lock with one wake-up. begin/end pairs nest and
 * run on the delivering thread; flush (inside a bracket) publishes what is held so far without
 * closing it (a long relist lets the workers start on its first steps). All three are set, or
 * the pointer to the struct is NULL (no bracket). The struct is borrowed and must outlive every
 * reflector or informer given it (a static const is usual).
 */
typedef struct lop_handler_batch {
    void (*begin)(void);
    void (*flush)(void);
    void (*end)(void);
} lop_handler_batch_t;

typedef struct lop_reflector_handlers {
    void (*on_add)(void *ud, lop_obj_t *obj);
    void (*on_update)(void *ud, lop_obj_t *old, lop_obj_t *new_);
    /* is_tombstone: the object vanished while we were not watching (seen missing on a relist);
     * obj is the last state we knew. */
    void (*on_delete)(void *ud, lop_obj_t *obj, bool is_tombstone);
    void *ud;
    /* Once, right after the first full list (or watch-list) has been delivered to the store and
     * to the calls above, on the same thread, before any later event: from then on HasSynced is
     * true. Through an informer, a handler registered after that is called right after its
     * replay (client-go's ResourceEventHandlerRegistration.HasSynced). May be NULL. */
    void (*on_synced)(void *ud);
} lop_reflector_handlers_t;

typedef struct lop_reflector_config {
    const char *name;                  /* for logs (e.g. "apps/v1/deployments"); copied */
    const lop_listwatch_t *lw;         /* copied; its ud becomes the reflector's: lw->free(ud) runs in
                                * lop_reflector_free (also when new fails) */
    lop_store_t *store;                /* borrowed; must outlive the reflector */
    const lop_clock_t *clock;          /* borrowed; NULL = system clock */
    lop_reflector_handlers_t handlers; /* any callback may be NULL */
    long page_size;                    /* 0 = 500 */
    int obj_flags;                     /* lop_obj_new flags (e.g. LOP_OBJ_KEEP_MANAGED_FIELDS) */
    /* The watched kind (e.g. "apps/v1" and "Deployment"; copied; NULL or "" = none). Used with
     * LOP_OBJ_METADATA_ONLY only: every list item and watch object is built with it (object.h),
     * so the PartialObjectMetadata objects a metadata-only LIST/WATCH returns
     * (lop_rest_listwatch_new_metadata) are cached as this kind, and list items without a kind
     * get it rather than the list's. Without it they keep meta.k8s.io's apiVersion and kind. */
    const char *api_version, *kind;
    size_t max_event_bytes; /* largest watch event or list item accepted; 0 = 64 MiB */
    long idle_timeout_ms;   /* watchdog; 0 = the watch's timeoutSeconds + 30 s; <0 = off */
    uint64_t seed;          /* jitter/timeout randomness; 0 = seeded from the clock */
    /* Optional (borrowed): held while a change is applied to the store and delivered to the
     * handlers (a whole relist is one change), so that others can take a consistent snapshot of
     * store + delivered events (the informer's add-handler replay does). */
    pthread_mutex_t *delivery_lock;
    const lop_handler_batch_t *batch; /* optional bracket around bursts of handler calls (above) */
    /* client-go's WatchListClient: sync with one watch carrying
     * sendInitialEvents=true&resourceVersionMatch=NotOlderThan instead of LIST. The initial
     * ADDED events are held aside until the k8s.io/initial-events-end bookmark, then replace the
     * store exactly as a list would (tombstones included) and the same stream goes on as the
     * watch. A stream that ends or fails before the bookmark falls back to one LIST at once (and
     * the next sync tries watch-list again, as client-go does); a server that refuses it (422)
     * or ignores it (a MODIFIED, DELETED or plain BOOKMARK before the annotated
     * bookmark: a plain watch) is not asked again by this reflector. */
    bool watch_list;
    /* Where a started reflector runs when its listwatch has the asynchronous watch
     * (listwatch.h watch_start): this dispatcher (borrowed, on the reflector's clock, must
     * outlive it), or NULL for the process's shared one for the clock (lop_dispatcher_acquire). */
    struct lop_dispatcher *dispatcher;
} lop_reflector_config_t;

typedef struct lop_reflector_stats {
    uint64_t lists, list_pages, list_fallbacks; /* fallbacks: full list after a 410 on a page */
    uint64_t watches, events, bookmarks;
    uint64_t relists_410;          /* relists caused by 410 (HTTP or ERROR event) */
    uint64_t watch_errors;         /* backoffs taken */
    uint64_t malformed;            /* watch streams restarted for bad JSON */
    uint64_t list_reused;          /* listed objects whose cached entry (same resourceVersion) was kept */
    uint64_t watch_lists;          /* syncs completed by watch-list (its bookmark seen) */
    uint64_t watch_list_fallbacks; /* watch-lists that failed before the bookmark (then LIST) */
    int64_t last_backoff_ns;
} lop_reflector_stats_t;

/* Syncs of the store from the API: lists started plus watch-lists completed (a watch-list that
 * fell back is counted by the list that followed it). luaop_relists_total is this minus one. */
static inline uint64_t lop_reflector_stats_syncs(const lop_reflector_stats_t *s) { return s->lists + s->watch_lists; }

/* Returns NULL (err filled, lw freed) when lw or store is missing. */
lop_reflector_t *lop_reflector_new(const lop_reflector_config_t *cfg, lop_err_t *err);
/* Stops (if running) and frees, including the listwatch. NULL accepted. */
void lop_reflector_free(lop_reflector_t *r);

/* Start the loop on a new thread. LOP_EINVAL if already started. */
LOP_MUST_CHECK lop_rc_t lop_reflector_start(lop_reflector_t *r, lop_err_t *err);
/* Ask the loop to stop, cancel the running list/watch and join the thread. Idempotent. */
void lop_reflector_stop(lop_reflector_t *r);

/*
 * Run one list (when a list is due) or one watch, synchronously, on the caller's thread.
 * *wait_ns receives the backoff the loop would wait before the next step (0 = go on at once).
 * Returns LOP_OK, or LOP_ECLOSED once stop was requested. Not to be mixed with start.
 */
LOP_MUST_CHECK lop_rc_t lop_reflector_step(lop_reflector_t *r, int64_t *wait_ns);

bool lop_reflector_has_synced(lop_reflector_t *r);
/* The resume point (last synced resourceVersion), copied into buf; "" before the first list. */
void lop_reflector_last_rv(lop_reflector_t *r, char *buf, size_t len);
void lop_reflector_stats(lop_reflector_t *r, lop_reflector_stats_t *out);

#endif
