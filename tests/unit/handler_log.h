/* SPDX-License-Identifier: Apache-2.0 */
/* handler_log.h — reflector handlers that append "tag:name@rv;" for every call to a log_t
 * (ud), shared by the reflector tests. Tags: add, upd, del, tomb. */
#ifndef LOP_TEST_HANDLER_LOG_H
#define LOP_TEST_HANDLER_LOG_H

#include "host/kube/cache/object.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct log_ {
    char s[4096];
} log_t;

static inline void app(log_t *l, const char *tag, const lop_obj_t *o)
{
    size_t n = strlen(l->s);
    snprintf(l->s + n, sizeof l->s - n, "%s:%s@%s;", tag, o->name, o->rv);
}
static inline void h_add(void *ud, lop_obj_t *o) { app(ud, "add", o); }
static inline void h_update(void *ud, lop_obj_t *old, lop_obj_t *o)
{
    (void)old;
    app(ud, "upd", o);
}
static inline void h_delete(void *ud, lop_obj_t *o, bool tomb) { app(ud, tomb ? "tomb" : "del", o); }

#endif
