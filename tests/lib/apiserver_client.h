/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apiserver_client.h — for C tests: start the in-process local API server on a free loopback
 * port and a REST client for it (no client-side rate limit). Include after t.h.
 * Returns 0, or 1 after printing the cause (main() checks it with T_SETUP).
 */
#ifndef LOP_TEST_APISERVER_CLIENT_H
#define LOP_TEST_APISERVER_CLIENT_H

#include "apiserver/apiserver.h"
#include "host/kube/client/rest.h"
#include "rest_client.h"

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
    *cli = t_rest_client(lop_apiserver_url(*srv));
    if (!*cli) return 1;
    return 0;
}

#endif
