/*
 * apiserver_client.h — for C tests: start the in-process local API server on a free loopback
 * port and a REST client for it (no client-side rate limit). Include after t.h.
 * Returns 0, or 1 after printing the cause (main() checks it with T_SETUP).
 */
#ifndef LOP_TEST_APISERVER_CLIENT_H
#define LOP_TEST_APISERVER_CLIENT_H

#include "apiserver/apiserver.h"
#include "host/kube/rest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_apiserver_client_start(lop_apiserver_t **srv, lop_rest_client_t **cli)
{
    lop_apiserver_opts_t opts = {0};
    lop_err_t err;
    if (lop_apiserver_start(&opts, srv, &err) != LOP_OK) {
        fprintf(stderr, "apiserver: %s\n", err.message);
        return 1;
    }
    lop_rest_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = strdup(lop_apiserver_url(*srv));
    cfg.qps = -1;
    if (lop_rest_client_new(&cfg, cli, &err) != LOP_OK) {
        fprintf(stderr, "client: %s\n", err.message);
        return 1;
    }
    lop_rest_config_cleanup(&cfg);
    return 0;
}

#endif
