/* SPDX-License-Identifier: Apache-2.0 */
/* operator.c — the process around a manager for `luaop run` and `luaop dev`: flags checked, REST
 * client, metrics and probe servers, manager, first script set, the main loop (signals, sync,
 * leader election, reloads) and graceful shutdown (see operator.h). Runs on the main thread; the
 * elector's callbacks (elector thread) and the Lease watch handlers (its informer thread) only
 * set flags and wake it. Upstream: a kubebuilder cmd/main.go plus controller-runtime's
 * pkg/manager/internal.go start order. */
#include "host/kube/cache/rest_listwatch.h"
#include "cmd/operator.h"

#include "cmd/scriptsource.h"
#include "cmd/webhooks.h"

#include "bindings/engine_lua.h"
#include "cmd/leader_events.h"
#include "host/kube/cache/informer.h"
#include "host/kube/leaderelection/leaderelection.h"
#include "host/kube/client/restmapper.h"
#include "host/runtime/gate.h"
#include "host/runtime/health.h"
#include "host/runtime/httpserver.h"
#include "host/runtime/manager.h"
#include "host/runtime/metrics/metrics.h"
#include "host/runtime/metrics/metrics_bind.h"
#include "host/runtime/metrics/metrics_process.h"
#include "host/runtime/metrics/metrics_std.h"
#include "host/runtime/scripts.h"
#include "host/util/log.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

void lop_operator_block_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The main loop beats every ~100 ms; a script reload (loading and validating a set) runs on it
 * too, so allow it generous time before /healthz reports the loop stalled. */
#define LOP_EVENT_LOOP_TIMEOUT_NS (30 * LOP_NS_PER_S)
/* A reconcile past its deadline by this much is stuck (the deadline hook should have ended it). */
#define LOP_STUCK_GRACE_NS (30 * LOP_NS_PER_S)

/* Wait until a termination signal (returned), a readable fd of fds (0), or ms pass (0).
 * Signals are blocked in every thread (lop_operator_block_signals) and taken here with a signalfd,
 * so the main loop sleeps until something happens instead of polling. */
static int wait_event(long ms, const int *fds, int nfds)
{
    static int sfd = -1;
    if (sfd < 0) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    }
    struct pollfd p[4];
    int n = 0;
    if (sfd >= 0) p[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
    for (int i = 0; i < nfds && n < 4; i++) p[n++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    if (poll(p, (nfds_t)n, (int)ms) > 0 && sfd >= 0 && (p[0].revents & POLLIN)) {
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) return (int)si.ssi_signo;
    }
    return 0;
}

/* Wait up to ms for a termination signal; returns it, or 0. */
static int wait_signal(long ms) { return wait_event(ms, NULL, 0); }

/*
 * Wait until the API server answers GET /version, retrying transport failures, 429 and 5xx with
 * a capped exponential backoff (0.5 s doubling to 30 s) so an operator started before its API
 * server keeps trying (readyz stays not ready) instead of exiting. Other errors (e.g. 401/403)
 * return at once: loading the scripts then reports them. hb is beaten at least every 5 s (each
 * attempt is limited to 5 s, waits are sliced), so /healthz does not call this a stalled loop.
 * Returns the termination signal that arrived while waiting, or 0 once the server answered (or
 * answered with a non-retryable error).
 */
static int wait_for_apiserver(lop_rest_client_t *rest, lop_health_heartbeat_t *hb)
{
    long delay_ms = 500;
    for (;;) {
        lop_health_heartbeat_beat(hb);
        lop_err_t err;
        lop_err_clear(&err);
        lop_rest_resp_t resp = LOP_REST_RESP_INIT;
        /* 5 s per attempt: a frozen server must not hold off SIGTERM for the default 120 s */
        lop_rest_req_t req = {.method = "GET", .path = "/version", .timeout_ms = 5000};
        lop_rc_t rc = lop_rest_request(rest, &req, &resp, &err);
        lop_rest_resp_cleanup(&resp);
        if (rc != LOP_EAGAIN && rc != LOP_ETIMEDOUT) return 0;
        char wait[32];
        snprintf(wait, sizeof wait, "%.1fs", (double)delay_ms / 1000.0);
        bool tls = strstr(err.message, "certificate verify failed") != NULL;
        lop_log(LOP_LOG_WARN,
                tls ? "API server's certificate not trusted, retrying" : "API server not reachable, retrying", "error",
                err.message, "retry_in", wait, tls ? "hint" : NULL,
                "check the kubeconfig's certificate-authority(-data) and tls-server-name", NULL);
        for (long left = delay_ms; left > 0; left -= 1000) {
            lop_health_heartbeat_beat(hb);
            int sig = wait_signal(left < 1000 ? left : 1000);
            if (sig) return sig;
        }
        delay_ms = delay_ms * 2 > 30000 ? 30000 : delay_ms * 2;
    }
}

/* ------------------------------------------------------------------ ops: metrics hooks, probes, shutdown */

static void rest_observed(void *ud, const char *method, int code, const char *host, int64_t ns)
{
    lop_metrics_observe_rest(ud, method, code, host, ns);
}

/* healthz "workers": fails while a reconcile runs past its deadline plus a grace. */
typedef struct workers_ctx {
    lop_manager_t *m;
    int64_t grace_ns;
} workers_ctx_t;

static bool check_workers(void *ud, char *reason, size_t len)
{
    workers_ctx_t *w = ud;
    return w->m ? lop_manager_check_stuck(w->m, w->grace_ns, reason, len) : true;
}

/* A second SIGTERM/SIGINT during the graceful shutdown exits at once (128 + signal number). */
static void *second_signal_main(void *arg)
{
    (void)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    int sig = 0;
    if (sigwait(&set, &sig) != 0) return NULL;
    lop_log(LOP_LOG_WARN, "second signal during shutdown; exiting now", "signal", strsignal(sig), NULL);
    fflush(NULL);
    _exit(128 + sig);
}

typedef struct ready_ctx {
    lop_manager_t *m;
} ready_ctx_t;

static bool check_synced(void *ud, char *reason, size_t len)
{
    ready_ctx_t *r = ud;
    if (lop_manager_synced(r->m)) return true;
    char names[200];
    size_t n = lop_manager_unsynced(r->m, names, sizeof names);
    if (n)
        snprintf(reason, len, "informers have not synced yet: %s", names);
    else
        snprintf(reason, len, "informers have not synced yet");
    return false;
}

static bool check_startup(void *ud, char *reason, size_t len)
{
    if (atomic_load((atomic_bool *)ud)) return true;
    snprintf(reason, len, "starting: the readiness checks of the manager and the scripts are not registered yet");
    return false;
}

/* ------------------------------------------------------------------ leader election */

typedef struct leader {
    lop_gate_t *gate;
    int wake_fd; /* the main loop's wake-up (an eventfd; -1 = none) */
    lop_elector_t *elector;
    lop_lease_client_t *client;
    lop_informer_t *lease_watch;
    lop_metric_t *metric;
    lop_leader_events_t *events; /* Events on the Lease, leader_events.h */
    char name[300];
} leader_t;

static void on_started_leading(void *ud)
{
    leader_t *l = ud;
    lop_log(LOP_LOG_INFO, "became leader; starting workers", "lease", l->name, "identity",
            lop_elector_identity(l->elector), NULL);
    lop_gate_set(l->gate, true);
    lop_leader_events_post(l->events, "became leader");
}

/* Wake the operator's main loop (it re-checks sync, leadership and the script source). */
static void wake_main_loop(int fd)
{
    if (fd < 0) return;
    uint64_t one = 1;
    ssize_t w = write(fd, &one, sizeof one); /* a full counter already wakes the loop */
    (void)w;
}

static void on_informer_synced(void *ud) { wake_main_loop(*(const int *)ud); }

static void on_stopped_leading(void *ud)
{
    leader_t *l = ud;
    lop_gate_set(l->gate, false);
    wake_main_loop(l->wake_fd); /* a lost lease ends the process: do not wait for the next tick */
    lop_log(LOP_LOG_WARN, "stopped leading; workers take no new work", "lease", l->name, "identity",
            lop_elector_identity(l->elector), NULL);
    lop_leader_events_post(l->events, "stopped leading");
}

/* Lease watch events wake a standby as soon as the leader releases the lease. */
static void lease_seen(leader_t *l, const char *type, const lop_obj_t *o)
{
    json_t *obj = json_loadb(o->json, o->json_len, 0, NULL);
    /* a malformed Lease is only a missed hint: the elector's own retry reads the Lease anyway */
    if (obj) lop_rc_ignore(lop_elector_notify_lease_event(l->elector, type, obj, NULL));
    json_decref(obj);
}
static void lease_add(void *ud, lop_obj_t *o) { lease_seen(ud, "ADDED", o); }
static void lease_update(void *ud, lop_obj_t *old, lop_obj_t *o)
{
    (void)old;
    lease_seen(ud, "MODIFIED", o);
}
static void lease_delete(void *ud, lop_obj_t *o, bool t)
{
    (void)t;
    lease_seen(ud, "DELETED", o);
}

/* The namespace of the pod we run in, or NULL outside a cluster. */
static char *incluster_namespace(void)
{
    FILE *f = fopen("/var/run/secrets/kubernetes.io/serviceaccount/namespace", "r");
    if (!f) return NULL;
    char buf[256] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) n--;
    buf[n] = '\0';
    return n ? lop_xstrdup(buf) : NULL;
}

/* The Lease namespace from the flags or the pod's namespace; NULL with err set when neither. */
static char *leader_namespace(const lop_run_opts_t *o, lop_err_t *err)
{
    char *ns = o->leader_election_namespace ? lop_xstrdup(o->leader_election_namespace) : incluster_namespace();
    if (!ns)
        lop_err_set(err, LOP_EINVAL, 0, NULL, "--leader-elect outside a cluster needs --leader-election-namespace");
    return ns;
}

/* Check the leader-election flags before anything connects, so a bad combination (durations,
 * missing id or namespace) fails at start with a clear error instead of after the caches sync.
 * The elector's own validation is used, with a throw-away in-memory Lease client standing in. */
static lop_rc_t leader_check_flags(const lop_run_opts_t *o, const char *identity, lop_err_t *err)
{
    if (!o->leader_elect) return LOP_OK;
    if (!o->leader_election_id || !*o->leader_election_id)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "--leader-elect needs --leader-election-id");
    if (!lop_lease_name_valid(o->leader_election_id))
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "--leader-election-id \"%s\" is not a valid Lease name (DNS-1123 subdomain)",
                           o->leader_election_id);
    char *ns = leader_namespace(o, err);
    if (!ns) return LOP_EINVAL;
    bool ns_ok = lop_lease_name_valid(ns);
    if (!ns_ok)
        lop_err_set(err, LOP_EINVAL, 0, NULL, "--leader-election-namespace \"%s\" is not a valid namespace name", ns);
    free(ns);
    if (!ns_ok) return LOP_EINVAL;
    if (strcmp(o->on_leader_loss, "exit") != 0 && strcmp(o->on_leader_loss, "restart-election") != 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "--leader-elect-on-loss must be exit or restart-election, not \"%s\"", o->on_leader_loss);
    lop_lease_store_t *store = lop_lease_store_new();
    lop_lease_client_t *stand_in = lop_lease_client_memory_new(store, "flag check");
    lop_elector_config_t ec;
    lop_elector_config_defaults(&ec);
    ec.identity = identity;
    ec.client = stand_in;
    ec.lease_duration_ns = o->lease_duration_ns;
    ec.renew_deadline_ns = o->renew_deadline_ns;
    ec.retry_period_ns = o->retry_period_ns;
    lop_rc_t rc = lop_elector_config_validate(&ec, err);
    lop_lease_client_free(stand_in);
    lop_lease_store_free(store);
    return rc;
}

static lop_rc_t leader_start(leader_t *l, const lop_run_opts_t *o, lop_rest_client_t *rest, lop_restmapper_t *mapper,
                             const char *identity, lop_metrics_std_t *std, lop_recorder_t *recorder, lop_err_t *err)
{
    char *ns = leader_namespace(o, err); /* flags were checked at start (leader_check_flags) */
    if (!ns) return LOP_EINVAL;
    snprintf(l->name, sizeof l->name, "%s/%s", ns, o->leader_election_id);
    l->client =
        lop_lease_client_rest_new(rest, ns, o->leader_election_id, (long)(o->renew_deadline_ns / LOP_NS_PER_MS), err);
    if (!l->client) {
        free(ns);
        return LOP_EINVAL;
    }
    lop_elector_config_t ec;
    lop_elector_config_defaults(&ec);
    ec.identity = identity;
    ec.name = l->name;
    ec.client = l->client;
    ec.lease_duration_ns = o->lease_duration_ns;
    ec.renew_deadline_ns = o->renew_deadline_ns;
    ec.retry_period_ns = o->retry_period_ns;
    ec.release_on_cancel = o->release_on_cancel;
    ec.on_loss =
        strcmp(o->on_leader_loss, "restart-election") == 0 ? LOP_ELECTOR_ON_LOSS_RESTART : LOP_ELECTOR_ON_LOSS_EXIT;
    ec.callbacks = (lop_elector_callbacks_t){
        .on_started_leading = on_started_leading, .on_stopped_leading = on_stopped_leading, .ud = l};
    __atomic_store_n(&l->elector, lop_elector_new(&ec, err), __ATOMIC_RELEASE); /* workers read it */
    if (!l->elector) {
        free(ns);
        return LOP_EINVAL;
    }
    l->events = lop_leader_events_new(rest, recorder, ns, o->leader_election_id, identity);
    lop_err_t merr = {0};
    if (lop_metrics_bind_elector(std, o->leader_election_id, l->elector, &l->metric, &merr) != LOP_OK)
        lop_log(LOP_LOG_WARN, "leader_election_master_status not bound", "error", merr.message, NULL);
    /* Watch the Lease itself so a release is noticed at once (warm standby). */
    lop_rest_mapping_t mp;
    if (lop_restmapper_resolve(mapper, "coordination.k8s.io/v1", "Lease", &mp, NULL) == LOP_OK) {
        char sel[300];
        snprintf(sel, sizeof sel, "metadata.name=%s", o->leader_election_id);
        lop_listwatch_t *lw = lop_rest_listwatch_new(rest, &mp, ns, NULL, sel);
        lop_informer_config_t ic = {.name = "leader-election lease", .lw = lw};
        l->lease_watch = lw ? lop_informer_new(&ic, NULL) : NULL;
        free(lw);
        if (l->lease_watch) {
            lop_reflector_handlers_t h = {lease_add, lease_update, lease_delete, l, NULL};
            lop_informer_add_handler(l->lease_watch, &h);
            lop_err_t werr = {0};
            /* the watch only wakes a standby early; without it the elector still retries */
            if (lop_informer_start(l->lease_watch, &werr) != LOP_OK)
                lop_log(LOP_LOG_WARN, "cannot watch the Lease; a release is noticed at the next retry", "error",
                        werr.message, NULL);
        }
    }
    free(ns);
    return lop_elector_start(l->elector);
}

/* The elector's own judgement (its clock), asked before each write of a leader-elected
 * controller: ns left before its renew deadline, 0 when not leading. */
static int64_t leading_left_ns(void *ud)
{
    leader_t *l = ud;
    lop_elector_t *e = __atomic_load_n(&l->elector, __ATOMIC_ACQUIRE);
    return e ? lop_elector_leading_left_ns(e) : 0;
}

static bool still_leading(void *ud) { return leading_left_ns(ud) > 0; }

static void leader_stop(leader_t *l)
{
    if (l->lease_watch) lop_informer_stop(l->lease_watch);
    if (l->elector) lop_elector_stop(l->elector); /* releases the lease when configured */
    if (l->metric) lop_metrics_unbind(&l->metric, 1, l->elector);
    lop_informer_free(l->lease_watch);
    lop_elector_free(l->elector);
    lop_lease_client_free(l->client);
    /* After the elector: its last "stopped leading" is queued by now. */
    lop_leader_events_free(l->events, 2 * LOP_NS_PER_S);
    l->events = NULL;
    l->lease_watch = NULL;
    l->elector = NULL;
    l->client = NULL;
}

/* ------------------------------------------------------------------ the operator process, step by step */

/* Everything the process holds between start-up and shutdown (the steps below fill it in order;
 * teardown frees whatever was made). Lives on lop_operator_main's stack: the manager, the probes
 * and the leader keep pointers into it. */
typedef struct operator_state {
    const lop_run_opts_t *o;
    lop_err_t err;
    lop_rest_client_t *rest;
    lop_restmapper_t *mapper;
    lop_manager_t *m;
    lop_metrics_t *metrics;
    lop_metrics_std_t std;
    lop_health_t *health;
    lop_httpserver_t *metrics_srv, *probe_srv;
    lop_metrics_auth_t *metrics_auth; /* --metrics-secure: the scrape filter */
    ready_ctx_t ready;
    lop_script_source_t *source;
    lop_script_reloader_t *reloader;
    workers_ctx_t workers;
    lop_health_heartbeat_t loop_hb;
    lop_gate_t gate;
    int wake_fd;    /* the main loop's wake-up, opened after the flag checks; -1: its tick */
    bool shut_down; /* reached the end of a graceful shutdown */
    leader_t leader;
    char *identity;
    lop_op_webhooks_t webhooks;
    /* readyz "startup" passes once every readiness check is registered: the probe server answers
     * before the manager and the scripts exist, and a readyz with no check would pass */
    atomic_bool checks_registered;
} operator_t;

/* The flags no later step can do without. 0, or the exit status (2: usage) after saying why. */
static int check_flags(operator_t *op)
{
    if (!op->o->scripts_dir && !op->o->scripts_configmap) {
        fprintf(stderr, "luaop: --scripts DIR (or --scripts-configmap NS/NAME) is required\n");
        return 2;
    }
    if (leader_check_flags(op->o, op->identity, &op->err) != LOP_OK) {
        fprintf(stderr, "luaop: %s\n", op->err.message);
        return 2;
    }
    return 0;
}

/* The REST client (cfg's contents move into it) and the REST mapper over it. */
static bool open_client(operator_t *op, lop_rest_config_t *cfg)
{
    cfg->qps = op->o->qps;
    cfg->burst = op->o->burst;
    cfg->disable_http2 = op->o->disable_http2;
    if (lop_rest_client_new(cfg, &op->rest, &op->err) != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "cannot create the API client", "error", op->err.message, NULL);
        return false;
    }
    op->mapper = lop_restmapper_new(op->rest);
    return true;
}

/* The main loop's wake-up, the metrics registry (fed by the REST client), the health checks, and
 * the metrics and probe servers. False (logged) when a server cannot listen. */
static bool start_metrics_and_probes(operator_t *op)
{
    op->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    op->leader.wake_fd = op->wake_fd;
    op->metrics = lop_metrics_new();
    op->health = lop_health_new();
    lop_health_heartbeat_init(&op->loop_hb, &lop_clock_system, LOP_EVENT_LOOP_TIMEOUT_NS, "operator main loop");
    if (lop_metrics_std_init(&op->std, op->metrics, &op->err) != LOP_OK ||
        lop_metrics_process_init(op->metrics, &op->err) != LOP_OK ||
        lop_health_add(op->health, LOP_HEALTHZ, "event-loop", lop_health_heartbeat_check, &op->loop_hb, &op->err) !=
            LOP_OK ||
        lop_health_add(op->health, LOP_READYZ, "startup", check_startup, &op->checks_registered, &op->err) != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "cannot register the metrics and health checks", "error", op->err.message, NULL);
        return false;
    }
    lop_rest_client_set_observer(op->rest, rest_observed, &op->std);
    const lop_run_opts_t *o = op->o;
    if (o->metrics_secure) op->metrics_auth = lop_metrics_auth_new(op->rest, &lop_clock_system);
    lop_httpserver_opts_t mo = {.bind_addr = o->metrics_addr,
                                .metrics = op->metrics,
                                .tls = o->metrics_secure,
                                .cert_dir = o->metrics_cert_dir,
                                .cert_name = o->metrics_cert_name,
                                .key_name = o->metrics_key_name,
                                .auth = op->metrics_auth};
    if (lop_httpserver_start_opts(&mo, &op->metrics_srv, &op->err) != LOP_OK ||
        lop_httpserver_start(o->probe_addr, NULL, op->health, &op->probe_srv, &op->err) != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "cannot start the metrics/probes server", "error", op->err.message, "hint",
                "pick free addresses with --metrics-bind-address / --health-probe-bind-address "
                "(0 disables, 127.0.0.1:0 picks a free port)",
                NULL);
        return false;
    }
    return true;
}

/* The manager (with the Lua engine), and the probes that ask it. False (logged) on failure. */
static bool create_manager(operator_t *op)
{
    const lop_run_opts_t *o = op->o;
    lop_manager_config_t mc = {
        .rest = op->rest,
        .mapper = op->mapper,
        .engine = lop_lua_engine(),
        .engine_opts = {.memory_limit_bytes = o->lua_memory_limit,
                        .reconcile_timeout_ns = o->reconcile_timeout_ns,
                        .predicate_timeout_ns = o->predicate_timeout_ns,
                        .load_timeout_ns = 10 * LOP_NS_PER_S,
                        .jit = o->lua_jit,
                        .unsafe_libs = o->lua_unsafe},
        .namespace_ = o->namespace_,
        .metrics = &op->std,
        .leader_gate = o->leader_elect ? &op->gate : NULL,
        .leading_left_ns = leading_left_ns,
        .leading_left_ud = &op->leader,
        .identity = op->identity,
        .watch_list = o->watch_list,
        .on_informer_synced = on_informer_synced,
        .on_informer_synced_ud = &op->wake_fd,
    };
    if (lop_manager_new(&mc, &op->m, &op->err) != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "cannot create the manager", "error", op->err.message, NULL);
        return false;
    }
    op->ready.m = op->m;
    op->workers.m = op->m;
    if (lop_health_add(op->health, LOP_HEALTHZ, "workers", check_workers, &op->workers, &op->err) != LOP_OK ||
        lop_health_add(op->health, LOP_READYZ, "informers-synced", check_synced, &op->ready, &op->err) != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "cannot register the manager's health checks", "error", op->err.message, NULL);
        return false;
    }
    return true;
}

/* The scripts: the first set from the source (a ConfigMap may not exist yet: wait for it, not
 * ready meanwhile; an API server that is not up yet: retry, readyz "scripts" not ready), later
 * reloads from the main loop. -1 once a set is active, else the exit status: 0 when a signal came
 * first, 1 on an error (logged). */
static int load_first_scripts(operator_t *op)
{
    const lop_run_opts_t *o = op->o;
    lop_script_source_config_t sc = {.dir = o->scripts_dir,
                                     .configmap = o->scripts_dir ? NULL : o->scripts_configmap,
                                     .rest = op->rest,
                                     .mapper = op->mapper};
    if (lop_script_source_new(&sc, &op->source, &op->err) != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "cannot watch the scripts", "error", op->err.message, NULL);
        return 1;
    }
    op->reloader = lop_script_reloader_new(op->source, op->m, op->metrics, op->health);
    atomic_store(&op->checks_registered, true); /* readyz "scripts" and "informers-synced" stand in */
    int early_sig = wait_for_apiserver(op->rest, &op->loop_hb);
    if (early_sig) {
        lop_log(LOP_LOG_INFO, "shutting down", "signal", strsignal(early_sig), NULL);
        return 0;
    }
    while (!lop_script_reloader_active(op->reloader)) {
        lop_health_heartbeat_beat(&op->loop_hb); /* waiting for a ConfigMap is not a stall */
        lop_rc_t rc = lop_script_reloader_tick(op->reloader, &op->err);
        if (rc != LOP_OK && rc != LOP_EAGAIN && rc != LOP_ENOTFOUND && !lop_script_source_is_configmap(op->source))
            return 1;                                  /* --scripts DIR: a broken set at start-up is fatal (logged) */
        if (rc != LOP_OK && wait_signal(50)) return 0; /* stopped before any set loaded */
    }
    return -1;
}

/* Sleep until a signal (returned), a script change, an informer's sync, a lost lease, or the next
 * due time of the script source (100 ms at most); 0 when woken for anything but a signal. */
static int sleep_until_event(operator_t *op)
{
    int fds[3];
    int nfds = lop_script_source_fds(op->source, fds);
    if (op->wake_fd >= 0) fds[nfds++] = op->wake_fd;
    long ms = 100;
    int64_t due = lop_script_source_due_at(op->source);
    if (due != INT64_MAX) {
        int64_t left = due - lop_clock_mono(&lop_clock_system);
        ms = left <= 0 ? 0 : left / LOP_NS_PER_MS + 1 < ms ? left / LOP_NS_PER_MS + 1 : ms;
    }
    int sig = wait_event(ms, fds, nfds);
    if (sig) return sig;
    if (op->wake_fd >= 0) {
        uint64_t v;
        ssize_t r = read(op->wake_fd, &v, sizeof v); /* reset (EAGAIN when it did not fire) */
        (void)r;
    }
    return 0;
}

/* A list that keeps failing (say, RBAC forbids a watched kind) holds the workers of every
 * controller watching it: say which, every 30 s — also for an informer a reload added later
 * (controller-runtime gives up after its CacheSyncTimeout; we keep retrying, and say so). */
static void warn_unsynced(operator_t *op, int64_t *warn_at)
{
    if (lop_clock_mono(&lop_clock_system) < *warn_at) return;
    char names[512];
    if (lop_manager_unsynced(op->m, names, sizeof names))
        lop_log(LOP_LOG_WARN,
                "informers not synced yet (see the reflectors' errors above); a "
                "controller's workers wait for its informers before their first reconcile",
                "informers", names, NULL);
    *warn_at = lop_clock_mono(&lop_clock_system) + 30 * LOP_NS_PER_S;
}

/* The running operator: sync, then leader election (once the caches are warm, so a new leader
 * reconciles at once), script reloads, the caller's poll. Returns the termination signal, or 0
 * when poll asked to stop or *fatal was set (leader election failed or the lease was lost). */
static int main_loop(operator_t *op, lop_operator_poll_fn poll, void *poll_ud, bool *fatal)
{
    const lop_run_opts_t *o = op->o;
    bool synced = false, campaigning = false;
    int64_t unsynced_warn_at = lop_clock_mono(&lop_clock_system) + 30 * LOP_NS_PER_S;
    for (;;) {
        lop_health_heartbeat_beat(&op->loop_hb);
        int sig = sleep_until_event(op);
        if (sig) return sig;
        if (!synced && lop_manager_synced(op->m)) {
            synced = true;
            lop_log(LOP_LOG_INFO, "caches synced; ready", NULL);
        }
        warn_unsynced(op, &unsynced_warn_at);
        if (synced && o->leader_elect && !campaigning) {
            campaigning = true;
            if (leader_start(&op->leader, o, op->rest, op->mapper, op->identity, &op->std, lop_manager_recorder(op->m),
                             &op->err) != LOP_OK) {
                lop_log(LOP_LOG_ERROR, "leader election", "error", op->err.message, NULL);
                *fatal = true;
                return 0;
            }
        }
        if (op->leader.elector && lop_elector_lost(op->leader.elector)) {
            lop_log(LOP_LOG_ERROR, "leader election lost; exiting so a fresh process campaigns", "lease",
                    op->leader.name, NULL);
            *fatal = true;
            return 0;
        }
        /* a failed reload keeps the old scripts and reports itself (log, Event, metric) */
        lop_rc_ignore(lop_script_reloader_tick(op->reloader, &op->err));
        bool leading = !o->leader_elect || still_leading(&op->leader);
        lop_rc_ignore(lop_op_webhooks_sync(&op->webhooks, o, op->m, op->metrics, leading, &op->err)); /* logged */
        if (synced && poll && poll(poll_ud, op->m)) return 0;
    }
}

/* Finish in-flight reconciles first (bounded by --graceful-shutdown-timeout), then release the
 * Lease; a second signal meanwhile exits at once. Reconciles still running at the timeout end the
 * process here (_exit(1), nothing freed: the abandoned workers still use everything). Returns the
 * exit status. */
static int shut_down_gracefully(operator_t *op, int sig, bool fatal)
{
    if (sig) lop_log(LOP_LOG_INFO, "shutting down", "signal", strsignal(sig), NULL);
    pthread_t second;
    bool watching = pthread_create(&second, NULL, second_signal_main, NULL) == 0;
    lop_gate_shutdown(&op->gate);
    size_t abandoned = lop_manager_stop(op->m, op->o->graceful_shutdown_ns);
    lop_op_webhooks_stop(&op->webhooks); /* served while the reconciles drained */
    leader_stop(&op->leader);
    if (watching) {
        pthread_cancel(second);
        pthread_join(second, NULL);
    }
    if (abandoned) {
        char n[24];
        snprintf(n, sizeof n, "%zu", abandoned);
        lop_log(LOP_LOG_ERROR, "graceful shutdown timed out; exiting with reconciles in flight", "abandoned", n, NULL);
        fflush(NULL);
        _exit(1);
    }
    op->shut_down = true; /* logged once the informers and servers below are stopped too */
    return fatal ? 1 : 0;
}

/* Free whatever the steps made, in reverse dependency order. */
static void teardown(operator_t *op)
{
    leader_stop(&op->leader);
    lop_script_source_free(op->source); /* stops the ConfigMap informer */
    lop_script_reloader_free(op->reloader);
    lop_op_webhooks_stop(&op->webhooks);
    lop_httpserver_free(op->metrics_srv);
    lop_httpserver_free(op->probe_srv);
    lop_metrics_auth_free(op->metrics_auth);
    lop_manager_free(op->m);
    lop_health_free(op->health);
    lop_metrics_free(op->metrics);
    lop_restmapper_free(op->mapper);
    lop_rest_client_free(op->rest);
    lop_gate_cleanup(&op->gate);
    if (op->wake_fd >= 0) close(op->wake_fd); /* after everything that could write it is gone */
    free(op->identity);
    if (op->shut_down) lop_log(LOP_LOG_INFO, "shutdown complete", NULL);
}

int lop_operator_main(const lop_run_opts_t *o, lop_rest_config_t *cfg, lop_operator_poll_fn poll, void *poll_ud)
{
    operator_t op = {.o = o, .workers = {NULL, LOP_STUCK_GRACE_NS}, .wake_fd = -1};
    lop_err_clear(&op.err);
    lop_gate_init(&op.gate, false);
    op.leader = (leader_t){.gate = &op.gate, .wake_fd = -1};
    op.identity = lop_elector_identity_new();

    int status = check_flags(&op);
    if (status == 0 && !open_client(&op, cfg)) status = 1;
    if (status != 0) {
        free(op.identity);
        return status;
    }
    status = 1;
    if (!start_metrics_and_probes(&op) || !create_manager(&op)) goto out;
    status = load_first_scripts(&op);
    if (status >= 0) goto out;
    status = 1;
    op.webhooks.rest = op.rest;
    op.webhooks.mapper = op.mapper;
    op.webhooks.wake_fd = op.wake_fd;
    /* without leader election every replica keeps the self-managed certificates (no one else would) */
    if (lop_op_webhooks_sync(&op.webhooks, o, op.m, op.metrics, !o->leader_elect, &op.err) != LOP_OK)
        goto out; /* logged */
    if (lop_manager_start(op.m, &op.err) != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "cannot start", "error", op.err.message, NULL);
        goto out;
    }
    bool fatal = false;
    int sig = main_loop(&op, poll, poll_ud, &fatal);
    status = shut_down_gracefully(&op, sig, fatal);
out:
    teardown(&op);
    return status;
}
