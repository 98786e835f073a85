/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubeconfig.h — where to find the API server and how to authenticate: kubeconfig files resolved
 * like kubectl (client-go tools/clientcmd loader.go, client_config.go), exec credential
 * plugins (via auth.h) and the in-cluster service-account config (rest/config.go InClusterConfig).
 * The result is a lop_rest_config_t, the one input rest.h needs.
 *
 * Resolution (lop_kubeconfig_load): an explicit path (--kubeconfig) alone; else every file of
 * $KUBECONFIG (':'-separated, missing files skipped, merged: for each named cluster/user/context
 * and for current-context the first file that sets it wins); else ~/.kube/config if it exists;
 * else the in-cluster config. Relative paths in a file are resolved against that file's
 * directory. Errors name the file and the field.
 *
 * Secrets: no function here logs a token, key, or certificate data.
 * Thread-safety: loading is reentrant (no shared state); a lop_rest_config_t is plain data owned
 * by one thread until it is moved into a REST client.
 */
#ifndef LOP_KUBE_CLIENT_KUBECONFIG_H
#define LOP_KUBE_CLIENT_KUBECONFIG_H

#include "host/kube/client/auth.h"
#include "host/util/clock.h"
#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>

/* Everything a REST client needs. All strings malloc'd and owned by the struct. */
typedef struct lop_rest_config {
    char *server;          /* "https://host:port" (a path prefix is allowed), or http:// */
    char *ca_pem;          /* PEM bundle to verify the server, NULL = system roots */
    char *client_cert_pem; /* static client certificate (PEM), or NULL */
    char *client_key_pem;
    bool insecure;          /* skip server certificate verification (logged loudly) */
    char *tls_server_name;  /* name to verify the certificate against (SNI), or NULL */
    char *proxy_url;        /* kubeconfig proxy-url (http:// only), or NULL = HTTPS_PROXY & co. */
    char *namespace;        /* default namespace: the context's, else "default" */
    lop_auth_t *auth;       /* bearer token / token file / exec plugin; may be NULL */
    char *impersonate_user; /* Impersonate-User, or NULL */
    char *impersonate_uid;
    char **impersonate_groups; /* n_impersonate_groups entries */
    size_t n_impersonate_groups;
    char **impersonate_extra; /* "key=value" entries → Impersonate-Extra-<key>: value */
    size_t n_impersonate_extra;
    double qps;               /* 0 = default 5; < 0 disables client-side limiting */
    int burst;                /* 0 = default 10 */
    bool disable_http2;       /* HTTP/1.1 only (also when $DISABLE_HTTP2 is 1 or true) */
    char *user_agent;         /* NULL = "luaop/<version> (linux/amd64)" */
    const lop_clock_t *clock; /* borrowed; NULL = system clock */
    char *source;             /* where this came from, for logs: file path(s) or "in-cluster" */
    char *context;            /* the context used, NULL for in-cluster */
} lop_rest_config_t;

void lop_rest_config_cleanup(lop_rest_config_t *c);

typedef struct lop_kubeconfig_opts {
    const char *path;          /* --kubeconfig; NULL/"" = $KUBECONFIG, ~/.kube/config, in-cluster */
    const char *context;       /* --context; NULL = current-context */
    const char *incluster_dir; /* NULL = /var/run/secrets/kubernetes.io/serviceaccount */
    bool no_incluster;         /* do not fall back to the in-cluster config */
    const lop_clock_t *clock;  /* stored in the config, used by the credential source */
} lop_kubeconfig_opts_t;

/*
 * Resolve and load. On success fills *out (caller cleans up with lop_rest_config_cleanup).
 * Errors: LOP_EINVAL with a message naming the file and field (malformed YAML, unknown context,
 * missing server, insecure + CA, unreadable CA file, bad base64), LOP_ENOTFOUND when there is no
 * kubeconfig and not in a cluster.
 */
LOP_MUST_CHECK lop_rc_t lop_kubeconfig_load(const lop_kubeconfig_opts_t *opts, lop_rest_config_t *out, lop_err_t *err);

/* Load a merged list of files (as from $KUBECONFIG), for tests and tools. Missing files are
 * skipped unless they are all missing (LOP_ENOTFOUND). */
LOP_MUST_CHECK lop_rc_t lop_kubeconfig_load_files(const char *const *paths, size_t n, const char *context,
                                                  const lop_clock_t *clock, lop_rest_config_t *out, lop_err_t *err);

/* The in-cluster config (client-go rest/config.go InClusterConfig). dir: service-account directory
 * (NULL = the standard one). LOP_ENOTFOUND when KUBERNETES_SERVICE_HOST/PORT are not both set ("not
 * in cluster"). */
LOP_MUST_CHECK lop_rc_t lop_kubeconfig_incluster(const char *dir, const lop_clock_t *clock, lop_rest_config_t *out,
                                                 lop_err_t *err);

#endif
