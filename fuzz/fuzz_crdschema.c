/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: CRD validation of the local API server — the CEL subset (apiserver/as_cel.h)
 * and structural schemas (apiserver/as_schema.h). The input is "<CEL rule>\n--\n<self JSON>\n--\n
 * <schema JSON>". Checked promises: a rule either fails to compile with a reason or evaluates to
 * true, false, or an error with a reason, and the same twice; a compiled schema validates any
 * object without crashing, every cause it reports has reason, field and message strings, and
 * validating the pruned and defaulted result again prunes nothing more.
 */
#include "fuzz.h"
#include "apiserver/as_cel.h"
#include "apiserver/as_schema.h"

static void cel(const char *rule, const json_t *self)
{
    char err[300] = "";
    as_cel_prog_t *p = as_cel_compile(rule, err, sizeof err);
    if (!p) {
        if (!err[0]) abort();
        return;
    }
    int a = as_cel_eval_bool(p, self, self, err, sizeof err);
    if (a < 0 && !err[0]) abort();
    int b = as_cel_eval_bool(p, self, self, err, sizeof err);
    if (a != b) abort();
    as_cel_free(p);
}

static void schema(const json_t *sch, const json_t *obj)
{
    as_schema_t *s = as_schema_compile(sch);
    if (!s) return;
    json_t *o = json_deep_copy(obj);
    as_schema_result_t r = {json_array(), json_array(), json_array()};
    as_schema_validate(s, o, NULL, &r);
    size_t i;
    json_t *c;
    json_array_foreach(r.causes, i, c)
    {
        if (!json_is_string(json_object_get(c, "reason")) || !json_is_string(json_object_get(c, "field")) ||
            !json_is_string(json_object_get(c, "message")))
            abort();
    }
    as_schema_result_t again = {json_array(), json_array(), json_array()};
    as_schema_validate(s, o, NULL, &again);
    if (json_array_size(again.pruned) != 0) abort();
    json_decref(r.causes), json_decref(r.pruned), json_decref(r.warnings);
    json_decref(again.causes), json_decref(again.pruned), json_decref(again.warnings);
    json_decref(o);
    as_schema_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part;
    size_t plen;
    char *rule = NULL;
    json_t *self = NULL, *sch = NULL;
    if (fuzz_next_part(&data, &size, &part, &plen)) rule = fuzz_strndup(part, plen);
    if (fuzz_next_part(&data, &size, &part, &plen)) self = json_loadb((const char *)part, plen, JSON_DECODE_ANY, NULL);
    if (fuzz_next_part(&data, &size, &part, &plen)) sch = json_loadb((const char *)part, plen, 0, NULL);
    if (rule && self) cel(rule, self);
    if (sch && json_is_object(self)) schema(sch, self);
    free(rule);
    json_decref(self);
    json_decref(sch);
    return 0;
}
