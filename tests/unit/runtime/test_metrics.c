/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/runtime/metrics: exposition format (parsed back), escaping, histograms,
 * callbacks, bad input and concurrent updates. */
#include "host/runtime/metrics/metrics.h"
#include "host/runtime/metrics/metrics_process.h"
#include "host/runtime/metrics/metrics_std.h"
#include "t.h"

#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdlib.h>
#include <dirent.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- a small 0.0.4 text parser */

typedef struct sample {
    char name[128];
    int nlabels;
    char lname[9][64];
    char lvalue[9][256];
    double value;
} sample_t;

typedef struct parsed {
    sample_t s[512];
    int n;
    char help[64][128]; /* "name" of each HELP line, in order */
    char type[64][160]; /* "name type" of each TYPE line, in order */
    int nhelp, ntype;
    int errors; /* lines that do not follow the grammar */
} parsed_t;

static bool name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

/* Parse one sample line; false when it does not follow the grammar. */
static bool parse_sample(const char *line, sample_t *s)
{
    const char *p = line;
    size_t n = 0;
    memset(s, 0, sizeof *s);
    while (name_char(*p, n == 0) && n < sizeof s->name - 1) s->name[n++] = *p++;
    if (n == 0) return false;
    if (*p == '{') {
        p++;
        while (*p != '}') {
            if (s->nlabels == 9) return false;
            size_t k = 0;
            while (name_char(*p, k == 0) && *p != ':' && k < 63) s->lname[s->nlabels][k++] = *p++;
            if (k == 0 || *p++ != '=' || *p++ != '"') return false;
            size_t v = 0;
            while (*p && *p != '"' && v < 255) {
                if (*p == '\\') {
                    p++;
                    if (*p == 'n')
                        s->lvalue[s->nlabels][v++] = '\n';
                    else if (*p == '\\' || *p == '"')
                        s->lvalue[s->nlabels][v++] = *p;
                    else
                        return false;
                    p++;
                } else if (*p == '\n') {
                    return false;
                } else {
                    s->lvalue[s->nlabels][v++] = *p++;
                }
            }
            if (*p++ != '"') return false;
            s->nlabels++;
            if (*p == ',')
                p++;
            else if (*p != '}')
                return false;
        }
        p++;
    }
    if (*p++ != ' ') return false;
    char *end;
    s->value = strtod(p, &end);
    return end != p && *end == '\0';
}

static void parse(const char *text, parsed_t *out)
{
    memset(out, 0, sizeof *out);
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        if (!nl) { /* every line, the last included, ends with \n */
            out->errors++;
            break;
        }
        char line[2048];
        size_t len = (size_t)(nl - p);
        if (len >= sizeof line) len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = '\0';
        p = nl + 1;
        if (strncmp(line, "# HELP ", 7) == 0) {
            if (out->nhelp < 64) sscanf(line + 7, "%127s", out->help[out->nhelp++]);
        } else if (strncmp(line, "# TYPE ", 7) == 0) {
            if (out->ntype < 64) snprintf(out->type[out->ntype++], sizeof out->type[0], "%.150s", line + 7);
        } else if (line[0] == '#') {
            out->errors++;
        } else if (out->n < 512) {
            if (parse_sample(line, &out->s[out->n]))
                out->n++;
            else {
                fprintf(stderr, "unparsable line: %s\n", line);
                out->errors++;
            }
        }
    }
}

/* The value of sample `name` with exactly the label pairs given (k, v, ..., NULL); NAN if absent.
 */
static double get(const parsed_t *ps, const char *name, ...)
{
    const char *kv[18];
    int nkv = 0;
    va_list ap;
    va_start(ap, name);
    for (const char *k; (k = va_arg(ap, const char *)) && nkv < 18;) kv[nkv++] = k;
    va_end(ap);
    for (int i = 0; i < ps->n; i++) {
        const sample_t *s = &ps->s[i];
        if (strcmp(s->name, name) != 0 || s->nlabels * 2 != nkv) continue;
        int j = 0;
        for (; j < s->nlabels; j++)
            if (strcmp(s->lname[j], kv[2 * j]) != 0 || strcmp(s->lvalue[j], kv[2 * j + 1]) != 0) break;
        if (j == s->nlabels) return s->value;
    }
    return NAN;
}

static void render(lop_metrics_t *r, parsed_t *ps)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_metrics_render(r, &b);
    parse(b.data ? b.data : "", ps);
    T_EQ_INT(ps->errors, 0);
    lop_buf_free(&b);
}

static parsed_t ps; /* large: keep off the stack */

/* ---------------------------------------------------------------- tests */

static void test_counter_and_gauge_exposition(void)
{
    lop_metrics_t *r = lop_metrics_new();
    const char *labels[] = {"controller", "result", NULL};
    lop_metric_family_t *c = lop_metrics_counter(r, "x_reconcile_total", "Reconciles.", labels, NULL);
    lop_metric_family_t *g = lop_metrics_gauge(r, "a_depth", "Depth.", NULL, NULL);
    T_CHECK(c && g);
    T_EQ_INT(lop_metric_counter_add(c, (const char *[]){"memcached", "success"}, 1, NULL), LOP_OK);
    T_EQ_INT(lop_metric_counter_add(c, (const char *[]){"memcached", "success"}, 2.5, NULL), LOP_OK);
    T_EQ_INT(lop_metric_counter_add(c, (const char *[]){"memcached", "error"}, 1, NULL), LOP_OK);
    T_EQ_INT(lop_metric_gauge_set(g, NULL, 7, NULL), LOP_OK);
    T_EQ_INT(lop_metric_gauge_add(g, NULL, -2, NULL), LOP_OK);

    lop_buf_t b = LOP_BUF_INIT;
    lop_metrics_render(r, &b);
    /* Families sorted by name, HELP then TYPE, children sorted by label values. */
    T_EQ_STR(b.data, "# HELP a_depth Depth.\n"
                     "# TYPE a_depth gauge\n"
                     "a_depth 5\n"
                     "# HELP x_reconcile_total Reconciles.\n"
                     "# TYPE x_reconcile_total counter\n"
                     "x_reconcile_total{controller=\"memcached\",result=\"error\"} 1\n"
                     "x_reconcile_total{controller=\"memcached\",result=\"success\"} 3.5\n");
    lop_buf_free(&b);

    render(r, &ps);
    T_EQ_INT(ps.ntype, 2);
    T_EQ_STR(ps.type[0], "a_depth gauge");
    T_EQ_STR(ps.type[1], "x_reconcile_total counter");
    T_CHECK(get(&ps, "x_reconcile_total", "controller", "memcached", "result", "success", NULL) == 3.5);
    T_CHECK(get(&ps, "a_depth", NULL) == 5);
    lop_metrics_free(r);
}

static void test_family_without_children_prints_help_and_type(void)
{
    lop_metrics_t *r = lop_metrics_new();
    T_CHECK(lop_metrics_counter(r, "empty_total", "Nothing yet.", (const char *[]){"k", NULL}, NULL));
    lop_buf_t b = LOP_BUF_INIT;
    lop_metrics_render(r, &b);
    T_EQ_STR(b.data, "# HELP empty_total Nothing yet.\n# TYPE empty_total counter\n");
    lop_buf_free(&b);
    lop_metrics_free(r);
}

static void test_label_value_and_help_escaping(void)
{
    lop_metrics_t *r = lop_metrics_new();
    lop_metric_family_t *g =
        lop_metrics_gauge(r, "esc", "Line one\nback\\slash \"quoted\"", (const char *[]){"v", NULL}, NULL);
    const char *nasty = "a\"b\\c\nd é";
    T_EQ_INT(lop_metric_gauge_set(g, (const char *[]){nasty}, 1, NULL), LOP_OK);
    lop_buf_t b = LOP_BUF_INIT;
    lop_metrics_render(r, &b);
    /* HELP escapes backslash and newline only; label values also escape the double quote. */
    T_CHECK(strstr(b.data, "# HELP esc Line one\\nback\\\\slash \"quoted\"\n") != NULL);
    T_CHECK(strstr(b.data, "esc{v=\"a\\\"b\\\\c\\nd é\"} 1\n") != NULL);
    lop_buf_free(&b);
    render(r, &ps);
    T_EQ_INT(ps.n, 1);
    T_EQ_STR(ps.s[0].lvalue[0], nasty); /* round trip through the parser */
    lop_metrics_free(r);
}

static void test_histogram_buckets_sum_count(void)
{
    lop_metrics_t *r = lop_metrics_new();
    const double bk[] = {0.1, 0.5, 1};
    lop_metric_family_t *h =
        lop_metrics_histogram(r, "lat_seconds", "Latency.", (const char *[]){"name", NULL}, bk, 3, NULL);
    T_CHECK(h != NULL);
    const char *v[] = {"q"};
    /* 0.1 sits exactly on a bound: le is inclusive. */
    const double obs[] = {0.05, 0.1, 0.3, 0.7, 2, 30};
    for (size_t i = 0; i < sizeof obs / sizeof obs[0]; i++)
        T_EQ_INT(lop_metric_histogram_observe(h, v, obs[i], NULL), LOP_OK);

    lop_buf_t b = LOP_BUF_INIT;
    lop_metrics_render(r, &b);
    T_EQ_STR(b.data, "# HELP lat_seconds Latency.\n"
                     "# TYPE lat_seconds histogram\n"
                     "lat_seconds_bucket{name=\"q\",le=\"0.1\"} 2\n"
                     "lat_seconds_bucket{name=\"q\",le=\"0.5\"} 3\n"
                     "lat_seconds_bucket{name=\"q\",le=\"1\"} 4\n"
                     "lat_seconds_bucket{name=\"q\",le=\"+Inf\"} 6\n"
                     "lat_seconds_sum{name=\"q\"} 33.15\n"
                     "lat_seconds_count{name=\"q\"} 6\n");
    lop_buf_free(&b);
    render(r, &ps);
    T_CHECK(get(&ps, "lat_seconds_bucket", "name", "q", "le", "+Inf", NULL) == 6);
    T_CHECK(fabs(get(&ps, "lat_seconds_sum", "name", "q", NULL) - 33.15) < 1e-9);
    T_EQ_INT(lop_metric_count(lop_metric_child(h, v, NULL)), 6);
    lop_metrics_free(r);
}

static void test_value_formatting(void)
{
    char buf[64];
    T_EQ_STR(lop_metric_format_value(0, buf, sizeof buf), "0");
    T_EQ_STR(lop_metric_format_value(1, buf, sizeof buf), "1");
    T_EQ_STR(lop_metric_format_value(0.25, buf, sizeof buf), "0.25");
    T_EQ_STR(lop_metric_format_value(123456, buf, sizeof buf), "123456");
    T_EQ_STR(lop_metric_format_value(1e6, buf, sizeof buf), "1e+06");
    T_EQ_STR(lop_metric_format_value(1e-8, buf, sizeof buf), "1e-08");
    T_EQ_STR(lop_metric_format_value(0.0001, buf, sizeof buf), "0.0001");
    T_EQ_STR(lop_metric_format_value(-2.5, buf, sizeof buf), "-2.5");
    T_EQ_STR(lop_metric_format_value(INFINITY, buf, sizeof buf), "+Inf");
    T_EQ_STR(lop_metric_format_value(-INFINITY, buf, sizeof buf), "-Inf");
    T_EQ_STR(lop_metric_format_value(NAN, buf, sizeof buf), "NaN");
    T_EQ_STR(lop_metric_format_value(0.1 + 0.2, buf, sizeof buf), "0.30000000000000004");
    T_EQ_STR(lop_metric_format_value(1234567, buf, sizeof buf), "1.234567e+06");
}

static void test_bucket_helpers(void)
{
    double b[8];
    T_EQ_INT(lop_metric_exp_buckets(b, 8, 0.001, 2, 4), 4);
    T_CHECK(b[0] == 0.001 && b[3] == 0.008);
    T_EQ_INT(lop_metric_exp_buckets(b, 8, 0, 2, 4), 0);
    T_EQ_INT(lop_metric_exp_buckets(b, 8, 1, 1, 4), 0);
    T_EQ_INT(lop_metric_exp_buckets(b, 8, 1, 2, 9), 0);
    T_EQ_INT(lop_metric_linear_buckets(b, 8, 0.5, 0.5, 3), 3);
    T_CHECK(b[0] == 0.5 && b[1] == 1 && b[2] == 1.5);
    T_EQ_INT(lop_metric_linear_buckets(b, 8, 0, -1, 3), 0);
    T_EQ_INT(lop_metric_linear_buckets(b, 8, NAN, 1, 3), 0);
}

static double fake_depth;
static double depth_fn(void *ud) { return *(double *)ud; }

static void test_gauge_callback_evaluated_at_scrape(void)
{
    lop_metrics_t *r = lop_metrics_new();
    lop_metric_family_t *g = lop_metrics_gauge(r, "workqueue_depth", "D.", (const char *[]){"name", NULL}, NULL);
    lop_metric_t *m = lop_metric_child(g, (const char *[]){"q"}, NULL);
    T_EQ_INT(lop_metric_set_fn(m, depth_fn, &fake_depth), LOP_OK);
    fake_depth = 4;
    render(r, &ps);
    T_CHECK(get(&ps, "workqueue_depth", "name", "q", NULL) == 4);
    fake_depth = 9;
    render(r, &ps);
    T_CHECK(get(&ps, "workqueue_depth", "name", "q", NULL) == 9);
    T_CHECK(lop_metric_value(m) == 9);
    /* Cleared: back to the stored value. */
    T_EQ_INT(lop_metric_set_fn(m, NULL, NULL), LOP_OK);
    T_CHECK(lop_metric_value(m) == 0);
    lop_metric_family_t *h = lop_metrics_histogram(r, "h", "H.", NULL, NULL, 0, NULL);
    T_EQ_INT(lop_metric_set_fn(lop_metric_child(h, NULL, NULL), depth_fn, &fake_depth), LOP_EINVAL);
    lop_metrics_free(r);
}

static void test_remove_hides_child_until_reused(void)
{
    lop_metrics_std_t std;
    lop_metrics_t *r = lop_metrics_new();
    T_EQ_INT(lop_metrics_std_init(&std, r, NULL), LOP_OK);
    T_EQ_INT(lop_metrics_std_set_active_version(&std, NULL, "aaaa", NULL), LOP_OK);
    T_EQ_INT(lop_metrics_std_set_active_version(&std, "aaaa", "bbbb", NULL), LOP_OK);
    render(r, &ps);
    T_CHECK(isnan(get(&ps, "luaop_script_active_version", "version", "aaaa", NULL)));
    T_CHECK(get(&ps, "luaop_script_active_version", "version", "bbbb", NULL) == 1);
    /* Rolling back to the old version shows it again. */
    T_EQ_INT(lop_metrics_std_set_active_version(&std, "bbbb", "aaaa", NULL), LOP_OK);
    render(r, &ps);
    T_CHECK(get(&ps, "luaop_script_active_version", "version", "aaaa", NULL) == 1);
    T_CHECK(isnan(get(&ps, "luaop_script_active_version", "version", "bbbb", NULL)));
    T_EQ_INT(lop_metric_remove(std.script_active_version, (const char *[]){"never"}), LOP_ENOTFOUND);
    /* Asking for a removed child again shows it (at 0). */
    T_EQ_INT(lop_metric_remove(std.script_active_version, (const char *[]){"aaaa"}), LOP_OK);
    T_CHECK(lop_metric_child(std.script_active_version, (const char *[]){"aaaa"}, NULL) != NULL);
    render(r, &ps);
    T_CHECK(get(&ps, "luaop_script_active_version", "version", "aaaa", NULL) == 0);
    lop_metrics_free(r);
}

static void test_bad_input_is_refused_with_reason(void)
{
    lop_metrics_t *r = lop_metrics_new();
    lop_err_t err;
    T_CHECK(!lop_metrics_counter(r, "bad-name", "", NULL, &err));
    T_CHECK(strstr(err.message, "bad-name") != NULL);
    T_CHECK(!lop_metrics_counter(r, "9lives", "", NULL, &err));
    T_CHECK(!lop_metrics_counter(r, NULL, "", NULL, &err));
    T_CHECK(!lop_metrics_counter(r, "ok_total", "", (const char *[]){"a", "a", NULL}, &err));
    T_CHECK(strstr(err.message, "duplicate") != NULL);
    T_CHECK(!lop_metrics_counter(r, "ok_total", "", (const char *[]){"__reserved", NULL}, &err));
    T_CHECK(!lop_metrics_histogram(r, "h", "", (const char *[]){"le", NULL}, NULL, 0, &err));
    T_CHECK(!lop_metrics_histogram(r, "h", "", NULL, (const double[]){1, 1}, 2, &err));
    T_CHECK(!lop_metrics_histogram(r, "h", "", NULL, (const double[]){NAN}, 1, &err));
    T_CHECK(lop_metrics_histogram(r, "h2", "", NULL, (const double[]){1, INFINITY}, 2, &err));

    lop_metric_family_t *c = lop_metrics_counter(r, "ok_total", "x", (const char *[]){"a", NULL}, &err);
    T_CHECK(c != NULL);
    /* Identical re-declaration returns the same family; a different shape is refused. */
    T_CHECK(lop_metrics_counter(r, "ok_total", "x", (const char *[]){"a", NULL}, &err) == c);
    T_CHECK(!lop_metrics_gauge(r, "ok_total", "x", (const char *[]){"a", NULL}, &err));
    T_CHECK(strstr(err.message, "already declared") != NULL);
    T_CHECK(!lop_metrics_counter(r, "ok_total", "x", (const char *[]){"b", NULL}, &err));
    T_CHECK(lop_metrics_find(r, "ok_total") == c);
    T_CHECK(lop_metrics_find(r, "nope") == NULL);

    T_EQ_INT(lop_metric_counter_add(c, (const char *[]){"v"}, -1, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "only goes up") != NULL);
    T_EQ_INT(lop_metric_counter_add(c, (const char *[]){NULL}, 1, &err), LOP_EINVAL);
    T_EQ_INT(lop_metric_counter_add(c, NULL, 1, &err), LOP_EINVAL);
    T_EQ_INT(lop_metric_counter_add(c, (const char *[]){"\xff\xfe"}, 1, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "UTF-8") != NULL);
    T_EQ_INT(lop_metric_counter_add(c, (const char *[]){"v"}, NAN, &err), LOP_EINVAL);
    T_EQ_INT(lop_metric_gauge_set(c, (const char *[]){"v"}, 1, &err), LOP_EINVAL);
    T_EQ_INT(lop_metric_histogram_observe(c, (const char *[]){"v"}, 1, &err), LOP_EINVAL);
    T_EQ_INT(lop_metric_set(NULL, 1), LOP_EINVAL);
    /* None of the refused updates left a visible trace. */
    render(r, &ps);
    T_CHECK(get(&ps, "ok_total", "a", "v", NULL) == 0);
    lop_metrics_free(r);
}

/* ---------------------------------------------------------------- concurrency */

enum { THREADS = 4, PER_THREAD = 20000 };

typedef struct worker_arg {
    lop_metric_family_t *c, *h, *g;
    int id;
} worker_arg_t;

static void *worker(void *p)
{
    worker_arg_t *a = p;
    char mine[16];
    snprintf(mine, sizeof mine, "w%d", a->id);
    lop_metric_t *cached = lop_metric_child(a->c, (const char *[]){"shared"}, NULL);
    for (int i = 0; i < PER_THREAD; i++) {
        lop_metric_inc(cached);
        lop_metric_counter_add(a->c, (const char *[]){mine}, 0.5, NULL);
        /* Children created concurrently by every thread on first use. */
        char k[16];
        snprintf(k, sizeof k, "k%d", i % 50);
        lop_metric_counter_add(a->c, (const char *[]){k}, 1, NULL);
        lop_metric_histogram_observe(a->h, NULL, (i % 2) ? 0.001 : 5.0, NULL);
        lop_metric_gauge_add(a->g, NULL, 1, NULL);
        lop_metric_gauge_add(a->g, NULL, -1, NULL);
    }
    return NULL;
}

static void test_concurrent_updates_sum_correctly(void)
{
    lop_metrics_t *r = lop_metrics_new();
    worker_arg_t args[THREADS];
    pthread_t th[THREADS];
    lop_metric_family_t *c = lop_metrics_counter(r, "ops_total", "Ops.", (const char *[]){"k", NULL}, NULL);
    lop_metric_family_t *h =
        lop_metrics_histogram(r, "op_seconds", "Op time.", NULL, (const double[]){0.01, 1}, 2, NULL);
    lop_metric_family_t *g = lop_metrics_gauge(r, "inflight", "In flight.", NULL, NULL);
    for (int i = 0; i < THREADS; i++) {
        args[i] = (worker_arg_t){c, h, g, i};
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    /* Scrapes run while the workers write. */
    for (int i = 0; i < 5; i++) {
        lop_buf_t b = LOP_BUF_INIT;
        lop_metrics_render(r, &b);
        lop_buf_free(&b);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);

    render(r, &ps);
    T_CHECK(get(&ps, "ops_total", "k", "shared", NULL) == THREADS * PER_THREAD);
    T_CHECK(get(&ps, "ops_total", "k", "w2", NULL) == PER_THREAD * 0.5);
    double ksum = 0;
    int kchildren = 0;
    for (int i = 0; i < ps.n; i++)
        if (strcmp(ps.s[i].name, "ops_total") == 0 && ps.s[i].lvalue[0][0] == 'k') {
            ksum += ps.s[i].value;
            kchildren++;
        }
    T_EQ_INT(kchildren, 50); /* each label set created exactly once */
    T_CHECK(ksum == THREADS * PER_THREAD);
    T_CHECK(get(&ps, "op_seconds_count", NULL) == THREADS * PER_THREAD);
    T_CHECK(get(&ps, "op_seconds_bucket", "le", "0.01", NULL) == THREADS * PER_THREAD / 2);
    T_CHECK(get(&ps, "op_seconds_bucket", "le", "1", NULL) == THREADS * PER_THREAD / 2);
    T_CHECK(fabs(get(&ps, "op_seconds_sum", NULL) - THREADS * (PER_THREAD / 2) * 5.001) < 1e-3);
    T_CHECK(get(&ps, "inflight", NULL) == 0);
    lop_metrics_free(r);
}

/* ---------------------------------------------------------------- standard families */

static void test_standard_families(void)
{
    lop_metrics_t *r = lop_metrics_new();
    lop_metrics_std_t std, again;
    T_EQ_INT(lop_metrics_std_init(&std, r, NULL), LOP_OK);
    T_EQ_INT(lop_metrics_std_init(&again, r, NULL), LOP_OK); /* idempotent */
    T_CHECK(again.reconcile_total == std.reconcile_total);

    lop_metric_histogram_observe(std.reconcile_time, (const char *[]){"memcached"}, 0.2, NULL);
    lop_metric_histogram_observe(std.wq_queue_duration, (const char *[]){"memcached", "memcached"}, 2e-6, NULL);
    lop_metric_histogram_observe(std.rest_request_duration, (const char *[]){"GET", "127.0.0.1:6443"}, 0.03, NULL);
    lop_metric_counter_add(std.rest_requests_total, (const char *[]){"200", "GET", "127.0.0.1:6443"}, 1, NULL);
    render(r, &ps);

    static const char *const expect[] = {
        "controller_runtime_active_workers gauge",
        "controller_runtime_max_concurrent_reconciles gauge",
        "controller_runtime_reconcile_errors_total counter",
        "controller_runtime_reconcile_panics_total counter",
        "controller_runtime_reconcile_time_seconds histogram",
        "controller_runtime_reconcile_total counter",
        "controller_runtime_terminal_reconcile_errors_total counter",
        "leader_election_master_status gauge",
        "luaop_informer_bytes gauge",
        "luaop_informer_objects gauge",
        "luaop_lua_event_errors_total counter",
        "luaop_lua_memory_bytes gauge",
        "luaop_reconcile_timeouts_total counter",
        "luaop_relists_total counter",
        "luaop_script_active_version gauge",
        "luaop_script_reload_total counter",
        "luaop_watch_restarts_total counter",
        "rest_client_request_duration_seconds histogram",
        "rest_client_requests_total counter",
        "workqueue_adds_total counter",
        "workqueue_depth gauge",
        "workqueue_longest_running_processor_seconds gauge",
        "workqueue_queue_duration_seconds histogram",
        "workqueue_retries_total counter",
        "workqueue_unfinished_work_seconds gauge",
        "workqueue_work_duration_seconds histogram",
    };
    T_EQ_INT(ps.ntype, (int)(sizeof expect / sizeof expect[0]));
    for (size_t i = 0; i < sizeof expect / sizeof expect[0] && (int)i < ps.ntype; i++)
        T_EQ_STR(ps.type[i], expect[i]); /* also proves the sort order */
    T_EQ_INT(ps.nhelp, ps.ntype);

    /* controller-runtime's reconcile buckets: 40 bounds from 0.005 to 60, plus +Inf. */
    int nb = 0;
    for (int i = 0; i < ps.n; i++)
        if (strcmp(ps.s[i].name, "controller_runtime_reconcile_time_seconds_bucket") == 0) nb++;
    T_EQ_INT(nb, 41);
    T_CHECK(get(&ps, "controller_runtime_reconcile_time_seconds_bucket", "controller", "memcached", "le", "0.15",
                NULL) == 0);
    T_CHECK(get(&ps, "controller_runtime_reconcile_time_seconds_bucket", "controller", "memcached", "le", "0.2",
                NULL) == 1);
    T_CHECK(get(&ps, "controller_runtime_reconcile_time_seconds_bucket", "controller", "memcached", "le", "60", NULL) ==
            1);
    /* controller-runtime's workqueue buckets: 1e-08 … 1000 by factor 10, with Go's float spelling. */
    static const char *const wq_le[] = {
        "1e-08", "1e-07", "1e-06", "9.999999999999999e-06", "9.999999999999999e-05", "0.001", "0.01", "0.1", "1", "10",
        "100",   "1000",  "+Inf"};
    int nwq = 0;
    for (int i = 0; i < ps.n; i++)
        if (strcmp(ps.s[i].name, "workqueue_queue_duration_seconds_bucket") == 0) nwq++;
    T_EQ_INT(nwq, (int)(sizeof wq_le / sizeof wq_le[0]));
    for (size_t i = 0; i < sizeof wq_le / sizeof wq_le[0]; i++) {
        double v = get(&ps, "workqueue_queue_duration_seconds_bucket", "controller", "memcached", "name", "memcached",
                       "le", wq_le[i], NULL);
        T_CHECK(!isnan(v));
        T_CHECK(v == (i < 3 ? 0 : 1));
    }
    T_CHECK(get(&ps, "rest_client_request_duration_seconds_bucket", "verb", "GET", "host", "127.0.0.1:6443", "le",
                "0.025", NULL) == 0);
    T_CHECK(get(&ps, "rest_client_request_duration_seconds_bucket", "verb", "GET", "host", "127.0.0.1:6443", "le",
                "0.1", NULL) == 1);
    T_CHECK(get(&ps, "rest_client_requests_total", "code", "200", "method", "GET", "host", "127.0.0.1:6443", NULL) ==
            1);

    T_CHECK(lop_metrics_reserved_name("workqueue_depth"));
    T_CHECK(lop_metrics_reserved_name("luaop_anything"));
    T_CHECK(lop_metrics_reserved_name("controller_runtime_x"));
    T_CHECK(!lop_metrics_reserved_name("memcached_pods_total"));
    T_CHECK(!lop_metrics_reserved_name(NULL));

    /* A registry holding one of the names with another shape is refused. */
    lop_metrics_t *r2 = lop_metrics_new();
    lop_err_t err;
    lop_metrics_gauge(r2, "workqueue_adds_total", "", (const char *[]){"name", NULL}, NULL);
    T_EQ_INT(lop_metrics_std_init(&std, r2, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "workqueue_adds_total") != NULL);
    lop_metrics_free(r2);
    lop_metrics_free(r);
}

static void test_controller_and_queue_children_start_at_zero(void)
{
    lop_metrics_t *r = lop_metrics_new();
    lop_metrics_std_t std;
    lop_metrics_controller_t c;
    lop_metrics_queue_t q;
    T_EQ_INT(lop_metrics_std_init(&std, r, NULL), LOP_OK);
    T_EQ_INT(lop_metrics_std_controller(&std, "memcached", &c, NULL), LOP_OK);
    T_EQ_INT(lop_metrics_std_queue(&std, "memcached", &q, NULL), LOP_OK);
    render(r, &ps);
    /* Every series exists (at 0) before the first reconcile, as dashboards expect. */
    static const char *const results[] = {"success", "error", "requeue", "requeue_after"};
    for (int i = 0; i < 4; i++)
        T_CHECK(get(&ps, "controller_runtime_reconcile_total", "controller", "memcached", "result", results[i], NULL) ==
                0);
    T_CHECK(get(&ps, "controller_runtime_reconcile_time_seconds_count", "controller", "memcached", NULL) == 0);
    T_CHECK(get(&ps, "workqueue_depth", "controller", "memcached", "name", "memcached", NULL) == 0);
    T_CHECK(get(&ps, "luaop_reconcile_timeouts_total", "controller", "memcached", NULL) == 0);
    T_CHECK(get(&ps, "controller_runtime_reconcile_panics_total", "controller", "memcached", NULL) == 0);
    T_CHECK(get(&ps, "workqueue_longest_running_processor_seconds", "controller", "memcached", "name", "memcached",
                NULL) == 0);

    lop_metric_inc(c.reconcile_total[LOP_METRICS_RESULT_REQUEUE_AFTER]);
    lop_metric_set(c.max_concurrent, 4);
    lop_metric_inc(q.adds);
    lop_metric_observe(q.work_duration, 0.02);
    render(r, &ps);
    T_CHECK(get(&ps, "controller_runtime_reconcile_total", "controller", "memcached", "result", "requeue_after",
                NULL) == 1);
    T_CHECK(get(&ps, "controller_runtime_max_concurrent_reconciles", "controller", "memcached", NULL) == 4);
    T_CHECK(get(&ps, "workqueue_adds_total", "controller", "memcached", "name", "memcached", NULL) == 1);
    T_CHECK(get(&ps, "workqueue_work_duration_seconds_bucket", "controller", "memcached", "name", "memcached", "le",
                "0.01", NULL) == 0);
    T_CHECK(get(&ps, "workqueue_work_duration_seconds_bucket", "controller", "memcached", "name", "memcached", "le",
                "0.1", NULL) == 1);

    lop_err_t err;
    T_EQ_INT(lop_metrics_std_controller(&std, "\xc3", &c, &err), LOP_EINVAL);
    T_EQ_INT(lop_metrics_std_queue(&std, NULL, &q, &err), LOP_EINVAL);
    lop_metrics_free(r);
}

static void test_children_are_capped(void)
{
    lop_metrics_t *r = lop_metrics_new();
    lop_metric_family_t *c = lop_metrics_counter(r, "per_object_total", "", (const char *[]){"obj", NULL}, NULL);
    lop_metric_family_set_max_children(c, 3);
    lop_err_t err;
    T_EQ_INT(lop_metric_counter_add(c, (const char *[]){"a"}, 1, &err), LOP_OK);
    T_EQ_INT(lop_metric_counter_add(c, (const char *[]){"b"}, 1, &err), LOP_OK);
    T_EQ_INT(lop_metric_counter_add(c, (const char *[]){"c"}, 1, &err), LOP_OK);
    T_EQ_INT(lop_metric_counter_add(c, (const char *[]){"d"}, 1, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "too many label sets") != NULL);
    T_EQ_INT(lop_metric_counter_add(c, (const char *[]){"a"}, 1, &err), LOP_OK); /* existing ok */
    render(r, &ps);
    T_EQ_INT(ps.n, 3);
    T_CHECK(get(&ps, "per_object_total", "obj", "a", NULL) == 2);
    lop_metrics_free(r);
}

/* The process_* families: every name client_golang's process collector exports on Linux (the ones
 * controller-runtime's /metrics carries), with values checked against what the test reads itself. */
static void test_process_families(void)
{
    lop_metrics_t *r = lop_metrics_new();
    T_EQ_INT(lop_metrics_process_init(r, NULL), LOP_OK);
    T_EQ_INT(lop_metrics_process_init(r, NULL), LOP_OK); /* idempotent */
    /* Burn a little CPU so the counter has something to count. */
    volatile double x = 0;
    for (long i = 0; i < 30000000; i++) x += (double)i * 0.5;
    render(r, &ps);
    static const char *const expect[] = {
        "process_cpu_seconds_total counter",
        "process_max_fds gauge",
        "process_open_fds gauge",
        "process_resident_memory_bytes gauge",
        "process_start_time_seconds gauge",
        "process_virtual_memory_bytes gauge",
        "process_virtual_memory_max_bytes gauge",
    };
    T_EQ_INT(ps.ntype, (int)(sizeof expect / sizeof expect[0]));
    for (size_t i = 0; i < sizeof expect / sizeof expect[0] && (int)i < ps.ntype; i++) T_EQ_STR(ps.type[i], expect[i]);

    double cpu = get(&ps, "process_cpu_seconds_total", NULL);
    T_CHECK(cpu > 0 && cpu < 3600);
    struct rlimit rl;
    T_EQ_INT(getrlimit(RLIMIT_NOFILE, &rl), 0);
    T_CHECK(get(&ps, "process_max_fds", NULL) == (double)rl.rlim_cur);
    /* open fds: count them here (the directory stream's own descriptor excluded, as the family does) */
    DIR *d = opendir("/proc/self/fd");
    T_CHECK(d != NULL);
    int nfd = -1;
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') nfd++;
    if (d) closedir(d);
    T_CHECK(get(&ps, "process_open_fds", NULL) == (double)nfd);
    double rss = get(&ps, "process_resident_memory_bytes", NULL), vm = get(&ps, "process_virtual_memory_bytes", NULL);
    T_CHECK(rss > 1 << 20 && rss < vm);
    double start = get(&ps, "process_start_time_seconds", NULL), now = (double)time(NULL);
    T_CHECK(start <= now + 1 && start > now - 3600); /* this test process began moments ago */
    T_CHECK(!isnan(get(&ps, "process_virtual_memory_max_bytes", NULL)));
    (void)x;
    lop_metrics_free(r);
}

int main(void)
{
    T_RUN(test_controller_and_queue_children_start_at_zero);
    T_RUN(test_children_are_capped);
    T_RUN(test_counter_and_gauge_exposition);
    T_RUN(test_family_without_children_prints_help_and_type);
    T_RUN(test_label_value_and_help_escaping);
    T_RUN(test_histogram_buckets_sum_count);
    T_RUN(test_value_formatting);
    T_RUN(test_bucket_helpers);
    T_RUN(test_gauge_callback_evaluated_at_scrape);
    T_RUN(test_remove_hides_child_until_reused);
    T_RUN(test_bad_input_is_refused_with_reason);
    T_RUN(test_concurrent_updates_sum_correctly);
    T_RUN(test_standard_families);
    T_RUN(test_process_families);
    return T_DONE();
}
