/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/util: time formats, the fake clock, buffers. */
#include "host/util/base64.h"
#include "host/util/buf.h"
#include "host/util/clock.h"
#include "host/util/err.h"
#include "t.h"

#include <stdlib.h>

static void test_microtime_has_six_digits(void)
{
    char buf[40];
    int64_t t = INT64_C(1740823512) * LOP_NS_PER_S + 650001 * INT64_C(1000);
    T_EQ_STR(lop_microtime_format(t, buf, sizeof buf), "2025-03-01T10:05:12.650001Z");
    T_EQ_STR(lop_microtime_format(INT64_C(1740823512) * LOP_NS_PER_S, buf, sizeof buf), "2025-03-01T10:05:12.000000Z");
    T_EQ_STR(lop_time_format(t, buf, sizeof buf), "2025-03-01T10:05:12Z");
}

static void test_microtime_strict_parse(void)
{
    int64_t t = 0;
    T_EQ_INT(lop_microtime_parse_strict("2025-03-01T10:05:12.650001Z", &t), 0);
    T_EQ_INT(t, INT64_C(1740823512) * LOP_NS_PER_S + 650001 * INT64_C(1000));
    T_EQ_INT(lop_microtime_parse_strict("2025-03-01T10:05:12Z", &t), -1);
    T_EQ_INT(lop_microtime_parse_strict("2025-03-01T10:05:12.650Z", &t), -1);
    T_EQ_INT(lop_microtime_parse_strict("garbage", &t), -1);
    T_EQ_INT(lop_time_parse("2025-03-01T11:05:12+01:00", &t), 0);
    T_EQ_INT(t, INT64_C(1740823512) * LOP_NS_PER_S);
    /* outside int64 nanoseconds (found by fuzz_apipatch through a managedFields time): refused,
     * not overflowed; the ends of the range still parse */
    T_EQ_INT(lop_time_parse("1012-01-01T00:00:00Z", &t), -1);
    T_EQ_INT(lop_time_parse("9999-12-31T23:59:59Z", &t), -1);
    T_EQ_INT(lop_time_parse("1678-01-01T00:00:00Z", &t), 0);
    T_EQ_INT(t, INT64_C(-9214560000) * LOP_NS_PER_S);
    T_EQ_INT(lop_time_parse("2262-01-01T00:00:00.999999999Z", &t), 0);
    T_EQ_INT(t, INT64_C(9214646400) * LOP_NS_PER_S + 999999999);
}

static void test_fake_clock_steps(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    int64_t m0 = lop_clock_mono(&fc.base), w0 = lop_clock_wall(&fc.base);
    lop_fake_clock_step(&fc, 5 * LOP_NS_PER_S);
    T_EQ_INT(lop_clock_mono(&fc.base) - m0, 5 * LOP_NS_PER_S);
    T_EQ_INT(lop_clock_wall(&fc.base) - w0, 5 * LOP_NS_PER_S);
    lop_fake_clock_skew_wall(&fc, -3600 * LOP_NS_PER_S);
    T_EQ_INT(lop_clock_mono(&fc.base) - m0, 5 * LOP_NS_PER_S);
    T_EQ_INT(lop_clock_wall(&fc.base) - w0, -3595 * LOP_NS_PER_S);
}

static void test_buf_json_escape(void)
{
    lop_buf_t b = LOP_BUF_INIT;
    lop_buf_json_str(&b, "a\"b\\c\n\x01", 7);
    T_EQ_STR(b.data, "\"a\\\"b\\\\c\\n\\u0001\"");
    T_EQ_INT(lop_json_str_len("a\"b\\c\n\x01", 7), b.len); /* the length it appends */
    T_EQ_INT(lop_json_str_len("v1", 2), 4);
    lop_buf_consume(&b, 1);
    T_EQ_INT(b.len, 16);
    /* the short forms of \b \f \r \t, and \u00XX for the other control bytes */
    lop_buf_reset(&b);
    lop_buf_json_str(&b, "\b\f\r\t\x1f/", 6);
    T_EQ_STR(b.data, "\"\\b\\f\\r\\t\\u001f/\"");
    T_EQ_INT(lop_json_str_len("\b\f\r\t\x1f/", 6), b.len);
    lop_buf_free(&b);
}

/* lop_buf_join: no copy when nothing was collected before, else head + tail in the buffer. */
static void test_buf_join_copies_only_a_split_value(void)
{
    lop_buf_t b = LOP_BUF_INIT;
    const char *tail = "xyz";
    size_t n;
    T_CHECK(lop_buf_join(&b, tail, 3, &n) == tail);
    T_EQ_INT(n, 3);
    T_EQ_INT(b.len, 0);
    lop_buf_append(&b, "ab", 2);
    const char *j = lop_buf_join(&b, tail, 3, &n);
    T_CHECK(j == b.data);
    T_EQ_INT(n, 5);
    T_EQ_STR(j, "abxyz");
    lop_buf_free(&b);
}

static void test_rc_from_http(void)
{
    T_EQ_INT(lop_rc_from_http(404, "NotFound"), LOP_ENOTFOUND);
    T_EQ_INT(lop_rc_from_http(409, "AlreadyExists"), LOP_EEXIST);
    T_EQ_INT(lop_rc_from_http(409, "Conflict"), LOP_ECONFLICT);
    T_EQ_INT(lop_rc_from_http(410, "Gone"), LOP_EGONE);
    T_EQ_INT(lop_rc_from_http(410, "Expired"), LOP_EGONE);
    T_EQ_INT(lop_rc_from_http(200, NULL), LOP_OK);
}

static void test_base64_both_alphabets_round_trip(void)
{
    static const struct {
        const char *in, *std, *url;
    } cases[] = {
        {"", "", ""}, {"f", "Zg==", "Zg"}, {"fo", "Zm8=", "Zm8"}, {"foo", "Zm9v", "Zm9v"}, {"\xfb\xff", "+/8=", "-_8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].in);
        char *s = lop_base64_encode(cases[i].in, n, false), *u = lop_base64_encode(cases[i].in, n, true);
        T_EQ_STR(s, cases[i].std);
        T_EQ_STR(u, cases[i].url);
        size_t dn = 99;
        char *d1 = lop_base64_decode(s, &dn);
        T_CHECK(d1 && dn == n && memcmp(d1, cases[i].in, n) == 0);
        char *d2 = lop_base64_decode(u, &dn);
        T_CHECK(d2 && dn == n && memcmp(d2, cases[i].in, n) == 0);
        free(s);
        free(u);
        free(d1);
        free(d2);
    }
    T_CHECK(lop_base64_decode("Zm9v!", NULL) == NULL);
    T_CHECK(lop_base64_decode("Zg==Zg", NULL) == NULL);
    T_CHECK(lop_base64_decode("Z", NULL) == NULL);
}

static void test_utf8_sanitize_replaces_invalid_sequences(void)
{
    static const struct {
        const char *in;
        size_t n;
        const char *out;
    } cases[] = {
        {"plain", 5, "plain"},
        {"caf\xc3\xa9", 5, "caf\xc3\xa9"},                           /* valid 2-byte */
        {"cut \xc3", 5, "cut \xef\xbf\xbd"},                         /* truncated sequence */
        {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* surrogate */
        {"\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd"},                 /* overlong */
        {"\xf0\x9f\x98\x80!", 5, "\xf0\x9f\x98\x80!"},               /* 4-byte emoji */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lop_buf_t b = LOP_BUF_INIT;
        lop_buf_utf8(&b, cases[i].in, cases[i].n);
        T_EQ_STR(b.data ? b.data : "", cases[i].out);
        lop_buf_free(&b);
    }
}

int main(void)
{
    T_RUN(test_utf8_sanitize_replaces_invalid_sequences);
    T_RUN(test_base64_both_alphabets_round_trip);
    T_RUN(test_microtime_has_six_digits);
    T_RUN(test_microtime_strict_parse);
    T_RUN(test_fake_clock_steps);
    T_RUN(test_buf_json_escape);
    T_RUN(test_buf_join_copies_only_a_split_value);
    T_RUN(test_rc_from_http);
    return T_DONE();
}
