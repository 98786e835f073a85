/* SPDX-License-Identifier: Apache-2.0 */
/* health.c — named healthz/readyz checks (see health.h). */
#include "host/runtime/health.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 63
#define REASON_LEN   512

typedef struct check {
    char name[NAME_MAX_LEN + 1];
    lop_health_check_fn fn;
    void *ud;
} check_t;

typedef struct check_set {
    check_t *v;
    size_t n, cap;
} check_set_t;

struct lop_health {
    pthread_mutex_t mu;
    check_set_t sets[2]; /* indexed by lop_health_kind_t */
};

static bool ping(void *ud, char *reason, size_t reason_len)
{
    (void)ud, (void)reason, (void)reason_len;
    return true;
}

lop_health_t *lop_health_new(void)
{
    lop_health_t *h = lop_xcalloc(1, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    lop_rc_ignore(lop_health_add(h, LOP_HEALTHZ, "ping", ping, NULL, NULL)); /* valid name, empty set: cannot fail */
    return h;
}

void lop_health_free(lop_health_t *h)
{
    if (!h) return;
    free(h->sets[0].v);
    free(h->sets[1].v);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

const char *lop_health_kind_name(lop_health_kind_t kind) { return kind == LOP_READYZ ? "readyz" : "healthz"; }

static bool valid_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > NAME_MAX_LEN) return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')) return false;
    }
    return true;
}

static bool valid_kind(lop_health_kind_t kind) { return kind == LOP_HEALTHZ || kind == LOP_READYZ; }

static check_t *find(check_set_t *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].name, name) == 0) return &s->v[i];
    return NULL;
}

lop_rc_t lop_health_add(lop_health_t *h, lop_health_kind_t kind, const char *name, lop_health_check_fn fn, void *ud,
                        lop_err_t *err)
{
    if (!h || !valid_kind(kind) || !fn)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "health: add needs a registry, a kind and a check");
    if (!valid_name(name))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "health: invalid check name \"%s\" (1-63 of a-z 0-9 - _ .)",
                           name ? name : "(null)");
    pthread_mutex_lock(&h->mu);
    check_set_t *s = &h->sets[kind];
    if (find(s, name)) {
        pthread_mutex_unlock(&h->mu);
        return lop_err_set(err, LOP_EEXIST, 0, NULL, "health: %s check \"%s\" already registered",
                           lop_health_kind_name(kind), name);
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->v = lop_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    check_t *c = &s->v[s->n++];
    memset(c, 0, sizeof *c);
    memcpy(c->name, name, strlen(name) + 1);
    c->fn = fn;
    c->ud = ud;
    pthread_mutex_unlock(&h->mu);
    return LOP_OK;
}

lop_rc_t lop_health_remove(lop_health_t *h, lop_health_kind_t kind, const char *name)
{
    if (!h || !valid_kind(kind) || !name) return LOP_EINVAL;
    pthread_mutex_lock(&h->mu);
    check_set_t *s = &h->sets[kind];
    check_t *c = find(s, name);
    if (!c) {
        pthread_mutex_unlock(&h->mu);
        return LOP_ENOTFOUND;
    }
    size_t i = (size_t)(c - s->v);
    memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
    s->n--;
    pthread_mutex_unlock(&h->mu);
    return LOP_OK;
}

/* Run one check; on failure reason holds a single line (newlines become spaces). */
static bool run_check(const check_t *c, char *reason, size_t len)
{
    reason[0] = '\0';
    bool ok = c->fn(c->ud, reason, len);
    reason[len - 1] = '\0';
    for (char *p = reason; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    if (!ok && !reason[0]) snprintf(reason, len, "check failed");
    return ok;
}

static bool excluded(const char *name, const char *const *exclude, size_t nexclude)
{
    for (size_t i = 0; i < nexclude; i++)
        if (exclude[i] && strcmp(exclude[i], name) == 0) return true;
    return false;
}

int lop_health_run(lop_health_t *h, lop_health_kind_t kind, const char *only, bool verbose, const char *const *exclude,
                   size_t nexclude, lop_buf_t *out)
{
    if (!h || !valid_kind(kind) || !out) return 500;
    char reason[REASON_LEN];
    const char *kname = lop_health_kind_name(kind);
    pthread_mutex_lock(&h->mu);
    check_set_t *s = &h->sets[kind];

    if (only) {
        check_t *c = find(s, only);
        int status;
        if (!c) {
            lop_buf_printf(out, "%s check \"%s\" not found\n", kname, only);
            status = 404;
        } else if (run_check(c, reason, sizeof reason)) {
            lop_buf_puts(out, "ok");
            status = 200;
        } else {
            lop_buf_printf(out, "internal server error: %s\n", reason);
            status = 500;
        }
        pthread_mutex_unlock(&h->mu);
        return status;
    }

    lop_buf_t listing = LOP_BUF_INIT;
    bool failed = false;
    for (size_t i = 0; i < s->n; i++) {
        const check_t *c = &s->v[i];
        if (excluded(c->name, exclude, nexclude)) {
            lop_buf_printf(&listing, "[+]%s excluded: ok\n", c->name);
            continue;
        }
        if (run_check(c, reason, sizeof reason)) {
            lop_buf_printf(&listing, "[+]%s ok\n", c->name);
        } else {
            failed = true;
            lop_buf_printf(&listing, "[-]%s failed: %s\n", c->name, reason);
        }
    }
    pthread_mutex_unlock(&h->mu);

    if (failed || verbose) {
        if (listing.len) lop_buf_append(out, listing.data, listing.len);
        lop_buf_printf(out, "%s check %s\n", kname, failed ? "failed" : "passed");
    } else {
        lop_buf_puts(out, "ok");
    }
    lop_buf_free(&listing);
    return failed ? 500 : 200;
}

/* ---------------------------------------------------------------- ready-made checks */

void lop_health_heartbeat_init(lop_health_heartbeat_t *hb, const lop_clock_t *clock, int64_t timeout_ns,
                               const char *what)
{
    hb->clock = clock ? clock : &lop_clock_system;
    hb->timeout_ns = timeout_ns;
    atomic_init(&hb->last_ns, lop_clock_mono(hb->clock));
    snprintf(hb->what, sizeof hb->what, "%s", what ? what : "heartbeat");
}

void lop_health_heartbeat_beat(lop_health_heartbeat_t *hb)
{
    atomic_store_explicit(&hb->last_ns, lop_clock_mono(hb->clock), memory_order_relaxed);
}

bool lop_health_heartbeat_check(void *ud, char *reason, size_t reason_len)
{
    lop_health_heartbeat_t *hb = ud;
    int64_t age = lop_clock_mono(hb->clock) - atomic_load_explicit(&hb->last_ns, memory_order_relaxed);
    if (age <= hb->timeout_ns) return true;
    snprintf(reason, reason_len, "%s last beat %.1fs ago (limit %.1fs)", hb->what, (double)age / 1e9,
             (double)hb->timeout_ns / 1e9);
    return false;
}

void lop_health_flag_init(lop_health_flag_t *f, bool ok, const char *reason)
{
    pthread_mutex_init(&f->mu, NULL);
    f->ok = ok;
    snprintf(f->reason, sizeof f->reason, "%s", reason ? reason : "");
}

void lop_health_flag_cleanup(lop_health_flag_t *f) { pthread_mutex_destroy(&f->mu); }

void lop_health_flag_set(lop_health_flag_t *f, bool ok, const char *reason)
{
    pthread_mutex_lock(&f->mu);
    f->ok = ok;
    snprintf(f->reason, sizeof f->reason, "%s", reason ? reason : "");
    pthread_mutex_unlock(&f->mu);
}

bool lop_health_flag_check(void *ud, char *reason, size_t reason_len)
{
    lop_health_flag_t *f = ud;
    pthread_mutex_lock(&f->mu);
    bool ok = f->ok;
    if (!ok) snprintf(reason, reason_len, "%s", f->reason);
    pthread_mutex_unlock(&f->mu);
    return ok;
}
