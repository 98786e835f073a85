/* SPDX-License-Identifier: Apache-2.0 */
/*
 * options.h — the flags of `luaop run` and `luaop dev`, named as controller-runtime names them
 * (--kubeconfig, --leader-elect, --metrics-bind-address, ...). Durations use Go's syntax
 * ("15s", "250ms", "1m30s"); booleans accept --flag, --flag=true|false.
 *
 * Ownership: strings point into argv (borrowed for the process lifetime).
 */
#ifndef LOP_RUNTIME_OPTIONS_H
#define LOP_RUNTIME_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lop_run_opts {
    const char *scripts_dir;       /* --scripts DIR */
    const char *scripts_configmap; /* --scripts-configmap NAMESPACE/NAME */
    const char *kubeconfig;        /* --kubeconfig */
    const char *context;           /* --context */
    const char *namespace_;        /* --namespace: watch only these namespaces ("a" or "a,b") */
    bool leader_elect;             /* --leader-elect */
    const char *leader_election_id;
    const char *leader_election_namespace;
    int64_t lease_duration_ns;     /* --leader-elect-lease-duration (15s) */
    int64_t renew_deadline_ns;     /* --leader-elect-renew-deadline (10s) */
    int64_t retry_period_ns;       /* --leader-elect-retry-period (2s) */
    bool release_on_cancel;        /* --leader-elect-release-on-cancel (true) */
    const char *on_leader_loss;    /* --leader-elect-on-loss: "exit" (default) | "restart-election" */
    const char *metrics_addr;      /* --metrics-bind-address (":8443"; "0" disables) */
    const char *probe_addr;        /* --health-probe-bind-address (":8081"; "0" disables) */
    const char *webhook_addr;      /* --webhook-bind-address (":9443"; "0" disables): served when the
                                     script set declares webhooks (op.webhook.*) */
    const char *webhook_cert_dir;  /* --webhook-cert-dir (NULL = controller-runtime's
                                     <TMPDIR>/k8s-webhook-server/serving-certs) */
    const char *webhook_cert_name; /* --webhook-cert-name ("tls.crt") */
    const char *webhook_key_name;  /* --webhook-key-name ("tls.key") */
    int webhook_concurrency;       /* --webhook-concurrency: reviews run at once, each in its own VM (4) */
    bool webhook_loopback;         /* dev: a self-signed CA and certificate in a temporary cert dir, and
                                      the WebhookConfigurations / CRD conversion pointed at the server's
                                      loopback address (not a flag) */
    int64_t graceful_shutdown_ns;  /* --graceful-shutdown-timeout (30s) */
    const char *log_format;        /* --log-format text|json */
    const char *log_level;         /* --log-level debug|info|warn|error */
    const char *log_time;          /* --zap-time-encoding (lop_log_time_parse's names; "rfc3339micro") */
    const char *stacktrace_level;  /* --zap-stacktrace-level info|error|panic: accepted, validated;
                                     luaop has no Go stacks (Lua tracebacks go in "error") */
    bool enable_http2;             /* --enable-http2 for luaop's own servers: only false (HTTP/1.1) */
    bool metrics_secure;           /* --metrics-secure: HTTPS, each scrape authenticated (TokenReview) and
                                      authorized (SubjectAccessReview); default true exactly when
                                      metrics_addr is the default ":8443" */
    const char *metrics_cert_dir;  /* --metrics-cert-dir / --metrics-cert-path (NULL = self-signed in memory) */
    const char *metrics_cert_name; /* --metrics-cert-name ("tls.crt") */
    const char *metrics_key_name;  /* --metrics-cert-key ("tls.key") */
    bool lua_jit;                  /* --lua-jit */
    bool lua_unsafe;               /* --lua-unsafe-libs */
    size_t lua_memory_limit;       /* --lua-memory-limit bytes per VM (64 MiB) */
    int64_t reconcile_timeout_ns;  /* --reconcile-timeout (60s) */
    int64_t predicate_timeout_ns;  /* --predicate-timeout (250ms): each Lua predicate / map function */
    double qps;                    /* --kube-api-qps (20) */
    int burst;                     /* --kube-api-burst (30) */
    bool disable_http2;            /* --kube-api-disable-http2: HTTP/1.1 only (default: $DISABLE_HTTP2) */
    bool watch_list;               /* --watch-list (default: $KUBE_FEATURE_WatchListClient, else false) */

    /* Self-managed certificates (cmd/webhook_certs.h, docs/webhooks.md): on with a Secret. */
    const char *webhook_cert_secret;       /* --webhook-cert-secret NS/NAME (NULL = off) */
    const char *webhook_service_name;      /* --webhook-service-name (luaop-webhook-service): the
                                              certificate names <name>.<namespace>.svc[.cluster.local] */
    const char *webhook_service_namespace; /* --webhook-service-namespace (the Secret's namespace) */
    const char *webhook_mutating_config;   /* --webhook-mutating-configuration NAME, caBundle injected
                                              (luaop-mutating-webhook-configuration) */
    const char *webhook_validating_config; /* --webhook-validating-configuration NAME
                                              (luaop-validating-webhook-configuration) */
    int64_t webhook_ca_validity_ns;        /* --webhook-ca-validity (87600h = 10 years) */
    int64_t webhook_cert_validity_ns;      /* --webhook-cert-validity (8760h = 1 year) */

    /* dev only */
    const char *apply[64]; /* --apply FILE (repeatable) */
    size_t napply;
    const char *kubeconfig_out; /* --kubeconfig-out PATH */
    const char *listen;         /* --listen ADDR for the embedded API server */
    bool exit_after_apply;      /* --once: exit when every applied object is reconciled (tests) */
} lop_run_opts_t;

void lop_run_opts_defaults(lop_run_opts_t *o);

/* Parse argv (argv[0] = subcommand). dev = accept the dev-only flags. On error prints the cause
 * to stderr and returns 2; on --help prints usage to stdout and returns 1; 0 on success. */
int lop_run_opts_parse(lop_run_opts_t *o, int argc, char **argv, bool dev);

/* Go duration ("1h2m3.5s", "250ms", "0"): 0 on success, -1 on a malformed value. */
int lop_parse_duration(const char *s, int64_t *ns);
/* Byte sizes: "64Mi", "1G", "1048576". 0 on success, -1 otherwise. */
int lop_parse_bytes(const char *s, size_t *out);

#endif
