/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for what the default sandbox gives a script through the real engine
 * (bindings/engine_lua.h): op.log's field redaction at any depth. */
#include "bindings/engine_lua.h"
#include "host/util/clock.h"
#include "host/util/log.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static lop_fake_clock_t fclock;

static lop_engine_opts_t opts(void)
{
    lop_engine_opts_t o = {0};
    o.reconcile_timeout_ns = 10 * LOP_NS_PER_S;
    o.load_timeout_ns = 10 * LOP_NS_PER_S;
    o.clock = &fclock.base;
    return o;
}

/* Loads src as main.lua of a one-file set in a fresh VM (no host) and frees it. The load's stderr
 * (the log lines) is returned, malloc'd; *ok says whether the load succeeded (else err is printed). */
static char *load_capturing_stderr(const char *src, bool *ok)
{
    lop_script_file_t file = {.name = "main.lua", .data = (char *)src, .len = strlen(src)};
    lop_script_set_t set = {.files = &file, .nfiles = 1};
    strcpy(set.origin, "dir /tmp/test");
    char path[] = "/tmp/luaop-test-sandbox-XXXXXX";
    int fd = mkstemp(path);
    T_CHECK(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    lop_engine_opts_t o = opts();
    lop_err_t err;
    lop_vm_t *vm = lop_lua_engine()->vm_new(&set, &o, NULL, &err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    *ok = vm != NULL;
    if (vm)
        lop_lua_engine()->vm_free(vm);
    else
        fprintf(stderr, "load failed: %s\n", err.message);
    off_t n = lseek(fd, 0, SEEK_END);
    char *buf = calloc(1, (size_t)n + 1);
    if (n > 0 && pread(fd, buf, (size_t)n, 0) != n) buf[0] = 0;
    close(fd);
    unlink(path);
    return buf;
}

/* The log line whose msg is the given case name, copied into line (empty when absent). */
static void line_of(const char *log, const char *name, char *line, size_t len)
{
    char needle[64];
    snprintf(needle, sizeof needle, "msg=%s ", name);
    const char *p = strstr(log, needle);
    line[0] = 0;
    if (!p) return;
    while (p > log && p[-1] != '\n') p--;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n >= len) n = len - 1;
    memcpy(line, p, n);
    line[n] = 0;
}

/* op.log fields: a Secret object is redacted wherever it sits (9 and 50 levels down, inside a
 * cycle); a table too deep to check or containing itself is replaced by a marker, not printed
 * and not an error; plain nested tables are still logged as JSON. */
static void test_log_redacts_secrets_at_any_depth(void)
{
    static const char src[] =
        "local log = require('luaop').log\n"
        "local function secret() return { kind = 'Secret', data = { password = 'aHVudGVyMg==' } } end\n"
        "local function nest(n, leaf) local t = leaf; for _ = 1, n do t = { x = t } end; return t end\n"
        "log.info('depth9', { f = nest(9, secret()) })\n"
        "log.info('depth50', { f = nest(50, secret()) })\n"
        "log.info('list9', { f = nest(8, { items = { secret() } }) })\n"
        "local c = { a = {} }; c.a.back = c; c.a.s = secret()\n"
        "log.info('cyclesecret', { f = c })\n"
        "local d = { a = { b = {} } }; d.a.b.up = d.a\n"
        "log.info('cycle', { f = d })\n"
        "log.info('deep', { f = nest(100, { v = 1 }) })\n"
        "local shared = nest(60, { v = 1 })\n"
        "log.info('shared', { f = { one = shared, two = { x = { x = { x = { x = { x = shared } } } } } } })\n"
        "log.info('plain', { f = nest(9, { v = 1 }) })\n"
        "log.info('mt', { f = setmetatable({}, { __index = function() error('metamethod ran') end }) })\n";
    bool ok;
    char *log = load_capturing_stderr(src, &ok);
    T_CHECK(ok);
    T_CHECK(strstr(log, "aHVudGVyMg") == NULL); /* the Secret's data never reaches a line */
    char line[4096];
    const char *redacted[] = {"depth9", "depth50", "list9", "cyclesecret"};
    for (size_t i = 0; i < sizeof redacted / sizeof *redacted; i++) {
        line_of(log, redacted[i], line, sizeof line);
        if (!strstr(line, "<redacted: holds a Secret>")) fprintf(stderr, "%s: [%s]\n", redacted[i], line);
        T_CHECK(strstr(line, "<redacted: holds a Secret>") != NULL);
    }
    line_of(log, "cycle", line, sizeof line);
    T_CHECK(strstr(line, "<not logged: a table that contains itself>") != NULL);
    line_of(log, "deep", line, sizeof line);
    T_CHECK(strstr(line, "<redacted: nested deeper than 64 levels>") != NULL);
    line_of(log, "shared", line, sizeof line); /* 60 levels met again 5 levels down */
    T_CHECK(strstr(line, "<redacted: nested deeper than 64 levels>") != NULL);
    line_of(log, "plain", line, sizeof line);
    T_CHECK(strstr(line, "{\\\"x\\\":{\\\"x\\\":") != NULL || strstr(line, "{\"x\":{\"x\":") != NULL);
    if (!strstr(line, "\"v\":1") && !strstr(line, "\\\"v\\\":1")) fprintf(stderr, "plain: [%s]\n", line);
    T_CHECK(strstr(line, "\"v\":1") != NULL || strstr(line, "\\\"v\\\":1") != NULL);
    line_of(log, "mt", line, sizeof line);
    T_CHECK(line[0] != 0 && strstr(log, "metamethod ran") == NULL);
    free(log);
}

int main(void)
{
    lop_fake_clock_init(&fclock, 0);
    lop_log_setup(LOP_LOG_INFO, LOP_LOG_TEXT);
    T_RUN(test_log_redacts_secrets_at_any_depth);
    return T_DONE();
}
