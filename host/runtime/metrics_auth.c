/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_auth.c — TokenReview + SubjectAccessReview for metrics scrapes, cached (see
 * metrics_auth.h). */
#include "host/runtime/metrics_auth.h"

#include "host/util/buf.h"
#include "host/util/log.h"

#include <ctype.h>
#include <jansson.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NS_PER_S 1000000000LL

typedef struct entry {
    char *key;
    int64_t expires_ns;
    bool ok;      /* authenticated / allowed */
    json_t *user; /* token cache: status.user when authenticated */
} entry_t;

typedef struct cache {
    entry_t *items;
    size_t n;
} cache_t;

struct lop_metrics_auth {
    lop_rest_client_t *rest;
    const lop_clock_t *clock;
    pthread_mutex_t mu;
    cache_t tokens, decisions;
    atomic_long reviews;
};

/* ---- caches (under mu) ---- */

static void entry_clear(entry_t *e)
{
    free(e->key);
    json_decref(e->user);
    memset(e, 0, sizeof *e);
}

static void cache_remove(cache_t *c, size_t i)
{
    entry_clear(&c->items[i]);
    memmove(&c->items[i], &c->items[i + 1], (c->n - i - 1) * sizeof *c->items);
    c->n--;
}

/* The live entry for key, or NULL (an expired one is dropped). */
static entry_t *cache_get(cache_t *c, const char *key, int64_t now)
{
    for (size_t i = 0; i < c->n; i++) {
        if (strcmp(c->items[i].key, key)) continue;
        if (c->items[i].expires_ns > now) return &c->items[i];
        cache_remove(c, i);
        return NULL;
    }
    return NULL;
}

/* Insert (or replace) key; user is borrowed (a reference is taken). Oldest first out when full. */
static void cache_put(cache_t *c, const char *key, bool ok, json_t *user, int64_t expires_ns)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->items[i].key, key)) {
            cache_remove(c, i);
            break;
        }
    if (c->n == LOP_METRICS_AUTH_MAX_ENTRIES) cache_remove(c, 0);
    if (!c->items) c->items = lop_xcalloc(LOP_METRICS_AUTH_MAX_ENTRIES, sizeof *c->items);
    entry_t *e = &c->items[c->n++];
    e->key = lop_xstrdup(key);
    e->ok = ok;
    e->user = user ? json_incref(user) : NULL;
    e->expires_ns = expires_ns;
}

static void cache_free(cache_t *c)
{
    for (size_t i = 0; i < c->n; i++) entry_clear(&c->items[i]);
    free(c->items);
}

/* ---- lifecycle ---- */

lop_metrics_auth_t *lop_metrics_auth_new(lop_rest_client_t *rest, const lop_clock_t *clock)
{
    lop_metrics_auth_t *a = lop_xcalloc(1, sizeof *a);
    a->rest = rest;
    a->clock = clock ? clock : &lop_clock_system;
    pthread_mutex_init(&a->mu, NULL);
    atomic_init(&a->reviews, 0);
    return a;
}

void lop_metrics_auth_free(lop_metrics_auth_t *a)
{
    if (!a) return;
    cache_free(&a->tokens);
    cache_free(&a->decisions);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

long lop_metrics_auth_reviews(lop_metrics_auth_t *a) { return atomic_load(&a->reviews); }

/* ---- the reviews ---- */

/* POST body to path; the response's status object (new reference), or NULL on failure (logged). */
static json_t *review(lop_metrics_auth_t *a, const char *path, json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    lop_rest_req_t req = {.method = "POST",
                          .path = path,
                          .body = text,
                          .len = strlen(text),
                          .timeout_ms = LOP_METRICS_AUTH_TIMEOUT_MS,
                          .deadline_ms = LOP_METRICS_AUTH_TIMEOUT_MS};
    lop_rest_resp_t resp = LOP_REST_RESP_INIT;
    lop_err_t err;
    atomic_fetch_add(&a->reviews, 1);
    lop_rc_t rc = lop_rest_request(a->rest, &req, &resp, &err);
    free(text);
    json_t *status = NULL;
    if (rc == LOP_OK) {
        json_t *doc = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, NULL);
        status = json_incref(json_object_get(doc, "status"));
        json_decref(doc);
        if (!json_is_object(status)) {
            json_decref(status);
            status = NULL;
            lop_err_set(&err, LOP_ERR, resp.code, NULL, "the review's answer has no status");
        }
    }
    if (!status) lop_log(LOP_LOG_ERROR, "metrics auth review failed", "path", path, "error", err.message, NULL);
    lop_rest_resp_cleanup(&resp);
    return status;
}

static void sha256_hex(const char *s, char out[65])
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)s, strlen(s), d);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* The user token authenticates as (new reference), json_null() when it does not, NULL when the
 * TokenReview failed. */
static json_t *authenticate(lop_metrics_auth_t *a, const char *token)
{
    char key[65];
    sha256_hex(token, key);
    pthread_mutex_lock(&a->mu);
    entry_t *e = cache_get(&a->tokens, key, lop_clock_mono(a->clock));
    json_t *user = e ? (e->ok ? json_incref(e->user) : json_null()) : NULL;
    pthread_mutex_unlock(&a->mu);
    if (user) return user;
    json_t *st = review(a, "/apis/authentication.k8s.io/v1/tokenreviews",
                        json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "authentication.k8s.io/v1", "kind", "TokenReview",
                                  "spec", "token", token));
    if (!st) return NULL;
    bool ok = json_is_true(json_object_get(st, "authenticated"));
    json_t *u = json_object_get(st, "user");
    user = ok && json_is_object(u) ? json_incref(u) : json_null();
    pthread_mutex_lock(&a->mu);
    cache_put(&a->tokens, key, ok, ok ? user : NULL,
              lop_clock_mono(a->clock) + LOP_METRICS_AUTH_TOKEN_TTL_S * NS_PER_S);
    pthread_mutex_unlock(&a->mu);
    json_decref(st);
    return user;
}

/* 1 allowed, 0 denied, -1 the SubjectAccessReview failed. */
static int authorize(lop_metrics_auth_t *a, const json_t *user, const char *verb, const char *path)
{
    json_t *spec = json_pack("{s:{s:s,s:s}}", "nonResourceAttributes", "path", path, "verb", verb);
    static const char *const fields[][2] = {{"username", "user"}, {"uid", "uid"}, {"groups", "groups"}};
    for (size_t i = 0; i < 3; i++) {
        json_t *v = json_object_get(user, fields[i][0]);
        if (v) json_object_set(spec, fields[i][1], v);
    }
    char *key = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    pthread_mutex_lock(&a->mu);
    entry_t *e = cache_get(&a->decisions, key, lop_clock_mono(a->clock));
    int cached = e ? (e->ok ? 1 : 0) : -1;
    pthread_mutex_unlock(&a->mu);
    if (cached >= 0) {
        free(key);
        json_decref(spec);
        return cached;
    }
    json_t *st = review(a, "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                        json_pack("{s:s,s:s,s:o}", "apiVersion", "authorization.k8s.io/v1", "kind",
                                  "SubjectAccessReview", "spec", spec));
    if (!st) {
        free(key);
        return -1;
    }
    bool ok = json_is_true(json_object_get(st, "allowed"));
    int64_t ttl = ok ? LOP_METRICS_AUTH_ALLOW_TTL_S : LOP_METRICS_AUTH_DENY_TTL_S;
    pthread_mutex_lock(&a->mu);
    cache_put(&a->decisions, key, ok, NULL, lop_clock_mono(a->clock) + ttl * NS_PER_S);
    pthread_mutex_unlock(&a->mu);
    free(key);
    json_decref(st);
    return ok ? 1 : 0;
}

int lop_metrics_auth_check(lop_metrics_auth_t *a, const char *authorization, const char *method, const char *path,
                           char *msg, size_t n)
{
    const char *token = NULL;
    if (authorization && !strncasecmp(authorization, "bearer ", 7)) {
        token = authorization + 7;
        while (*token == ' ') token++;
    }
    if (!token || !*token) {
        snprintf(msg, n, "Unauthorized");
        return 401;
    }
    json_t *user = authenticate(a, token);
    if (!user || json_is_null(user)) {
        snprintf(msg, n, "%s", user ? "Unauthorized" : "Authentication failed");
        json_decref(user);
        return 401;
    }
    char verb[16];
    size_t i = 0;
    for (; method[i] && i + 1 < sizeof verb; i++) verb[i] = (char)tolower((unsigned char)method[i]);
    verb[i] = '\0';
    const char *name = json_string_value(json_object_get(user, "username"));
    int allowed = authorize(a, user, verb, path);
    int code = allowed > 0 ? 0 : allowed == 0 ? 403 : 500;
    if (code == 403) snprintf(msg, n, "Authorization denied for user %s", name ? name : "");
    if (code == 500) snprintf(msg, n, "Authorization for user %s failed", name ? name : "");
    json_decref(user);
    return code;
}
