/* SPDX-License-Identifier: Apache-2.0 */
/* engine.c — the few helpers the engine interface's plain data types need (freeing a request
 * list a map function returned, an admission result; see engine.h). Any thread; no upstream counterpart. */
#include "host/runtime/engine.h"

#include <stdlib.h>

void lop_request_list_free(lop_request_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->namespaces[i]);
        free(l->names[i]);
    }
    free(l->namespaces);
    free(l->names);
    l->namespaces = l->names = NULL;
    l->n = 0;
}

void lop_admission_result_free(lop_admission_result_t *r)
{
    for (size_t i = 0; i < r->nwarnings; i++) free(r->warnings[i]);
    free(r->warnings);
    free(r->patched_json);
    r->warnings = NULL;
    r->nwarnings = 0;
    r->patched_json = NULL;
    r->patched_len = 0;
}
