/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: host/codec/yaml (manifests, the local API server's YAML and apply bodies,
 * luaop check --configmap) — any bytes either load or fail with an error, within the alias
 * expansion bound. */
#include "fuzz.h"
#include "host/codec/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *docs = NULL;
    lop_err_t err;
    if (lop_yaml_load_all((const char *)data, size, "fuzz.yaml", &docs, &err) == LOP_OK) {
        if (!docs) abort();
        char *s = json_dumps(docs, JSON_COMPACT);
        free(s);
        json_decref(docs);
    } else if (docs) {
        abort();
    }
    return 0;
}
