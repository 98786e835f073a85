/* SPDX-License-Identifier: Apache-2.0 */
/*
 * floor.c — lopbench-floor KUBECONFIG: the resident memory below which no `luaop run` can go on
 * this machine's Debian libraries (startup-idle's "floor" rows). It links the same shared libraries
 * as the luaop executable (bench/run.sh links them with --no-as-needed, so all are loaded even if
 * unused), reads the kubeconfig and makes one GET of /version through luaop's own HTTP transport
 * (host/kube/client/transport.h: plain TCP, or TLS with OpenSSL initialised, as the server's URL says),
 * as luaop does first. Then it prints "ready" and blocks until its standard input closes, so the
 * benchmark reads its /proc/PID/smaps_rollup from outside exactly as it reads luaop's.
 *
 * No Lua VM, no threads, no cache, no HTTP server: everything luaop adds is above this figure.
 * Like the luaop executable (cmd/main.c), it skips GnuTLS's implicit initialisation: GnuTLS is
 * loaded only for libcurl's RTMP and LDAP back ends (bench/run.sh links it with -rdynamic so that
 * GnuTLS's constructor sees this hook).
 */
#include "host/kube/client/kubeconfig.h"
#include "host/kube/client/transport.h"

#include <stdio.h>
#include <string.h>

int _gnutls_global_init_skip(void);
int _gnutls_global_init_skip(void) { return 1; }

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: lopbench-floor KUBECONFIG\n");
        return 2;
    }
    lop_rest_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    lop_err_t err;
    lop_kubeconfig_opts_t ko = {.path = argv[1], .no_incluster = true};
    if (lop_kubeconfig_load(&ko, &cfg, &err) != LOP_OK) {
        printf("kubeconfig: %s\n", err.message);
        return 1;
    }
    lop_transport_config_t tc = {
        .server = cfg.server, .tls_server_name = cfg.tls_server_name, .ca_pem = cfg.ca_pem, .insecure = cfg.insecure};
    lop_transport_t *t = NULL;
    if (lop_transport_new(&tc, &t, &err) != LOP_OK) {
        printf("transport: %s\n", err.message);
        return 1;
    }
    lop_http_exchange_t x = {
        .method = "GET", .target = "/version", .headers = "Accept: application/json\r\n", .gzip = true};
    lop_http_result_t r = lop_transport_exchange(t, &x);
    printf("%s\n", r == LOP_HTTP_OK && x.code == 200 ? "ready" : x.error[0] ? x.error : "not 200");
    fflush(stdout);
    char buf[64];
    while (fgets(buf, sizeof buf, stdin)) {}
    lop_transport_free(t);
    lop_rest_config_cleanup(&cfg);
    return r == LOP_HTTP_OK ? 0 : 1;
}
