/* SPDX-License-Identifier: Apache-2.0 */
/* options.c — parsing the flags of `luaop run` and `luaop dev` (controller-runtime/kubebuilder
 * names, Go durations, zap's logging flags mapped to ours), their defaults and usage text (see
 * options.h). Runs on the main thread at start-up. Upstream: a kubebuilder cmd/main.go's flag
 * set and controller-runtime pkg/log/zap/flags.go. */
#include "host/runtime/options.h"

#include "host/kube/leaderelection/leaderelection.h"
#include "host/runtime/engine.h"

#include "host/util/clock.h"
#include "host/util/log.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lop_parse_duration(const char *s, int64_t *ns)
{
    if (!s || !*s) return -1;
    if (strcmp(s, "0") == 0) {
        *ns = 0;
        return 0;
    }
    static const struct {
        const char *unit;
        double mult;
    } units[] = {
        {"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9},
    };
    double total = 0;
    const char *p = s;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || v < 0) return -1;
        p = end;
        int best = -1;
        size_t best_len = 0;
        for (int i = 0; i < (int)(sizeof units / sizeof units[0]); i++) {
            size_t l = strlen(units[i].unit);
            if (strncmp(p, units[i].unit, l) == 0 && l > best_len) {
                best = i;
                best_len = l;
            }
        }
        if (best < 0) return -1;
        total += v * units[best].mult;
        p += best_len;
    }
    if (total > 9.2e18) return -1;
    *ns = (int64_t)total;
    return 0;
}

int lop_parse_bytes(const char *s, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) return -1;
    static const struct {
        const char *suffix;
        double mult;
    } sfx[] = {
        {"", 1},    {"k", 1e3},     {"K", 1e3},        {"M", 1e6},
        {"G", 1e9}, {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0},
    };
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        if (strcmp(end, sfx[i].suffix) == 0) {
            *out = (size_t)(v * sfx[i].mult);
            return 0;
        }
    }
    return -1;
}

void lop_run_opts_defaults(lop_run_opts_t *o)
{
    memset(o, 0, sizeof *o);
    lop_elector_config_t le; /* the elector's defaults (client-go's 15 s / 10 s / 2 s) */
    lop_elector_config_defaults(&le);
    o->lease_duration_ns = le.lease_duration_ns;
    o->renew_deadline_ns = le.renew_deadline_ns;
    o->retry_period_ns = le.retry_period_ns;
    o->release_on_cancel = true;
    o->on_leader_loss = "exit";
    o->metrics_addr = ":8443";
    o->metrics_secure = true; /* with the default address (see lop_run_opts_parse) */
    o->probe_addr = ":8081";
    o->webhook_addr = ":9443";
    o->webhook_concurrency = 4;
    o->webhook_mutating_config = "luaop-mutating-webhook-configuration";
    o->webhook_validating_config = "luaop-validating-webhook-configuration";
    o->webhook_ca_validity_ns = 87600 * 3600 * LOP_NS_PER_S;
    o->webhook_cert_validity_ns = 8760 * 3600 * LOP_NS_PER_S;
    o->graceful_shutdown_ns = 30 * LOP_NS_PER_S;
    o->log_format = "text";
    o->log_level = "info";
    o->log_time = "rfc3339micro";
    o->lua_memory_limit = 64u * 1024u * 1024u;
    o->reconcile_timeout_ns = 60 * LOP_NS_PER_S;
    o->predicate_timeout_ns = LOP_PREDICATE_TIMEOUT_DEFAULT_NS;
    o->qps = 20;
    o->burst = 30;
    o->listen = "127.0.0.1:0";
    /* client-go's feature-gate variable for the same behaviour */
    const char *wl = getenv("KUBE_FEATURE_WatchListClient");
    o->watch_list = wl && (strcmp(wl, "true") == 0 || strcmp(wl, "1") == 0);
}

enum {
    O_SCRIPTS = 256,
    O_SCRIPTS_CM,
    O_KUBECONFIG,
    O_CONTEXT,
    O_NAMESPACE,
    O_LE,
    O_LE_ID,
    O_LE_NS,
    O_LE_LEASE,
    O_LE_RENEW,
    O_LE_RETRY,
    O_LE_RELEASE,
    O_LE_LOSS,
    O_METRICS,
    O_PROBE,
    O_WH_ADDR,
    O_WH_CERT_DIR,
    O_WH_CERT_NAME,
    O_WH_KEY_NAME,
    O_WH_CONC,
    O_WH_SECRET,
    O_WH_SVC,
    O_WH_SVC_NS,
    O_WH_MUT_CFG,
    O_WH_VAL_CFG,
    O_WH_CA_VALID,
    O_WH_CERT_VALID,
    O_GRACE,
    O_LOG_FORMAT,
    O_LOG_LEVEL,
    O_JIT,
    O_UNSAFE,
    O_MEM,
    O_RTIMEOUT,
    O_PTIMEOUT,
    O_QPS,
    O_BURST,
    O_NOH2,
    O_WATCH_LIST,
    O_ZAP_LEVEL,
    O_ZAP_ENCODER,
    O_ZAP_DEVEL,
    O_ZAP_STACK,
    O_ZAP_TIME,
    O_ENABLE_H2,
    O_METRICS_SECURE,
    O_METRICS_CERT_DIR,
    O_METRICS_CERT_NAME,
    O_METRICS_CERT_KEY,
    O_APPLY,
    O_KCOUT,
    O_LISTEN,
    O_ONCE,
    O_HELP,
};

static const struct option long_opts[] = {
    {"scripts", required_argument, NULL, O_SCRIPTS},
    {"scripts-configmap", required_argument, NULL, O_SCRIPTS_CM},
    {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
    {"context", required_argument, NULL, O_CONTEXT},
    {"namespace", required_argument, NULL, O_NAMESPACE},
    {"leader-elect", optional_argument, NULL, O_LE},
    {"leader-election-id", required_argument, NULL, O_LE_ID},
    {"leader-election-namespace", required_argument, NULL, O_LE_NS},
    {"leader-elect-lease-duration", required_argument, NULL, O_LE_LEASE},
    {"leader-elect-renew-deadline", required_argument, NULL, O_LE_RENEW},
    {"leader-elect-retry-period", required_argument, NULL, O_LE_RETRY},
    {"leader-elect-release-on-cancel", optional_argument, NULL, O_LE_RELEASE},
    {"leader-elect-on-loss", required_argument, NULL, O_LE_LOSS},
    {"metrics-bind-address", required_argument, NULL, O_METRICS},
    {"health-probe-bind-address", required_argument, NULL, O_PROBE},
    {"webhook-bind-address", required_argument, NULL, O_WH_ADDR},
    {"webhook-cert-dir", required_argument, NULL, O_WH_CERT_DIR},
    {"webhook-cert-name", required_argument, NULL, O_WH_CERT_NAME},
    {"webhook-key-name", required_argument, NULL, O_WH_KEY_NAME},
    {"webhook-concurrency", required_argument, NULL, O_WH_CONC},
    {"webhook-cert-secret", required_argument, NULL, O_WH_SECRET},
    {"webhook-service-name", required_argument, NULL, O_WH_SVC},
    {"webhook-service-namespace", required_argument, NULL, O_WH_SVC_NS},
    {"webhook-mutating-configuration", required_argument, NULL, O_WH_MUT_CFG},
    {"webhook-validating-configuration", required_argument, NULL, O_WH_VAL_CFG},
    {"webhook-ca-validity", required_argument, NULL, O_WH_CA_VALID},
    {"webhook-cert-validity", required_argument, NULL, O_WH_CERT_VALID},
    {"graceful-shutdown-timeout", required_argument, NULL, O_GRACE},
    {"log-format", required_argument, NULL, O_LOG_FORMAT},
    {"log-level", required_argument, NULL, O_LOG_LEVEL},
    {"lua-jit", optional_argument, NULL, O_JIT},
    {"lua-unsafe-libs", optional_argument, NULL, O_UNSAFE},
    {"lua-memory-limit", required_argument, NULL, O_MEM},
    {"reconcile-timeout", required_argument, NULL, O_RTIMEOUT},
    {"predicate-timeout", required_argument, NULL, O_PTIMEOUT},
    {"kube-api-qps", required_argument, NULL, O_QPS},
    {"kube-api-burst", required_argument, NULL, O_BURST},
    {"kube-api-disable-http2", optional_argument, NULL, O_NOH2},
    {"watch-list", optional_argument, NULL, O_WATCH_LIST},
    /* kubebuilder's scaffolded flags (controller-runtime's zap options), mapped to ours */
    {"zap-log-level", required_argument, NULL, O_ZAP_LEVEL},
    {"zap-encoder", required_argument, NULL, O_ZAP_ENCODER},
    {"zap-devel", optional_argument, NULL, O_ZAP_DEVEL},
    {"zap-stacktrace-level", required_argument, NULL, O_ZAP_STACK},
    {"zap-time-encoding", required_argument, NULL, O_ZAP_TIME},
    {"enable-http2", optional_argument, NULL, O_ENABLE_H2},
    {"metrics-secure", optional_argument, NULL, O_METRICS_SECURE},
    {"metrics-cert-dir", required_argument, NULL, O_METRICS_CERT_DIR},
    {"metrics-cert-path", required_argument, NULL, O_METRICS_CERT_DIR}, /* kubebuilder v4's name */
    {"metrics-cert-name", required_argument, NULL, O_METRICS_CERT_NAME},
    {"metrics-cert-key", required_argument, NULL, O_METRICS_CERT_KEY},
    {"apply", required_argument, NULL, O_APPLY},
    {"kubeconfig-out", required_argument, NULL, O_KCOUT},
    {"listen", required_argument, NULL, O_LISTEN},
    {"once", no_argument, NULL, O_ONCE},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *f, const char *cmd, bool dev)
{
    fprintf(f,
            "usage: luaop %s --scripts DIR [flags]\n\n"
            "  --scripts DIR                       script set directory (main.lua is the entry)\n"
            "  --scripts-configmap NS/NAME         script set from a ConfigMap (*.lua keys)\n"
            "  --kubeconfig PATH                   kubeconfig (else $KUBECONFIG, ~/.kube/config, in-cluster)\n"
            "  --context NAME                      kubeconfig context\n"
            "  --namespace NS[,NS...]              watch only these namespaces (an informer per namespace\n"
            "                                      and kind; reads of another namespace are refused)\n"
            "  --leader-elect[=BOOL]               Lease leader election (default false)\n"
            "  --leader-election-id NAME           Lease name\n"
            "  --leader-election-namespace NS      Lease namespace (default: in-cluster namespace)\n"
            "  --leader-elect-lease-duration DUR   (15s)\n"
            "  --leader-elect-renew-deadline DUR   (10s)\n"
            "  --leader-elect-retry-period DUR     (2s)\n"
            "  --leader-elect-release-on-cancel[=BOOL] release the Lease on shutdown (true)\n"
            "  --leader-elect-on-loss exit|restart-election  (exit)\n"
            "  --metrics-bind-address ADDR         Prometheus metrics (run :8443, dev 127.0.0.1:0; 0 disables)\n"
            "  --health-probe-bind-address ADDR    /healthz and /readyz (run :8081, dev 127.0.0.1:0; 0 disables)\n"
            "  --webhook-bind-address ADDR         the admission/conversion webhook server, HTTPS (:9443; 0\n"
            "                                      disables); started when the scripts declare op.webhook.*\n"
            "  --webhook-cert-dir DIR              tls.crt and tls.key, reloaded when they change\n"
            "                                      (<TMPDIR>/k8s-webhook-server/serving-certs)\n"
            "  --webhook-cert-name NAME  --webhook-key-name NAME  (tls.crt, tls.key)\n"
            "  --webhook-concurrency N             reviews handled at once, one Lua VM each (4)\n"
            "  --webhook-cert-secret NS/NAME       self-managed certificates: the leader keeps a CA and the\n"
            "                                      serving certificate in this Secret, rotates them and injects\n"
            "                                      the CA into the configurations below and the conversion CRDs;\n"
            "                                      every replica serves the Secret's (--webhook-cert-dir unused)\n"
            "  --webhook-service-name NAME         the certificate's names: NAME.NS.svc[.cluster.local]\n"
            "  --webhook-service-namespace NS        (luaop-webhook-service; NS: the Secret's namespace)\n"
            "  --webhook-mutating-configuration NAME   (luaop-mutating-webhook-configuration)\n"
            "  --webhook-validating-configuration NAME (luaop-validating-webhook-configuration)\n"
            "  --webhook-ca-validity DUR  --webhook-cert-validity DUR  lifetimes; each is renewed with\n"
            "                                      1/5 of it left (87600h, 8760h)\n"
            "  --graceful-shutdown-timeout DUR     (30s)\n"
            "  --log-format text|json  --log-level debug|info|warn|error\n"
            "  --zap-log-level debug|info|error|N  --zap-encoder json|console  --zap-devel[=BOOL]\n"
            "  --zap-time-encoding epoch|millis|nano|iso8601|rfc3339|rfc3339nano  --zap-stacktrace-level L\n"
            "                                      kubebuilder's flags, mapped to the two above (stack traces:\n"
            "                                      accepted, Lua tracebacks are always in \"error\")\n"
            "  --enable-http2[=false]              luaop's own servers speak HTTP/1.1 (only false)\n"
            "  --metrics-secure[=BOOL]             HTTPS + TokenReview/SubjectAccessReview per scrape (default:\n"
            "                                      true with the default :8443, false with another address)\n"
            "  --metrics-cert-dir DIR              metrics tls.crt/tls.key, reloaded (default: self-signed)\n"
            "  --metrics-cert-name, --metrics-cert-key NAME   file names in it (tls.crt, tls.key)\n"
            "  --lua-jit[=BOOL]                    JIT on; deadlines become cooperative (false)\n"
            "  --lua-unsafe-libs[=BOOL]            give scripts io/os/debug/ffi/jit (false)\n"
            "  --lua-memory-limit BYTES            per VM (64Mi)\n"
            "  --reconcile-timeout DUR             per-reconcile deadline (60s)\n"
            "  --predicate-timeout DUR             deadline of each Lua predicate and map function, > 0\n"
            "                                      (250ms); one that times out lets its event through\n"
            "  --kube-api-qps N --kube-api-burst N client-side rate limit (20, 30)\n"
            "  --kube-api-disable-http2[=BOOL]     HTTP/1.1 only to the API server ($DISABLE_HTTP2, false)\n"
            "  --watch-list[=BOOL]                 informers sync with one watch (sendInitialEvents) instead of\n"
            "                                      LIST; falls back to LIST ($KUBE_FEATURE_WatchListClient, false)\n",
            cmd);
    if (dev)
        fprintf(f, "\ndev only:\n"
                   "  --apply FILE                        apply a YAML manifest after start (repeatable)\n"
                   "  --kubeconfig-out PATH               write a kubeconfig for kubectl\n"
                   "  --listen ADDR                       embedded API server address (127.0.0.1:0)\n"
                   "  --once                              exit 0 once all work is reconciled (for scripts)\n");
    fprintf(
        f,
        "\nenvironment:\n"
        "  LUAOP_SCRIPTS_DEBOUNCE_MS=N         quiet time before a changed --scripts directory reloads (10)\n"
        "  LUAOP_HEAP_HUGEPAGES=0              no transparent huge pages for a large heap (docs/execution-model.md)\n"
        "  MALLOC_ARENA_MAX=N                  glibc malloc arenas (luaop uses 1 unless this, or\n"
        "                                      glibc.malloc.arena_max in GLIBC_TUNABLES, is set)\n");
}

/* zap's level names, or a verbosity N >= 0 (zap level -N: 0 info, 1 and above debug). */
static int zap_level(const char *v, const char **out)
{
    if (strcmp(v, "debug") == 0 || strcmp(v, "info") == 0 || strcmp(v, "error") == 0 || strcmp(v, "warn") == 0) {
        *out = v;
        return 0;
    }
    if (strcmp(v, "panic") == 0 || strcmp(v, "dpanic") == 0) {
        *out = "error"; /* the closest we have */
        return 0;
    }
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < 0) return -1;
    *out = n == 0 ? "info" : "debug";
    return 0;
}

static int parse_bool(const char *v, bool *out)
{
    if (!v || strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = true;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
        *out = false;
    else
        return -1;
    return 0;
}

/* A --webhook-* flag: 0 (parsed) or 1 (bad value); -1 when c is not one. */
static int parse_webhook_flag(lop_run_opts_t *o, int c, const char *v)
{
    int bad = 0;
    switch (c) {
    case O_WH_ADDR: o->webhook_addr = v; break;
    case O_WH_CERT_DIR: o->webhook_cert_dir = v; break;
    case O_WH_CERT_NAME: o->webhook_cert_name = v; break;
    case O_WH_KEY_NAME: o->webhook_key_name = v; break;
    case O_WH_CONC: {
        char *end = NULL;
        long n = strtol(v, &end, 10);
        bad = !*v || *end || n < 1 || n > 256; /* 1..256 */
        o->webhook_concurrency = (int)n;
        break;
    }
    case O_WH_SECRET:
        o->webhook_cert_secret = v;
        bad = !strchr(v, '/'); /* NAMESPACE/NAME (checked whole when the certificates start) */
        break;
    case O_WH_SVC: o->webhook_service_name = v; break;
    case O_WH_SVC_NS: o->webhook_service_namespace = v; break;
    case O_WH_MUT_CFG: o->webhook_mutating_config = v; break;
    case O_WH_VAL_CFG: o->webhook_validating_config = v; break;
    case O_WH_CA_VALID: bad = lop_parse_duration(v, &o->webhook_ca_validity_ns); break;
    case O_WH_CERT_VALID: bad = lop_parse_duration(v, &o->webhook_cert_validity_ns); break;
    default: return -1;
    }
    return bad;
}

/* What the logging flags said, for zap's development preset applied after all are read. */
typedef struct log_flags {
    bool level_set, format_set, devel;
} log_flags_t;

/* A --log-* or --zap-* flag: 0 (parsed) or 1 (bad value); -1 when c is not one. */
static int parse_log_flag(lop_run_opts_t *o, int c, const char *v, log_flags_t *lf)
{
    int bad = 0;
    switch (c) {
    case O_LOG_FORMAT:
        o->log_format = v;
        lf->format_set = true;
        break;
    case O_LOG_LEVEL:
        o->log_level = v;
        lf->level_set = true;
        break;
    case O_ZAP_LEVEL:
        bad = zap_level(v, &o->log_level);
        lf->level_set = true;
        break;
    case O_ZAP_ENCODER:
        bad = strcmp(v, "json") != 0 && strcmp(v, "console") != 0;
        o->log_format = strcmp(v, "json") == 0 ? "json" : "text";
        lf->format_set = true;
        break;
    case O_ZAP_DEVEL: bad = parse_bool(v, &lf->devel); break;
    case O_ZAP_STACK:
        o->stacktrace_level = v;
        bad = strcmp(v, "info") != 0 && strcmp(v, "error") != 0 && strcmp(v, "panic") != 0;
        break;
    case O_ZAP_TIME: {
        lop_log_time_t t;
        bad = lop_log_time_parse(v, &t) != 0;
        o->log_time = v;
        break;
    }
    default: return -1;
    }
    return bad;
}

int lop_run_opts_parse(lop_run_opts_t *o, int argc, char **argv, bool dev)
{
    const char *cmd = argv[0];
    optind = 0; /* 0, not 1: glibc then also forgets a half-parsed "-abc" of an earlier call */
    opterr = 0;
    int c;
    bool secure_set = false;
    log_flags_t lf = {false, false, false};
    /* "+": stop at the first non-flag, so argv[at] is always the argument being parsed */
    for (int at = 1; (c = getopt_long(argc, argv, "+", long_opts, NULL)) != -1; at = optind) {
        const char *v = optarg;
        int bad = parse_webhook_flag(o, c, v);
        if (bad < 0) bad = parse_log_flag(o, c, v, &lf);
        if (bad >= 0)
            c = 0; /* parsed above: skip the switch */
        else
            bad = 0;
        switch (c) {
        case 0: break;
        case O_SCRIPTS: o->scripts_dir = v; break;
        case O_SCRIPTS_CM:
            o->scripts_configmap = v;
            bad = !strchr(v, '/');
            break;
        case O_KUBECONFIG: o->kubeconfig = v; break;
        case O_CONTEXT: o->context = v; break;
        case O_NAMESPACE: o->namespace_ = v; break;
        case O_LE: bad = parse_bool(v, &o->leader_elect); break;
        case O_LE_ID: o->leader_election_id = v; break;
        case O_LE_NS: o->leader_election_namespace = v; break;
        case O_LE_LEASE: bad = lop_parse_duration(v, &o->lease_duration_ns); break;
        case O_LE_RENEW: bad = lop_parse_duration(v, &o->renew_deadline_ns); break;
        case O_LE_RETRY: bad = lop_parse_duration(v, &o->retry_period_ns); break;
        case O_LE_RELEASE: bad = parse_bool(v, &o->release_on_cancel); break;
        case O_LE_LOSS:
            o->on_leader_loss = v;
            bad = strcmp(v, "exit") != 0 && strcmp(v, "restart-election") != 0;
            break;
        case O_METRICS: o->metrics_addr = v; break;
        case O_PROBE: o->probe_addr = v; break;
        case O_GRACE: bad = lop_parse_duration(v, &o->graceful_shutdown_ns); break;
        case O_ENABLE_H2:
            bad = parse_bool(v, &o->enable_http2);
            if (!bad && o->enable_http2) {
                fprintf(stderr,
                        "luaop %s: --enable-http2=true is not supported: the metrics and probe servers "
                        "speak HTTP/1.1 only (kubebuilder's default, false, is what luaop does)\n",
                        cmd);
                return 2;
            }
            break;
        case O_METRICS_SECURE:
            bad = parse_bool(v, &o->metrics_secure);
            secure_set = true;
            break;
        case O_METRICS_CERT_DIR: o->metrics_cert_dir = v; break;
        case O_METRICS_CERT_NAME: o->metrics_cert_name = v; break;
        case O_METRICS_CERT_KEY: o->metrics_key_name = v; break;
        case O_JIT: bad = parse_bool(v, &o->lua_jit); break;
        case O_UNSAFE: bad = parse_bool(v, &o->lua_unsafe); break;
        case O_MEM: bad = lop_parse_bytes(v, &o->lua_memory_limit); break;
        case O_RTIMEOUT: bad = lop_parse_duration(v, &o->reconcile_timeout_ns); break;
        case O_PTIMEOUT:
            bad = lop_parse_duration(v, &o->predicate_timeout_ns);
            if (!bad && o->predicate_timeout_ns <= 0) {
                fprintf(stderr,
                        "luaop %s: --predicate-timeout must be > 0 (a predicate without a deadline could stall "
                        "its informer), got %s\n",
                        cmd, v);
                return 2;
            }
            break;
        case O_QPS: o->qps = strtod(v, NULL); break;
        case O_BURST: o->burst = atoi(v); break;
        case O_NOH2: bad = parse_bool(v, &o->disable_http2); break;
        case O_WATCH_LIST: bad = parse_bool(v, &o->watch_list); break;
        case O_APPLY:
        case O_KCOUT:
        case O_LISTEN:
        case O_ONCE:
            if (!dev) {
                fprintf(stderr, "luaop %s: %s is a flag of `luaop dev`\n", cmd, argv[at]);
                return 2;
            }
            if (c == O_APPLY) {
                if (o->napply >= sizeof o->apply / sizeof o->apply[0])
                    bad = 1;
                else
                    o->apply[o->napply++] = v;
            } else if (c == O_KCOUT)
                o->kubeconfig_out = v;
            else if (c == O_LISTEN)
                o->listen = v;
            else
                o->exit_after_apply = true;
            break;
        case O_HELP: usage(stdout, cmd, dev); return 1;
        default: {
            const char *arg = at < argc ? argv[at] : argv[argc - 1];
            if (arg[0] == '-' && arg[1] != '-')
                fprintf(stderr, "luaop %s: unknown flag \"%s\": flags are long, --name or --name=value (see --help)\n",
                        cmd, arg);
            else
                fprintf(stderr, "luaop %s: unknown or incomplete flag \"%s\" (see --help)\n", cmd, arg);
            return 2;
        }
        }
        if (bad) {
            fprintf(stderr, "luaop %s: invalid value \"%s\" for %s\n", cmd, v ? v : "", argv[at]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "luaop %s: unexpected argument \"%s\"\n", cmd, argv[optind]);
        return 2;
    }
    /* kubebuilder v4 pairs :8443 with secure serving; another address is plain HTTP unless
     * --metrics-secure says otherwise */
    if (!secure_set) o->metrics_secure = strcmp(o->metrics_addr, ":8443") == 0;
    if (lf.devel) { /* zap's development preset, unless a level or format was given */
        if (!lf.level_set) o->log_level = "debug";
        if (!lf.format_set) o->log_format = "text";
    }
    return 0;
}
