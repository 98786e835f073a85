/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/runtime/health: kube-style healthz/readyz answers. */
#include "host/runtime/health.h"
#include "t.h"

#include <stdio.h>

typedef struct fake_check {
    bool ok;
    const char *reason;
    int calls;
} fake_check_t;

static bool fake(void *ud, char *reason, size_t len)
{
    fake_check_t *c = ud;
    c->calls++;
    if (!c->ok && c->reason) snprintf(reason, len, "%s", c->reason);
    return c->ok;
}

typedef struct answer {
    int status;
    char body[1024];
} answer_t;

static answer_t run(lop_health_t *h, lop_health_kind_t kind, const char *only, bool verbose, const char *const *exclude,
                    size_t nexclude)
{
    answer_t a;
    lop_buf_t b = LOP_BUF_INIT;
    a.status = lop_health_run(h, kind, only, verbose, exclude, nexclude, &b);
    snprintf(a.body, sizeof a.body, "%s", b.data ? b.data : "");
    lop_buf_free(&b);
    return a;
}

static void test_healthz_has_ping_and_says_ok(void)
{
    lop_health_t *h = lop_health_new();
    answer_t a = run(h, LOP_HEALTHZ, NULL, false, NULL, 0);
    T_EQ_INT(a.status, 200);
    T_EQ_STR(a.body, "ok");
    a = run(h, LOP_HEALTHZ, NULL, true, NULL, 0);
    T_EQ_INT(a.status, 200);
    T_EQ_STR(a.body, "[+]ping ok\nhealthz check passed\n");
    /* readyz with no checks is ready. */
    a = run(h, LOP_READYZ, NULL, true, NULL, 0);
    T_EQ_INT(a.status, 200);
    T_EQ_STR(a.body, "readyz check passed\n");
    lop_health_free(h);
}

static void test_readyz_verbose_lists_each_check_in_order(void)
{
    lop_health_t *h = lop_health_new();
    fake_check_t scripts = {true, NULL, 0}, synced = {false, "2 of 3 informers synced", 0};
    T_EQ_INT(lop_health_add(h, LOP_READYZ, "scripts", fake, &scripts, NULL), LOP_OK);
    T_EQ_INT(lop_health_add(h, LOP_READYZ, "informers-synced", fake, &synced, NULL), LOP_OK);

    /* A failure always lists every check, verbose or not. */
    const char *want = "[+]scripts ok\n"
                       "[-]informers-synced failed: 2 of 3 informers synced\n"
                       "readyz check failed\n";
    answer_t a = run(h, LOP_READYZ, NULL, false, NULL, 0);
    T_EQ_INT(a.status, 500);
    T_EQ_STR(a.body, want);
    a = run(h, LOP_READYZ, NULL, true, NULL, 0);
    T_EQ_INT(a.status, 500);
    T_EQ_STR(a.body, want);

    synced.ok = true;
    a = run(h, LOP_READYZ, NULL, false, NULL, 0);
    T_EQ_INT(a.status, 200);
    T_EQ_STR(a.body, "ok");
    a = run(h, LOP_READYZ, NULL, true, NULL, 0);
    T_EQ_STR(a.body, "[+]scripts ok\n[+]informers-synced ok\nreadyz check passed\n");
    T_EQ_INT(scripts.calls, 4);
    /* healthz does not run readyz checks. */
    run(h, LOP_HEALTHZ, NULL, true, NULL, 0);
    T_EQ_INT(scripts.calls, 4);
    lop_health_free(h);
}

static void test_single_check_and_unknown_name(void)
{
    lop_health_t *h = lop_health_new();
    fake_check_t stuck = {false, "worker 2 in reconcile for 95s (deadline 60s)", 0};
    T_EQ_INT(lop_health_add(h, LOP_HEALTHZ, "workers-not-stuck", fake, &stuck, NULL), LOP_OK);
    answer_t a = run(h, LOP_HEALTHZ, "workers-not-stuck", false, NULL, 0);
    T_EQ_INT(a.status, 500);
    T_EQ_STR(a.body, "internal server error: worker 2 in reconcile for 95s (deadline 60s)\n");
    a = run(h, LOP_HEALTHZ, "ping", false, NULL, 0);
    T_EQ_INT(a.status, 200);
    T_EQ_STR(a.body, "ok");
    a = run(h, LOP_HEALTHZ, "nope", false, NULL, 0);
    T_EQ_INT(a.status, 404);
    lop_health_free(h);
}

static void test_exclude_skips_a_check(void)
{
    lop_health_t *h = lop_health_new();
    fake_check_t loop = {false, NULL, 0};
    T_EQ_INT(lop_health_add(h, LOP_HEALTHZ, "event-loop", fake, &loop, NULL), LOP_OK);
    const char *ex[] = {"event-loop", "no-such-check"};
    answer_t a = run(h, LOP_HEALTHZ, NULL, true, ex, 2);
    T_EQ_INT(a.status, 200);
    T_EQ_STR(a.body, "[+]ping ok\n[+]event-loop excluded: ok\nhealthz check passed\n");
    T_EQ_INT(loop.calls, 0);
    /* A failing check without a reason still says why it is listed. */
    a = run(h, LOP_HEALTHZ, NULL, false, NULL, 0);
    T_EQ_INT(a.status, 500);
    T_EQ_STR(a.body, "[+]ping ok\n[-]event-loop failed: check failed\nhealthz check failed\n");
    lop_health_free(h);
}

static void test_reason_newlines_are_flattened(void)
{
    lop_health_t *h = lop_health_new();
    fake_check_t c = {false, "line one\nline two", 0};
    T_EQ_INT(lop_health_add(h, LOP_READYZ, "scripts", fake, &c, NULL), LOP_OK);
    answer_t a = run(h, LOP_READYZ, NULL, false, NULL, 0);
    T_EQ_STR(a.body, "[-]scripts failed: line one line two\nreadyz check failed\n");
    lop_health_free(h);
}

static void test_add_remove_and_bad_names(void)
{
    lop_health_t *h = lop_health_new();
    fake_check_t c = {true, NULL, 0};
    lop_err_t err;
    T_EQ_INT(lop_health_add(h, LOP_HEALTHZ, "ping", fake, &c, &err), LOP_EEXIST);
    T_CHECK(strstr(err.message, "ping") != NULL);
    T_EQ_INT(lop_health_add(h, LOP_READYZ, "ping", fake, &c, &err), LOP_OK); /* other set */
    T_EQ_INT(lop_health_add(h, LOP_READYZ, "Bad Name", fake, &c, &err), LOP_EINVAL);
    T_EQ_INT(lop_health_add(h, LOP_READYZ, "", fake, &c, &err), LOP_EINVAL);
    T_EQ_INT(lop_health_add(h, LOP_READYZ, NULL, fake, &c, &err), LOP_EINVAL);
    T_EQ_INT(lop_health_add(h, LOP_READYZ, "x", NULL, &c, &err), LOP_EINVAL);
    T_EQ_INT(lop_health_add(h, (lop_health_kind_t)7, "x", fake, &c, &err), LOP_EINVAL);
    T_EQ_INT(lop_health_remove(h, LOP_READYZ, "ping"), LOP_OK);
    T_EQ_INT(lop_health_remove(h, LOP_READYZ, "ping"), LOP_ENOTFOUND);
    answer_t a = run(h, LOP_READYZ, NULL, true, NULL, 0);
    T_EQ_STR(a.body, "readyz check passed\n");
    T_EQ_INT(c.calls, 0);
    lop_health_free(h);
}

static void test_heartbeat_fails_when_beats_stop(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_health_heartbeat_t hb;
    lop_health_heartbeat_init(&hb, &fc.base, 10 * LOP_NS_PER_S, "event loop");
    lop_health_t *h = lop_health_new();
    T_EQ_INT(lop_health_add(h, LOP_HEALTHZ, "event-loop", lop_health_heartbeat_check, &hb, NULL), LOP_OK);
    T_EQ_INT(run(h, LOP_HEALTHZ, NULL, false, NULL, 0).status, 200);
    lop_fake_clock_step(&fc, 10 * LOP_NS_PER_S); /* exactly at the limit: still healthy */
    T_EQ_INT(run(h, LOP_HEALTHZ, NULL, false, NULL, 0).status, 200);
    lop_fake_clock_step(&fc, 2500 * LOP_NS_PER_MS);
    answer_t a = run(h, LOP_HEALTHZ, NULL, false, NULL, 0);
    T_EQ_INT(a.status, 500);
    T_EQ_STR(a.body, "[+]ping ok\n[-]event-loop failed: event loop last beat 12.5s ago (limit 10.0s)\n"
                     "healthz check failed\n");
    lop_health_heartbeat_beat(&hb); /* the loop runs again */
    T_EQ_INT(run(h, LOP_HEALTHZ, NULL, false, NULL, 0).status, 200);
    lop_health_free(h);
}

static void test_flag_reports_its_reason_until_set(void)
{
    lop_health_flag_t f;
    lop_health_flag_init(&f, false, "no script set loaded yet");
    lop_health_t *h = lop_health_new();
    T_EQ_INT(lop_health_add(h, LOP_READYZ, "scripts", lop_health_flag_check, &f, NULL), LOP_OK);
    answer_t a = run(h, LOP_READYZ, "scripts", false, NULL, 0);
    T_EQ_INT(a.status, 500);
    T_EQ_STR(a.body, "internal server error: no script set loaded yet\n");
    lop_health_flag_set(&f, true, NULL);
    a = run(h, LOP_READYZ, "scripts", false, NULL, 0);
    T_EQ_INT(a.status, 200);
    lop_health_flag_set(&f, false, "first load failed: main.lua:3: syntax error");
    a = run(h, LOP_READYZ, NULL, false, NULL, 0);
    T_EQ_STR(a.body, "[-]scripts failed: first load failed: main.lua:3: syntax error\n"
                     "readyz check failed\n");
    lop_health_free(h);
    lop_health_flag_cleanup(&f);
}

int main(void)
{
    T_RUN(test_heartbeat_fails_when_beats_stop);
    T_RUN(test_flag_reports_its_reason_until_set);
    T_RUN(test_healthz_has_ping_and_says_ok);
    T_RUN(test_readyz_verbose_lists_each_check_in_order);
    T_RUN(test_single_check_and_unknown_name);
    T_RUN(test_exclude_skips_a_check);
    T_RUN(test_reason_newlines_are_flattened);
    T_RUN(test_add_remove_and_bad_names);
    return T_DONE();
}
