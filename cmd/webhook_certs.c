/* SPDX-License-Identifier: Apache-2.0 */
/* webhook_certs.c — self-managed webhook certificates in the operator process: the Secret
 * watched by every replica and projected into the cert dir, the rotator run by the leader
 * (webhook_certs.h). */
#include "host/kube/cache/rest_listwatch.h"
#include "cmd/webhook_certs.h"

#include "host/kube/cache/informer.h"
#include "host/codec/certgen.h"
#include "host/runtime/webhook/certrotator.h"
#include "host/util/buf.h"
#include "host/util/clock.h"
#include "host/util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A failed rotation or injection is tried again this soon (seconds). */
#define RETRY_S 2

struct lop_op_certs {
    char ns[256], name[256];
    char dir[256];
    int wake_fd;
    lop_certrotator_t *rot;
    lop_informer_t *inf;
    pthread_mutex_t mu;     /* the fields below, written by the informer thread */
    lop_cert_secret_t seen; /* the Secret as last seen (NULL fields while missing) */
    bool seen_changed;
    /* main thread */
    char *written_crt, *written_key; /* the pair in dir ("" = none yet) */
    unsigned version;
    int64_t due_ns; /* the leader's next rotation/injection check (monotonic) */
    bool crds_changed;
    char last_error[sizeof((lop_err_t *)0)->message];
};

/* ------------------------------------------------------------------ the Secret, every replica */

static void secret_seen(lop_op_certs_t *c, const lop_obj_t *o)
{
    lop_cert_secret_t s = {0};
    json_t *obj = o ? json_loadb(o->json, o->json_len, 0, NULL) : NULL;
    if (obj) lop_cert_secret_from_json(obj, &s);
    json_decref(obj);
    pthread_mutex_lock(&c->mu);
    lop_cert_secret_free(&c->seen);
    c->seen = s;
    c->seen_changed = true;
    pthread_mutex_unlock(&c->mu);
    if (c->wake_fd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(c->wake_fd, &one, sizeof one);
        (void)w;
    }
}
static void secret_add(void *ud, lop_obj_t *o) { secret_seen(ud, o); }
static void secret_update(void *ud, lop_obj_t *old, lop_obj_t *o)
{
    (void)old;
    secret_seen(ud, o);
}
static void secret_delete(void *ud, lop_obj_t *o, bool tombstone)
{
    (void)o;
    (void)tombstone;
    secret_seen(ud, NULL);
}

static lop_rc_t watch_secret(lop_op_certs_t *c, lop_rest_client_t *rest, lop_restmapper_t *mapper, lop_err_t *err)
{
    lop_rest_mapping_t mp;
    lop_rc_t rc = lop_restmapper_resolve(mapper, "v1", "Secret", &mp, err);
    if (rc != LOP_OK) return rc;
    char sel[300], iname[600];
    snprintf(sel, sizeof sel, "metadata.name=%s", c->name);
    snprintf(iname, sizeof iname, "webhook certificate secret %s/%s", c->ns, c->name);
    lop_listwatch_t *lw = lop_rest_listwatch_new(rest, &mp, c->ns, NULL, sel);
    if (!lw) return lop_err_set(err, LOP_ERR, 0, NULL, "cannot watch secret %s/%s", c->ns, c->name);
    lop_informer_config_t ic = {.name = iname, .lw = lw};
    c->inf = lop_informer_new(&ic, err);
    free(lw); /* the informer owns its ud */
    if (!c->inf) return LOP_ERR;
    lop_reflector_handlers_t h = {secret_add, secret_update, secret_delete, c, NULL};
    lop_informer_add_handler(c->inf, &h);
    return lop_informer_start(c->inf, err);
}

static bool write_file(const char *path, const char *data)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    size_t n = strlen(data);
    bool ok = write(fd, data, n) == (ssize_t)n;
    return close(fd) == 0 && ok;
}

static void remove_version(const char *dir, unsigned v)
{
    char p[400];
    static const char *const files[] = {"tls.crt", "tls.key"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/..%u/%s", dir, v, files[i]);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/..%u", dir, v);
    rmdir(p);
}

/* Project the pair into dir as kubelet does: ..<n>/ with the files, ..data -> ..<n> renamed over
 * the old link in one step, tls.crt -> ..data/tls.crt (made once). */
static bool project(lop_op_certs_t *c, const char *crt, const char *key)
{
    unsigned v = c->version + 1;
    char vdir[300], p[400], tmp[300], data[300];
    snprintf(vdir, sizeof vdir, "%s/..%u", c->dir, v);
    if (mkdir(vdir, 0700) != 0 && errno != EEXIST) return false;
    snprintf(p, sizeof p, "%s/tls.crt", vdir);
    bool ok = write_file(p, crt);
    snprintf(p, sizeof p, "%s/tls.key", vdir);
    ok = ok && write_file(p, key);
    snprintf(tmp, sizeof tmp, "%s/..data_tmp", c->dir);
    snprintf(data, sizeof data, "%s/..data", c->dir);
    char target[32];
    snprintf(target, sizeof target, "..%u", v);
    unlink(tmp);
    ok = ok && symlink(target, tmp) == 0 && rename(tmp, data) == 0;
    if (!ok) {
        remove_version(c->dir, v);
        return false;
    }
    static const char *const files[] = {"tls.crt", "tls.key"};
    for (int i = 0; i < 2; i++) {
        char link[300], to[64];
        snprintf(link, sizeof link, "%s/%s", c->dir, files[i]);
        snprintf(to, sizeof to, "..data/%s", files[i]);
        if (symlink(to, link) != 0 && errno != EEXIST) return false;
    }
    if (c->version) remove_version(c->dir, c->version);
    c->version = v;
    return true;
}

/* Write the pair into dir when it differs from the one there. */
static void serve_pair(lop_op_certs_t *c, const char *crt, const char *key)
{
    if (!crt || !key || !*crt || !*key) return;
    if (c->written_crt && strcmp(c->written_crt, crt) == 0 && strcmp(c->written_key, key) == 0) return;
    if (!project(c, crt, key)) {
        lop_log(LOP_LOG_ERROR, "cannot write the webhook certificate into its directory", "dir", c->dir, "error",
                strerror(errno), NULL);
        return;
    }
    free(c->written_crt);
    free(c->written_key);
    c->written_crt = lop_xstrdup(crt);
    c->written_key = lop_xstrdup(key);
    lop_cert_info_t ci;
    char serial[64] = "";
    if (lop_cert_info(crt, &ci, NULL) == LOP_OK) snprintf(serial, sizeof serial, "%s", ci.serial);
    lop_log(LOP_LOG_INFO, "webhook serving certificate from the Secret", "secret", c->name, "serial", serial, NULL);
}

/* ------------------------------------------------------------------ the leader */

static void leader_step(lop_op_certs_t *c)
{
    int64_t now = lop_clock_mono(&lop_clock_system);
    lop_err_t err;
    lop_err_clear(&err);
    lop_cert_secret_t s;
    int64_t next = now + RETRY_S * LOP_NS_PER_S;
    bool wrote = false;
    lop_rc_t rc = lop_certrotator_rotate(c->rot, &s, &next, &wrote, &err);
    if (rc == LOP_OK) {
        serve_pair(c, s.tls_crt, s.tls_key); /* the leader need not wait for its own watch event */
        int updated = 0;
        rc = lop_certrotator_inject(c->rot, s.ca_crt ? s.ca_crt : "", &updated, &err);
        lop_cert_secret_free(&s);
    }
    int64_t resync = now + LOP_OP_CERTS_RESYNC_S * LOP_NS_PER_S;
    if (rc != LOP_OK) {
        if (strcmp(c->last_error, err.message) != 0 && rc != LOP_ECONFLICT && rc != LOP_EEXIST)
            lop_log(LOP_LOG_WARN, "webhook certificates: will retry", "secret", c->name, "error", err.message, NULL);
        snprintf(c->last_error, sizeof c->last_error, "%s", err.message);
        next = now + RETRY_S * LOP_NS_PER_S;
    } else {
        c->last_error[0] = '\0';
        c->crds_changed = false;
    }
    c->due_ns = next < resync ? next : resync;
}

bool lop_op_certs_tick(lop_op_certs_t *c, bool leading)
{
    pthread_mutex_lock(&c->mu);
    bool changed = c->seen_changed;
    c->seen_changed = false;
    lop_cert_secret_t s = {0};
    if (changed) {
        s.tls_crt = c->seen.tls_crt ? lop_xstrdup(c->seen.tls_crt) : NULL;
        s.tls_key = c->seen.tls_key ? lop_xstrdup(c->seen.tls_key) : NULL;
    }
    pthread_mutex_unlock(&c->mu);
    if (changed) serve_pair(c, s.tls_crt, s.tls_key);
    lop_cert_secret_free(&s);
    if (leading && (changed || c->crds_changed || lop_clock_mono(&lop_clock_system) >= c->due_ns)) leader_step(c);
    return c->written_crt != NULL;
}

/* ------------------------------------------------------------------ set-up */

static lop_rc_t split_ns_name(const char *v, char *ns, size_t nlen, char *name, size_t len, lop_err_t *err)
{
    const char *slash = strchr(v, '/');
    if (!slash || slash == v || !slash[1] || strchr(slash + 1, '/') || (size_t)(slash - v) >= nlen ||
        strlen(slash + 1) >= len)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "--webhook-cert-secret \"%s\": expected NAMESPACE/NAME", v);
    snprintf(ns, nlen, "%.*s", (int)(slash - v), v);
    snprintf(name, len, "%s", slash + 1);
    return LOP_OK;
}

static lop_rc_t make_dir(lop_op_certs_t *c, lop_err_t *err)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(c->dir, sizeof c->dir, "%s/luaop-webhook-certs-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(c->dir)) return LOP_OK;
    c->dir[0] = '\0';
    return lop_err_set(err, LOP_ERR, 0, NULL, "cannot make a temporary certificate directory: %s", strerror(errno));
}

lop_rc_t lop_op_certs_new(const lop_run_opts_t *o, lop_rest_client_t *rest, lop_restmapper_t *mapper, int wake_fd,
                          lop_op_certs_t **out, lop_err_t *err)
{
    *out = NULL;
    lop_op_certs_t *c = lop_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->wake_fd = wake_fd;
    lop_rc_t rc = split_ns_name(o->webhook_cert_secret, c->ns, sizeof c->ns, c->name, sizeof c->name, err);
    if (rc == LOP_OK && (o->webhook_ca_validity_ns < LOP_NS_PER_S || o->webhook_cert_validity_ns < LOP_NS_PER_S))
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "--webhook-ca-validity and --webhook-cert-validity must be >= 1s");
    if (rc == LOP_OK) rc = make_dir(c, err);
    if (rc != LOP_OK) {
        lop_op_certs_free(c);
        return rc;
    }
    const char *svc = o->webhook_service_name ? o->webhook_service_name : "luaop-webhook-service";
    const char *svc_ns = o->webhook_service_namespace ? o->webhook_service_namespace : c->ns;
    char sans[800];
    snprintf(sans, sizeof sans, "DNS:%s.%s.svc,DNS:%s.%s.svc.cluster.local", svc, svc_ns, svc, svc_ns);
    lop_certrotator_config_t rc_cfg = {
        .rest = rest,
        .secret_namespace = c->ns,
        .secret_name = c->name,
        .certs = {.sans = sans,
                  .ca_validity_s = o->webhook_ca_validity_ns / LOP_NS_PER_S,
                  .cert_validity_s = o->webhook_cert_validity_ns / LOP_NS_PER_S},
        .mutating_config = o->webhook_mutating_config,
        .validating_config = o->webhook_validating_config,
    };
    c->rot = lop_certrotator_new(&rc_cfg);
    rc = watch_secret(c, rest, mapper, err);
    if (rc != LOP_OK) {
        lop_op_certs_free(c);
        return rc;
    }
    lop_log(LOP_LOG_INFO, "self-managed webhook certificates", "secret", o->webhook_cert_secret, "names", sans, "dir",
            c->dir, NULL);
    *out = c;
    return LOP_OK;
}

const char *lop_op_certs_dir(const lop_op_certs_t *c) { return c->dir; }

void lop_op_certs_set_crds(lop_op_certs_t *c, const char *const *groups, const char *const *kinds, size_t n)
{
    lop_certrotator_set_crds(c->rot, groups, kinds, n);
    c->crds_changed = true;
}

void lop_op_certs_free(lop_op_certs_t *c)
{
    if (!c) return;
    if (c->inf) lop_informer_stop(c->inf);
    lop_informer_free(c->inf);
    lop_certrotator_free(c->rot);
    if (c->dir[0]) {
        char p[400];
        static const char *const names[] = {"tls.crt", "tls.key", "..data", "..data_tmp"};
        for (int i = 0; i < 4; i++) {
            snprintf(p, sizeof p, "%s/%s", c->dir, names[i]);
            unlink(p);
        }
        if (c->version) remove_version(c->dir, c->version);
        rmdir(c->dir);
    }
    lop_cert_secret_free(&c->seen);
    free(c->written_crt);
    free(c->written_key);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
