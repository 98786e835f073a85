/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_watch.h — WATCH streams (k8s.io/apiserver/pkg/endpoints/handlers/watch.go): each watcher
 * holds its request open and is sent one JSON line per event, bookmarks and a final ERROR when
 * its start is too old.
 *
 * Watchers are owned by the collection they watch and freed when their stream ends. Loop
 * thread only.
 */
#ifndef LOP_APISERVER_AS_WATCH_H
#define LOP_APISERVER_AS_WATCH_H

#include "apiserver/as_internal.h"

/* Serve GET ...?watch=true: replies 400/410 for bad options, else starts a chunked stream. */
void as_handle_watch(as_req_t *q);
/* Deliver a committed event to the watchers of its collection (selector transitions included). */
void as_watch_dispatch(lop_apiserver_t *srv, as_event_t *ev);
/* End every watch stream cleanly. */
void as_watch_close_all(lop_apiserver_t *srv);
/* End the watches served through res (before res is removed from the registry). */
void as_watch_close_res(lop_apiserver_t *srv, as_res_t *res);
/* Stall (queue every event, send nothing) or resume (flush the queues) all watch streams. */
void as_watch_set_stall(lop_apiserver_t *srv, bool stall);
/* Send a BOOKMARK now to every watch that allows bookmarks. */
void as_watch_bookmark_all(lop_apiserver_t *srv);

#endif
