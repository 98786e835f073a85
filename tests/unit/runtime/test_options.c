/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/runtime/options: controller-runtime flag names, Go durations. */
#include "host/runtime/options.h"
#include "host/util/clock.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_go_durations(void)
{
    static const struct {
        const char *in;
        int64_t ns;
        int rc;
    } cases[] = {
        {"15s", 15 * LOP_NS_PER_S, 0},
        {"250ms", 250 * LOP_NS_PER_MS, 0},
        {"1m30s", 90 * LOP_NS_PER_S, 0},
        {"1.5s", 1500 * LOP_NS_PER_MS, 0},
        {"0", 0, 0},
        {"2h", 7200 * LOP_NS_PER_S, 0},
        {"10", 0, -1},
        {"abc", 0, -1},
        {"", 0, -1},
        {"-1s", 0, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t ns = 0;
        T_EQ_INT(lop_parse_duration(cases[i].in, &ns), cases[i].rc);
        if (cases[i].rc == 0) T_EQ_INT(ns, cases[i].ns);
    }
}

static void test_flags_parse_like_controller_runtime(void)
{
    lop_run_opts_t o;
    lop_run_opts_defaults(&o);
    char *argv[] = {"run",
                    "--scripts",
                    "d",
                    "--leader-elect",
                    "--leader-election-id=x",
                    "--leader-elect-lease-duration=2s",
                    "--metrics-bind-address",
                    "0",
                    "--lua-memory-limit=32Mi",
                    "--leader-elect-release-on-cancel=false"};
    T_EQ_INT(lop_run_opts_parse(&o, 10, argv, false), 0);
    T_EQ_STR(o.scripts_dir, "d");
    T_CHECK(o.leader_elect);
    T_EQ_STR(o.leader_election_id, "x");
    T_EQ_INT(o.lease_duration_ns, 2 * LOP_NS_PER_S);
    T_EQ_INT(o.renew_deadline_ns, 10 * LOP_NS_PER_S);
    T_EQ_STR(o.metrics_addr, "0");
    T_EQ_INT(o.lua_memory_limit, 32 * 1024 * 1024);
    T_CHECK(!o.release_on_cancel);

    lop_run_opts_defaults(&o);
    char *bad[] = {"run", "--leader-elect-retry-period=soon"};
    T_EQ_INT(lop_run_opts_parse(&o, 2, bad, false), 2);
    char *devonly[] = {"run", "--apply", "x.yaml"};
    T_EQ_INT(lop_run_opts_parse(&o, 3, devonly, false), 2);
    lop_run_opts_defaults(&o);
    T_EQ_INT(lop_run_opts_parse(&o, 3, devonly, true), 0);
    T_EQ_INT(o.napply, 1);
    char *unknown[] = {"run", "--no-such-flag"};
    T_EQ_INT(lop_run_opts_parse(&o, 2, unknown, false), 2);
}

/* The self-managed certificate flags: off by default, kubebuilder's configuration names, the
 * lifetimes as Go durations. */
static void test_webhook_cert_secret_flags(void)
{
    lop_run_opts_t o;
    lop_run_opts_defaults(&o);
    T_CHECK(o.webhook_cert_secret == NULL);
    T_EQ_STR(o.webhook_mutating_config, "luaop-mutating-webhook-configuration");
    T_EQ_STR(o.webhook_validating_config, "luaop-validating-webhook-configuration");
    T_EQ_INT(o.webhook_ca_validity_ns, 87600 * 3600 * LOP_NS_PER_S);
    T_EQ_INT(o.webhook_cert_validity_ns, 8760 * 3600 * LOP_NS_PER_S);
    char *argv[] = {"run",
                    "--webhook-cert-secret=sys/certs",
                    "--webhook-service-name",
                    "svc",
                    "--webhook-service-namespace=ns",
                    "--webhook-mutating-configuration=m",
                    "--webhook-validating-configuration=v",
                    "--webhook-ca-validity=40s",
                    "--webhook-cert-validity=12s"};
    T_EQ_INT(lop_run_opts_parse(&o, 9, argv, false), 0);
    T_EQ_STR(o.webhook_cert_secret, "sys/certs");
    T_EQ_STR(o.webhook_service_name, "svc");
    T_EQ_STR(o.webhook_service_namespace, "ns");
    T_EQ_STR(o.webhook_mutating_config, "m");
    T_EQ_STR(o.webhook_validating_config, "v");
    T_EQ_INT(o.webhook_ca_validity_ns, 40 * LOP_NS_PER_S);
    T_EQ_INT(o.webhook_cert_validity_ns, 12 * LOP_NS_PER_S);
    char *bad[] = {"run", "--webhook-cert-validity=a-year"};
    T_EQ_INT(lop_run_opts_parse(&o, 2, bad, false), 2);
    char *no_ns[] = {"run", "--webhook-cert-secret=certs"};
    T_EQ_INT(lop_run_opts_parse(&o, 2, no_ns, false), 2);
}

/* --watch-list defaults to client-go's feature-gate variable, and the flag overrides it. */
static void test_watch_list_flag_and_client_go_variable(void)
{
    lop_run_opts_t o;
    unsetenv("KUBE_FEATURE_WatchListClient");
    lop_run_opts_defaults(&o);
    T_CHECK(!o.watch_list);
    setenv("KUBE_FEATURE_WatchListClient", "true", 1);
    lop_run_opts_defaults(&o);
    T_CHECK(o.watch_list);
    char *off[] = {"run", "--watch-list=false"};
    T_EQ_INT(lop_run_opts_parse(&o, 2, off, false), 0);
    T_CHECK(!o.watch_list);
    unsetenv("KUBE_FEATURE_WatchListClient");
    lop_run_opts_defaults(&o);
    char *on[] = {"run", "--watch-list"};
    T_EQ_INT(lop_run_opts_parse(&o, 2, on, false), 0);
    T_CHECK(o.watch_list);
    char *bad[] = {"run", "--watch-list=maybe"};
    T_EQ_INT(lop_run_opts_parse(&o, 2, bad, false), 2);
}

/* Parse argv with stderr captured into out (the message a user would see). */
static int parse_capturing(lop_run_opts_t *o, int argc, char **argv, char *out, size_t len)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    int rc = lop_run_opts_parse(o, argc, argv, false);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(out, 1, len - 1, tmp);
    out[n] = '\0';
    fclose(tmp);
    return rc;
}

static void test_unknown_flag_error_names_the_flag(void)
{
    lop_run_opts_t o;
    char msg[512];
    lop_run_opts_defaults(&o);
    char *a[] = {"run", "--scripts=d", "-v=2"};
    T_EQ_INT(parse_capturing(&o, 3, a, msg, sizeof msg), 2);
    T_CHECK(strstr(msg, "\"-v=2\"") != NULL); /* not "run" */
    T_CHECK(strstr(msg, "flags are long") != NULL);
    lop_run_opts_defaults(&o);
    char *b[] = {"run", "--no-such-flag", "--scripts=d"};
    T_EQ_INT(parse_capturing(&o, 3, b, msg, sizeof msg), 2);
    T_CHECK(strstr(msg, "\"--no-such-flag\"") != NULL);
    lop_run_opts_defaults(&o);
    char *c[] = {"run", "--leader-elect-retry-period", "soon"};
    T_EQ_INT(parse_capturing(&o, 3, c, msg, sizeof msg), 2);
    T_CHECK(strstr(msg, "\"soon\" for --leader-elect-retry-period") != NULL);
}

/* kubebuilder's scaffolded main.go flags are accepted and mapped to ours. */
static void test_kubebuilder_flags_are_mapped(void)
{
    lop_run_opts_t o;
    char msg[512];
    lop_run_opts_defaults(&o);
    char *a[] = {"run",
                 "--zap-log-level=debug",
                 "--zap-encoder=json",
                 "--zap-time-encoding=iso8601",
                 "--zap-stacktrace-level=error",
                 "--enable-http2=false",
                 "--metrics-secure=false"};
    T_EQ_INT(lop_run_opts_parse(&o, 7, a, false), 0);
    T_EQ_STR(o.log_level, "debug");
    T_EQ_STR(o.log_format, "json");
    T_EQ_STR(o.log_time, "iso8601");
    T_EQ_STR(o.stacktrace_level, "error");
    T_CHECK(!o.enable_http2 && !o.metrics_secure);

    lop_run_opts_defaults(&o); /* verbosity numbers: 0 info, more is debug */
    char *v[] = {"run", "--zap-log-level=3", "--zap-encoder=console"};
    T_EQ_INT(lop_run_opts_parse(&o, 3, v, false), 0);
    T_EQ_STR(o.log_level, "debug");
    T_EQ_STR(o.log_format, "text");

    lop_run_opts_defaults(&o); /* --zap-devel: debug + console unless given, in any order */
    char *d[] = {"run", "--zap-encoder=json", "--zap-devel"};
    T_EQ_INT(lop_run_opts_parse(&o, 3, d, false), 0);
    T_EQ_STR(o.log_level, "debug");
    T_EQ_STR(o.log_format, "json");

    lop_run_opts_defaults(&o);
    char *bad[] = {"run", "--zap-encoder=xml"};
    T_EQ_INT(parse_capturing(&o, 2, bad, msg, sizeof msg), 2);
    T_CHECK(strstr(msg, "--zap-encoder") != NULL);
    lop_run_opts_defaults(&o);
    char *badt[] = {"run", "--zap-time-encoding=sundial"};
    T_EQ_INT(parse_capturing(&o, 2, badt, msg, sizeof msg), 2);
    /* what luaop cannot do is refused with the reason, not silently accepted */
    lop_run_opts_defaults(&o);
    char *h2[] = {"run", "--enable-http2"};
    T_EQ_INT(parse_capturing(&o, 2, h2, msg, sizeof msg), 2);
    T_CHECK(strstr(msg, "HTTP/1.1") != NULL);
}

static void test_metrics_secure_follows_the_default_address(void)
{
    lop_run_opts_t o;
    lop_run_opts_defaults(&o);
    char *none[] = {"run"};
    T_EQ_INT(lop_run_opts_parse(&o, 1, none, false), 0);
    T_EQ_STR(o.metrics_addr, ":8443");
    T_CHECK(o.metrics_secure);
    lop_run_opts_defaults(&o); /* another address: plain unless asked */
    char *plain[] = {"run", "--metrics-bind-address=:8080"};
    T_EQ_INT(lop_run_opts_parse(&o, 2, plain, false), 0);
    T_CHECK(!o.metrics_secure);
    lop_run_opts_defaults(&o);
    char *sec[] = {"run",
                   "--metrics-bind-address=127.0.0.1:0",
                   "--metrics-secure",
                   "--metrics-cert-path=/c",
                   "--metrics-cert-name=a.crt",
                   "--metrics-cert-key=a.key"};
    T_EQ_INT(lop_run_opts_parse(&o, 6, sec, false), 0);
    T_CHECK(o.metrics_secure);
    T_EQ_STR(o.metrics_cert_dir, "/c");
    T_EQ_STR(o.metrics_cert_name, "a.crt");
    T_EQ_STR(o.metrics_key_name, "a.key");
    lop_run_opts_defaults(&o); /* the default address, explicitly plain */
    char *off[] = {"run", "--metrics-secure=false"};
    T_EQ_INT(lop_run_opts_parse(&o, 2, off, false), 0);
    T_CHECK(!o.metrics_secure);
}

int main(void)
{
    T_RUN(test_watch_list_flag_and_client_go_variable);
    T_RUN(test_go_durations);
    T_RUN(test_flags_parse_like_controller_runtime);
    T_RUN(test_unknown_flag_error_names_the_flag);
    T_RUN(test_kubebuilder_flags_are_mapped);
    T_RUN(test_webhook_cert_secret_flags);
    T_RUN(test_metrics_secure_follows_the_default_address);
    return T_DONE();
}
