/* SPDX-License-Identifier: Apache-2.0 */
/*
 * manager.h — runs the controllers of a script set (controller-runtime's Manager):
 *
 *   install(set)  validate the set (scriptrt), then (re)build the wiring: one shared informer per
 *                 watched GVR + namespace + selector, reference-counted by the controllers' watches;
 *                 one controller (queue + workers) per declaration; event handlers that run the
 *                 predicates (native, or Lua through the event VM) and map events to reconcile
 *                 requests (self / controller owner / Lua map function).
 *                 A reload keeps controllers (and their queues) whose name survives, starts and
 *                 stops informers as watches come and go, and requeues every primary object once.
 *   start         start informers and workers. A controller's workers take no request before
 *                 every informer it watches has synced (controller-runtime's WaitForSync); those
 *                 of leader-elected controllers also wait at the leader gate. A watch that a
 *                 reload adds to a running controller does not stop its workers (as a Watch
 *                 added after Start): reads of that kind are live until its informer syncs.
 *   stop          stop intake, drain in-flight reconciles, stop informers.
 *
 * It also implements lop_host_api_t for the scripts (cache reads, REST requests, Events).
 *
 * Thread-safety: install/start/stop/free from one owner thread; synced/host_api from any thread.
 */
#ifndef LOP_RUNTIME_MANAGER_H
#define LOP_RUNTIME_MANAGER_H

#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"
#include "host/runtime/engine.h"
#include "host/runtime/gate.h"
#include "host/runtime/metrics/metrics_std.h"
#include "host/runtime/recorder.h"
#include "host/runtime/scriptrt.h"
#include "host/util/buf.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct lop_manager lop_manager_t;

typedef struct lop_manager_config {
    lop_rest_client_t *rest;    /* borrowed */
    lop_restmapper_t *mapper;   /* borrowed */
    const lop_engine_t *engine; /* borrowed */
    lop_engine_opts_t engine_opts;
    /* Watch only these namespaces: "a" or a comma-separated list "a,b" (controller-runtime's
     * cache.Options.DefaultNamespaces); NULL or "" = all; copied. Namespaced kinds watched without
     * a namespace of their own get one informer per namespace of the list; cache reads of
     * another namespace of such a kind answer LOP_EINVAL naming the list (hostapi.c). */
    const char *namespace_;
    const lop_clock_t *clock; /* NULL = system */
    lop_gate_t *leader_gate;  /* NULL = no leader election; borrowed */
    /* With leader election: asked right before every write of a leader-elected controller, on
     * top of the gate: how long (ns) this replica may still write as the leader, <= 0 = not
     * leading (the elector judges by its own clock, so a leader that stalled past its renew
     * deadline stops writing even before its callbacks close the gate). The write must leave by
     * that time (lop_rest_req_t.send_by_ns, checked right before libcurl sends it), so a write
     * that a stall held between this check and the wire is dropped (NotLeader) rather than sent
     * once another replica may hold the lease; its answer may arrive later and is taken (lease-
     * based election has no fencing on the server: this narrows the window to the request's own
     * time on the wire).
     * NULL = gate only. */
    int64_t (*leading_left_ns)(void *ud);
    void *leading_left_ud;
    const char *identity;       /* this replica's identity; copied */
    const char *component;      /* Event source component (default "luaop"); copied */
    lop_metrics_std_t *metrics; /* standard metric families to feed; NULL = none; borrowed */
    bool watch_list;            /* informers sync by watch-list (lop_reflector_config_t.watch_list) */
    /* Called once per informer when it first syncs, on that informer's thread, so a caller
     * waiting for lop_manager_synced can wake instead of polling; must not block. NULL = none. */
    void (*on_informer_synced)(void *ud);
    void *on_informer_synced_ud;
} lop_manager_config_t;

typedef struct lop_manager_stats {
    size_t controllers;
    size_t informers;
    uint64_t reconciles, errors;
    uint64_t reloads_ok, reloads_failed;
} lop_manager_stats_t;

LOP_MUST_CHECK lop_rc_t lop_manager_new(const lop_manager_config_t *cfg, lop_manager_t **out, lop_err_t *err);
/* Validate and install a script set (first load or reload). Takes ownership of set on LOP_OK;
 * on failure nothing changes (the caller keeps set) and err names file:line. */
LOP_MUST_CHECK lop_rc_t lop_manager_install(lop_manager_t *m, lop_script_set_t *set, lop_err_t *err);
LOP_MUST_CHECK lop_rc_t lop_manager_start(lop_manager_t *m, lop_err_t *err);
/* True once every informer has synced. */
bool lop_manager_synced(lop_manager_t *m);
/* The informers that have not synced yet: their keys (as logged by "starting informer"),
 * separated by ", ", into buf (truncated to len - 1 bytes, NUL-terminated). Returns how many. */
size_t lop_manager_unsynced(lop_manager_t *m, char *buf, size_t len);
/* Sum of queue depths + in-flight reconciles (for `luaop dev --once` and tests). */
size_t lop_manager_pending(lop_manager_t *m);
/* The keys, over every controller, whose last reconcile was an error or a terminal error: their
 * number; out (may be NULL) gets one line per key (lop_controller_failing). For `luaop dev --once`. */
size_t lop_manager_failing(lop_manager_t *m, lop_buf_t *out);
/*
 * Stop intake (informers, then every queue at once) and wait up to grace_ns (<= 0 = without
 * bound) for the in-flight reconciles of all controllers. Returns 0 when they all finished and
 * the workers were joined; otherwise the number of reconciles abandoned (each logged by its
 * controller). After an abandoning stop the workers keep running: lop_manager_free then frees
 * nothing (deliberately), and the caller must keep the REST client, engine and metrics alive
 * and exit the process.
 */
size_t lop_manager_stop(lop_manager_t *m, int64_t grace_ns);
void lop_manager_free(lop_manager_t *m);
void lop_manager_stats(lop_manager_t *m, lop_manager_stats_t *out);
/*
 * Liveness of the workers (healthz "workers"): false when some controller has had a reconcile
 * running longer than its deadline (declaration's reconcile_timeout, else the engine default)
 * plus a grace of min(deadline, max_grace_ns) — the deadline hook should have ended it, so the worker is stuck (e.g. in a host
 * call that does not return). reason gets "controller <name>: a reconcile has run 95.0s
 * (deadline 60s + grace 30s)". Controllers without a deadline are never reported. Also false
 * when a Lua predicate or map function has held its controller's event VM past the predicate
 * deadline plus max(deadline, 1 s) (capped by max_grace_ns): lop_scriptrt_event_check_stuck.
 * Any thread.
 */
bool lop_manager_check_stuck(lop_manager_t *m, int64_t max_grace_ns, char *reason, size_t len);

/* The active script version ("" before the first install). */
void lop_manager_version(lop_manager_t *m, char *buf, size_t len);
/* The manager's Event recorder (borrowed; lives as long as m; lop_recorder_record is safe from
 * any thread). For Events the process records about things other than reconciled objects (e.g. a
 * script reload about its ConfigMap). */
lop_recorder_t *lop_manager_recorder(lop_manager_t *m);
/* The script runtime the manager installs sets into (borrowed; lives as long as m): for VMs
 * outside the controllers' workers, such as the webhook server's pool (cmd/webhooks.h). */
lop_scriptrt_t *lop_manager_scriptrt(lop_manager_t *m);

#endif
