/* SPDX-License-Identifier: Apache-2.0 */
/*
 * operator.h — the process around a manager, shared by `luaop run` and `luaop dev`:
 * start-up order (metrics/probes server → scripts → informers → wait for sync → leader election
 * → workers), script reloads (--scripts DIR via inotify, --scripts-configmap NS/NAME via an informer;
 * cmd/scriptsource.h, docs/reload.md), signals and graceful shutdown.
 *
 * Runs on the calling (main) thread until SIGTERM/SIGINT; returns the process exit status:
 * 0 after a graceful shutdown, 1 on a start-up error or a lost lease. Two cases end the process
 * from inside (docs/execution-model.md "Shutdown"): reconciles still running when
 * --graceful-shutdown-timeout expires (logged, Lease released, _exit(1)); a second signal during
 * the shutdown (_exit(128 + signal): 143 for SIGTERM, 130 for SIGINT).
 * Probes: healthz "event-loop" (this loop's heartbeat) and "workers" (stuck reconciles);
 * readyz "scripts" and "informers-synced". The REST client's per-attempt observer feeds the
 * rest_client_* metrics.
 */
#ifndef LOP_CMD_OPERATOR_H
#define LOP_CMD_OPERATOR_H

#include "host/kube/client/kubeconfig.h"
#include "host/runtime/options.h"

struct lop_manager;

/* Called once the operator is ready (informers synced) and then every ~100 ms; return non-zero
 * to stop the operator (exit status 0). May be NULL. */
typedef int (*lop_operator_poll_fn)(void *ud, struct lop_manager *m);

/* cfg's contents move into the REST client. */
int lop_operator_main(const lop_run_opts_t *o, lop_rest_config_t *cfg, lop_operator_poll_fn poll, void *poll_ud);

/* Block SIGTERM/SIGINT/SIGHUP in the calling thread (call first thing in main, before any thread
 * starts, so every thread inherits the mask and the main thread can sigtimedwait for them). */
void lop_operator_block_signals(void);

#endif
