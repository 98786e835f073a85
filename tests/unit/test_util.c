/* Unit tests for host/util: time formats (reference C.13, C.14), the fake clock, buffers. */
#include "host/util/buf.h"
#include "host/util/clock.h"
#include "host/util/err.h"
#include "t.h"

static void test_microtime_has_six_digits(void)
{
    char buf[40];
    int64_t t = INT64_C(1740823512) * LOP_NS_PER_S + 650001 * INT64_C(1000);
    T_EQ_STR(lop_microtime_format(t, buf, sizeof buf), "2025-03-01T10:05:12.650001Z");
    T_EQ_STR(lop_microtime_format(INT64_C(1740823512) * LOP_NS_PER_S, buf, sizeof buf),
             "2025-03-01T10:05:12.000000Z");
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
    lop_buf_consume(&b, 1);
    T_EQ_INT(b.len, 16);
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

int main(void)
{
    T_RUN(test_microtime_has_six_digits);
    T_RUN(test_microtime_strict_parse);
    T_RUN(test_fake_clock_steps);
    T_RUN(test_buf_json_escape);
    T_RUN(test_rc_from_http);
    return T_DONE();
}
