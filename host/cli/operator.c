#include "host/cli/operator.h"

#include "bindings/engine_lua.h"
#include "host/kube/restmapper.h"
#include "host/runtime/health.h"
#include "host/runtime/httpserver.h"
#include "host/runtime/manager.h"
#include "host/runtime/metrics.h"
#include "host/runtime/scripts.h"
#include "host/util/log.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
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

/* Wait up to ms for a termination signal; returns it, or 0. */
static int wait_signal(long ms)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    int sig = sigtimedwait(&set, NULL, &ts);
    return sig > 0 ? sig : 0;
}

typedef struct ready_ctx {
    lop_manager_t *m;
    bool scripts_ok;
} ready_ctx_t;

static bool check_synced(void *ud, char *reason, size_t len)
{
    ready_ctx_t *r = ud;
    if (lop_manager_synced(r->m)) return true;
    snprintf(reason, len, "informers have not synced yet");
    return false;
}

static bool check_scripts(void *ud, char *reason, size_t len)
{
    ready_ctx_t *r = ud;
    if (r->scripts_ok) return true;
    snprintf(reason, len, "no script set loaded");
    return false;
}

/* Watch a script directory (non-recursive for subdirectories created later; the set is re-read
 * whole on any change). Returns the inotify fd or -1. */
static int watch_dir(const char *dir)
{
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) return -1;
    if (inotify_add_watch(fd, dir, IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE |
                                       IN_DELETE | IN_ATTRIB) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static bool drain_inotify(int fd)
{
    if (fd < 0) return false;
    char buf[4096] __attribute__((aligned(8)));
    bool any = false;
    while (read(fd, buf, sizeof buf) > 0) any = true;
    return any;
}

static void reload_dir(lop_manager_t *m, const char *dir)
{
    lop_script_set_t *set = NULL;
    lop_err_t err;
    lop_err_clear(&err);
    lop_rc_t rc = lop_scripts_load_dir(dir, &set, &err);
    char cur[32];
    lop_manager_version(m, cur, sizeof cur);
    if (rc == LOP_OK && strcmp(cur, set->version) == 0) {
        lop_script_set_free(set); /* unchanged (e.g. an editor's temporary file) */
        return;
    }
    if (rc == LOP_OK) rc = lop_manager_install(m, set, &err);
    if (rc != LOP_OK) {
        lop_script_set_free(set);
        lop_log(LOP_LOG_ERROR, "script reload failed; keeping the running scripts", "dir", dir,
                "error", err.message, NULL);
        return;
    }
    lop_log(LOP_LOG_INFO, "scripts reloaded", "dir", dir, "version", cur, NULL);
}

int lop_operator_main(const lop_run_opts_t *o, lop_rest_config_t *cfg, lop_operator_poll_fn poll,
                      void *poll_ud)
{
    int status = 1;
    lop_err_t err;
    lop_err_clear(&err);
    lop_rest_client_t *rest = NULL;
    lop_restmapper_t *mapper = NULL;
    lop_manager_t *m = NULL;
    lop_metrics_t *metrics = NULL;
    lop_health_t *health = NULL;
    lop_httpserver_t *metrics_srv = NULL, *probe_srv = NULL;
    ready_ctx_t ready = {NULL, false};
    int ino = -1;

    if (!o->scripts_dir && !o->scripts_configmap) {
        fprintf(stderr, "luaop: --scripts DIR (or --scripts-configmap NS/NAME) is required\n");
        return 2;
    }
    cfg->qps = o->qps;
    cfg->burst = o->burst;
    if (lop_rest_client_new(cfg, &rest, &err) != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "cannot create the API client", "error", err.message, NULL);
        return 1;
    }
    mapper = lop_restmapper_new(rest);

    metrics = lop_metrics_new();
    health = lop_health_new();
    if (lop_httpserver_start(o->metrics_addr, metrics, NULL, &metrics_srv, &err) != LOP_OK ||
        lop_httpserver_start(o->probe_addr, NULL, health, &probe_srv, &err) != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "cannot start the metrics/probes server", "error", err.message, NULL);
        goto out;
    }

    lop_manager_config_t mc = {
        .rest = rest,
        .mapper = mapper,
        .engine = lop_lua_engine(),
        .engine_opts = {.memory_limit_bytes = o->lua_memory_limit,
                        .reconcile_timeout_ns = o->reconcile_timeout_ns,
                        .load_timeout_ns = 10 * LOP_NS_PER_S,
                        .jit = o->lua_jit,
                        .unsafe_libs = o->lua_unsafe},
        .namespace_ = o->namespace_,
    };
    char *identity = NULL;
    {
        char host[256] = "luaop";
        gethostname(host, sizeof host);
        host[sizeof host - 1] = '\0';
        identity = lop_xstrdup(host);
    }
    mc.identity = identity;
    if (lop_manager_new(&mc, &m, &err) != LOP_OK) {
        free(identity);
        lop_log(LOP_LOG_ERROR, "cannot create the manager", "error", err.message, NULL);
        goto out;
    }
    free(identity);
    ready.m = m;
    lop_health_add(health, LOP_READYZ, "informers-synced", check_synced, &ready, NULL);
    lop_health_add(health, LOP_READYZ, "scripts", check_scripts, &ready, NULL);

    /* scripts */
    lop_script_set_t *set = NULL;
    if (o->scripts_dir) {
        if (lop_scripts_load_dir(o->scripts_dir, &set, &err) != LOP_OK) {
            lop_log(LOP_LOG_ERROR, "cannot load the scripts", "error", err.message, NULL);
            goto out;
        }
    } else {
        lop_log(LOP_LOG_ERROR, "--scripts-configmap is not supported in this build yet; use --scripts",
                NULL);
        goto out;
    }
    if (lop_manager_install(m, set, &err) != LOP_OK) {
        lop_script_set_free(set);
        lop_log(LOP_LOG_ERROR, "the scripts failed to load", "error", err.message, NULL);
        goto out;
    }
    ready.scripts_ok = true;
    if (o->scripts_dir) ino = watch_dir(o->scripts_dir);

    if (lop_manager_start(m, &err) != LOP_OK) {
        lop_log(LOP_LOG_ERROR, "cannot start", "error", err.message, NULL);
        goto out;
    }
    bool synced = false;
    int sig = 0;
    int64_t debounce_at = 0;
    for (;;) {
        sig = wait_signal(100);
        if (sig) break;
        if (!synced && lop_manager_synced(m)) {
            synced = true;
            lop_log(LOP_LOG_INFO, "caches synced; ready", NULL);
        }
        if (drain_inotify(ino)) debounce_at = lop_clock_mono(&lop_clock_system) + 200 * LOP_NS_PER_MS;
        if (debounce_at && lop_clock_mono(&lop_clock_system) >= debounce_at) {
            debounce_at = 0;
            reload_dir(m, o->scripts_dir);
        }
        if (synced && poll && poll(poll_ud, m)) break;
    }
    if (sig) lop_log(LOP_LOG_INFO, "shutting down", "signal", strsignal(sig), NULL);
    lop_manager_stop(m, o->graceful_shutdown_ns);
    status = 0;

out:
    if (ino >= 0) close(ino);
    lop_httpserver_free(metrics_srv);
    lop_httpserver_free(probe_srv);
    lop_manager_free(m);
    lop_health_free(health);
    lop_metrics_free(metrics);
    lop_restmapper_free(mapper);
    lop_rest_client_free(rest);
    return status;
}
