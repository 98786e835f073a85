/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/util/utf8: the well-formed/ill-formed boundaries of RFC 3629 (overlongs,
 * surrogates, above U+10FFFF, truncation), table-driven, and encode/decode round trips. */
#include "host/util/utf8.h"
#include "t.h"

#include <string.h>

typedef struct {
    const char *bytes;
    size_t len;  /* of the first sequence; 0 = ill-formed */
    uint32_t cp; /* when len > 0 */
    const char *why;
} seq_case_t;

static const seq_case_t seq_cases[] = {
    {"A", 1, 0x41, "ASCII"},
    {"\xC2\x80", 2, 0x80, "smallest 2-byte"},
    {"\xDF\xBF", 2, 0x7FF, "largest 2-byte"},
    {"\xE0\xA0\x80", 3, 0x800, "smallest 3-byte"},
    {"\xED\x9F\xBF", 3, 0xD7FF, "just below the surrogates"},
    {"\xEE\x80\x80", 3, 0xE000, "just above the surrogates"},
    {"\xEF\xBF\xBD", 3, 0xFFFD, "replacement character"},
    {"\xF0\x90\x80\x80", 4, 0x10000, "smallest 4-byte"},
    {"\xF4\x8F\xBF\xBF", 4, 0x10FFFF, "U+10FFFF"},
    {"\xC0\x80", 0, 0, "overlong NUL"},
    {"\xC1\xBF", 0, 0, "overlong 2-byte"},
    {"\xE0\x9F\xBF", 0, 0, "overlong 3-byte"},
    {"\xF0\x8F\xBF\xBF", 0, 0, "overlong 4-byte"},
    {"\xED\xA0\x80", 0, 0, "high surrogate U+D800"},
    {"\xED\xBF\xBF", 0, 0, "low surrogate U+DFFF"},
    {"\xF4\x90\x80\x80", 0, 0, "U+110000"},
    {"\xF5\x80\x80\x80", 0, 0, "lead byte F5"},
    {"\xFF", 0, 0, "byte FF"},
    {"\x80", 0, 0, "lone continuation byte"},
    {"\xE2\x82", 0, 0, "truncated 3-byte"},
    {"\xE2\x28\xA1", 0, 0, "bad continuation byte"},
};

static void test_decode_table(void)
{
    for (size_t i = 0; i < sizeof seq_cases / sizeof seq_cases[0]; i++) {
        const seq_case_t *c = &seq_cases[i];
        uint32_t cp = 0xDEAD;
        size_t n = lop_utf8_decode((const unsigned char *)c->bytes, strlen(c->bytes), &cp);
        if (n != c->len) fprintf(stderr, "case %s\n", c->why);
        T_EQ_INT(n, c->len);
        T_EQ_INT(cp, c->len ? c->cp : 0xDEAD); /* untouched when ill-formed */
        T_CHECK(lop_utf8_valid(c->bytes, strlen(c->bytes)) == (c->len == strlen(c->bytes)));
    }
}

static void test_decode_respects_the_length(void)
{
    /* a well-formed 3-byte sequence cut by n is truncated, not read past */
    T_EQ_INT(lop_utf8_decode((const unsigned char *)"\xE2\x82\xAC", 2, NULL), 0);
    T_EQ_INT(lop_utf8_decode((const unsigned char *)"x", 0, NULL), 0);
    T_EQ_INT(lop_utf8_decode((const unsigned char *)"\0", 1, NULL), 1);
}

static void test_valid_strings(void)
{
    T_CHECK(lop_utf8_valid("", 0));
    T_CHECK(lop_utf8_valid("a\0b", 3)); /* NUL is a character */
    T_CHECK(lop_utf8_valid("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80", 15));
    T_CHECK(!lop_utf8_valid("ok\xC3", 3));
    T_CHECK(!lop_utf8_valid("ok\xED\xA0\x80ok", 7));
}

static void test_encode_round_trips(void)
{
    const uint32_t cps[] = {0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF};
    for (size_t i = 0; i < sizeof cps / sizeof cps[0]; i++) {
        char out[4];
        size_t n = lop_utf8_encode(cps[i], out);
        uint32_t back = 0;
        T_EQ_INT(lop_utf8_decode((const unsigned char *)out, n, &back), n);
        T_EQ_INT(back, cps[i]);
    }
    char out[4];
    T_EQ_INT(lop_utf8_encode(0xD800, out), 3); /* not encodable: U+FFFD */
    T_CHECK(memcmp(out, "\xEF\xBF\xBD", 3) == 0);
    T_EQ_INT(lop_utf8_encode(0x110000, out), 3);
    T_CHECK(memcmp(out, "\xEF\xBF\xBD", 3) == 0);
}

int main(void)
{
    T_RUN(test_decode_table);
    T_RUN(test_decode_respects_the_length);
    T_RUN(test_valid_strings);
    T_RUN(test_encode_round_trips);
    return T_DONE();
}
