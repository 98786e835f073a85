/* SPDX-License-Identifier: Apache-2.0 */
/* auth.c — a REST client's credentials: static token, token file re-read on change or after a 401,
 * exec credential plugins run as a child process with their result cached until it expires (see
 * auth.h). Called on whichever thread makes a request (workers, reflectors, the elector), one
 * mutex serializing refreshes. Upstream: client-go transport/token_source.go and
 * plugin/pkg/client/auth/exec/exec.go. */
#include "host/kube/client/auth.h"

#include "host/util/buf.h"
#include "host/util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define TOKEN_FILE_TTL_NS (60 * LOP_NS_PER_S)
#define EXEC_TIMEOUT_NS   (60 * LOP_NS_PER_S) /* a plugin that hangs must not hang every request */
#define EXEC_MAX_OUTPUT   ((size_t)1 << 20)

struct lop_auth {
    pthread_mutex_t mu;
    const lop_clock_t *clock;
    char *static_token;
    /* token file */
    char *token_file;
    char *file_token;  /* cached trimmed content */
    int64_t file_read; /* mono ns of the last read */
    struct timespec file_mtime;
    /* exec plugin */
    bool has_exec;
    lop_auth_exec_t exec;
    lop_auth_cred_t exec_cred; /* cached */
    bool exec_valid;
    int64_t exec_expiry_wall; /* 0 = until a 401 */
    int exec_runs;
};

void lop_auth_exec_cleanup(lop_auth_exec_t *e)
{
    if (!e) return;
    free(e->api_version);
    free(e->command);
    for (size_t i = 0; i < e->nargs; i++) free(e->args[i]);
    free(e->args);
    for (size_t i = 0; i < e->nenv; i++) free(e->env[i]);
    free(e->env);
    free(e->install_hint);
    free(e->interactive_mode);
    free(e->cluster_json);
    memset(e, 0, sizeof *e);
}

void lop_auth_cred_cleanup(lop_auth_cred_t *c)
{
    if (!c) return;
    if (c->token) explicit_bzero(c->token, strlen(c->token));
    if (c->key_pem) explicit_bzero(c->key_pem, strlen(c->key_pem));
    free(c->token);
    free(c->cert_pem);
    free(c->key_pem);
    c->token = c->cert_pem = c->key_pem = NULL;
}

lop_auth_t *lop_auth_new(const char *token, const char *token_file, lop_auth_exec_t *exec, const lop_clock_t *clock)
{
    lop_auth_t *a = lop_xcalloc(1, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    a->clock = clock ? clock : &lop_clock_system;
    if (token && *token) a->static_token = lop_xstrdup(token);
    if (token_file && *token_file) a->token_file = lop_xstrdup(token_file);
    if (exec && exec->command) {
        a->has_exec = true;
        a->exec = *exec;
        memset(exec, 0, sizeof *exec);
    }
    return a;
}

void lop_auth_free(lop_auth_t *a)
{
    if (!a) return;
    lop_auth_cred_cleanup(&a->exec_cred);
    lop_auth_exec_cleanup(&a->exec);
    if (a->static_token) explicit_bzero(a->static_token, strlen(a->static_token));
    if (a->file_token) explicit_bzero(a->file_token, strlen(a->file_token));
    free(a->static_token);
    free(a->file_token);
    free(a->token_file);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

int lop_auth_exec_runs(lop_auth_t *a)
{
    pthread_mutex_lock(&a->mu);
    int n = a->exec_runs;
    pthread_mutex_unlock(&a->mu);
    return n;
}

/* ---- token file ---- */

static char *trim_dup(const char *s, size_t n)
{
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == '\t')) n--;
    while (n && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t')) s++, n--;
    return lop_xstrndup(s, n);
}

/* Caller holds mu. */
static lop_rc_t read_token_file(lop_auth_t *a, lop_err_t *err)
{
    int64_t now = lop_clock_mono(a->clock);
    struct stat st;
    bool have_stat = stat(a->token_file, &st) == 0;
    if (a->file_token && now - a->file_read < TOKEN_FILE_TTL_NS && have_stat &&
        st.st_mtim.tv_sec == a->file_mtime.tv_sec && st.st_mtim.tv_nsec == a->file_mtime.tv_nsec)
        return LOP_OK;
    FILE *f = fopen(a->token_file, "r");
    if (!f)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "cannot read token file %s: %s", a->token_file, strerror(errno));
    lop_buf_t b = LOP_BUF_INIT;
    char chunk[4096];
    size_t r;
    while ((r = fread(chunk, 1, sizeof chunk, f)) > 0) lop_buf_append(&b, chunk, r);
    fclose(f);
    char *tok = trim_dup(b.data ? b.data : "", b.len);
    if (b.data) explicit_bzero(b.data, b.len);
    lop_buf_free(&b);
    if (!*tok) {
        free(tok);
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "token file %s is empty", a->token_file);
    }
    if (a->file_token) explicit_bzero(a->file_token, strlen(a->file_token));
    free(a->file_token);
    a->file_token = tok;
    a->file_read = now;
    if (have_stat) a->file_mtime = st.st_mtim;
    return LOP_OK;
}

/* ---- exec plugin ---- */

static char *exec_info_json(const lop_auth_exec_t *e)
{
    json_t *spec = json_object();
    json_object_set_new(spec, "interactive", json_false());
    if (e->cluster_json) {
        json_t *c = json_loads(e->cluster_json, 0, NULL);
        if (c) json_object_set_new(spec, "cluster", c);
    }
    json_t *root = json_pack("{s:s, s:s, s:o}", "kind", "ExecCredential", "apiVersion", e->api_version, "spec", spec);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return s;
}

/* Run the plugin, capture stdout. Caller holds mu. */
static lop_rc_t run_plugin(lop_auth_t *a, lop_buf_t *out, lop_err_t *err)
{
    const lop_auth_exec_t *e = &a->exec;
    const char *hint = e->install_hint ? e->install_hint : "";
    /* Build argv and envp before fork: the child may only call async-signal-safe functions. */
    char **argv = lop_xcalloc(e->nargs + 2, sizeof *argv);
    argv[0] = e->command;
    for (size_t i = 0; i < e->nargs; i++) argv[i + 1] = e->args[i];
    size_t nenv = 0;
    while (environ && environ[nenv]) nenv++;
    char **envp = lop_xcalloc(nenv + e->nenv + 2, sizeof *envp);
    size_t k = 0;
    char *info = exec_info_json(e);
    lop_buf_t infoenv = LOP_BUF_INIT;
    lop_buf_printf(&infoenv, "KUBERNETES_EXEC_INFO=%s", info);
    free(info);
    for (size_t i = 0; i < nenv; i++) {
        const char *v = environ[i];
        if (strncmp(v, "KUBERNETES_EXEC_INFO=", 21) == 0) continue;
        bool overridden = false;
        for (size_t j = 0; j < e->nenv; j++) {
            const char *eq = strchr(e->env[j], '=');
            size_t nl = eq ? (size_t)(eq - e->env[j]) : strlen(e->env[j]);
            if (strncmp(v, e->env[j], nl) == 0 && v[nl] == '=') overridden = true;
        }
        if (!overridden) envp[k++] = environ[i];
    }
    for (size_t j = 0; j < e->nenv; j++) envp[k++] = e->env[j];
    envp[k++] = infoenv.data;
    envp[k] = NULL;

    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        free(argv);
        free(envp);
        lop_buf_free(&infoenv);
        return lop_err_set(err, LOP_ERR, 0, NULL, "exec plugin %s: pipe: %s", e->command, strerror(errno));
    }
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        dup2(pfd[1], 1);
        execvpe(argv[0], argv, envp);
        _exit(127);
    }
    int saved = errno;
    close(pfd[1]);
    free(argv);
    free(envp);
    lop_buf_free(&infoenv);
    if (pid < 0) {
        close(pfd[0]);
        return lop_err_set(err, LOP_ERR, 0, NULL, "exec plugin %s: fork: %s", e->command, strerror(saved));
    }
    char chunk[4096];
    int64_t deadline = lop_clock_mono(a->clock) + EXEC_TIMEOUT_NS;
    bool timed_out = false;
    for (;;) {
        struct pollfd pf = {pfd[0], POLLIN, 0};
        int pr = poll(&pf, 1, 100);
        if (pr == 0 || (pr < 0 && errno == EINTR)) {
            if (lop_clock_mono(a->clock) >= deadline) {
                timed_out = true;
                kill(pid, SIGKILL);
                break;
            }
            continue;
        }
        ssize_t r = read(pfd[0], chunk, sizeof chunk);
        if (r > 0) {
            if (out->len + (size_t)r > EXEC_MAX_OUTPUT) {
                timed_out = false;
                kill(pid, SIGKILL);
                break;
            }
            lop_buf_append(out, chunk, (size_t)r);
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        break;
    }
    close(pfd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    a->exec_runs++;
    if (timed_out)
        return lop_err_set(err, LOP_ETIMEDOUT, 0, NULL, "exec plugin %s did not finish within %d s", e->command,
                           (int)(EXEC_TIMEOUT_NS / LOP_NS_PER_S));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "exec plugin %s could not be run%s%s", e->command,
                           *hint ? ": " : "", hint);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "exec plugin %s failed (exit status %d)", e->command,
                           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return LOP_OK;
}

static lop_rc_t parse_exec_credential(lop_auth_t *a, const char *text, lop_err_t *err)
{
    const char *cmd = a->exec.command;
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (!json_is_object(root)) {
        json_decref(root);
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "exec plugin %s: output is not a JSON ExecCredential", cmd);
    }
    lop_rc_t rc = LOP_OK;
    const char *kind = json_string_value(json_object_get(root, "kind"));
    const char *apiv = json_string_value(json_object_get(root, "apiVersion"));
    json_t *status = json_object_get(root, "status");
    const char *tok = json_string_value(json_object_get(status, "token"));
    const char *cert = json_string_value(json_object_get(status, "clientCertificateData"));
    const char *key = json_string_value(json_object_get(status, "clientKeyData"));
    const char *exp = json_string_value(json_object_get(status, "expirationTimestamp"));
    int64_t exp_ns = 0;
    if (!kind || strcmp(kind, "ExecCredential") != 0) {
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "exec plugin %s: kind is not ExecCredential", cmd);
    } else if (!apiv || strcmp(apiv, a->exec.api_version) != 0) {
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "exec plugin %s: apiVersion %s does not match the configured %s",
                         cmd, apiv ? apiv : "(none)", a->exec.api_version);
    } else if (!json_is_object(status)) {
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "exec plugin %s: ExecCredential has no status", cmd);
    } else if ((cert && *cert) != (key && *key)) {
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL,
                         "exec plugin %s: status.clientCertificateData and clientKeyData must both "
                         "be set or both be empty",
                         cmd);
    } else if (!(tok && *tok) && !(cert && *cert)) {
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "exec plugin %s: status has neither token nor client certificate",
                         cmd);
    } else if (exp && *exp && lop_time_parse(exp, &exp_ns) != 0) {
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "exec plugin %s: status.expirationTimestamp is not RFC 3339", cmd);
    }
    if (rc == LOP_OK) {
        lop_auth_cred_cleanup(&a->exec_cred);
        if (tok && *tok) a->exec_cred.token = lop_xstrdup(tok);
        if (cert && *cert) {
            a->exec_cred.cert_pem = lop_xstrdup(cert);
            a->exec_cred.key_pem = lop_xstrdup(key);
        }
        a->exec_valid = true;
        a->exec_expiry_wall = exp_ns;
    }
    json_decref(root);
    return rc;
}

static lop_rc_t refresh_exec(lop_auth_t *a, lop_err_t *err)
{
    if (a->exec_valid && (a->exec_expiry_wall == 0 || lop_clock_wall(a->clock) < a->exec_expiry_wall)) return LOP_OK;
    if (a->exec.interactive_mode && strcmp(a->exec.interactive_mode, "Always") == 0)
        return lop_err_set(err, LOP_EINVAL, 0, NULL,
                           "exec plugin %s requires interactive mode (interactiveMode: Always), "
                           "which luaop cannot provide",
                           a->exec.command);
    lop_buf_t out = LOP_BUF_INIT;
    lop_rc_t rc = run_plugin(a, &out, err);
    if (rc == LOP_OK) rc = parse_exec_credential(a, out.data ? out.data : "", err);
    if (out.data) explicit_bzero(out.data, out.len);
    lop_buf_free(&out);
    if (rc == LOP_OK) lop_log(LOP_LOG_DEBUG, "exec credential refreshed", "command", a->exec.command, NULL);
    return rc;
}

lop_rc_t lop_auth_get(lop_auth_t *a, lop_auth_cred_t *out, lop_err_t *err)
{
    memset(out, 0, sizeof *out);
    lop_rc_t rc = LOP_OK;
    pthread_mutex_lock(&a->mu);
    if (a->has_exec) {
        rc = refresh_exec(a, err);
        if (rc == LOP_OK) {
            if (a->exec_cred.token) out->token = lop_xstrdup(a->exec_cred.token);
            if (a->exec_cred.cert_pem) out->cert_pem = lop_xstrdup(a->exec_cred.cert_pem);
            if (a->exec_cred.key_pem) out->key_pem = lop_xstrdup(a->exec_cred.key_pem);
        }
    }
    if (rc == LOP_OK && !out->token) {
        if (a->token_file) {
            rc = read_token_file(a, err);
            if (rc == LOP_OK) out->token = lop_xstrdup(a->file_token);
        } else if (a->static_token) {
            out->token = lop_xstrdup(a->static_token);
        }
    }
    pthread_mutex_unlock(&a->mu);
    if (rc != LOP_OK) lop_auth_cred_cleanup(out);
    return rc;
}

bool lop_auth_invalidate(lop_auth_t *a)
{
    pthread_mutex_lock(&a->mu);
    bool dynamic = a->has_exec || a->token_file;
    a->exec_valid = false;
    if (a->file_token) {
        explicit_bzero(a->file_token, strlen(a->file_token));
        free(a->file_token);
        a->file_token = NULL;
    }
    pthread_mutex_unlock(&a->mu);
    return dynamic;
}
