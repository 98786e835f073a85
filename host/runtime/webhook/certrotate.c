/* SPDX-License-Identifier: Apache-2.0 */
/* certrotate.c — the rotation rules of the self-managed webhook certificates (certrotate.h). */
#include "host/runtime/webhook/certrotate.h"

#include "host/codec/certgen.h"
#include "host/util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lop_certrotate_action_name(lop_certrotate_action_t a)
{
    switch (a) {
    case LOP_CERTROTATE_CREATE: return "create";
    case LOP_CERTROTATE_ROTATE_CA: return "rotate-ca";
    case LOP_CERTROTATE_ISSUE_SERVING: return "issue-serving";
    case LOP_CERTROTATE_PRUNE: return "prune";
    default: return "none";
    }
}

int64_t lop_certrotate_overlap_s(int64_t ca_lifetime_s)
{
    int64_t o = ca_lifetime_s / 10;
    return o < LOP_CERTROTATE_OVERLAP_MAX_S ? o : LOP_CERTROTATE_OVERLAP_MAX_S;
}

/* The time at which less than 1/LOOKAHEAD_DIV of [made, expires] is left. */
static int64_t renew_at(int64_t made, int64_t expires)
{
    return expires - (expires - made) / LOP_CERTROTATE_LOOKAHEAD_DIV;
}

static void earliest(int64_t *next, int64_t t)
{
    if (t < *next) *next = t;
}

lop_certrotate_action_t lop_certrotate_decide(const lop_certrotate_state_t *st, int64_t now_s, int64_t *next_s)
{
    *next_s = now_s;
    if (!st->ca_ok || st->ca_expires <= now_s) return LOP_CERTROTATE_CREATE;
    int64_t ca_renew = renew_at(st->ca_made, st->ca_expires);
    if (now_s >= ca_renew) return LOP_CERTROTATE_ROTATE_CA;
    if (!st->tls_ok || st->tls_expires <= now_s || st->tls_issuer_expires <= now_s) return LOP_CERTROTATE_ISSUE_SERVING;
    int64_t next = ca_renew;
    if (!st->tls_by_current) {
        /* In the overlap nothing re-issues the serving certificate (only the new CA could sign
         * it, and not every client trusts that one yet) unless it or its CA runs out (rule 3). */
        int64_t move_at = st->ca_made + lop_certrotate_overlap_s(st->ca_expires - st->ca_made);
        if (now_s >= move_at) return LOP_CERTROTATE_ISSUE_SERVING;
        earliest(&next, move_at);
        earliest(&next, st->tls_issuer_expires);
        earliest(&next, st->tls_expires);
    } else {
        int64_t tls_renew = renew_at(st->tls_made, st->tls_expires);
        if (now_s >= tls_renew) return LOP_CERTROTATE_ISSUE_SERVING;
        earliest(&next, tls_renew);
    }
    if (st->old_ca_expires_min) {
        if (st->old_ca_expires_min <= now_s) return LOP_CERTROTATE_PRUNE;
        earliest(&next, st->old_ca_expires_min);
    }
    *next_s = next;
    return LOP_CERTROTATE_NONE;
}

void lop_cert_secret_free(lop_cert_secret_t *s)
{
    if (!s) return;
    free(s->ca_crt);
    free(s->ca_key);
    free(s->tls_crt);
    free(s->tls_key);
    memset(s, 0, sizeof *s);
}

/* The bundle's CAs after the first: earliest expiry, and the expiry of the one that signed tls. */
static void inspect_bundle(const lop_cert_secret_t *s, lop_certrotate_state_t *st)
{
    const char *pos = s->ca_crt;
    size_t len;
    const char *pem;
    bool first = true;
    while ((pem = lop_pem_next_cert(&pos, &len)) != NULL) {
        char *one = lop_xstrndup(pem, len);
        lop_cert_info_t ci;
        if (lop_cert_info(one, &ci, NULL) == LOP_OK) {
            if (!first && (!st->old_ca_expires_min || ci.not_after < st->old_ca_expires_min))
                st->old_ca_expires_min = ci.not_after;
            if (!st->tls_issuer_expires && s->tls_crt && lop_cert_signed_by(s->tls_crt, one)) {
                st->tls_issuer_expires = ci.not_after;
                st->tls_by_current = first;
            }
        }
        free(one);
        first = false;
    }
}

void lop_certrotate_inspect(const lop_certrotate_config_t *cfg, const lop_cert_secret_t *s, lop_certrotate_state_t *st)
{
    memset(st, 0, sizeof *st);
    lop_cert_info_t ci;
    if (s->ca_crt && s->ca_key && lop_cert_info(s->ca_crt, &ci, NULL) == LOP_OK && ci.is_ca &&
        lop_cert_key_matches(s->ca_crt, s->ca_key)) {
        st->ca_ok = true;
        st->ca_made = ci.not_before + LOP_CERTGEN_BACKDATE_S;
        st->ca_expires = ci.not_after;
    }
    if (s->tls_crt && s->tls_key && lop_cert_info(s->tls_crt, &ci, NULL) == LOP_OK &&
        lop_cert_key_matches(s->tls_crt, s->tls_key) && strcmp(ci.sans, cfg->sans) == 0) {
        st->tls_ok = true;
        st->tls_made = ci.not_before + LOP_CERTGEN_BACKDATE_S;
        st->tls_expires = ci.not_after;
    }
    if (st->ca_ok) inspect_bundle(s, st);
}

static void replace(char **slot, char *v)
{
    free(*slot);
    *slot = v;
}

/* The serving CN: cfg->cn, or the first DNS name of the SANs. */
static void serving_cn(const lop_certrotate_config_t *cfg, char *buf, size_t len)
{
    if (cfg->cn) {
        snprintf(buf, len, "%s", cfg->cn);
        return;
    }
    const char *d = strstr(cfg->sans, "DNS:");
    const char *v = d ? d + 4 : cfg->sans;
    size_t n = strcspn(v, ",");
    snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), v);
}

static lop_rc_t issue_serving(const lop_certrotate_config_t *cfg, lop_cert_secret_t *s, int64_t now_s, lop_err_t *err)
{
    lop_cert_pair_t ca = {s->ca_crt, s->ca_key}, srv = {0};
    char cn[256];
    serving_cn(cfg, cn, sizeof cn);
    lop_rc_t rc = lop_certgen_serving_at(&ca, cn, cfg->sans, now_s, cfg->cert_validity_s, &srv, err);
    if (rc != LOP_OK) return rc;
    replace(&s->tls_crt, srv.cert_pem);
    replace(&s->tls_key, srv.key_pem);
    return LOP_OK;
}

/* A new CA; keep_old puts the bundle's still valid CAs behind it. */
static lop_rc_t new_ca(const lop_certrotate_config_t *cfg, lop_cert_secret_t *s, int64_t now_s, bool keep_old,
                       lop_err_t *err)
{
    lop_cert_pair_t ca = {0};
    lop_rc_t rc =
        lop_certgen_ca_at(cfg->ca_name ? cfg->ca_name : "luaop-webhook-ca", now_s, cfg->ca_validity_s, &ca, err);
    if (rc != LOP_OK) return rc;
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, ca.cert_pem);
    const char *pos = keep_old ? s->ca_crt : NULL;
    size_t len;
    const char *pem;
    while ((pem = lop_pem_next_cert(&pos, &len)) != NULL) {
        char *one = lop_xstrndup(pem, len);
        int64_t na;
        if (lop_cert_not_after(one, &na, NULL) == LOP_OK && na > now_s) lop_buf_append(&b, pem, len);
        free(one);
    }
    free(ca.cert_pem);
    replace(&s->ca_crt, lop_buf_steal(&b));
    replace(&s->ca_key, ca.key_pem);
    return LOP_OK;
}

/* Drop the bundle's expired CAs (the first, current one always stays). */
static void prune(lop_cert_secret_t *s, int64_t now_s)
{
    lop_buf_t b = LOP_BUF_INIT;
    const char *pos = s->ca_crt;
    size_t len;
    const char *pem;
    bool first = true;
    while ((pem = lop_pem_next_cert(&pos, &len)) != NULL) {
        char *one = lop_xstrndup(pem, len);
        int64_t na;
        if (first || (lop_cert_not_after(one, &na, NULL) == LOP_OK && na > now_s)) lop_buf_append(&b, pem, len);
        free(one);
        first = false;
    }
    replace(&s->ca_crt, lop_buf_steal(&b));
}

static lop_rc_t act(const lop_certrotate_config_t *cfg, lop_cert_secret_t *s, lop_certrotate_action_t a, int64_t now_s,
                    lop_err_t *err)
{
    switch (a) {
    case LOP_CERTROTATE_CREATE: {
        lop_rc_t rc = new_ca(cfg, s, now_s, false, err);
        return rc == LOP_OK ? issue_serving(cfg, s, now_s, err) : rc;
    }
    case LOP_CERTROTATE_ROTATE_CA: return new_ca(cfg, s, now_s, true, err);
    case LOP_CERTROTATE_ISSUE_SERVING: return issue_serving(cfg, s, now_s, err);
    case LOP_CERTROTATE_PRUNE: prune(s, now_s); return LOP_OK;
    default: return LOP_OK;
    }
}

static char *dup_or_null(const char *s) { return s ? lop_xstrdup(s) : NULL; }

lop_rc_t lop_certrotate_apply(const lop_certrotate_config_t *cfg, lop_cert_secret_t *s, int64_t now_s, bool *changed,
                              int64_t *next_s, char *what, size_t what_len, lop_err_t *err)
{
    *changed = false;
    if (what && what_len) what[0] = '\0';
    lop_cert_secret_t work = {dup_or_null(s->ca_crt), dup_or_null(s->ca_key), dup_or_null(s->tls_crt),
                              dup_or_null(s->tls_key)};
    lop_rc_t rc = LOP_OK;
    /* Each action makes its rule false, and none makes an earlier one true: a handful of steps. */
    for (int step = 0; step < 6; step++) {
        lop_certrotate_state_t st;
        lop_certrotate_inspect(cfg, &work, &st);
        lop_certrotate_action_t a = lop_certrotate_decide(&st, now_s, next_s);
        if (a == LOP_CERTROTATE_NONE) break;
        rc = act(cfg, &work, a, now_s, err);
        if (rc != LOP_OK) break;
        *changed = true;
        if (what && what_len) {
            size_t n = strlen(what);
            snprintf(what + n, what_len - n, "%s%s", n ? "," : "", lop_certrotate_action_name(a));
        }
    }
    if (rc != LOP_OK) {
        *changed = false;
        lop_cert_secret_free(&work);
        return rc;
    }
    lop_cert_secret_free(s);
    *s = work;
    return LOP_OK;
}
