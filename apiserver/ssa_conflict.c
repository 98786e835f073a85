/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssa_conflict.c — apply conflict statuses and the default manager name.
 */
#include "apiserver/ssa.h"

#include "apiserver/ssa_fieldset.h"
#include "apiserver/ssa_internal.h"
#include "host/util/buf.h"
#include "host/util/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void put_qstr(lop_buf_t *b, const char *s) { lop_buf_json_str(b, s, strlen(s)); }

char *as_ssa_print_manager(const as_ssa_mgr_t *m)
{
    lop_buf_t b = LOP_BUF_INIT;
    put_qstr(&b, m->manager);
    if (*m->subresource) {
        lop_buf_puts(&b, " with subresource ");
        put_qstr(&b, m->subresource);
    }
    if (strcmp(m->operation, "Update") == 0) {
        lop_buf_printf(&b, " using %s", m->api_version);
        if (*m->time) lop_buf_printf(&b, " at %s", m->time);
    }
    return lop_buf_steal(&b);
}

/* The identity the API server sorts managers by: the JSON of the entry without time/fields. */
static char *identifier(const as_ssa_mgr_t *m)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, "{\"manager\":");
    put_qstr(&b, m->manager);
    lop_buf_puts(&b, ",\"operation\":");
    put_qstr(&b, m->operation);
    if (strcmp(m->operation, "Update") == 0) {
        lop_buf_puts(&b, ",\"apiVersion\":");
        put_qstr(&b, m->api_version);
    }
    if (*m->subresource) {
        lop_buf_puts(&b, ",\"subresource\":");
        put_qstr(&b, m->subresource);
    }
    lop_buf_putc(&b, '}');
    return lop_buf_steal(&b);
}

typedef struct group {
    char *id;
    char *printed;
    json_t *paths; /* array of strings */
} group_t;

static int cmp_group(const void *a, const void *b)
{
    return strcmp(((const group_t *)a)->id, ((const group_t *)b)->id);
}

json_t *as_ssa_conflict_status(const as_ssa_mgrs_t *ms, const json_t *conflicts)
{
    size_t ng = json_array_size(conflicts), total = 0;
    group_t *g = lop_xcalloc(ng ? ng : 1, sizeof *g);
    for (size_t i = 0; i < ng; i++) {
        const json_t *c = json_array_get(conflicts, i);
        json_int_t idx = json_integer_value(json_object_get(c, "index"));
        const as_ssa_mgr_t *m = &ms->v[idx];
        g[i].id = identifier(m);
        g[i].printed = as_ssa_print_manager(m);
        g[i].paths = json_array();
        as_ssa_fs_paths(json_object_get(c, "set"), g[i].paths);
        total += json_array_size(g[i].paths);
    }
    qsort(g, ng, sizeof *g, cmp_group);

    json_t *causes = json_array();
    lop_buf_t msg = LOP_BUF_INIT;
    for (size_t i = 0; i < ng; i++) {
        for (size_t j = 0; j < json_array_size(g[i].paths); j++) {
            const char *path = json_string_value(json_array_get(g[i].paths, j));
            lop_buf_t cm = LOP_BUF_INIT;
            lop_buf_printf(&cm, "conflict with %s", g[i].printed);
            json_array_append_new(causes, json_pack("{s:s,s:s,s:s}", "reason", "FieldManagerConflict", "message",
                                                    cm.data, "field", path));
            if (total == 1)
                lop_buf_printf(&msg, "Apply failed with 1 conflict: conflict with %s: %s", g[i].printed, path);
            lop_buf_free(&cm);
        }
    }
    if (total != 1) {
        lop_buf_printf(&msg, "Apply failed with %zu conflicts: ", total);
        for (size_t i = 0; i < ng; i++) {
            lop_buf_printf(&msg, "%sconflicts with %s:", i ? "\n" : "", g[i].printed);
            for (size_t j = 0; j < json_array_size(g[i].paths); j++)
                lop_buf_printf(&msg, "\n- %s", json_string_value(json_array_get(g[i].paths, j)));
        }
    }
    for (size_t i = 0; i < ng; i++) {
        free(g[i].id);
        free(g[i].printed);
        json_decref(g[i].paths);
    }
    free(g);
    json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:{s:o},s:i}", "kind", "Status", "apiVersion", "v1", "metadata",
                           "status", "Failure", "message", msg.data ? msg.data : "", "reason", "Conflict", "details",
                           "causes", causes, "code", 409);
    lop_buf_free(&msg);
    return st;
}

/* Close to Go's unicode.IsPrint: no controls, no spaces other than ' ', no format characters. */
static bool printable(uint32_t c)
{
    if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
    if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return false;
    if ((c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF) return false;
    return true;
}

char *as_ssa_manager_from_user_agent(const char *ua)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_puts(&b, "");
    const unsigned char *s = (const unsigned char *)(ua ? ua : "");
    const unsigned char *end = s + strlen((const char *)s);
    while (*s && *s != '/') {
        uint32_t cp = 0;
        size_t n = lop_utf8_decode(s, (size_t)(end - s), &cp);
        const char *bytes = (const char *)s;
        size_t len = n;
        if (n == 0) { /* an invalid byte reads as U+FFFD, which is printable */
            bytes = "\xEF\xBF\xBD";
            len = 3;
            n = 1;
            cp = 0xFFFD;
        }
        s += n;
        if (!printable(cp)) continue;
        if (b.len + len > 128) break;
        lop_buf_append(&b, bytes, len);
    }
    return lop_buf_steal(&b);
}
