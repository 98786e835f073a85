/* SPDX-License-Identifier: Apache-2.0 */
/* as_authn.c — who a request is: static tokens, minted service-account tokens, client
 * certificates (see as_authn.h). */
#include "apiserver/as_authn.h"

#include "apiserver/as_registry.h"
#include "apiserver/as_store.h"
#include "apiserver/as_util.h"

#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct as_token {
    char *token;
    as_user_t *user; /* static tokens */
    /* minted service-account tokens (user NULL) */
    char *sa_ns, *sa_name, *sa_uid;
    int64_t expires; /* unix seconds */
    json_t *auds;    /* array of strings */
} as_token_t;

struct as_authn {
    as_token_t *tokens;
    size_t n, cap;
    size_t nstatic;    /* tokens[0..nstatic) came from the file or were made at start */
    const char *kc;    /* the kubeconfig's token, or NULL */
    bool from_file;    /* a token file was given */
    bool admin_minted; /* RBAC: an admin token was made at start */
};

/* ---- users ---- */

as_user_t *as_user_new(const char *name, const char *uid)
{
    as_user_t *u = lop_xcalloc(1, sizeof *u);
    u->name = lop_xstrdup(name ? name : "");
    u->uid = lop_xstrdup(uid ? uid : "");
    return u;
}

void as_user_add_group(as_user_t *u, const char *group)
{
    if (!group || !*group || as_user_in_group(u, group)) return;
    u->groups = lop_xrealloc(u->groups, (u->ngroups + 1) * sizeof *u->groups);
    u->groups[u->ngroups++] = lop_xstrdup(group);
}

bool as_user_in_group(const as_user_t *u, const char *group)
{
    for (size_t i = 0; i < u->ngroups; i++)
        if (!strcmp(u->groups[i], group)) return true;
    return false;
}

void as_user_free(as_user_t *u)
{
    if (!u) return;
    for (size_t i = 0; i < u->ngroups; i++) free(u->groups[i]);
    free(u->groups);
    free(u->name);
    free(u->uid);
    free(u);
}

static as_user_t *user_dup(const as_user_t *src)
{
    as_user_t *u = as_user_new(src->name, src->uid);
    for (size_t i = 0; i < src->ngroups; i++) as_user_add_group(u, src->groups[i]);
    return u;
}

json_t *as_user_json(const as_user_t *u)
{
    json_t *o = json_object(), *g = json_array();
    json_object_set_new(o, "username", json_string(u->name));
    if (u->uid[0]) json_object_set_new(o, "uid", json_string(u->uid));
    for (size_t i = 0; i < u->ngroups; i++) json_array_append_new(g, json_string(u->groups[i]));
    json_object_set_new(o, "groups", g);
    return o;
}

/* ---- the token table ---- */

static as_token_t *token_add(struct as_authn *a, const char *token)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->tokens = lop_xrealloc(a->tokens, a->cap * sizeof *a->tokens);
    }
    as_token_t *t = &a->tokens[a->n++];
    memset(t, 0, sizeof *t);
    t->token = lop_xstrdup(token);
    return t;
}

static void random_token(const char *prefix, char *out, size_t n)
{
    unsigned char b[24];
    if (RAND_bytes(b, sizeof b) != 1)
        for (size_t i = 0; i < sizeof b; i++) b[i] = (unsigned char)rand();
    size_t o = (size_t)snprintf(out, n, "%s", prefix);
    for (size_t i = 0; i < sizeof b && o + 2 < n; i++, o += 2) snprintf(out + o, n - o, "%02x", b[i]);
}

/* One CSV field of line at *p (double quotes group commas, "" is a quote); *p moves past it. */
static char *csv_field(const char **p)
{
    lop_buf_t b = LOP_BUF_INIT;
    const char *s = *p;
    bool quoted = *s == '"';
    if (quoted) s++;
    for (; *s; s++) {
        if (quoted && *s == '"') {
            if (s[1] == '"') {
                lop_buf_putc(&b, '"');
                s++;
                continue;
            }
            quoted = false;
            continue;
        }
        if (!quoted && *s == ',') break;
        lop_buf_putc(&b, *s);
    }
    *p = *s == ',' ? s + 1 : s;
    char *out = lop_xstrdup(b.data ? b.data : "");
    lop_buf_free(&b);
    return out;
}

/* One token-file line (trimmed, not empty). */
static void static_line(struct as_authn *a, const char *line)
{
    const char *p = line;
    char *f[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4 && (i == 0 || *p); i++) f[i] = csv_field(&p);
    as_token_t *t = token_add(a, f[0]);
    if (!f[1]) { /* a bare token: the admin */
        t->user = as_user_new("admin", "");
        as_user_add_group(t->user, "system:masters");
    } else {
        t->user = as_user_new(f[1], f[2]);
        for (const char *g = f[3]; g && *g;) {
            char *one = csv_field(&g);
            as_user_add_group(t->user, one);
            free(one);
        }
    }
    as_user_add_group(t->user, "system:authenticated");
    for (int i = 0; i < 4; i++) free(f[i]);
}

static lop_rc_t read_token_file(struct as_authn *a, const char *path, lop_err_t *err)
{
    FILE *f = fopen(path, "r");
    if (!f) return lop_err_set(err, LOP_EINVAL, 0, NULL, "token file %s: %s", path, strerror(errno));
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ')) line[--n] = '\0';
        if (!n || line[0] == '#') continue;
        static_line(a, line);
    }
    fclose(f);
    if (a->n == 0) return lop_err_set(err, LOP_EINVAL, 0, NULL, "token file %s holds no token", path);
    return LOP_OK;
}

lop_rc_t as_authn_init(lop_apiserver_t *srv, const char *token_file, bool rbac, lop_err_t *err)
{
    struct as_authn *a = lop_xcalloc(1, sizeof *a);
    srv->authn = a;
    if (token_file) {
        if (read_token_file(a, token_file, err) != LOP_OK) return LOP_EINVAL;
        a->from_file = true;
        a->kc = a->tokens[0].token;
    }
    if (rbac) {
        a->kc = NULL;
        for (size_t i = 0; i < a->n && !a->kc; i++)
            if (as_user_in_group(a->tokens[i].user, "system:masters")) a->kc = a->tokens[i].token;
        if (!a->kc) {
            char tok[64];
            random_token("luaop-admin.", tok, sizeof tok);
            as_token_t *t = token_add(a, tok);
            t->user = as_user_new("admin", "");
            as_user_add_group(t->user, "system:masters");
            as_user_add_group(t->user, "system:authenticated");
            a->kc = t->token;
            a->admin_minted = true;
        }
    }
    a->nstatic = a->n;
    return LOP_OK;
}

void as_authn_free(lop_apiserver_t *srv)
{
    struct as_authn *a = srv->authn;
    if (!a) return;
    for (size_t i = 0; i < a->n; i++) {
        as_token_t *t = &a->tokens[i];
        free(t->token);
        as_user_free(t->user);
        free(t->sa_ns);
        free(t->sa_name);
        free(t->sa_uid);
        json_decref(t->auds);
    }
    free(a->tokens);
    free(a);
    srv->authn = NULL;
}

const char *as_authn_kubeconfig_token(const lop_apiserver_t *srv) { return srv->authn ? srv->authn->kc : NULL; }

bool as_authn_required(const lop_apiserver_t *srv)
{
    return srv->client_ca || (srv->authn && (srv->authn->from_file || srv->authn->admin_minted));
}

/* ---- lookups ---- */

/* Whether t may be used for one of wanted (array; NULL or empty = the API audience); *hit (when
 * not NULL) gets the ones it may (new reference). */
static bool audiences_match(const as_token_t *t, const json_t *wanted, json_t **hit)
{
    json_t *api = NULL;
    if (!wanted || !json_array_size(wanted)) wanted = api = json_pack("[s]", AS_API_AUDIENCE);
    json_t *out = json_array();
    size_t i, j;
    json_t *w, *have;
    json_array_foreach(wanted, i, w)
    {
        if (!t->auds) {
            if (json_is_string(w) && !strcmp(json_string_value(w), AS_API_AUDIENCE)) json_array_append(out, w);
            continue;
        }
        json_array_foreach(t->auds, j, have)
        {
            if (json_equal(w, have)) {
                json_array_append(out, w);
                break;
            }
        }
    }
    json_decref(api);
    bool ok = json_array_size(out) > 0;
    if (ok && hit)
        *hit = out;
    else
        json_decref(out);
    return ok;
}

/* A minted token's account still exists with the uid it had. */
static bool account_alive(lop_apiserver_t *srv, const as_token_t *t)
{
    as_coll_t *c = as_coll_get(srv, "", "serviceaccounts", false);
    char key[600];
    snprintf(key, sizeof key, "%s/%s", t->sa_ns, t->sa_name);
    as_entry_t *e = c ? as_store_find(c, key) : NULL;
    const char *uid = e ? e->wire->facts->uid : NULL;
    return uid && !strcmp(uid, t->sa_uid);
}

static as_user_t *sa_user(const as_token_t *t)
{
    char name[600], group[300];
    snprintf(name, sizeof name, "system:serviceaccount:%s:%s", t->sa_ns, t->sa_name);
    snprintf(group, sizeof group, "system:serviceaccounts:%s", t->sa_ns);
    as_user_t *u = as_user_new(name, t->sa_uid);
    as_user_add_group(u, "system:serviceaccounts");
    as_user_add_group(u, group);
    as_user_add_group(u, "system:authenticated");
    return u;
}

as_user_t *as_authn_token(lop_apiserver_t *srv, const char *token, const json_t *audiences, json_t **auds_out)
{
    struct as_authn *a = srv->authn;
    for (size_t i = 0; a && token && i < a->n; i++) {
        as_token_t *t = &a->tokens[i];
        if (strcmp(t->token, token)) continue;
        if (!t->user && ((int64_t)time(NULL) >= t->expires || !account_alive(srv, t))) return NULL;
        if (!audiences_match(t, audiences, auds_out)) return NULL;
        return t->user ? user_dup(t->user) : sa_user(t);
    }
    return NULL;
}

const char *as_authn_mint_sa(lop_apiserver_t *srv, const char *ns, const char *name, const char *sa_uid,
                             const json_t *audiences, int64_t expiration_s, int64_t *expires_out)
{
    char tok[80];
    random_token("luaop-sa.", tok, sizeof tok);
    as_token_t *t = token_add(srv->authn, tok);
    t->sa_ns = lop_xstrdup(ns);
    t->sa_name = lop_xstrdup(name);
    t->sa_uid = lop_xstrdup(sa_uid ? sa_uid : "");
    t->expires = (int64_t)time(NULL) + expiration_s;
    t->auds = audiences && json_array_size(audiences) ? json_deep_copy(audiences) : NULL;
    *expires_out = t->expires;
    return t->token;
}

/* The verified client certificate's subject as a user (CN, each O a group), or NULL. */
static as_user_t *cert_user(as_req_t *q)
{
    struct evhttp_connection *conn = evhttp_request_get_connection(q->r);
    struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
    SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
    X509 *cert = ssl ? SSL_get1_peer_certificate(ssl) : NULL;
    if (!cert || SSL_get_verify_result(ssl) != X509_V_OK) {
        X509_free(cert);
        return NULL;
    }
    X509_NAME *subj = X509_get_subject_name(cert);
    char cn[256] = "";
    X509_NAME_get_text_by_NID(subj, NID_commonName, cn, sizeof cn);
    as_user_t *u = as_user_new(cn, "");
    for (int i = -1; (i = X509_NAME_get_index_by_NID(subj, NID_organizationName, i)) >= 0;) {
        ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i));
        unsigned char *utf8 = NULL;
        if (ASN1_STRING_to_UTF8(&utf8, d) >= 0 && utf8) as_user_add_group(u, (const char *)utf8);
        OPENSSL_free(utf8);
    }
    as_user_add_group(u, "system:authenticated");
    X509_free(cert);
    return u;
}

as_user_t *as_authn_request(as_req_t *q)
{
    lop_apiserver_t *srv = q->srv;
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(q->r), "Authorization");
    const char *bearer = auth && !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : NULL;
    as_user_t *u = bearer ? as_authn_token(srv, bearer, NULL, NULL) : NULL;
    if (!u && srv->client_ca && srv->ssl) u = cert_user(q);
    if (u || as_authn_required(srv)) return u;
    u = as_user_new("admin", ""); /* no credentials configured: everyone is the admin */
    as_user_add_group(u, "system:masters");
    as_user_add_group(u, "system:authenticated");
    return u;
}
