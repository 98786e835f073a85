/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_apiserver.c — `luaop apiserver`: run the local API server until SIGTERM/SIGINT. */
#include "apiserver/apiserver.h"
#include "cmd/cli.h"
#include "host/util/log.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: luaop apiserver [--listen HOST:PORT] [--kubeconfig-out PATH] [--tls]\n"
               "                       [--token-file F] [--client-ca F] [--authorization-mode AlwaysAllow|RBAC]\n"
               "                       [--history N]\n"
               "                       [--enable-fault-control] [--webhook-service NS/NAME=HOST:PORT]...\n"
               "A local, in-memory Kubernetes API server for development and tests.\n"
               "NOT a production API server. Prints `listening on URL` and serves until SIGTERM.\n");
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
