/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/util/log (typed fields, logger order, time encodings) and host/util/rand
 * (version 4 UUIDs). Log lines are captured by pointing stderr at a temporary file. */
#include "host/util/clock.h"
#include "host/util/log.h"
#include "host/util/rand.h"
#include "t.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static FILE *g_tmp;
static int g_saved = -1;

static void capture_begin(void)
{
    fflush(stderr);
    g_tmp = tmpfile();
    g_saved = dup(2);
    dup2(fileno(g_tmp), 2);
}

static void capture_end(char *out, size_t len)
{
    dup2(g_saved, 2);
    close(g_saved);
    rewind(g_tmp);
    size_t n = fread(out, 1, len - 1, g_tmp);
    out[n] = '\0';
    fclose(g_tmp);
}

static void test_json_fields_keep_their_types(void)
{
    lop_log_setup(LOP_LOG_DEBUG, LOP_LOG_JSON);
    lop_log_setup_time(LOP_LOG_TIME_RFC3339MICRO);
    char out[2048];
    capture_begin();
    lop_log_field_t f[] = {
        LOP_LOG_F_STR("controller", "memcached"),
        LOP_LOG_F_NUM("duration", 0.25),
        LOP_LOG_F_INT("replicas", 3),
        LOP_LOG_F_BOOL("ready", true),
        LOP_LOG_F_NUM("ratio", 0.1),
        LOP_LOG_F_JSON("Memcached", "{\"name\":\"a\",\"namespace\":\"b\"}"),
        LOP_LOG_F_STR("logger", "controller"),
        LOP_LOG_F_STR("quote", "say \"hi\""),
    };
    lop_log_fields(LOP_LOG_INFO, "typed", f, (int)(sizeof f / sizeof f[0]));
    lop_log(LOP_LOG_INFO, "strings", "n", "3", NULL);
    capture_end(out, sizeof out);
    /* logger right after level (zap's order), numbers/booleans/objects unquoted, "0.1" shortest */
    T_CHECK(strstr(out, "\"level\":\"info\",\"logger\":\"controller\",\"msg\":\"typed\"") != NULL);
    T_CHECK(strstr(out, "\"duration\":0.25,\"replicas\":3,\"ready\":true,\"ratio\":0.1,") != NULL);
    T_CHECK(strstr(out, "\"Memcached\":{\"name\":\"a\",\"namespace\":\"b\"}") != NULL);
    T_CHECK(strstr(out, "\"quote\":\"say \\\"hi\\\"\"}") != NULL);
    T_CHECK(strstr(out, "\"n\":\"3\"") != NULL); /* lop_log's values stay strings */
    T_CHECK(strstr(out, "\"logger\":\"controller\",\"msg\":\"typed\",\"controller\"") != NULL); /* once */
}

static void test_text_fields(void)
{
    lop_log_setup(LOP_LOG_DEBUG, LOP_LOG_TEXT);
    char out[1024];
    capture_begin();
    lop_log_field_t f[] = {LOP_LOG_F_NUM("duration", 1.5), LOP_LOG_F_BOOL("ok", false), LOP_LOG_F_STR("s", "a b")};
    lop_log_fields(LOP_LOG_WARN, "t", f, 3);
    capture_end(out, sizeof out);
    T_CHECK(strstr(out, " level=warn msg=t duration=1.5 ok=false s=\"a b\"\n") != NULL);
    lop_log_setup(LOP_LOG_INFO, LOP_LOG_TEXT);
}

static void test_time_encodings(void)
{
    /* 2026-12-06T04:10:00.123456789Z */
    int64_t t = INT64_C(1796530200) * LOP_NS_PER_S + 123456789;
    char buf[48];
    static const struct {
        lop_log_time_t enc;
        const char *want;
        bool numeric;
    } cases[] = {
        {LOP_LOG_TIME_RFC3339MICRO, "2026-12-06T04:10:00.123456Z", false},
        {LOP_LOG_TIME_RFC3339, "2026-12-06T04:10:00Z", false},
        {LOP_LOG_TIME_RFC3339NANO, "2026-12-06T04:10:00.123456789Z", false},
        {LOP_LOG_TIME_ISO8601, "2026-12-06T04:10:00.123Z", false},
        {LOP_LOG_TIME_EPOCH, "1796530200.123456", true},
        {LOP_LOG_TIME_MILLIS, "1796530200123.456789", true},
        {LOP_LOG_TIME_NANOS, "1796530200123456789", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lop_log_setup_time(cases[i].enc);
        T_CHECK(lop_log_format_time(t, buf, sizeof buf) == cases[i].numeric);
        T_EQ_STR(buf, cases[i].want);
    }
    lop_log_setup_time(LOP_LOG_TIME_RFC3339NANO); /* Go trims trailing zeros */
    lop_log_format_time(INT64_C(1796530200) * LOP_NS_PER_S + 120000000, buf, sizeof buf);
    T_EQ_STR(buf, "2026-12-06T04:10:00.12Z");
    lop_log_format_time(INT64_C(1796530200) * LOP_NS_PER_S, buf, sizeof buf);
    T_EQ_STR(buf, "2026-12-06T04:10:00Z");
    lop_log_time_t e;
    T_EQ_INT(lop_log_time_parse("iso8601", &e), 0);
    T_EQ_INT(e, LOP_LOG_TIME_ISO8601);
    T_EQ_INT(lop_log_time_parse("sundial", &e), -1);
    /* numeric encodings are JSON numbers in the line */
    lop_log_setup(LOP_LOG_INFO, LOP_LOG_JSON);
    lop_log_setup_time(LOP_LOG_TIME_EPOCH);
    char out[512];
    capture_begin();
    lop_log(LOP_LOG_INFO, "x", NULL);
    capture_end(out, sizeof out);
    T_CHECK(strncmp(out, "{\"ts\":1", 7) == 0);
    lop_log_setup_time(LOP_LOG_TIME_RFC3339MICRO);
    lop_log_setup(LOP_LOG_INFO, LOP_LOG_TEXT);
}

static void test_uuid4_shape_and_uniqueness(void)
{
    char a[LOP_UUID_LEN + 1], b[LOP_UUID_LEN + 1];
    lop_uuid4(a);
    T_EQ_INT(strlen(a), LOP_UUID_LEN);
    for (int i = 0; i < LOP_UUID_LEN; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23)
            T_CHECK(a[i] == '-');
        else
            T_CHECK(strchr("0123456789abcdef", a[i]) != NULL);
    }
    T_CHECK(a[14] == '4');                  /* version 4 */
    T_CHECK(strchr("89ab", a[19]) != NULL); /* variant 10 */
    int same = 0;
    for (int i = 0; i < 1000; i++) same += strcmp(lop_uuid4(b), a) == 0;
    T_EQ_INT(same, 0);
}

int main(void)
{
    T_RUN(test_json_fields_keep_their_types);
    T_RUN(test_text_fields);
    T_RUN(test_time_encodings);
    T_RUN(test_uuid4_shape_and_uniqueness);
    return T_DONE();
}
