/* as_ssa_fallback.c — TEMPORARY weak stand-ins for ssa.h until apilogic's ssa.c lands: no field
 * ownership, apply = merge of the applied object onto the live one. Strong definitions win. */
#include "apiserver/patch.h"
#include "apiserver/ssa.h"
#include "host/util/buf.h"

#include <ctype.h>
#include <string.h>

__attribute__((weak)) json_t *lop_ssa_apply(const json_t *live, const json_t *applied, bool force,
                                            const lop_ssa_ctx_t *ctx, json_t **status_out,
                                            lop_err_t *err)
{
    (void)force;
    (void)ctx;
    (void)err;
    *status_out = NULL;
    if (!live)
        return json_deep_copy(applied);
    return lop_merge_patch(live, applied);
}

__attribute__((weak)) void lop_ssa_track_update(const json_t *old, json_t *new_obj,
                                                const lop_ssa_ctx_t *ctx)
{
    (void)old;
    (void)new_obj;
    (void)ctx;
}

__attribute__((weak)) char *lop_ssa_manager_from_user_agent(const char *ua)
{
    char out[129];
    size_t o = 0;
    for (const char *p = ua; *p && *p != '/' && o < 128; p++)
        if (isprint((unsigned char)*p))
            out[o++] = *p;
    out[o] = '\0';
    return lop_xstrdup(out);
}
