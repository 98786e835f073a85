/* SPDX-License-Identifier: Apache-2.0 */
/* scriptsource.c — script sources: a directory watched with inotify, or one ConfigMap watched
 * through its own informer; debounced, deduplicated by content hash. See scriptsource.h. */
#include "host/kube/cache/rest_listwatch.h"
#include "cmd/scriptsource.h"

#include "host/kube/cache/informer.h"
#include "host/runtime/manager.h"
#include "host/runtime/recorder.h"
#include "host/util/buf.h"
#include "host/util/log.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

/* Quiet time before a change is loaded: editors and `kubectl apply` write in bursts of a few ms. */
#define DEFAULT_DEBOUNCE_NS (10 * LOP_NS_PER_MS)
#define MAX_DEPTH           16

struct lop_script_source {
    char name[320];
    const lop_clock_t *clock;
    int64_t debounce_ns;
    /* directory */
    char *dir;
    int ino;
    int wake; /* eventfd written on every change, for the owner's poll loop */
    /* configmap */
    char ns[256], cm[256];
    lop_informer_t *inf;
    pthread_mutex_t mu; /* guards the fields below (written by the informer thread) */
    char *obj;          /* the ConfigMap's JSON as last seen, NULL while missing */
    size_t obj_len;
    bool seen_any; /* an informer event or the initial sync happened */
    /* change tracking (owner thread; `dirty`/`change_at` also written under mu by the informer) */
    bool dirty;
    int64_t change_at;   /* monotonic time of the last change */
    int64_t dirty_since; /* monotonic time of the first change not yet loaded */
    bool offered_any;
    char last_version[32]; /* hash of the last candidate handed out */
    char last_error[512];  /* the last load failure reported ("" = none) */
};

/* ------------------------------------------------------------------ directory */

/* Add a watch on dir and every non-hidden subdirectory (inotify_add_watch on an already watched
 * inode returns the same watch, so re-running this after a change only adds new directories). */
static void watch_tree(int fd, const char *dir, int depth)
{
    if (depth > MAX_DEPTH) return;
    if (inotify_add_watch(fd, dir,
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB |
                              IN_DELETE_SELF) < 0)
        return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        lop_buf_t path = LOP_BUF_INIT;
        lop_buf_printf(&path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path.data, &st) == 0 && S_ISDIR(st.st_mode)) watch_tree(fd, path.data, depth + 1);
        lop_buf_free(&path);
    }
    closedir(d);
}

static bool drain_inotify(int fd)
{
    if (fd < 0) return false;
    char buf[4096] __attribute__((aligned(8)));
    bool any = false;
    while (read(fd, buf, sizeof buf) > 0) any = true;
    return any;
}

/* ------------------------------------------------------------------ configmap informer */

/* Record a change at now. Caller holds s->mu. */
static void mark_dirty(lop_script_source_t *s, int64_t now)
{
    if (!s->dirty) s->dirty_since = now;
    s->dirty = true;
    s->change_at = now;
    if (s->wake >= 0) {
        uint64_t one = 1;
        ssize_t w = write(s->wake, &one, sizeof one);
        (void)w; /* a full counter already wakes the reader */
    }
}

static void cm_set(lop_script_source_t *s, const lop_obj_t *o)
{
    pthread_mutex_lock(&s->mu);
    free(s->obj);
    s->obj = o ? lop_xstrndup(o->json, o->json_len) : NULL;
    s->obj_len = o ? o->json_len : 0;
    s->seen_any = true;
    mark_dirty(s, lop_clock_mono(s->clock));
    pthread_mutex_unlock(&s->mu);
}
static void cm_add(void *ud, lop_obj_t *o) { cm_set(ud, o); }
static void cm_update(void *ud, lop_obj_t *old, lop_obj_t *o)
{
    (void)old;
    cm_set(ud, o);
}
static void cm_delete(void *ud, lop_obj_t *o, bool tombstone)
{
    (void)o;
    (void)tombstone;
    cm_set(ud, NULL);
}

static lop_rc_t cm_start(lop_script_source_t *s, const lop_script_source_config_t *cfg, lop_err_t *err)
{
    const char *slash = strchr(cfg->configmap, '/');
    if (!slash || slash == cfg->configmap || !slash[1] || strchr(slash + 1, '/') ||
        (size_t)(slash - cfg->configmap) >= sizeof s->ns || strlen(slash + 1) >= sizeof s->cm)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "--scripts-configmap \"%s\": expected NAMESPACE/NAME",
                           cfg->configmap);
    snprintf(s->ns, sizeof s->ns, "%.*s", (int)(slash - cfg->configmap), cfg->configmap);
    snprintf(s->cm, sizeof s->cm, "%s", slash + 1);
    if (!cfg->rest || !cfg->mapper) return lop_err_set(err, LOP_EINVAL, 0, NULL, "configmap source: no API client");
    lop_rest_mapping_t mp;
    lop_rc_t rc = lop_restmapper_resolve(cfg->mapper, "v1", "ConfigMap", &mp, err);
    if (rc != LOP_OK) return rc;
    char sel[300];
    snprintf(sel, sizeof sel, "metadata.name=%s", s->cm);
    lop_listwatch_t *lw = lop_rest_listwatch_new(cfg->rest, &mp, s->ns, NULL, sel);
    if (!lw) return lop_err_set(err, LOP_ERR, 0, NULL, "cannot watch configmap %s/%s", s->ns, s->cm);
    char iname[600];
    snprintf(iname, sizeof iname, "scripts configmap %s/%s", s->ns, s->cm);
    lop_informer_config_t ic = {.name = iname, .lw = lw, .clock = s->clock};
    s->inf = lop_informer_new(&ic, err);
    free(lw); /* the informer owns its ud */
    if (!s->inf) return LOP_ERR;
    lop_reflector_handlers_t h = {cm_add, cm_update, cm_delete, s, NULL};
    lop_informer_add_handler(s->inf, &h);
    return lop_informer_start(s->inf, err);
}

/* ------------------------------------------------------------------ public */

lop_rc_t lop_script_source_new(const lop_script_source_config_t *cfg, lop_script_source_t **out, lop_err_t *err)
{
    *out = NULL;
    if (!cfg->dir == !cfg->configmap)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "give either --scripts DIR or --scripts-configmap NS/NAME");
    lop_script_source_t *s = lop_xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->clock = cfg->clock ? cfg->clock : &lop_clock_system;
    s->debounce_ns = cfg->debounce_ns > 0 ? cfg->debounce_ns : DEFAULT_DEBOUNCE_NS;
    const char *env = cfg->debounce_ns > 0 ? NULL : getenv("LUAOP_SCRIPTS_DEBOUNCE_MS");
    if (env && *env) {
        char *end;
        long ms = strtol(env, &end, 10);
        if (*end || ms < 0 || ms > 60000)
            lop_log(LOP_LOG_WARN, "ignoring LUAOP_SCRIPTS_DEBOUNCE_MS (0..60000 expected)", "value", env, NULL);
        else
            s->debounce_ns = ms * LOP_NS_PER_MS;
    }
    s->ino = -1;
    s->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    lop_rc_t rc = LOP_OK;
    if (cfg->dir) {
        snprintf(s->name, sizeof s->name, "dir %s", cfg->dir);
        s->dir = lop_xstrdup(cfg->dir);
        s->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (s->ino < 0)
            rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "inotify: %s", strerror(errno));
        else
            watch_tree(s->ino, s->dir, 0);
        mark_dirty(s, lop_clock_mono(s->clock)); /* load at once */
    } else {
        snprintf(s->name, sizeof s->name, "configmap %s", cfg->configmap);
        rc = cm_start(s, cfg, err);
    }
    if (rc != LOP_OK) {
        lop_script_source_free(s);
        return rc;
    }
    *out = s;
    return LOP_OK;
}

void lop_script_source_free(lop_script_source_t *s)
{
    if (!s) return;
    if (s->inf) lop_informer_stop(s->inf);
    lop_informer_free(s->inf);
    if (s->ino >= 0) close(s->ino);
    if (s->wake >= 0) close(s->wake);
    free(s->dir);
    free(s->obj);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

const char *lop_script_source_name(const lop_script_source_t *s) { return s->name; }
bool lop_script_source_is_configmap(const lop_script_source_t *s) { return s->inf != NULL; }

char *lop_script_source_object(lop_script_source_t *s, size_t *len)
{
    pthread_mutex_lock(&s->mu);
    char *copy = s->obj ? lop_xstrndup(s->obj, s->obj_len) : NULL;
    *len = copy ? s->obj_len : 0;
    pthread_mutex_unlock(&s->mu);
    return copy;
}

void lop_script_source_reoffer(lop_script_source_t *s)
{
    pthread_mutex_lock(&s->mu);
    s->last_version[0] = '\0';
    s->last_error[0] = '\0';
    mark_dirty(s, lop_clock_mono(s->clock) - s->debounce_ns);
    pthread_mutex_unlock(&s->mu);
}

/* Report a load failure once (the same message again is "nothing new"). */
static lop_rc_t load_failed(lop_script_source_t *s, lop_rc_t rc, lop_err_t *err)
{
    if (strcmp(s->last_error, err->message) == 0) return LOP_EAGAIN;
    snprintf(s->last_error, sizeof s->last_error, "%s", err->message);
    s->last_version[0] = '\0';
    return rc;
}

int lop_script_source_fds(const lop_script_source_t *s, int fds[2])
{
    int n = 0;
    if (s->ino >= 0) fds[n++] = s->ino;
    if (s->wake >= 0) fds[n++] = s->wake;
    return n;
}

int64_t lop_script_source_due_at(lop_script_source_t *s)
{
    pthread_mutex_lock(&s->mu);
    int64_t at = INT64_MAX;
    if (s->dirty) {
        at = s->change_at + s->debounce_ns;
        if (s->dirty_since + 5 * s->debounce_ns < at) at = s->dirty_since + 5 * s->debounce_ns;
        if (!s->offered_any || s->debounce_ns == 0) at = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return at;
}

lop_rc_t lop_script_source_poll(lop_script_source_t *s, lop_script_set_t **out, lop_err_t *err)
{
    *out = NULL;
    if (s->wake >= 0) {
        uint64_t v;
        ssize_t r = read(s->wake, &v, sizeof v); /* reset the wake-up counter */
        (void)r;
    }
    int64_t now = lop_clock_mono(s->clock);
    if (s->ino >= 0 && drain_inotify(s->ino)) {
        watch_tree(s->ino, s->dir, 0); /* pick up new subdirectories */
        pthread_mutex_lock(&s->mu);
        mark_dirty(s, now);
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_lock(&s->mu);
    if (s->inf && !s->seen_any && lop_informer_has_synced(s->inf)) {
        s->seen_any = true; /* listed, and the ConfigMap is not there */
        mark_dirty(s, now);
    }
    /* Due once quiet for the debounce interval (at once for the first candidate), and at the
     * latest after 5 intervals of continuous changes. */
    bool due = s->dirty && (!s->offered_any || s->debounce_ns == 0 || now - s->change_at >= s->debounce_ns ||
                            now - s->dirty_since >= 5 * s->debounce_ns);
    if (!due) {
        pthread_mutex_unlock(&s->mu);
        return LOP_EAGAIN;
    }
    s->dirty = false;
    char *obj = s->obj ? lop_xstrndup(s->obj, s->obj_len) : NULL;
    size_t obj_len = s->obj_len;
    pthread_mutex_unlock(&s->mu);

    lop_script_set_t *set = NULL;
    lop_rc_t rc;
    if (s->dir) {
        rc = lop_scripts_load_dir(s->dir, &set, err);
    } else if (!obj) {
        rc =
            lop_err_set(err, LOP_ENOTFOUND, 404, "NotFound", "configmap %s/%s not found; waiting for it", s->ns, s->cm);
    } else {
        char origin[600];
        snprintf(origin, sizeof origin, "configmap %s/%s", s->ns, s->cm);
        rc = lop_scripts_load_configmap_json(obj, obj_len, origin, &set, err);
    }
    free(obj);
    if (rc != LOP_OK) return load_failed(s, rc, err);
    s->last_error[0] = '\0';
    if (s->offered_any && strcmp(set->version, s->last_version) == 0) {
        lop_script_set_free(set); /* same content (an editor's temporary file, a label edit) */
        return LOP_EAGAIN;
    }
    s->offered_any = true;
    snprintf(s->last_version, sizeof s->last_version, "%s", set->version);
    *out = set;
    return LOP_OK;
}

/* ------------------------------------------------------------------ reloader */

#define RETRY_NOT_SERVED_NS (10 * LOP_NS_PER_S)

struct lop_script_reloader {
    lop_script_source_t *src;
    lop_manager_t *m;
    lop_health_t *health;
    lop_metrics_t *metrics;
    lop_metric_family_t *failed_family; /* luaop_script_failed_version{version} */
    int64_t retry_at;                   /* re-offer the same content then (0 = never) */
    pthread_mutex_t mu;                 /* guards the fields below (read by the probe thread) */
    bool active;
    char waiting[600]; /* why no set is active yet */
    char active_version[32], failed_version[32];
    char active_check[64], failed_check[64]; /* registered informational readyz checks */
};

static bool check_scripts(void *ud, char *reason, size_t len)
{
    lop_script_reloader_t *r = ud;
    pthread_mutex_lock(&r->mu);
    bool ok = r->active;
    if (!ok) snprintf(reason, len, "%s", r->waiting);
    pthread_mutex_unlock(&r->mu);
    return ok;
}

static bool check_info(void *ud, char *reason, size_t len)
{
    (void)ud;
    (void)reason;
    (void)len;
    return true; /* the name carries the information */
}

/* Replace the informational readyz check `slot` (named prefix-<version>). */
static void set_info_check(lop_script_reloader_t *r, char *slot, size_t slot_len, const char *prefix,
                           const char *version)
{
    if (!r->health) return;
    if (slot[0]) lop_rc_ignore(lop_health_remove(r->health, LOP_READYZ, slot)); /* ours: present */
    snprintf(slot, slot_len, "%s-%s", prefix, version);
    if (lop_health_add(r->health, LOP_READYZ, slot, check_info, r, NULL) != LOP_OK) slot[0] = '\0';
}

static void set_waiting(lop_script_reloader_t *r, const char *why)
{
    pthread_mutex_lock(&r->mu);
    snprintf(r->waiting, sizeof r->waiting, "%s", why);
    pthread_mutex_unlock(&r->mu);
}

/* An Event about the ConfigMap (directory sources: none). */
static void record(lop_script_reloader_t *r, const char *type, const char *reason, const char *msg)
{
    if (!lop_script_source_is_configmap(r->src)) return;
    size_t len = 0;
    char *obj = lop_script_source_object(r->src, &len);
    if (!obj) return;
    lop_err_t e;
    lop_err_clear(&e);
    if (lop_recorder_record(lop_manager_recorder(r->m), obj, len, type, reason, msg, &e) != LOP_OK)
        lop_log(LOP_LOG_WARN, "cannot record an Event on the script ConfigMap", "reason", reason, "error", e.message,
                NULL);
    free(obj);
}

static void count_failure(lop_script_reloader_t *r)
{
    lop_metric_family_t *f = r->metrics ? lop_metrics_find(r->metrics, "luaop_script_reload_total") : NULL;
    if (f) lop_metric_counter_add(f, (const char *[]){"failure"}, 1, NULL);
}

static void note_failed_version(lop_script_reloader_t *r, const char *version)
{
    pthread_mutex_lock(&r->mu);
    char old[32];
    snprintf(old, sizeof old, "%s", r->failed_version);
    snprintf(r->failed_version, sizeof r->failed_version, "%s", version);
    pthread_mutex_unlock(&r->mu);
    if (r->failed_family) {
        if (old[0] && strcmp(old, version) != 0) /* absent (never set) is fine */
            lop_rc_ignore(lop_metric_remove(r->failed_family, (const char *[]){old}));
        lop_metric_gauge_set(r->failed_family, (const char *[]){version}, 1, NULL);
    }
    set_info_check(r, r->failed_check, sizeof r->failed_check, "scripts-last-failed", version);
}

lop_script_reloader_t *lop_script_reloader_new(lop_script_source_t *source, lop_manager_t *m, lop_metrics_t *metrics,
                                               lop_health_t *health)
{
    lop_script_reloader_t *r = lop_xcalloc(1, sizeof *r);
    r->src = source;
    r->m = m;
    r->health = health;
    r->metrics = metrics;
    pthread_mutex_init(&r->mu, NULL);
    snprintf(r->waiting, sizeof r->waiting, "no script set loaded yet from %s", lop_script_source_name(source));
    if (metrics)
        r->failed_family = lop_metrics_gauge(metrics, "luaop_script_failed_version",
                                             "The content hash of the last script set that failed to load (1), if any.",
                                             (const char *[]){"version", NULL}, NULL);
    lop_err_t err = {0};
    if (health && lop_health_add(health, LOP_READYZ, "scripts", check_scripts, r, &err) != LOP_OK)
        lop_log(LOP_LOG_WARN, "readyz check \"scripts\" not registered", "error", err.message, NULL);
    return r;
}

void lop_script_reloader_free(lop_script_reloader_t *r)
{
    if (!r) return;
    if (r->health) {
        /* ENOTFOUND only: a check that was never registered has nothing to remove */
        lop_rc_ignore(lop_health_remove(r->health, LOP_READYZ, "scripts"));
        if (r->active_check[0]) lop_rc_ignore(lop_health_remove(r->health, LOP_READYZ, r->active_check));
        if (r->failed_check[0]) lop_rc_ignore(lop_health_remove(r->health, LOP_READYZ, r->failed_check));
    }
    pthread_mutex_destroy(&r->mu);
    free(r);
}

bool lop_script_reloader_active(lop_script_reloader_t *r)
{
    pthread_mutex_lock(&r->mu);
    bool ok = r->active;
    pthread_mutex_unlock(&r->mu);
    return ok;
}

lop_rc_t lop_script_reloader_tick(lop_script_reloader_t *r, lop_err_t *err)
{
    const char *src = lop_script_source_name(r->src);
    if (r->retry_at && lop_clock_mono(&lop_clock_system) >= r->retry_at) {
        r->retry_at = 0;
        lop_script_source_reoffer(r->src);
    }
    lop_script_set_t *set = NULL;
    lop_rc_t rc = lop_script_source_poll(r->src, &set, err);
    if (rc == LOP_EAGAIN) return rc;
    bool active = lop_script_reloader_active(r);
    if (rc == LOP_ENOTFOUND) {
        lop_log(LOP_LOG_WARN,
                active ? "script ConfigMap is gone; keeping the running scripts" : "waiting for the script ConfigMap",
                "source", src, NULL);
        set_waiting(r, err->message);
        return rc;
    }
    char message[1024];
    if (rc != LOP_OK) { /* the source could not be turned into a set at all */
        lop_log(LOP_LOG_ERROR,
                active ? "script reload failed; keeping the running scripts" : "the scripts failed to load", "source",
                src, "error", err->message, NULL);
        count_failure(r);
        snprintf(message, sizeof message, "scripts rejected: %s", err->message);
        record(r, "Warning", "ScriptReloadFailed", message);
        if (!active) set_waiting(r, message);
        return rc;
    }
    char cur[32], version[32];
    lop_manager_version(r->m, cur, sizeof cur);
    snprintf(version, sizeof version, "%s", set->version);
    if (strcmp(cur, version) == 0) { /* back to the running content (e.g. a failed edit reverted) */
        lop_script_set_free(set);
        return LOP_EAGAIN;
    }
    int64_t t0 = lop_clock_mono(&lop_clock_system);
    rc = lop_manager_install(r->m, set, err);
    char ms[32];
    snprintf(ms, sizeof ms, "%.1f", (double)(lop_clock_mono(&lop_clock_system) - t0) / 1e6);
    if (rc != LOP_OK) {
        lop_script_set_free(set);
        lop_log(LOP_LOG_ERROR,
                active ? "script reload failed; keeping the running scripts" : "the scripts failed to load", "source",
                src, "version", version, "active", cur[0] ? cur : "(none)", "error", err->message,
                rc == LOP_ENOTFOUND ? "retry" : NULL,
                "in 10s (a kind may become served once its CRD is applied; see docs/reload.md)", NULL);
        note_failed_version(r, version);
        snprintf(message, sizeof message, "scripts version %s rejected%s%s: %s", version,
                 cur[0] ? ", keeping version " : "", cur, err->message);
        record(r, "Warning", "ScriptReloadFailed", message);
        if (!active) set_waiting(r, message);
        /* A kind not served (yet): the same content may load once its CRD is installed. */
        if (rc == LOP_ENOTFOUND) r->retry_at = lop_clock_mono(&lop_clock_system) + RETRY_NOT_SERVED_NS;
        return rc;
    }
    r->retry_at = 0;
    lop_log(LOP_LOG_INFO, active ? "scripts reloaded" : "scripts loaded", "source", src, "version", version, "previous",
            cur[0] ? cur : "(none)", "install_ms", ms, NULL);
    snprintf(message, sizeof message, "scripts version %s active%s%s", version, cur[0] ? " (was " : "",
             cur[0] ? cur : "");
    if (cur[0]) strncat(message, ")", sizeof message - strlen(message) - 1);
    record(r, "Normal", active ? "ScriptsReloaded" : "ScriptsLoaded", message);
    pthread_mutex_lock(&r->mu);
    r->active = true;
    snprintf(r->active_version, sizeof r->active_version, "%s", version);
    pthread_mutex_unlock(&r->mu);
    set_info_check(r, r->active_check, sizeof r->active_check, "scripts-active", version);
    return LOP_OK;
}
