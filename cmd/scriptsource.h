/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scriptsource.h — where `luaop run` gets its script set from, and the hot reload around it.
 *
 * A script source watches one origin and hands out candidate script sets:
 *   - a directory (--scripts DIR): inotify on DIR and every subdirectory below it (subdirectories
 *     created later are picked up on the next change; hidden entries are ignored except that a
 *     mounted ConfigMap's "..data" symlink swap shows up as a change of DIR itself);
 *   - a ConfigMap (--scripts-configmap NS/NAME): its own informer on that one object
 *     (fieldSelector metadata.name=NAME in NS); every data/binaryData key ending in ".lua" is a
 *     file of the set (scripts.h).
 * Changes are debounced (a candidate is produced once the origin has been quiet for the debounce
 * interval; the first one at once), and a candidate whose content hash equals the previous
 * candidate's is not produced again: nothing happens while the content is unchanged.
 *
 * The reloader installs candidates through the manager and reports the outcome: log lines
 * (file:line and traceback on failure), Events on the ConfigMap (Normal ScriptsReloaded /
 * Warning ScriptReloadFailed; directory sources log only), the metric
 * luaop_script_failed_version{version} (1 for the last rejected content hash; the active one is
 * luaop_script_active_version, kept by the manager), and /readyz: the check "scripts" fails until
 * a set is active (reason: what it is waiting for) and then stays passing; the informational
 * checks "scripts-active-<version>" and "scripts-last-failed-<version>" always pass and name the
 * versions in /readyz?verbose.
 *
 * Ownership: each object is created and freed by its owner. Candidate sets are the caller's.
 * Thread-safety: sources and reloaders are driven from one owner thread (the operator's main
 * loop); their informer thread and the probe server's thread only touch state under a mutex.
 */
#ifndef LOP_CMD_SCRIPTSOURCE_H
#define LOP_CMD_SCRIPTSOURCE_H

#include "host/kube/client/rest.h"
#include "host/kube/client/restmapper.h"
#include "host/runtime/health.h"
#include "host/runtime/metrics/metrics.h"
#include "host/runtime/scripts.h"

#include <stdbool.h>

struct lop_manager;

typedef struct lop_script_source lop_script_source_t;

typedef struct lop_script_source_config {
    const char *dir;          /* a directory, or */
    const char *configmap;    /* "NAMESPACE/NAME" (exactly one of the two) */
    lop_rest_client_t *rest;  /* for configmap sources; borrowed */
    lop_restmapper_t *mapper; /* for configmap sources; borrowed */
    int64_t debounce_ns;      /* quiet time before a change is loaded; 0 = the environment's
                               * LUAOP_SCRIPTS_DEBOUNCE_MS (milliseconds, 0..60000) or 10 ms */
    const lop_clock_t *clock; /* NULL = system */
} lop_script_source_config_t;

/* Create and start watching. Errors: LOP_EINVAL (neither or both origins, malformed NS/NAME,
 * inotify unavailable for the directory), LOP_ERR/REST errors (ConfigMap kind not resolvable,
 * informer start). A missing ConfigMap is not an error: the source waits for it. */
LOP_MUST_CHECK lop_rc_t lop_script_source_new(const lop_script_source_config_t *cfg, lop_script_source_t **out,
                                              lop_err_t *err);
/* Stops watching (the informer stops) and frees. NULL accepted. */
void lop_script_source_free(lop_script_source_t *s);

/* "dir DIR" or "configmap NS/NAME" (borrowed). */
const char *lop_script_source_name(const lop_script_source_t *s);
bool lop_script_source_is_configmap(const lop_script_source_t *s);

/*
 * Look for a new candidate. Returns
 *   LOP_OK        *out is a new set (caller owns it): the content changed since the last one;
 *   LOP_EAGAIN    nothing new (no change, still debouncing, or the same content hash);
 *   LOP_ENOTFOUND the ConfigMap does not exist (err says so; reported once per disappearance);
 *   other         the origin cannot be turned into a set (no main.lua, bad base64, unreadable
 *                 file ...): err names the cause; the same failure is reported once.
 */
LOP_MUST_CHECK lop_rc_t lop_script_source_poll(lop_script_source_t *s, lop_script_set_t **out, lop_err_t *err);

/* File descriptors that become readable when the source changes (the inotify watch, an eventfd
 * the ConfigMap informer writes); up to 2, written into fds, count returned. Poll them, then call
 * lop_script_source_poll (which drains them). Owned by the source. */
int lop_script_source_fds(const lop_script_source_t *s, int fds[2]);
/* Monotonic time (ns) at which a pending change becomes due for poll; INT64_MAX when none. */
int64_t lop_script_source_due_at(lop_script_source_t *s);

/* The ConfigMap as last seen (JSON text, caller frees, *len set), or NULL (directory sources,
 * or no ConfigMap). For Events about it. */
char *lop_script_source_object(lop_script_source_t *s, size_t *len);

/* Forget the last candidate's hash so the same content is offered again (after an install
 * failed for a reason outside the scripts, e.g. a CRD not served yet). */
void lop_script_source_reoffer(lop_script_source_t *s);

/* ------------------------------------------------------------------ reloader */

typedef struct lop_script_reloader lop_script_reloader_t;

/* source, m borrowed; metrics and health may be NULL (then not reported). Registers the readyz
 * check "scripts" (failing until a set is active) and the metric family
 * luaop_script_failed_version. */
lop_script_reloader_t *lop_script_reloader_new(lop_script_source_t *source, struct lop_manager *m,
                                               lop_metrics_t *metrics, lop_health_t *health);
/* Unregisters the health checks and frees. NULL accepted. */
void lop_script_reloader_free(lop_script_reloader_t *r);

/*
 * Poll the source and install a new candidate. Returns LOP_OK when a set was installed,
 * LOP_EAGAIN when nothing happened, or the failure (err names file:line; the running set, if
 * any, stays active; the failure was logged, counted and reported as an Event already).
 */
LOP_MUST_CHECK lop_rc_t lop_script_reloader_tick(lop_script_reloader_t *r, lop_err_t *err);

/* True once a set is active. */
bool lop_script_reloader_active(lop_script_reloader_t *r);

#endif
