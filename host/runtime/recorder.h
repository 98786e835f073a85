/* SPDX-License-Identifier: Apache-2.0 */
/*
 * recorder.h — the Event recorder (client-go tools/record/event.go, events_cache.go): writes
 * core/v1 Events about objects so `kubectl describe` shows them.
 *
 *  - name "<involvedObject.name>.<hex unix-nanos>", namespace = the object's ("default" for
 *    cluster-scoped objects), source {component, host}, reportingComponent/Instance copied;
 *  - aggregation: a repeat of an identical event (same object uid, type, reason, message) within
 *    10 minutes is sent as a merge PATCH bumping count and lastTimestamp instead of a new object;
 *    if that PATCH answers 404 the event is created again;
 *  - a per-object token bucket (burst 25, one token per 5 minutes) drops floods.
 * Writes happen on the calling thread (a reconcile), through the shared REST client.
 *
 * Thread-safety: lop_recorder_record from any thread (one mutex around the cache).
 */
#ifndef LOP_RUNTIME_RECORDER_H
#define LOP_RUNTIME_RECORDER_H

#include "host/kube/client/rest.h"
#include "host/util/clock.h"

typedef struct lop_recorder lop_recorder_t;

/* rest and clock are borrowed; component (e.g. "luaop") and host (the replica identity) copied. */
lop_recorder_t *lop_recorder_new(lop_rest_client_t *rest, const char *component, const char *host,
                                 const lop_clock_t *clock);
void lop_recorder_free(lop_recorder_t *r);

/* Record an event about obj (its JSON: apiVersion, kind, metadata.{namespace,name,uid,
 * resourceVersion} are used). type: "Normal" or "Warning"; reason: UpperCamelCase.
 * Returns LOP_OK (also when rate-limited: dropped events are logged at debug), or the REST error. */
LOP_MUST_CHECK lop_rc_t lop_recorder_record(lop_recorder_t *r, const char *obj_json, size_t len, const char *type,
                                            const char *reason, const char *message, lop_err_t *err);

#endif
