/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: host/kube/client/kubeconfig — the input is written to a kubeconfig file and
 * loaded (no request is made, no exec plugin runs: those happen only when credentials are asked
 * for). */
#include "fuzz.h"
#include "host/kube/client/kubeconfig.h"

#include <stdio.h>
#include <unistd.h>

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/luaop-fuzz-kubeconfig-%d", (int)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    const char *p = path;
    lop_rest_config_t cfg;
    lop_err_t err;
    if (lop_kubeconfig_load_files(&p, 1, NULL, NULL, &cfg, &err) == LOP_OK) lop_rest_config_cleanup(&cfg);
    unlink(path);
    return 0;
}
