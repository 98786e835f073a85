/* SPDX-License-Identifier: Apache-2.0 */
/* Templates, rendering and file writing for `luaop init` / `luaop create` (cmd/scaffold.h). */
#include "cmd/scaffold.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_DEPTH 8

const char *lop_scaffold_template(const char *name)
{
    for (const lop_scaffold_tmpl_t *t = lop_scaffold_templates; t->name; t++)
        if (strcmp(t->name, name) == 0) return t->data;
    return NULL;
}

static const lop_scaffold_var_t *var_find(const lop_scaffold_var_t *vars, const char *key, size_t n)
{
    for (; vars && vars->key; vars++)
        if (strlen(vars->key) == n && strncmp(vars->key, key, n) == 0) return vars;
    return NULL;
}

static bool var_true(const lop_scaffold_var_t *v)
{
    return v && v->value && *v->value && strcmp(v->value, "false") != 0;
}

static int line_of(const char *start, const char *p)
{
    int line = 1;
    for (; start < p; start++)
        if (*start == '\n') line++;
    return line;
}

/* One {{...}} tag at p (p points at "{{"): its kind ('#', '^', '/' or 0), name and the end. */
typedef struct tag {
    char kind;
    const char *name;
    size_t len;
    const char *end; /* just past "}}" */
} tag_t;

static bool parse_tag(const char *p, tag_t *t)
{
    const char *q = p + 2;
    t->kind = (*q == '#' || *q == '^' || *q == '/') ? *q++ : 0;
    const char *close = strstr(q, "}}");
    if (!close) return false;
    t->name = q;
    t->len = (size_t)(close - q);
    t->end = close + 2;
    return t->len > 0;
}

lop_rc_t lop_scaffold_render(const char *tname, const char *tmpl, const lop_scaffold_var_t *vars, lop_buf_t *out,
                             lop_err_t *err)
{
    struct {
        const char *name;
        size_t len;
        bool emit;
    } stack[MAX_DEPTH];
    int depth = 0;
    bool emit = true;
    const char *p = tmpl;
    while (*p) {
        const char *open = strstr(p, "{{");
        if (!open) {
            if (emit) lop_buf_puts(out, p);
            break;
        }
        if (emit) lop_buf_append(out, p, (size_t)(open - p));
        tag_t t;
        if (!parse_tag(open, &t))
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s:%d: unterminated or empty {{ }} tag", tname,
                               line_of(tmpl, open));
        if (t.kind == 0) {
            const lop_scaffold_var_t *v = var_find(vars, t.name, t.len);
            if (!v)
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s:%d: unknown variable \"%.*s\"", tname,
                                   line_of(tmpl, open), (int)t.len, t.name);
            if (emit && v->value) lop_buf_puts(out, v->value);
            p = t.end;
            continue;
        }
        /* a section tag alone on its line (at column 0) takes the line ending with it */
        bool standalone = (open == tmpl || open[-1] == '\n') && *t.end == '\n';
        if (t.kind == '/') {
            if (depth == 0 || stack[depth - 1].len != t.len || strncmp(stack[depth - 1].name, t.name, t.len) != 0)
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s:%d: {{/%.*s}} closes no open section", tname,
                                   line_of(tmpl, open), (int)t.len, t.name);
            emit = stack[--depth].emit;
        } else {
            const lop_scaffold_var_t *v = var_find(vars, t.name, t.len);
            if (!v)
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s:%d: unknown section variable \"%.*s\"", tname,
                                   line_of(tmpl, open), (int)t.len, t.name);
            if (depth == MAX_DEPTH)
                return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s:%d: sections nested deeper than %d", tname,
                                   line_of(tmpl, open), MAX_DEPTH);
            stack[depth].name = t.name;
            stack[depth].len = t.len;
            stack[depth++].emit = emit;
            emit = emit && (t.kind == '#' ? var_true(v) : !var_true(v));
        }
        p = standalone ? t.end + 1 : t.end;
    }
    if (depth)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: section \"%.*s\" is never closed", tname,
                           (int)stack[depth - 1].len, stack[depth - 1].name);
    return LOP_OK;
}

static lop_rc_t mkdirs(const char *path, lop_err_t *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: path too long", path);
    for (char *s = tmp + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return lop_err_set(err, LOP_ERR, 0, NULL, "cannot create directory %s: %s", tmp, strerror(errno));
        *s = '/';
    }
    return LOP_OK;
}

static lop_rc_t join(char *out, size_t n, const char *root, const char *rel, lop_err_t *err)
{
    if (snprintf(out, n, "%s/%s", root, rel) >= (int)n)
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s/%s: path too long", root, rel);
    return LOP_OK;
}

bool lop_scaffold_exists(const char *root, const char *rel)
{
    char path[PATH_MAX];
    struct stat st;
    return join(path, sizeof path, root, rel, NULL) == LOP_OK && stat(path, &st) == 0;
}

lop_rc_t lop_scaffold_write(const char *root, const char *rel, const char *data, size_t len, bool overwrite,
                            lop_err_t *err)
{
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    lop_rc_t rc = join(path, sizeof path, root, rel, err);
    if (rc != LOP_OK) return rc;
    struct stat st;
    if (!overwrite && stat(path, &st) == 0)
        return lop_err_set(err, LOP_EEXIST, 0, NULL, "%s already exists (--force replaces it)", path);
    if ((rc = mkdirs(path, err)) != LOP_OK) return rc;
    snprintf(tmp, sizeof tmp, "%s.tmp~", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return lop_err_set(err, LOP_ERR, 0, NULL, "cannot write %s: %s", tmp, strerror(errno));
    bool ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return lop_err_set(err, LOP_ERR, 0, NULL, "cannot write %s: %s", path, strerror(e));
    }
    return LOP_OK;
}

lop_rc_t lop_scaffold_emit(const char *root, const char *rel, const char *tname, const lop_scaffold_var_t *vars,
                           bool overwrite, lop_err_t *err)
{
    const char *tmpl = lop_scaffold_template(tname);
    if (!tmpl) return lop_err_set(err, LOP_ENOTFOUND, 0, NULL, "no embedded template \"%s\" (a build problem)", tname);
    lop_buf_t b = LOP_BUF_INIT;
    lop_rc_t rc = lop_scaffold_render(tname, tmpl, vars, &b, err);
    if (rc == LOP_OK) rc = lop_scaffold_write(root, rel, b.data ? b.data : "", b.len, overwrite, err);
    lop_buf_free(&b);
    return rc;
}

static lop_rc_t read_file(const char *path, lop_buf_t *b, lop_err_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return lop_err_set(err, errno == ENOENT ? LOP_ENOTFOUND : LOP_ERR, 0, NULL, "cannot read %s: %s", path,
                           strerror(errno));
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) lop_buf_append(b, chunk, n);
    fclose(f);
    return LOP_OK;
}

lop_rc_t lop_scaffold_insert(const char *root, const char *rel, const char *marker, const char *text, bool *already,
                             lop_err_t *err)
{
    char path[PATH_MAX];
    lop_rc_t rc = join(path, sizeof path, root, rel, err);
    if (rc != LOP_OK) return rc;
    if (already) *already = false;
    lop_buf_t b = LOP_BUF_INIT, out = LOP_BUF_INIT;
    if ((rc = read_file(path, &b, err)) != LOP_OK) goto done;
    const char *data = b.data ? b.data : "";
    if (strstr(data, text)) {
        if (already) *already = true;
        goto done;
    }
    const char *m = strstr(data, marker);
    if (!m) {
        rc = lop_err_set(err, LOP_ENOTFOUND, 0, NULL, "%s: the marker \"%s\" is gone: add it back where %s should go",
                         path, marker, rel);
        goto done;
    }
    while (m > data && m[-1] != '\n') m--;
    lop_buf_append(&out, data, (size_t)(m - data));
    lop_buf_puts(&out, text);
    lop_buf_puts(&out, m);
    rc = lop_scaffold_write(root, rel, out.data, out.len, true, err);
done:
    lop_buf_free(&b);
    lop_buf_free(&out);
    return rc;
}

lop_rc_t lop_scaffold_remove_line(const char *root, const char *rel, const char *line, bool *removed, lop_err_t *err)
{
    char path[PATH_MAX];
    lop_rc_t rc = join(path, sizeof path, root, rel, err);
    if (rc != LOP_OK) return rc;
    if (removed) *removed = false;
    lop_buf_t b = LOP_BUF_INIT, out = LOP_BUF_INIT;
    if ((rc = read_file(path, &b, err)) != LOP_OK) goto done;
    size_t n = strlen(line);
    bool found = false;
    for (const char *p = b.data ? b.data : "", *end = p + b.len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        if (len == n && memcmp(p, line, n) == 0)
            found = true;
        else
            lop_buf_append(&out, p, len);
        p += len;
    }
    if (found) rc = lop_scaffold_write(root, rel, out.data ? out.data : "", out.len, true, err);
    if (rc == LOP_OK && removed) *removed = found;
done:
    lop_buf_free(&b);
    lop_buf_free(&out);
    return rc;
}

lop_rc_t lop_scaffold_run_self(const char *root, char *const args[], const char *out_rel, lop_err_t *err)
{
    char exe[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 8], errpath[PATH_MAX + 8];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return lop_err_set(err, LOP_ERR, 0, NULL, "cannot find this executable: %s", strerror(errno));
    exe[n] = '\0';
    lop_rc_t rc = join(path, sizeof path, root, out_rel, err);
    if (rc != LOP_OK || (rc = mkdirs(path, err)) != LOP_OK) return rc;
    snprintf(tmp, sizeof tmp, "%s.tmp~", path);
    snprintf(errpath, sizeof errpath, "%s.err~", path);
    char *argv[32];
    size_t i = 0;
    argv[i++] = exe;
    for (; args[i - 1] && i < sizeof argv / sizeof argv[0] - 1; i++) argv[i] = args[i - 1];
    argv[i] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addchdir_np(&fa, root);
    pid_t pid;
    int e = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0) return lop_err_set(err, LOP_ERR, 0, NULL, "cannot run luaop %s: %s", args[0], strerror(e));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    /* its stderr (the "ok: ..." summary, warnings) is shown only when it failed */
    lop_buf_t eb = LOP_BUF_INIT;
    if (failed && read_file(errpath, &eb, NULL) == LOP_OK && eb.len) fputs(eb.data, stderr);
    lop_buf_free(&eb);
    unlink(errpath);
    if (failed) {
        unlink(tmp);
        return lop_err_set(err, LOP_ERR, 0, NULL, "`luaop %s` failed (status %d): %s not written", args[0],
                           WIFEXITED(status) ? WEXITSTATUS(status) : -1, out_rel);
    }
    if (rename(tmp, path) != 0) return lop_err_set(err, LOP_ERR, 0, NULL, "cannot write %s: %s", path, strerror(errno));
    return LOP_OK;
}

static bool dns_label(const char *s, size_t n)
{
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-') return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-')) return false;
    return true;
}

bool lop_scaffold_dns_name(const char *s, bool dots)
{
    if (!s || !*s || strlen(s) > 253) return false;
    if (!dots) return dns_label(s, strlen(s));
    for (const char *p = s;;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (!dns_label(p, n)) return false;
        if (!dot) return true;
        p = dot + 1;
    }
}
