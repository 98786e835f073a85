/* SPDX-License-Identifier: Apache-2.0 */
/* as_cel.c — placeholder: nothing compiles yet, so every rule is reported as not evaluated. */
#include "apiserver/as_cel.h"

#include <stdio.h>

as_cel_prog_t *as_cel_compile(const char *src, char *err, size_t errlen)
{
    (void)src;
    snprintf(err, errlen, "CEL is not evaluated");
    return NULL;
}

void as_cel_free(as_cel_prog_t *p) { (void)p; }

bool as_cel_uses_old_self(const as_cel_prog_t *p)
{
    (void)p;
    return false;
}

int as_cel_eval_bool(const as_cel_prog_t *p, const json_t *self, const json_t *old_self, char *err, size_t errlen)
{
    (void)p, (void)self, (void)old_self;
    snprintf(err, errlen, "CEL is not evaluated");
    return -1;
}

char *as_cel_eval_string(const as_cel_prog_t *p, const json_t *self, const json_t *old_self, char *err, size_t errlen)
{
    (void)p, (void)self, (void)old_self;
    snprintf(err, errlen, "CEL is not evaluated");
    return NULL;
}
