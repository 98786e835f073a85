/* SPDX-License-Identifier: Apache-2.0 */
/* test_metrics_auth.c — the secure-metrics filter (metrics_auth.h) against the local API server
 * in RBAC mode: 401/403/0 decisions, and the caches' TTLs stepped on a fake clock (one
 * TokenReview per token per minute, an allowed decision for five minutes, a denied one for 30 s). */
#include "apiserver/apiserver.h"
#include "host/kube/client/kubeconfig.h"
#include "host/runtime/metrics_auth.h"

#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S 1000000000LL

static lop_apiserver_t *srv;
static lop_rest_client_t *admin; /* system:masters: may create the reviews */
static lop_rest_client_t *rest_root;

static int t_post(const char *path, const char *body)
{
    lop_rest_resp_t r = LOP_REST_RESP_INIT;
    lop_err_t err;
    lop_rc_ignore(lop_rest_do(admin, "POST", path, NULL, body, strlen(body), &r, &err)); /* r.code tells */
    int code = r.code;
    lop_rest_resp_cleanup(&r);
    return code;
}

static int check(lop_metrics_auth_t *a, const char *token, char *msg, size_t n)
{
    char hdr[128];
    snprintf(hdr, sizeof hdr, "Bearer %s", token);
    return lop_metrics_auth_check(a, token ? hdr : NULL, "GET", "/metrics", msg, n);
}

static void test_decisions(void)
{
    lop_metrics_auth_t *a = lop_metrics_auth_new(admin, NULL);
    char msg[256];
    T_EQ_INT(lop_metrics_auth_check(a, NULL, "GET", "/metrics", msg, sizeof msg), 401);
    T_EQ_STR(msg, "Unauthorized");
    T_EQ_INT(lop_metrics_auth_check(a, "Basic eDp5", "GET", "/metrics", msg, sizeof msg), 401);
    T_EQ_INT(check(a, "no-such-token", msg, sizeof msg), 401);
    T_EQ_STR(msg, "Unauthorized");
    T_EQ_INT(check(a, "nobody-token", msg, sizeof msg), 403);
    T_EQ_STR(msg, "Authorization denied for user nobody");
    T_EQ_INT(check(a, "reader-token", msg, sizeof msg), 0);
    /* the path and the verb are what is authorized */
    T_EQ_INT(lop_metrics_auth_check(a, "Bearer reader-token", "GET", "/other", msg, sizeof msg), 403);
    T_EQ_INT(lop_metrics_auth_check(a, "bearer reader-token", "HEAD", "/metrics", msg, sizeof msg), 403);
    lop_metrics_auth_free(a);
}

static void test_cache_ttls(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_metrics_auth_t *a = lop_metrics_auth_new(admin, &fc.base);
    char msg[256];
    T_EQ_INT(check(a, "reader-token", msg, sizeof msg), 0);
    T_EQ_INT(lop_metrics_auth_reviews(a), 2); /* a TokenReview and a SubjectAccessReview */
    lop_fake_clock_step(&fc, 15 * S);
    T_EQ_INT(check(a, "reader-token", msg, sizeof msg), 0);
    T_EQ_INT(lop_metrics_auth_reviews(a), 2); /* a scrape 15 s later costs nothing */
    lop_fake_clock_step(&fc, (LOP_METRICS_AUTH_TOKEN_TTL_S - 15) * S);
    T_EQ_INT(check(a, "reader-token", msg, sizeof msg), 0);
    T_EQ_INT(lop_metrics_auth_reviews(a), 3); /* the token again after a minute; the allow is kept */
    lop_fake_clock_step(&fc, (LOP_METRICS_AUTH_ALLOW_TTL_S - LOP_METRICS_AUTH_TOKEN_TTL_S) * S);
    T_EQ_INT(check(a, "reader-token", msg, sizeof msg), 0);
    T_EQ_INT(lop_metrics_auth_reviews(a), 5); /* five minutes on: both again */

    /* a denial is kept 30 s: a binding made meanwhile is seen once it expires */
    T_EQ_INT(check(a, "late-token", msg, sizeof msg), 403);
    long n = lop_metrics_auth_reviews(a);
    T_EQ_INT(
        t_post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
               "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
               "\"metadata\":{\"name\":\"late\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
               "\"kind\":\"ClusterRole\",\"name\":\"reader\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"late\"}]}"),
        201);
    lop_fake_clock_step(&fc, (LOP_METRICS_AUTH_DENY_TTL_S - 1) * S);
    T_EQ_INT(check(a, "late-token", msg, sizeof msg), 403);
    T_EQ_INT(lop_metrics_auth_reviews(a), n);
    lop_fake_clock_step(&fc, 2 * S);
    T_EQ_INT(check(a, "late-token", msg, sizeof msg), 0);
    lop_metrics_auth_free(a);
}

static void test_review_failure_is_not_cached(void)
{
    lop_metrics_auth_t *a = lop_metrics_auth_new(rest_root, NULL); /* a user that may not review */
    char msg[256];
    T_EQ_INT(check(a, "reader-token", msg, sizeof msg), 401);
    T_EQ_STR(msg, "Authentication failed");
    T_EQ_INT(check(a, "reader-token", msg, sizeof msg), 401);
    T_EQ_INT(lop_metrics_auth_reviews(a), 2);
    lop_metrics_auth_free(a);
}

/* A client from kubeconfig kc (the admin's token), or from a copy of it naming token instead. */
static lop_rest_client_t *client_with(const char *kc, const char *token)
{
    char path[400], text[16384];
    snprintf(path, sizeof path, "%s%s", kc, token ? ".other" : "");
    if (token) {
        FILE *in = fopen(kc, "r"), *out = fopen(path, "w");
        size_t n = in ? fread(text, 1, sizeof text - 1, in) : 0;
        text[n] = '\0';
        char *at = strstr(text, "admin-token");
        if (!in || !out || !at) return NULL;
        fprintf(out, "%.*s%s%s", (int)(at - text), text, token, at + strlen("admin-token"));
        fclose(in);
        fclose(out);
    }
    lop_rest_config_t cfg;
    lop_err_t err;
    const char *paths[] = {path};
    if (lop_kubeconfig_load_files(paths, 1, NULL, NULL, &cfg, &err) != LOP_OK) {
        fprintf(stderr, "kubeconfig: %s\n", err.message);
        return NULL;
    }
    if (token) remove(path);
    cfg.qps = -1;
    lop_rest_client_t *c = NULL;
    if (lop_rest_client_new(&cfg, &c, &err) != LOP_OK) fprintf(stderr, "client: %s\n", err.message);
    lop_rest_config_cleanup(&cfg);
    return c;
}

int main(void)
{
    char dir[] = "/tmp/luaop-metrics-auth.XXXXXX", tokens[300], kc[300];
    if (!T_SETUP("temp dir", mkdtemp(dir) != NULL)) return T_DONE();
    snprintf(tokens, sizeof tokens, "%s/tokens", dir);
    snprintf(kc, sizeof kc, "%s/kc", dir);
    FILE *f = fopen(tokens, "w");
    if (!T_SETUP("token file", f != NULL)) return T_DONE();
    fputs("admin-token,admin,0,system:masters\nreader-token,reader,1\nnobody-token,nobody,2\n"
          "late-token,late,3\nroot-token,root,4\n",
          f);
    fclose(f);
    lop_apiserver_opts_t o = {.token_file = tokens, .authorization_mode = "RBAC", .kubeconfig_out = kc};
    lop_err_t err;
    if (!T_SETUP("apiserver", lop_apiserver_start(&o, &srv, &err) == LOP_OK)) return T_DONE();
    admin = client_with(kc, NULL);
    rest_root = client_with(kc, "root-token");
    if (!T_SETUP("clients", admin && rest_root)) return T_DONE();
    T_SETUP("reader role",
            t_post("/apis/rbac.authorization.k8s.io/v1/clusterroles",
                   "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":"
                   "\"reader\"},\"rules\":[{\"nonResourceURLs\":[\"/metrics\"],\"verbs\":[\"get\"]}]}") == 201 &&
                t_post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                       "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
                       "\"metadata\":{\"name\":\"reader\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
                       "\"kind\":\"ClusterRole\",\"name\":\"reader\"},\"subjects\":[{\"kind\":\"User\",\"name\":"
                       "\"reader\"}]}") == 201);
    T_RUN(test_decisions);
    T_RUN(test_cache_ttls);
    T_RUN(test_review_failure_is_not_cached);
    lop_rest_client_free(admin);
    lop_rest_client_free(rest_root);
    lop_apiserver_stop(srv);
    remove(tokens);
    remove(kc);
    rmdir(dir);
    return T_DONE();
}
