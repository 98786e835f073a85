/* SPDX-License-Identifier: Apache-2.0 */
/* luaop — a Kubernetes operator host with Lua reconcilers. Subcommand dispatch only. */
#include "cmd/cli.h"
#include "host/util/malloc_tune.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"run", lop_cmd_run, "run the controllers of a script set against a cluster"},
    {"dev", lop_cmd_dev, "local API server + operator + samples: the playground"},
    {"check", lop_cmd_check, "load and validate a script set without running it"},
    {"apiserver", lop_cmd_apiserver, "the local Kubernetes API server alone (not for production)"},
    {"init", lop_cmd_init, "scaffold a new operator project (docs/scaffold.md)"},
    {"create", lop_cmd_create, "scaffold an API (CRD, sample, reconciler, spec) or a webhook"},
    {"types", lop_cmd_types, "LuaLS type annotations from CRDs' openAPIV3Schema (editor completion)"},
};

/*
 * GnuTLS is in the process only as a dependency of two of libcurl's back ends that luaop never
 * uses (RTMP through librtmp, LDAP through libldap; luaop's transport allows http and https only,
 * CURLOPT_PROTOCOLS_STR in host/kube/client/transport_io.c) — luaop's TLS is OpenSSL's. GnuTLS
 * initialises itself from a library constructor anyway (priority strings, ASN.1 trees, PKCS#11
 * modules through p11-kit): ~1 MB of resident memory before main. Its constructor first asks the
 * program whether to skip that implicit initialisation through this hook, which the executable
 * overrides (it exports its symbols: ENABLE_EXPORTS in CMakeLists.txt; checked by
 * integration.gnutls_init_skipped). Nothing that works changes: librtmp and libldap call
 * gnutls_global_init() themselves before they use GnuTLS. Measured in bench/README.md
 * ("startup-idle over HTTPS (issue 19)").
 */
int _gnutls_global_init_skip(void);
int _gnutls_global_init_skip(void) { return 1; }

static void usage(FILE *f)
{
    fprintf(f, "usage: luaop <command> [flags]   (luaop <command> --help for its flags)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "  %-10s %s\n", "version", "print the version");
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("luaop %s\n", LUAOP_VERSION);
        return 0;
    }
    /* the operator's allocation pattern (see lop_malloc_tune); `luaop apiserver` alone keeps
     * glibc's defaults (`luaop dev` runs its API server in the tuned process) */
    if (strcmp(argv[1], "apiserver") != 0) lop_malloc_tune();
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "luaop: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return 2;
}
