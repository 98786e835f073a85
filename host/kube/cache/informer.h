/* SPDX-License-Identifier: Apache-2.0 */
/*
 * informer.h — a shared informer (client-go tools/cache SharedIndexInformer): one reflector
 * keeping one store in sync for one listwatch, fanning every change out to any number of
 * registered handlers.
 *
 * Handlers: called on the informer's (reflector's) thread, one event at a time, in stream order,
 * each event to every handler in registration order. Objects are borrowed for the call
 * (lop_obj_ref to keep one). A handler registered after start first receives an add for every
 * object already in the store (client-go's replay), on the registering thread, under the
 * delivery lock: no live event is delivered to anyone meanwhile, and the handler then sees
 * every later change exactly once. The replay is one burst for the configured handler batch
 * (lop_handler_batch_t, reflector.h; the runtime binds it so the requests enqueued during the replay
 * reach the workers together). Handlers must not block for long (they hold up the watch)
 * and must not call add_handler/remove_handler/stop from inside a callback (deadlock).
 *
 * HasSynced: true once the first full list has been delivered to the store and handlers. Each
 * handler's on_synced runs once: when that happens, or, for a handler registered later, right
 * after its replay (on the registering thread, under the delivery lock).
 *
 * Thread-safety: add/remove_handler, has_synced, store and stats are safe from any thread;
 * start/stop/free from one owner thread.
 */
#ifndef LOP_KUBE_CACHE_INFORMER_H
#define LOP_KUBE_CACHE_INFORMER_H

#include "host/kube/cache/reflector.h"

typedef struct lop_informer lop_informer_t;

typedef struct lop_informer_config {
    const char *name;                 /* for logs; copied */
    const lop_listwatch_t *lw;        /* copied; its ud becomes the informer's (lw->free(ud) runs in
                                * lop_informer_free). For lop_rest_listwatch_new's result: pass
                                * it, then free() the struct only (not lop_rest_listwatch_free). */
    const lop_clock_t *clock;         /* borrowed; NULL = system clock */
    int obj_flags;                    /* lop_obj_new flags */
    const char *api_version, *kind;   /* the watched kind, for LOP_OBJ_METADATA_ONLY; see
                                     * lop_reflector_config_t (copied; may be NULL) */
    long page_size;                   /* 0 = 500 */
    long idle_timeout_ms;             /* see lop_reflector_config_t */
    uint64_t seed;                    /* 0 = random */
    bool watch_list;                  /* sync by watch-list; see lop_reflector_config_t */
    const lop_handler_batch_t *batch; /* optional; brackets the reflector's bursts and the replay
                                       * of the store to a new handler (reflector.h) */
} lop_informer_config_t;

/* NULL with err set (and lw freed) on a bad configuration. */
lop_informer_t *lop_informer_new(const lop_informer_config_t *cfg, lop_err_t *err);
/* Stops (if running) and frees the informer, its store and its listwatch. NULL accepted. */
void lop_informer_free(lop_informer_t *inf);

/* Register a handler (copied). Returns its id (> 0) for remove_handler. See the header comment
 * for the replay of existing objects. */
int lop_informer_add_handler(lop_informer_t *inf, const lop_reflector_handlers_t *h);
/* Unregister; after it returns the handler is never called again. Unknown ids are ignored. */
void lop_informer_remove_handler(lop_informer_t *inf, int id);

LOP_MUST_CHECK lop_rc_t lop_informer_start(lop_informer_t *inf, lop_err_t *err);
void lop_informer_stop(lop_informer_t *inf);
/* One synchronous reflector step (tests; see lop_reflector_step). */
LOP_MUST_CHECK lop_rc_t lop_informer_step(lop_informer_t *inf, int64_t *wait_ns);

bool lop_informer_has_synced(lop_informer_t *inf);
/* The informer's store (borrowed, lives as long as the informer; read-only for callers). */
lop_store_t *lop_informer_store(lop_informer_t *inf);
lop_reflector_t *lop_informer_reflector(lop_informer_t *inf);

#endif
