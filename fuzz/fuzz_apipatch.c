/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the local API server's patch appliers (apiserver/patch.h) and server-side
 * apply (apiserver/ssa.h). The input is "<target JSON>\n--\n<patch JSON>\n--\n<type>", the type's
 * first byte choosing (mod 4) merge patch, JSON patch, strategic merge patch or apply (a second
 * byte: force, status subresource, or an Update instead). Checked
 * promises: inputs are never modified (both headers say the functions are pure); a failure
 * comes with an error code the header names; RFC 7386 merge patch is idempotent
 * (merge(merge(t, p), p) == merge(t, p)); a forced apply never reports a conflict.
 */
#include "fuzz.h"
#include "apiserver/patch.h"
#include "apiserver/ssa.h"

#include <stdbool.h>

static json_t *load(const uint8_t *p, size_t n)
{
    return n ? json_loadb((const char *)p, n, JSON_DECODE_ANY, NULL) : NULL;
}

static void merge(const json_t *t, const json_t *p)
{
    json_t *once = as_patch_merge(t, p);
    json_t *twice = as_patch_merge(once, p);
    if (!once || !json_equal(once, twice)) abort();
    json_decref(once);
    json_decref(twice);
}

static void strategic(const json_t *t, const json_t *p)
{
    const char *av = json_string_value(json_object_get(t, "apiVersion"));
    const char *kind = json_string_value(json_object_get(t, "kind"));
    lop_err_t err = {0};
    json_t *out = as_patch_strategic(t, p, av ? av : "v1", kind ? kind : "Pod", &err);
    if (!out && err.code != 400) abort();
    json_decref(out);
}

/* flags bit 0: force; bit 1: the status subresource; bit 2: an Update (as_ssa_track_update) */
static void apply(const json_t *live, const json_t *applied, unsigned flags)
{
    as_ssa_ctx_t ctx = {"fuzz", "v1", flags & 2 ? "status" : NULL, 1700000000000000000LL, true, "Pod"};
    bool force = flags & 1;
    const char *kind = json_string_value(json_object_get(applied, "kind"));
    if (kind) ctx.kind = kind;
    ctx.builtin = as_patch_strategic_supported("v1", ctx.kind);
    if (flags & 4) {
        json_t *updated = json_deep_copy(applied);
        if (json_is_object(updated)) as_ssa_track_update(live, updated, &ctx);
        json_decref(updated);
        return;
    }
    json_t *status = NULL;
    lop_err_t err = {0};
    json_t *out = as_ssa_apply(live, applied, force, &ctx, &status, &err);
    if (out && status) abort();
    if (status && force) abort();
    if (!out && !status && err.code != 400 && err.code != 422) abort();
    json_decref(out);
    json_decref(status);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *tp, *pp, *kp = NULL;
    size_t tn, pn, kn = 0;
    if (!fuzz_next_part(&data, &size, &tp, &tn) || !fuzz_next_part(&data, &size, &pp, &pn)) return 0;
    int type = fuzz_next_part(&data, &size, &kp, &kn) && kn ? kp[0] % 4 : 0;
    json_t *t = load(tp, tn), *p = load(pp, pn);
    if (!p) {
        json_decref(t);
        return 0;
    }
    json_t *t0 = t ? json_deep_copy(t) : NULL, *p0 = json_deep_copy(p);
    lop_err_t err = {0};
    json_t *out;
    switch (type) {
    case 0: merge(t, p); break;
    case 1:
        out = as_patch_json(t ? t : json_null(), p, &err);
        if (!out && err.code != 400 && err.code != 422 && err.code != 413) abort();
        json_decref(out);
        break;
    case 2: strategic(t, p); break;
    default: apply(json_is_object(t) ? t : NULL, p, kn > 1 ? kp[1] : 0); break;
    }
    if (!json_equal(p, p0) || (t && !json_equal(t, t0))) abort(); /* an input was modified */
    json_decref(t);
    json_decref(t0);
    json_decref(p);
    json_decref(p0);
    return 0;
}
