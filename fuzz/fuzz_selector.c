/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: host/meta label and field selectors — the input is parsed as both, and a
 * selector that parses is matched against a fixed label set and field set. */
#include "fuzz.h"
#include "host/meta/selector.h"

static const char *lookup(void *ud, const char *key)
{
    (void)ud;
    if (!strcmp(key, "app")) return "web";
    if (!strcmp(key, "tier")) return "";
    if (!strcmp(key, "metadata.name")) return "a";
    if (!strcmp(key, "metadata.namespace")) return "default";
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_strndup(data, size);
    lop_err_t err;
    lop_label_selector_t *ls = NULL;
    if (lop_label_selector_parse(s, &ls, &err) == LOP_OK) {
        lop_label_selector_empty(ls);
        lop_label_selector_match(ls, lookup, NULL);
        json_t *labels = json_pack("{s:s,s:s}", "app", "web", "tier", "");
        lop_label_selector_match_json(ls, labels);
        json_decref(labels);
        lop_label_selector_free(ls);
    }
    lop_field_selector_t *fs = NULL;
    if (lop_field_selector_parse(s, &fs, &err) == LOP_OK) {
        size_t n = lop_field_selector_count(fs);
        for (size_t i = 0; i < n; i++) {
            const char *field = lop_field_selector_field(fs, i);
            if (!field) abort();
            lop_field_selector_exact(fs, field);
        }
        lop_field_selector_empty(fs);
        lop_field_selector_match(fs, lookup, NULL);
        lop_field_selector_free(fs);
    }
    free(s);
    return 0;
}
