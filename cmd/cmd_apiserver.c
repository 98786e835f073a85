/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_apiserver.c — `luaop apiserver`: run the local API server until SIGTERM/SIGINT. */
#include "apiserver/apiserver.h"
#include "cmd/cli.h"
#include "host/util/log.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: luaop apiserver [--listen HOST:PORT] [--kubeconfig-out PATH] [--tls]\n"
               "                       [--token-file F] [--client-ca F] [--authorization-mode AlwaysAllow|RBAC]\n"
               "                       [--history N] [--history-bytes N[Ki|Mi|Gi]] [--decode-cache-bytes N[Ki|Mi|Gi]]\n"
               "                       [--enable-fault-control] [--webhook-service NS/NAME=HOST:PORT]...\n"
               "A local, in-memory Kubernetes API server for development and tests.\n"
               "NOT a production API server. Prints `listening on URL` and serves until SIGTERM.\n");
}

/* "N", "NKi", "NMi" or "NGi" (binary multiples, as Kubernetes quantities) → bytes > 0; -1 if not. */
static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || *s == '-') return -1;
    unsigned shift = 0;
    if (!strcmp(end, "Ki"))
        shift = 10;
    else if (!strcmp(end, "Mi"))
        shift = 20;
    else if (!strcmp(end, "Gi"))
        shift = 30;
    else if (*end)
        return -1;
    if (v == 0 || v > (SIZE_MAX >> shift)) return -1;
    *out = (size_t)v << shift;
    return 0;
}

int lop_cmd_apiserver(int argc, char **argv)
{
    lop_apiserver_opts_t o = {0};
    static const char *services[65]; /* --webhook-service values, NULL-terminated */
    size_t nservices = 0;
    o.webhook_services = services;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        bool needs = !strcmp(a, "--listen") || !strcmp(a, "--kubeconfig-out") || !strcmp(a, "--token-file") ||
                     !strcmp(a, "--client-ca") || !strcmp(a, "--history") || !strcmp(a, "--webhook-service") ||
                     !strcmp(a, "--history-bytes") || !strcmp(a, "--decode-cache-bytes") ||
                     !strcmp(a, "--authorization-mode");
        if (needs) {
            if (i + 1 >= argc) {
                fprintf(stderr, "luaop apiserver: %s needs a value\n", a);
                return 2;
            }
            val = argv[++i];
        }
        if (!strcmp(a, "--listen"))
            o.listen = val;
        else if (!strcmp(a, "--kubeconfig-out"))
            o.kubeconfig_out = val;
        else if (!strcmp(a, "--token-file"))
            o.token_file = val;
        else if (!strcmp(a, "--client-ca"))
            o.client_ca = val;
        else if (!strcmp(a, "--authorization-mode"))
            o.authorization_mode = val;
        else if (!strcmp(a, "--webhook-service")) {
            if (nservices == 64) {
                fprintf(stderr, "luaop apiserver: at most 64 --webhook-service\n");
                return 2;
            }
            services[nservices++] = val;
        } else if (!strcmp(a, "--history")) {
            char *end;
            o.history = strtol(val, &end, 10);
            if (*end || o.history <= 0) {
                fprintf(stderr, "luaop apiserver: --history wants a positive number, got \"%s\"\n", val);
                return 2;
            }
        } else if (!strcmp(a, "--history-bytes")) {
            if (parse_bytes(val, &o.history_bytes) < 0) {
                fprintf(stderr,
                        "luaop apiserver: --history-bytes wants a positive size (N, NKi, NMi, NGi), got \"%s\"\n", val);
                return 2;
            }
        } else if (!strcmp(a, "--decode-cache-bytes")) {
            if (parse_bytes(val, &o.decode_cache_bytes) < 0) {
                fprintf(stderr,
                        "luaop apiserver: --decode-cache-bytes wants a positive size (N, NKi, NMi, NGi), got \"%s\"\n",
                        val);
                return 2;
            }
        } else if (!strcmp(a, "--tls"))
            o.tls = true;
        else if (!strcmp(a, "--enable-fault-control"))
            o.fault_control = true;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "luaop apiserver: unknown argument \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
    }
    struct rlimit rl; /* many concurrent watches need many descriptors */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* the server thread inherits the mask */
    lop_apiserver_t *srv;
    lop_err_t err;
    if (lop_apiserver_start(&o, &srv, &err) != LOP_OK) {
        fprintf(stderr, "luaop apiserver: %s\n", err.message);
        return 1;
    }
    printf("listening on %s\n", lop_apiserver_url(srv));
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    lop_apiserver_stop(srv);
    return 0;
}
