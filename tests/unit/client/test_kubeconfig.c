/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for host/kube/kubeconfig and auth: parsing, $KUBECONFIG merging (first wins),
 * relative paths, errors naming file and field, token files, exec plugins, in-cluster config
 * (client-go tools/clientcmd, rest.InClusterConfig). Files are written to a fresh temporary directory.
 */
#include "host/kube/client/kubeconfig.h"
#include "host/util/log.h"
#include "t.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>
#include <jansson.h>

static char dir[256];

static const char *path_of(const char *name)
{
    static char bufs[8][512];
    static int i;
    char *b = bufs[i++ % 8];
    snprintf(b, 512, "%s/%s", dir, name);
    return b;
}

static void write_file(const char *name, const char *content, int mode)
{
    const char *p = path_of(name);
    FILE *f = fopen(p, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", p);
        return;
    }
    fputs(content, f);
    fclose(f);
    if (mode) chmod(p, (mode_t)mode);
}

static lop_rc_t load1(const char *name, const char *ctx, lop_rest_config_t *cfg, lop_err_t *err)
{
    const char *p = path_of(name);
    return lop_kubeconfig_load_files(&p, 1, ctx, NULL, cfg, err);
}

/* "-----BEGIN CERTIFICATE-----\nCA\n" in base64 */
#define CA_PEM "-----BEGIN CERTIFICATE-----\nCA\n"
#define CA_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg=="

static void test_basic_fields(void)
{
    write_file("ca.pem", "FROM-FILE", 0);
    write_file("basic.yaml",
               "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
               "clusters:\n"
               "- name: c1\n  cluster:\n    server: https://127.0.0.1:6443/\n"
               "    certificate-authority-data: " CA_B64 "\n    certificate-authority: ca.pem\n"
               "    tls-server-name: kubernetes.default\n    proxy-url: http://proxy.example:3128\n"
               "users:\n- name: u1\n  user:\n    token: abc\n    as: alice\n    as-uid: \"42\"\n"
               "    as-groups: [g1, g2]\n    as-user-extra:\n      scopes: [view, edit]\n"
               "contexts:\n- name: dev\n  context: {cluster: c1, user: u1, namespace: team}\n"
               "- name: other\n  context: {cluster: c1, user: u1}\n",
               0);
    lop_rest_config_t cfg;
    lop_err_t err;
    T_EQ_INT(load1("basic.yaml", NULL, &cfg, &err), LOP_OK);
    T_EQ_STR(cfg.server, "https://127.0.0.1:6443");
    T_EQ_STR(cfg.ca_pem, CA_PEM); /* data wins over the file */
    T_EQ_STR(cfg.tls_server_name, "kubernetes.default");
    T_EQ_STR(cfg.proxy_url, "http://proxy.example:3128");
    T_EQ_STR(cfg.namespace, "team");
    T_EQ_STR(cfg.context, "dev");
    T_CHECK(!cfg.insecure);
    T_EQ_STR(cfg.impersonate_user, "alice");
    T_EQ_STR(cfg.impersonate_uid, "42");
    T_EQ_INT(cfg.n_impersonate_groups, 2);
    T_EQ_STR(cfg.impersonate_groups[1], "g2");
    T_EQ_INT(cfg.n_impersonate_extra, 2);
    T_EQ_STR(cfg.impersonate_extra[0], "scopes=view");
    lop_auth_cred_t cred;
    T_EQ_INT(lop_auth_get(cfg.auth, &cred, &err), LOP_OK);
    T_EQ_STR(cred.token, "abc");
    lop_auth_cred_cleanup(&cred);
    lop_rest_config_cleanup(&cfg);

    /* --context override; no namespace → "default" */
    T_EQ_INT(load1("basic.yaml", "other", &cfg, &err), LOP_OK);
    T_EQ_STR(cfg.namespace, "default");
    T_EQ_STR(cfg.context, "other");
    lop_rest_config_cleanup(&cfg);
}

static void test_merge_first_wins_and_relative_paths(void)
{
    mkdir(path_of("a"), 0755);
    mkdir(path_of("b"), 0755);
    write_file("a/ca.pem", "CA-A", 0);
    write_file("b/ca.pem", "CA-B", 0);
    write_file("a/config",
               "clusters:\n- name: shared\n  cluster: {server: 'https://a:1', certificate-authority: ca.pem}\n"
               "users:\n- name: u\n  user: {token: from-a}\n",
               0);
    write_file("b/config",
               "current-context: ctx\n"
               "clusters:\n- name: shared\n  cluster: {server: 'https://b:2'}\n"
               "- name: onlyb\n  cluster: {server: 'https://b:3', certificate-authority: ca.pem}\n"
               "users:\n- name: u\n  user: {token: from-b}\n"
               "contexts:\n- name: ctx\n  context: {cluster: shared, user: u}\n"
               "- name: ctxb\n  context: {cluster: onlyb, user: u}\n",
               0);
    const char *paths[] = {path_of("missing"), path_of("a/config"), path_of("b/config")};
    lop_rest_config_t cfg;
    lop_err_t err;
    T_EQ_INT(lop_kubeconfig_load_files(paths, 3, NULL, NULL, &cfg, &err), LOP_OK);
    T_EQ_STR(cfg.server, "https://a:1"); /* cluster "shared" from the first file */
    T_EQ_STR(cfg.ca_pem, "CA-A");        /* relative to a/ */
    lop_auth_cred_t cred;
    T_EQ_INT(lop_auth_get(cfg.auth, &cred, &err), LOP_OK);
    T_EQ_STR(cred.token, "from-a");
    lop_auth_cred_cleanup(&cred);
    lop_rest_config_cleanup(&cfg);
    T_EQ_INT(lop_kubeconfig_load_files(paths, 3, "ctxb", NULL, &cfg, &err), LOP_OK);
    T_EQ_STR(cfg.ca_pem, "CA-B"); /* relative to b/, the file that defined it */
    lop_rest_config_cleanup(&cfg);

    /* through $KUBECONFIG */
    char env[1200];
    snprintf(env, sizeof env, "%s:%s", path_of("a/config"), path_of("b/config"));
    setenv("KUBECONFIG", env, 1);
    lop_kubeconfig_opts_t o = {.no_incluster = true};
    T_EQ_INT(lop_kubeconfig_load(&o, &cfg, &err), LOP_OK);
    T_EQ_STR(cfg.server, "https://a:1");
    lop_rest_config_cleanup(&cfg);
    /* an explicit path wins over $KUBECONFIG */
    o.path = path_of("b/config");
    T_EQ_INT(lop_kubeconfig_load(&o, &cfg, &err), LOP_OK);
    T_EQ_STR(cfg.server, "https://b:2");
    lop_rest_config_cleanup(&cfg);
    unsetenv("KUBECONFIG");
    /* ~/.kube/config */
    mkdir(path_of(".kube"), 0755);
    write_file(".kube/config",
               "current-context: h\nclusters:\n- name: h\n  cluster: {server: 'http://home:80'}\n"
               "contexts:\n- name: h\n  context: {cluster: h}\n",
               0);
    setenv("HOME", dir, 1);
    o.path = NULL;
    T_EQ_INT(lop_kubeconfig_load(&o, &cfg, &err), LOP_OK);
    T_EQ_STR(cfg.server, "http://home:80");
    lop_rest_config_cleanup(&cfg);
}

static void expect_error(const char *name, const char *content, const char *ctx, const char *needle1,
                         const char *needle2)
{
    write_file(name, content, 0);
    lop_rest_config_t cfg;
    lop_err_t err;
    lop_rc_t rc = load1(name, ctx, &cfg, &err);
    T_EQ_INT(rc, LOP_EINVAL);
    if (rc == LOP_EINVAL) {
        if (!strstr(err.message, needle1) || (needle2 && !strstr(err.message, needle2)))
            fprintf(stderr, "message was: %s\n", err.message);
        T_CHECK(strstr(err.message, needle1) != NULL);
        T_CHECK(strstr(err.message, path_of(name)) != NULL || strstr(err.message, name) != NULL);
        if (needle2) T_CHECK(strstr(err.message, needle2) != NULL);
    } else if (rc == LOP_OK) {
        lop_rest_config_cleanup(&cfg);
    }
}

static void test_errors_name_file_and_field(void)
{
    expect_error("insecure.yaml",
                 "current-context: x\nclusters:\n- name: c\n  cluster:\n    server: https://h\n"
                 "    insecure-skip-tls-verify: true\n    certificate-authority-data: " CA_B64 "\n"
                 "contexts:\n- name: x\n  context: {cluster: c}\n",
                 NULL, "specifying a root certificates file with the insecure flag is not allowed", NULL);
    expect_error("socks.yaml",
                 "current-context: x\nclusters:\n- name: c\n  cluster: {server: 'https://h', "
                 "proxy-url: 'socks5://p:1080'}\ncontexts:\n- name: x\n  context: {cluster: c}\n",
                 NULL, "clusters[c].cluster.proxy-url", "only http:// proxies");
    expect_error("badyaml.yaml", "clusters: [\n  - {name: x\n", NULL, "invalid YAML", "line");
    expect_error("noserver.yaml",
                 "current-context: x\nclusters:\n- name: c\n  cluster: {}\n"
                 "contexts:\n- name: x\n  context: {cluster: c}\n",
                 NULL, "clusters[c].cluster.server", "missing");
    expect_error("noctx.yaml", "clusters: []\n", "nope", "context nope", "not found");
    expect_error("nocurrent.yaml", "clusters: []\n", NULL, "current-context", NULL);
    expect_error("badb64.yaml",
                 "current-context: x\nclusters:\n- name: c\n  cluster: {server: 'https://h', "
                 "certificate-authority-data: '!!notbase64'}\ncontexts:\n- name: x\n  context: {cluster: c}\n",
                 NULL, "certificate-authority-data", "base64");
    expect_error("nouser.yaml",
                 "current-context: x\nclusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
                 "contexts:\n- name: x\n  context: {cluster: c, user: ghost}\n",
                 NULL, "user ghost", "not found");
    expect_error("cafile.yaml",
                 "current-context: x\nclusters:\n- name: c\n  cluster: {server: 'https://h', "
                 "certificate-authority: nothere.pem}\ncontexts:\n- name: x\n  context: {cluster: c}\n",
                 NULL, "certificate-authority", "nothere.pem");
    expect_error("listtype.yaml", "clusters: {a: 1}\n", NULL, "clusters", "must be a list");
    expect_error("v1exec.yaml",
                 "current-context: x\nclusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
                 "users:\n- name: u\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: x}\n"
                 "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
                 NULL, "interactiveMode", NULL);
    expect_error("badscheme.yaml",
                 "current-context: x\nclusters:\n- name: c\n  cluster: {server: 'ftp://h'}\n"
                 "contexts:\n- name: x\n  context: {cluster: c}\n",
                 NULL, "server", "http");
    expect_error("servertype.yaml",
                 "current-context: x\nclusters:\n- name: c\n  cluster: {server: [a, b]}\n"
                 "contexts:\n- name: x\n  context: {cluster: c}\n",
                 NULL, "clusters[c].cluster.server", "must be a string");
    expect_error("argstype.yaml",
                 "current-context: x\nclusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
                 "users:\n- name: u\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: x, "
                 "args: oops}\n"
                 "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
                 NULL, "users[u].user.exec.args", "must be a list");
    /* insecure-skip-tls-verify must be a YAML boolean, as kubectl requires */
    expect_error(
        "insecure-quoted.yaml",
        "current-context: x\nclusters:\n- name: c\n  cluster: {server: 'https://h', insecure-skip-tls-verify: "
        "\"true\"}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: t}\n",
        NULL, "insecure-skip-tls-verify: want a boolean", NULL);
    /* insecure alone is accepted (with a loud warning) */
    write_file(
        "insecure-ok.yaml",
        "current-context: x\nclusters:\n- name: c\n  cluster: {server: 'https://h', insecure-skip-tls-verify: true}\n"
        "contexts:\n- name: x\n  context: {cluster: c}\n",
        0);
    lop_rest_config_t cfg;
    lop_err_t err;
    T_EQ_INT(load1("insecure-ok.yaml", NULL, &cfg, &err), LOP_OK);
    T_CHECK(cfg.insecure);
    lop_rest_config_cleanup(&cfg);
}

static void test_token_file_reread_and_empty(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    write_file("tok", "one\n", 0);
    lop_auth_t *a = lop_auth_new("static", path_of("tok"), NULL, &fc.base);
    lop_auth_cred_t c;
    lop_err_t err;
    T_EQ_INT(lop_auth_get(a, &c, &err), LOP_OK);
    T_EQ_STR(c.token, "one"); /* trimmed file content wins over the static token */
    lop_auth_cred_cleanup(&c);
    /* rewritten with the same mtime (as a bind mount may show it): cached for a minute */
    struct stat st;
    stat(path_of("tok"), &st);
    write_file("tok", "two\n", 0);
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    utimensat(AT_FDCWD, path_of("tok"), times, 0);
    T_EQ_INT(lop_auth_get(a, &c, &err), LOP_OK);
    T_EQ_STR(c.token, "one");
    lop_auth_cred_cleanup(&c);
    lop_fake_clock_step(&fc, 61 * LOP_NS_PER_S);
    T_EQ_INT(lop_auth_get(a, &c, &err), LOP_OK);
    T_EQ_STR(c.token, "two");
    lop_auth_cred_cleanup(&c);
    write_file("tok", "  \n", 0);
    lop_fake_clock_step(&fc, 61 * LOP_NS_PER_S);
    T_EQ_INT(lop_auth_get(a, &c, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "is empty") != NULL);
    T_CHECK(strstr(err.message, path_of("tok")) != NULL);
    lop_auth_free(a);
}

static void test_exec_plugin_v1beta1_cached_until_expiry(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0); /* wall = 2025-03-01T10:00:00Z */
    char script[2048];
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "printf '%%s' \"$KUBERNETES_EXEC_INFO\" > %s\n"
             "printf '%%s %%s' \"$1\" \"$MYVAR\" > %s\n"
             "n=$(cat %s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %s\n"
             "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
             "\"status\":{\"token\":\"tok-%%s\",\"expirationTimestamp\":\"2025-03-01T10:05:00Z\"}}' $n\n",
             path_of("info.json"), path_of("args.txt"), path_of("runs"), path_of("runs"));
    mkdir(path_of("bin"), 0755);
    write_file("bin/plugin", script, 0755);
    write_file("exec.yaml",
               "current-context: x\nclusters:\n- name: c\n  cluster: {server: 'https://h:6443', "
               "certificate-authority-data: " CA_B64 "}\n"
               "users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
               "      command: ./bin/plugin\n      args: [--flag]\n      env: [{name: MYVAR, value: hello}]\n"
               "      provideClusterInfo: true\n"
               "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
               0);
    const char *p = path_of("exec.yaml");
    lop_rest_config_t cfg;
    lop_err_t err;
    T_EQ_INT(lop_kubeconfig_load_files(&p, 1, NULL, &fc.base, &cfg, &err), LOP_OK);
    lop_auth_cred_t c;
    T_EQ_INT(lop_auth_get(cfg.auth, &c, &err), LOP_OK);
    T_EQ_STR(c.token, "tok-1");
    lop_auth_cred_cleanup(&c);
    T_EQ_INT(lop_auth_get(cfg.auth, &c, &err), LOP_OK); /* cached */
    T_EQ_STR(c.token, "tok-1");
    lop_auth_cred_cleanup(&c);
    T_EQ_INT(lop_auth_exec_runs(cfg.auth), 1);
    lop_fake_clock_step(&fc, 301 * LOP_NS_PER_S); /* past expirationTimestamp */
    T_EQ_INT(lop_auth_get(cfg.auth, &c, &err), LOP_OK);
    T_EQ_STR(c.token, "tok-2");
    lop_auth_cred_cleanup(&c);
    T_CHECK(lop_auth_invalidate(cfg.auth)); /* as after a 401 */
    T_EQ_INT(lop_auth_get(cfg.auth, &c, &err), LOP_OK);
    T_EQ_STR(c.token, "tok-3");
    lop_auth_cred_cleanup(&c);

    /* KUBERNETES_EXEC_INFO, args and env as configured */
    FILE *f = fopen(path_of("info.json"), "r");
    char info[2048] = "";
    if (f) {
        size_t n = fread(info, 1, sizeof info - 1, f);
        info[n] = '\0';
        fclose(f);
    }
    json_t *j = json_loads(info, 0, NULL);
    T_EQ_STR(json_string_value(json_object_get(j, "kind")), "ExecCredential");
    T_EQ_STR(json_string_value(json_object_get(j, "apiVersion")), "client.authentication.k8s.io/v1beta1");
    json_t *spec = json_object_get(j, "spec");
    T_CHECK(json_is_false(json_object_get(spec, "interactive")));
    T_EQ_STR(json_string_value(json_object_get(json_object_get(spec, "cluster"), "server")), "https://h:6443");
    T_EQ_STR(json_string_value(json_object_get(json_object_get(spec, "cluster"), "certificate-authority-data")),
             CA_B64);
    json_decref(j);
    f = fopen(path_of("args.txt"), "r");
    char args[256] = "";
    if (f) {
        size_t n = fread(args, 1, sizeof args - 1, f);
        args[n] = '\0';
        fclose(f);
    }
    T_EQ_STR(args, "--flag hello");
    lop_rest_config_cleanup(&cfg);
}

static lop_rc_t run_plugin_output(const char *output, lop_err_t *err)
{
    char script[1024];
    snprintf(script, sizeof script, "#!/bin/sh\ncat <<'EOF'\n%s\nEOF\n", output);
    write_file("bad-plugin", script, 0755);
    lop_auth_exec_t e = {0};
    e.api_version = strdup("client.authentication.k8s.io/v1");
    e.command = strdup(path_of("bad-plugin"));
    e.interactive_mode = strdup("Never");
    lop_auth_t *a = lop_auth_new(NULL, NULL, &e, NULL);
    lop_auth_cred_t c;
    lop_rc_t rc = lop_auth_get(a, &c, err);
    lop_auth_cred_cleanup(&c);
    lop_auth_free(a);
    return rc;
}

static void test_exec_plugin_bad_output_and_failures(void)
{
    lop_err_t err;
    T_EQ_INT(run_plugin_output("not json", &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "not a JSON ExecCredential") != NULL);
    T_EQ_INT(run_plugin_output("{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
                               "\"status\":{\"token\":\"x\"}}",
                               &err),
             LOP_EINVAL);
    T_CHECK(strstr(err.message, "does not match") != NULL);
    T_EQ_INT(run_plugin_output("{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
                               "\"status\":{\"clientCertificateData\":\"C\"}}",
                               &err),
             LOP_EINVAL);
    T_CHECK(strstr(err.message, "both") != NULL);
    T_EQ_INT(run_plugin_output("{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
                               "\"status\":{\"clientCertificateData\":\"C\",\"clientKeyData\":\"K\"}}",
                               &err),
             LOP_OK);
    /* a command that does not exist: the install hint is shown */
    lop_auth_exec_t e = {0};
    e.api_version = strdup("client.authentication.k8s.io/v1");
    e.command = strdup("luaop-no-such-plugin");
    e.install_hint = strdup("install it with apt");
    lop_auth_t *a = lop_auth_new(NULL, NULL, &e, NULL);
    lop_auth_cred_t c;
    T_EQ_INT(lop_auth_get(a, &c, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "install it with apt") != NULL);
    lop_auth_free(a);
    /* non-zero exit */
    write_file("fail-plugin", "#!/bin/sh\nexit 3\n", 0755);
    memset(&e, 0, sizeof e);
    e.api_version = strdup("client.authentication.k8s.io/v1");
    e.command = strdup(path_of("fail-plugin"));
    a = lop_auth_new(NULL, NULL, &e, NULL);
    T_EQ_INT(lop_auth_get(a, &c, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "exit status 3") != NULL);
    lop_auth_free(a);
}

typedef struct hang_run {
    lop_auth_t *a;
    lop_rc_t rc;
    lop_err_t err;
    atomic_bool done;
} hang_run_t;

static void *hang_main(void *arg)
{
    hang_run_t *h = arg;
    lop_auth_cred_t c;
    h->rc = lop_auth_get(h->a, &c, &h->err);
    lop_auth_cred_cleanup(&c);
    atomic_store(&h->done, true);
    return NULL;
}

static void test_exec_plugin_that_hangs_is_killed(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    write_file("hang-plugin", "#!/bin/sh\nexec sleep 30\n", 0755);
    lop_auth_exec_t e = {0};
    e.api_version = strdup("client.authentication.k8s.io/v1beta1");
    e.command = strdup(path_of("hang-plugin"));
    hang_run_t h = {.a = lop_auth_new(NULL, NULL, &e, &fc.base)};
    atomic_init(&h.done, false);
    pthread_t t;
    pthread_create(&t, NULL, hang_main, &h);
    while (!atomic_load(&h.done)) { /* drive the fake clock until the 60 s limit is noticed */
        lop_fake_clock_step(&fc, LOP_NS_PER_S);
        sched_yield();
    }
    pthread_join(t, NULL);
    T_EQ_INT(h.rc, LOP_ETIMEDOUT);
    T_CHECK(strstr(h.err.message, "did not finish") != NULL);
    lop_auth_free(h.a);
}

static void test_in_cluster(void)
{
    mkdir(path_of("sa"), 0755);
    write_file("sa/token", "sa-token-1\n", 0);
    write_file("sa/ca.crt", "CLUSTER-CA", 0);
    write_file("sa/namespace", "operators\n", 0);
    lop_rest_config_t cfg;
    lop_err_t err;
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    T_EQ_INT(lop_kubeconfig_incluster(path_of("sa"), NULL, &cfg, &err), LOP_ENOTFOUND);
    T_CHECK(strstr(err.message, "not in cluster") != NULL);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    T_EQ_INT(lop_kubeconfig_incluster(path_of("sa"), NULL, &cfg, &err), LOP_OK);
    T_EQ_STR(cfg.server, "https://[fd00::1]:443");
    T_EQ_STR(cfg.ca_pem, "CLUSTER-CA");
    T_EQ_STR(cfg.namespace, "operators");
    lop_auth_cred_t c;
    T_EQ_INT(lop_auth_get(cfg.auth, &c, &err), LOP_OK);
    T_EQ_STR(c.token, "sa-token-1");
    lop_auth_cred_cleanup(&c);
    write_file("sa/token", "sa-token-2\n", 0); /* the kubelet rotates it in place */
    lop_auth_invalidate(cfg.auth);
    T_EQ_INT(lop_auth_get(cfg.auth, &c, &err), LOP_OK);
    T_EQ_STR(c.token, "sa-token-2");
    lop_auth_cred_cleanup(&c);
    lop_rest_config_cleanup(&cfg);
    /* the resolver falls back to in-cluster when no kubeconfig exists */
    setenv("HOME", path_of("nohome"), 1);
    unsetenv("KUBECONFIG");
    lop_kubeconfig_opts_t o = {.incluster_dir = path_of("sa")};
    T_EQ_INT(lop_kubeconfig_load(&o, &cfg, &err), LOP_OK);
    T_EQ_STR(cfg.source, "in-cluster");
    lop_rest_config_cleanup(&cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
    T_EQ_INT(lop_kubeconfig_load(&o, &cfg, &err), LOP_ENOTFOUND);
}

static void test_base64(void)
{
    size_t n;
    char *s = lop_base64_decode("aGVsbG8=", &n);
    T_EQ_STR(s, "hello");
    T_EQ_INT(n, 5);
    free(s);
    s = lop_base64_decode("aGVs\nbG8", &n);
    T_EQ_STR(s, "hello");
    free(s);
    T_CHECK(lop_base64_decode("a$b=", &n) == NULL);
    T_CHECK(lop_base64_decode("a", &n) == NULL);
}

/* kind: must be Config; the error names the kind found (formatted while the document is alive:
 * the old code printed the freed string, a use-after-free ASan reports). */
static void test_wrong_kind_names_the_kind(void)
{
    write_file("pod.yaml", "apiVersion: v1\nkind: PodWithALongKindNameSoTheStringIsHeapAllocated\n", 0);
    lop_rest_config_t cfg;
    lop_err_t err;
    T_EQ_INT(load1("pod.yaml", NULL, &cfg, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "kind: must be Config, got PodWithALongKindNameSoTheStringIsHeapAllocated") != NULL);
    write_file("pod2.yaml", "kind: Pod\n", 0);
    T_EQ_INT(load1("pod2.yaml", NULL, &cfg, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "got Pod") != NULL);
}

/* A self-referencing alias (libyaml shares the anchored node, so it is a cycle) and a doubling
 * chain both stop at the expansion bound with a clear error, instead of growing without end. */
static void test_alias_bomb_is_refused(void)
{
    write_file("selfref.yaml",
               "apiVersion: v1\nkind: Config\nx: &a [*a, *a]\nclusters: []\nusers: []\ncontexts: []\n"
               "current-context: \"\"\n",
               0);
    lop_rest_config_t cfg;
    lop_err_t err;
    T_EQ_INT(load1("selfref.yaml", NULL, &cfg, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "selfref.yaml") != NULL);
    T_CHECK(strstr(err.message, "excessive aliasing") != NULL);
    write_file("laughs.yaml",
               "a: &a [lol, lol, lol, lol, lol, lol, lol, lol]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
               "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
               "e: &e [*d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e]\n"
               "g: &g [*f, *f, *f, *f, *f, *f, *f, *f]\n",
               0);
    T_EQ_INT(load1("laughs.yaml", NULL, &cfg, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "excessive aliasing") != NULL);
    /* an anchor shared a few times is fine */
    write_file("anchors.yaml",
               "clusters:\n- name: c\n  cluster: &cl {server: 'https://127.0.0.1:1'}\n- name: d\n  cluster: *cl\n"
               "users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: d, user: u}\n"
               "current-context: x\n",
               0);
    T_EQ_INT(load1("anchors.yaml", NULL, &cfg, &err), LOP_OK);
    T_EQ_STR(cfg.server, "https://127.0.0.1:1");
    lop_rest_config_cleanup(&cfg);
}

int main(void)
{
    lop_log_setup(LOP_LOG_ERROR, LOP_LOG_TEXT);
    snprintf(dir, sizeof dir, "/tmp/luaop-kubeconfig-XXXXXX");
    if (!mkdtemp(dir)) return 2;
    T_RUN(test_basic_fields);
    T_RUN(test_merge_first_wins_and_relative_paths);
    T_RUN(test_errors_name_file_and_field);
    T_RUN(test_token_file_reread_and_empty);
    T_RUN(test_exec_plugin_v1beta1_cached_until_expiry);
    T_RUN(test_exec_plugin_bad_output_and_failures);
    T_RUN(test_exec_plugin_that_hangs_is_killed);
    T_RUN(test_in_cluster);
    T_RUN(test_base64);
    T_RUN(test_wrong_kind_names_the_kind);
    T_RUN(test_alias_bomb_is_refused);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", dir);
    return T_DONE();
}
