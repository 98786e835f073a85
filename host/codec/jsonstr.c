/* SPDX-License-Identifier: Apache-2.0 */
/* jsonstr.c — the JSON \uXXXX escape with surrogate pairs, and string membership in a JSON array
 * (see jsonstr.h). Pure functions, any thread: the cache's reflector threads, the Lua VMs' codec,
 * the local API server's loop. Upstream: RFC 8259 §7, as Go's encoding/json decodes it
 * (encoding/json/decode.go unquote). */
#include "host/codec/jsonstr.h"

#include <string.h>

/* The four hex digits at p (p + 4 <= end checked by the caller) as a code unit; -1 if not hex. */
static int32_t hex4(const char *p)
{
    int32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return -1;
        v = v << 4 | d;
    }
    return v;
}

/* The code unit of the escape "\uXXXX" at p, or -1. */
static int32_t unit_at(const char *p, const char *end)
{
    if (end - p < 6 || p[0] != '\\' || p[1] != 'u') return -1;
    return hex4(p + 2);
}

int lop_json_unescape_u(const char *p, const char *end, uint32_t *cp)
{
    int32_t hi = unit_at(p, end);
    if (hi < 0) return LOP_JSON_U_BAD;
    if (hi >= 0xDC00 && hi <= 0xDFFF) return LOP_JSON_U_LONE_LOW;
    if (hi < 0xD800 || hi > 0xDBFF) {
        *cp = (uint32_t)hi;
        return 6;
    }
    int32_t lo = unit_at(p + 6, end);
    if (lo < 0xDC00 || lo > 0xDFFF) return LOP_JSON_U_LONE_HIGH;
    *cp = 0x10000 + ((uint32_t)(hi - 0xD800) << 10) + (uint32_t)(lo - 0xDC00);
    return 12;
}

bool lop_json_str_in(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0) return true;
    }
    return false;
}

bool lop_json_value_equal(const json_t *a, const json_t *b)
{
    if (!a || !b) return a == b;
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b)) return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_typeof(a) != json_typeof(b)) return false;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!lop_json_value_equal(json_array_get(a, i), json_array_get(b, i))) return false;
        return true;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b)) return false;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            const json_t *w = json_object_get(b, k);
            if (!w || !lop_json_value_equal(v, w)) return false;
        }
        return true;
    }
    return json_equal((json_t *)a, (json_t *)b);
}
