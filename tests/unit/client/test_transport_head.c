/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/kube/client/transport_head.c: a response head read line by line as libcurl's
 * header callback delivers it, and split into headers (transport_impl.h). */
#include "host/kube/client/transport_impl.h"
#include "t.h"

#include <stdio.h>
#include <string.h>

static lop_tr_head_rc_t line(lop_buf_t *head, int *code, const char *s)
{
    return lop_tr_head_line(head, code, s, strlen(s));
}

static void test_interim_response_is_dropped(void)
{
    lop_buf_t head = LOP_BUF_INIT;
    int code = 0;
    T_EQ_INT(line(&head, &code, "HTTP/1.1 100 Continue\r\n"), LOP_TR_HEAD_MORE);
    T_EQ_INT(line(&head, &code, "X-Interim: 1\r\n"), LOP_TR_HEAD_MORE);
    T_EQ_INT(line(&head, &code, "\r\n"), LOP_TR_HEAD_MORE); /* 1xx: not the final head */
    T_EQ_INT(line(&head, &code, "HTTP/2 429 \r\n"), LOP_TR_HEAD_MORE);
    T_EQ_INT(code, 429);
    T_EQ_INT(line(&head, &code, "Retry-After: 3\r\n"), LOP_TR_HEAD_MORE);
    T_EQ_INT(line(&head, &code, "\r\n"), LOP_TR_HEAD_DONE);
    T_EQ_INT(head.len, strlen("Retry-After: 3\n"));
    T_CHECK(memcmp(head.data, "Retry-After: 3\n", head.len) == 0);
    lop_buf_free(&head);
}

static void test_malformed_status_is_zero(void)
{
    const char *bad[] = {"HTTP/1.1 20 OK\r\n", "HTTP/1.1 2000\r\n", "HTTP/1.1 2x0 OK\r\n", "HTTP/1.1\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lop_buf_t head = LOP_BUF_INIT;
        int code = -1;
        T_EQ_INT(line(&head, &code, bad[i]), LOP_TR_HEAD_MORE);
        T_EQ_INT(code, 0);
        T_EQ_INT(line(&head, &code, "\r\n"), LOP_TR_HEAD_MORE); /* never a final head */
        lop_buf_free(&head);
    }
    lop_buf_t head = LOP_BUF_INIT;
    int code = 0;
    T_EQ_INT(line(&head, &code, "HTTP/1.1 101\r\n"), LOP_TR_HEAD_MORE);
    T_EQ_INT(line(&head, &code, "\r\n"), LOP_TR_HEAD_DONE); /* switching protocols ends the head */
    lop_buf_free(&head);
}

static void test_head_too_big(void)
{
    lop_buf_t head = LOP_BUF_INIT;
    int code = 0;
    static char big[LOP_TR_HEAD_MAX + 8];
    memset(big, 'a', sizeof big - 1);
    big[0] = 'X';
    big[1] = ':';
    T_EQ_INT(line(&head, &code, "HTTP/1.1 200 OK\r\n"), LOP_TR_HEAD_MORE);
    T_EQ_INT(line(&head, &code, big), LOP_TR_HEAD_TOO_BIG);
    lop_buf_free(&head);
}

typedef struct seen {
    char text[256];
} seen_t;

static void on_header(void *ud, const char *name, size_t nlen, const char *value, size_t vlen)
{
    seen_t *s = ud;
    size_t at = strlen(s->text);
    snprintf(s->text + at, sizeof s->text - at, "[%.*s=%.*s]", (int)nlen, name, (int)vlen, value);
}

static void test_each_splits_and_trims(void)
{
    const char *head = "A: 1\nB:\t two words \t\n:no-name\nno-colon\nC:\nD: x:y\n";
    seen_t s = {""};
    lop_tr_head_each(head, strlen(head), on_header, &s);
    T_EQ_STR(s.text, "[A=1][B=two words][C=][D=x:y]");
    lop_tr_head_each(NULL, 0, on_header, &s); /* an empty head: no call */
    T_EQ_STR(s.text, "[A=1][B=two words][C=][D=x:y]");
}

int main(void)
{
    T_RUN(test_interim_response_is_dropped);
    T_RUN(test_malformed_status_is_zero);
    T_RUN(test_head_too_big);
    T_RUN(test_each_splits_and_trims);
    return T_DONE();
}
