/* SPDX-License-Identifier: Apache-2.0 */
/*
 * listwatch.h — what a reflector needs from the API: LIST one page, and WATCH as a byte stream.
 * The REST client implements it for a resource (lop_rest_listwatch_new in rest.h); tests
 * implement it with fakes that lie, drop and stall. Mirrors client-go's cache.ListerWatcher.
 *
 * Thread-safety: list/watch are called from the reflector's thread only; cancel may be called
 * from any thread while a watch or list is running and makes it return LOP_ECLOSED promptly.
 * cancel is sticky: once called, every list and watch of the listwatch (running or started
 * later) returns LOP_ECLOSED, so a stopping reflector calls it once (client-go's stop channel,
 * closed once, does the same for a ListAndWatch).
 * The asynchronous calls (watch_start, list_stream_start, call_pump, call_end) are made from one
 * thread at a time (a dispatcher thread, dispatcher.h); their notify runs on any thread.
 */
#ifndef LOP_KUBE_CACHE_LISTWATCH_H
#define LOP_KUBE_CACHE_LISTWATCH_H

#include "host/kube/client/rest.h"
#include "host/util/buf.h"
#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lop_list_opts {
    const char *resource_version;       /* NULL = unset (consistent read); "0" = any */
    const char *resource_version_match; /* NULL, "NotOlderThan", "Exact" */
    long limit;                         /* 0 = no limit */
    const char *continue_token;         /* NULL on the first page */
} lop_list_opts_t;

typedef struct lop_watch_opts {
    const char *resource_version; /* where to start; NULL/"" = get state and start at most recent */
    bool allow_bookmarks;
    long timeout_seconds;     /* server-side timeout; 0 = none */
    bool send_initial_events; /* watch-list; implies resourceVersionMatch=NotOlderThan */
    long idle_timeout_ms;     /* client-side: abort when no byte arrives for this long; 0 = off */
} lop_watch_opts_t;

/* lop_stream_fn (the watch stream's bytes as they arrive): host/kube/client/rest.h. */

typedef struct lop_listwatch {
    void *ud;
    /* One LIST request (one page). LOP_OK: body holds the list JSON. Errors: rc from the HTTP
     * status (LOP_EGONE for 410, ...) with err filled from the Status body. */
    lop_rc_t (*list)(void *ud, const lop_list_opts_t *opts, lop_buf_t *body, lop_err_t *err);
    /* Run one WATCH until the server ends the stream (LOP_OK), the callback stops it or cancel()
     * is called (LOP_ECLOSED), or it fails (HTTP error: rc from the status, e.g. LOP_EGONE for a
     * plain 410; transport error or idle timeout: LOP_EAGAIN / LOP_ETIMEDOUT). */
    lop_rc_t (*watch)(void *ud, const lop_watch_opts_t *opts, lop_stream_fn fn, void *fn_ud, lop_err_t *err);
    void (*cancel)(void *ud);
    void (*free)(void *ud);
    /* Optional: one LIST page streamed. On 2xx the body's bytes are passed to fn as they arrive
     * (as for watch) instead of being collected, so the consumer never holds a whole page;
     * returns LOP_OK once the body has ended, LOP_ECLOSED when fn stopped it or cancel() was
     * called, otherwise the rc and err list would give (an error body is never passed to fn).
     * A failure after some bytes were passed is not retried here: the consumer starts over.
     * NULL: the reflector uses list. */
    lop_rc_t (*list_stream)(void *ud, const lop_list_opts_t *opts, lop_stream_fn fn, void *fn_ud, lop_err_t *err);

    /*
     * Optional: the same WATCH and streamed LIST page without blocking a thread for them
     * (watch_start, call_pump and call_end all set, list_stream_start optional). With them a
     * started reflector runs on the cache dispatcher (dispatcher.h) instead of a thread of its
     * own; without them (the tests' fakes) it keeps its own thread.
     *  - watch_start begins the watch, list_stream_start one LIST page streamed (as list_stream),
     *    and return at once: LOP_OK with *call (opaque), or the rc watch / list_stream would have
     *    returned (err filled) and *call NULL.
     *  - notify(notify_ud) is called from any thread (the transport's I/O thread) whenever the
     *    call has something for call_pump: bytes, its end, a wait that is over. It must be quick
     *    and must not call back into the listwatch (a reflector queues itself on the dispatcher).
     *  - call_pump passes the bytes that arrived to fn (on the calling thread; fn's return as for
     *    watch: non-zero ends the call, LOP_ECLOSED) and returns false while the call goes on,
     *    with *next_ns the longest the caller may wait before pumping again without a notify (ns
     *    on the listwatch's clock, which must be the reflector's; INT64_MAX = only on notify);
     *    true once it ended, with *rc and err as watch / list_stream return them. Bytes waiting
     *    for a pump are bounded by the implementation, which stops reading (pauses the transfer)
     *    until they are pumped.
     *  - call_end ends the call (cancelling it if it goes on) and frees it; no notify runs after
     *    it returns. cancel() is not needed for asynchronous calls.
     */
    lop_rc_t (*watch_start)(void *ud, const lop_watch_opts_t *opts, void (*notify)(void *), void *notify_ud,
                            void **call, lop_err_t *err);
    bool (*call_pump)(void *ud, void *call, lop_stream_fn fn, void *fn_ud, lop_rc_t *rc, int64_t *next_ns,
                      lop_err_t *err);
    void (*call_end)(void *ud, void *call);
    lop_rc_t (*list_stream_start)(void *ud, const lop_list_opts_t *opts, void (*notify)(void *), void *notify_ud,
                                  void **call, lop_err_t *err);
} lop_listwatch_t;

#endif
