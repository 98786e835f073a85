/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth.h — where a REST client's credentials come from: a static bearer token, a token file
 * (re-read at most once a minute, at once when its mtime changes, and after a 401; client-go
 * transport/token_source.go), or an exec credential plugin (client.authentication.k8s.io/v1 and v1beta1,
 * client-go plugin/pkg/client/auth/exec/exec.go: run with KUBERNETES_EXEC_INFO, the
 * ExecCredential's token or client cert/key cached until expirationTimestamp, re-run after a 401).
 *
 * Secrets: nothing here logs a token, a key or a plugin's output.
 * Thread-safety: lop_auth_get/invalidate are safe from any thread (one mutex; a plugin run holds
 * it, so concurrent requests wait for one run instead of starting many).
 */
#ifndef LOP_KUBE_CLIENT_AUTH_H
#define LOP_KUBE_CLIENT_AUTH_H

#include "host/util/clock.h"
#include "host/util/base64.h" /* lop_base64_decode, used by kubeconfig */
#include "host/util/err.h"

#include <stdbool.h>
#include <stddef.h>

/* An exec plugin's configuration (kubeconfig users[].user.exec). All strings malloc'd. */
typedef struct lop_auth_exec {
    char *api_version; /* client.authentication.k8s.io/v1 or v1beta1 (required) */
    char *command;     /* absolute, or a bare name looked up in PATH */
    char **args;       /* nargs entries */
    size_t nargs;
    char **env; /* "NAME=value" entries added to the environment */
    size_t nenv;
    char *install_hint;     /* shown when the command cannot be run; may be NULL */
    char *interactive_mode; /* Never | IfAvailable | Always; NULL = IfAvailable (v1beta1) */
    char *cluster_json;     /* spec.cluster for KUBERNETES_EXEC_INFO when provideClusterInfo; or NULL */
} lop_auth_exec_t;

void lop_auth_exec_cleanup(lop_auth_exec_t *e);

typedef struct lop_auth lop_auth_t;

/*
 * New credential source. token: static token or NULL; token_file: path or NULL (its content wins
 * over token once read); exec: plugin config or NULL — its contents are moved into the source
 * (exec is zeroed). clock (borrowed, NULL = system) times the token file cache and expirations.
 * A source with nothing configured is valid and yields no credentials.
 */
lop_auth_t *lop_auth_new(const char *token, const char *token_file, lop_auth_exec_t *exec, const lop_clock_t *clock);
void lop_auth_free(lop_auth_t *a);

/* One request's credentials, malloc'd copies (any may be NULL). Free with lop_auth_cred_cleanup. */
typedef struct lop_auth_cred {
    char *token;
    char *cert_pem;
    char *key_pem;
} lop_auth_cred_t;

void lop_auth_cred_cleanup(lop_auth_cred_t *c);

/*
 * Current credentials (reads the token file or runs the plugin when the cache is stale).
 * Errors: LOP_EINVAL with a message naming the file or plugin (empty token file, unreadable file,
 * plugin exit status, output over 1 MiB, malformed ExecCredential); LOP_ETIMEDOUT when the plugin
 * runs longer than 60 s (on the injected clock; it is killed). Never includes secret values in messages.
 */
LOP_MUST_CHECK lop_rc_t lop_auth_get(lop_auth_t *a, lop_auth_cred_t *out, lop_err_t *err);

/* The server answered 401: drop cached credentials so the next get re-reads / re-runs.
 * Returns true when that can produce different credentials (token file or plugin). */
bool lop_auth_invalidate(lop_auth_t *a);

/* How many times the plugin has run (tests). */
int lop_auth_exec_runs(lop_auth_t *a);

#endif
