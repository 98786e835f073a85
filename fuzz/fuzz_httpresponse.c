/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the REST client's response reading (host/kube/client). The input is
 * "<head>\n--\n<body>": the head is fed line by line (each with its LF, as libcurl's header
 * callback gets it) to lop_tr_head_line until the head is done or too big, its kept lines split
 * by lop_tr_head_each (Retry-After values through lop_rest_parse_retry_after), and the body
 * decoded as an error response by lop_rest_status_parse. Checked: header names and values lie
 * in the head and are trimmed as promised; Retry-After is -1 or within 0..LOP_REST_RETRY_AFTER_MAX;
 * an error body always yields a failure rc and a Status object, whose message is the body's text
 * when the body is UTF-8 text but no Status.
 */
#include "fuzz.h"
#include "host/kube/client/rest.h"
#include "host/kube/client/transport_impl.h"
#include "host/util/utf8.h"

#include <ctype.h>

#include <strings.h>

typedef struct span {
    const char *start, *end;
} span_t;

static void on_header(void *ud, const char *name, size_t nlen, const char *value, size_t vlen)
{
    const span_t *head = ud;
    if (!nlen || name < head->start || name + nlen > head->end || memchr(name, ':', nlen)) abort();
    if (value < head->start || value + vlen > head->end || memchr(value, '\n', vlen)) abort();
    if (vlen && (value[0] == ' ' || value[0] == '\t' || value[vlen - 1] == ' ' || value[vlen - 1] == '\t')) abort();
    if (nlen == 11 && !strncasecmp(name, "Retry-After", 11)) {
        char *v = fuzz_strndup((const uint8_t *)value, vlen);
        long s = lop_rest_parse_retry_after(v);
        if (s < -1 || s > LOP_REST_RETRY_AFTER_MAX) abort();
        free(v);
    }
}

/* Feeds the head's lines; returns the status code once the head is done, else -1. */
static int read_head(const uint8_t *p, size_t n, lop_buf_t *head)
{
    int code = 0;
    for (size_t at = 0; at < n;) {
        const uint8_t *nl = memchr(p + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (p + at)) + 1 : n - at;
        lop_tr_head_rc_t rc = lop_tr_head_line(head, &code, (const char *)p + at, len);
        if (rc == LOP_TR_HEAD_TOO_BIG) return -1;
        if (rc == LOP_TR_HEAD_DONE) return code;
        if (head->len > LOP_TR_HEAD_MAX + 1) abort();
        at += len;
    }
    return -1;
}

/* A body that is not a Status document but valid UTF-8 text becomes the message, trimmed and cut
 * at 1024 bytes on a character boundary (client-go keeps the text; rest.h). */
static void check_message(const char *body, size_t len, const json_t *st)
{
    json_t *j = json_loadb(body, len, 0, NULL);
    const char *kind = json_string_value(json_object_get(j, "kind"));
    bool is_status = json_is_object(j) && kind && !strcmp(kind, "Status");
    json_decref(j);
    size_t b = 0, e = len;
    while (b < e && isspace((unsigned char)body[b])) b++;
    while (e > b && isspace((unsigned char)body[e - 1])) e--;
    if (is_status || e == b || memchr(body + b, '\0', e - b) || !lop_utf8_valid(body + b, e - b)) return;
    const char *msg = json_string_value(json_object_get(st, "message"));
    size_t n = msg ? strlen(msg) : 0;
    if (!msg || n > 1024 || n > e - b || n < (e - b < 1021 ? e - b : 1021) || memcmp(msg, body + b, n)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *hp, *bp = NULL;
    size_t hn, bn = 0;
    if (!fuzz_next_part(&data, &size, &hp, &hn)) return 0;
    fuzz_next_part(&data, &size, &bp, &bn);
    lop_buf_t head = LOP_BUF_INIT;
    int code = read_head(hp, hn, &head);
    if (code >= 0) {
        if (code != 101 && (code < 200 || code > 999)) abort();
        span_t s = {head.data, head.data ? head.data + head.len : NULL};
        lop_tr_head_each(head.data, head.len, on_header, &s);
    }
    lop_buf_free(&head);
    char *body = bp ? malloc(bn ? bn : 1) : NULL; /* exact size: a read past the body is caught */
    if (bp && !body) abort();
    if (bn) memcpy(body, bp, bn);
    lop_err_t err = {0};
    json_t *st = NULL;
    lop_rc_t rc = lop_rest_status_parse(code > 0 ? code : 500, body, bn, &err, &st);
    const char *kind = json_string_value(json_object_get(st, "kind"));
    if (rc == LOP_OK || !json_is_object(st) || !kind || strcmp(kind, "Status")) abort();
    if (bn) check_message(body, bn, st);
    json_decref(st);
    free(body);
    return 0;
}
