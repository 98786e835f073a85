/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rest_client.h — for C tests: a REST client for a server URL with no client-side rate limit
 * (qps -1). Returns NULL after printing the cause.
 */
#ifndef LOP_TEST_REST_CLIENT_H
#define LOP_TEST_REST_CLIENT_H

#include "host/kube/client/rest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline lop_rest_client_t *t_rest_client(const char *url)
{
    lop_rest_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = strdup(url);
    cfg.qps = -1;
    lop_rest_client_t *c = NULL;
    lop_err_t err;
    if (lop_rest_client_new(&cfg, &c, &err) != LOP_OK) {
        fprintf(stderr, "client for %s: %s\n", url, err.message);
        c = NULL;
    }
    lop_rest_config_cleanup(&cfg);
    return c;
}

/* The same for http://127.0.0.1:port (a scripted test server). */
static inline lop_rest_client_t *t_rest_client_port(int port)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    return t_rest_client(url);
}

#endif
