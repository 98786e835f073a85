/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Differential, randomized tests of the one-pass JSON ingest path (deterministic seed):
 *   - lop_jscan_value against a small recursive reference validator written here (the rules of
 *     jsonscan.h: structure, strings with any escaped byte, no raw control bytes, true/false/null,
 *     numbers as a sign or digit then number bytes, nesting up to 10000), on random valid JSON and
 *     on mutations of it; lop_jscan_skip_trusted and lop_jtrack_scan (split anywhere) find the
 *     same end on valid input;
 *   - watch streams split at random points: the documents delivered (unchecked, held for their
 *     newline, or tracked) equal the ones generated, and on mutated streams every split gives the
 *     outcome of an all-tracked reference (the same documents, error and offset);
 *   - list bodies with validation off (items offered unchecked, built with lop_obj_new_prefix, or
 *     refused and tracked): the same items and outcome for every split, equal to the generated;
 *   - lop_obj_new_prefix against lop_obj_new, and lop_obj_key against snprintf.
 * Every buffer handed to the code under test is allocated at its exact length, so a read past it
 * is caught under ASan (cmake -DLUAOP_SANITIZE=address).
 */
#include "host/codec/jsonscan.h"
#include "host/codec/jsonsimd.h"
#include "host/codec/jsontrack.h"
#include "host/kube/cache/listdecoder.h"
#include "host/kube/cache/object.h"
#include "host/kube/cache/watchdecoder.h"
#include "host/util/buf.h"
#include "t.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- deterministic PRNG ---- */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static size_t rn(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

/* how often each path ran (printed, and checked to be non-zero: the test reaches both paths) */
static long g_valid, g_invalid, g_unchecked, g_retried, g_offered, g_refused;

/* ---- the reference validator ---- */

typedef struct ref {
    const char *p;
    size_t n;
} ref_t;

static size_t r_ws(const ref_t *r, size_t i)
{
    while (i < r->n && (r->p[i] == ' ' || r->p[i] == '\t' || r->p[i] == '\n' || r->p[i] == '\r')) i++;
    return i;
}

/* Each returns one past the token, or SIZE_MAX. */
static size_t r_string(const ref_t *r, size_t i)
{
    i++; /* the opening quote */
    while (i < r->n) {
        unsigned char c = (unsigned char)r->p[i];
        if (c == '"') return i + 1;
        if (c < 0x20) return SIZE_MAX;
        i += c == '\\' ? 2 : 1;
    }
    return SIZE_MAX;
}

static bool r_numbyte(char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

static size_t r_value(const ref_t *r, size_t i, int depth)
{
    if (i >= r->n) return SIZE_MAX;
    char c = r->p[i];
    if (c == '"') return r_string(r, i);
    static const char *const words[] = {"true", "false", "null"};
    for (int w = 0; w < 3; w++) {
        size_t l = strlen(words[w]);
        if (c == words[w][0]) return r->n - i >= l && memcmp(r->p + i, words[w], l) == 0 ? i + l : SIZE_MAX;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        for (i++; i < r->n && r_numbyte(r->p[i]); i++)
            ;
        return i;
    }
    if (c != '{' && c != '[') return SIZE_MAX;
    if (depth >= 10000) return SIZE_MAX;
    char close = c == '{' ? '}' : ']';
    i = r_ws(r, i + 1);
    if (i < r->n && r->p[i] == close) return i + 1;
    for (;;) {
        if (close == '}') {
            if (i >= r->n || r->p[i] != '"' || (i = r_string(r, i)) == SIZE_MAX) return SIZE_MAX;
            i = r_ws(r, i);
            if (i >= r->n || r->p[i] != ':') return SIZE_MAX;
            i = r_ws(r, i + 1);
        }
        if ((i = r_value(r, i, depth + 1)) == SIZE_MAX) return SIZE_MAX;
        i = r_ws(r, i);
        if (i >= r->n) return SIZE_MAX;
        if (r->p[i] == close) return i + 1;
        if (r->p[i] != ',') return SIZE_MAX;
        i = r_ws(r, i + 1);
    }
}

/* 0 and the span, or -1: the contract of lop_jscan_value. */
static int ref_value(const char *p, size_t n, size_t i, size_t *s, size_t *e)
{
    ref_t r = {p, n};
    i = r_ws(&r, i);
    *s = i;
    size_t end = r_value(&r, i, 0);
    if (end == SIZE_MAX) return -1;
    *e = end;
    return 0;
}

/* ---- the generator of valid JSON ---- */

static void ws(lop_buf_t *b, bool nl)
{
    static const char spaces[] = " \t\r\n";
    if (rn(4)) return;
    for (size_t k = rn(3) + 1; k; k--) lop_buf_putc(b, spaces[rn(nl ? 4 : 3)]);
}

/* Strings long enough to cross 16-byte blocks, with runs of backslashes before quotes. */
static void gen_string(lop_buf_t *b, size_t maxlen)
{
    lop_buf_putc(b, '"');
    size_t len = rn(maxlen + 1);
    for (size_t k = 0; k < len; k++) {
        switch (rn(12)) {
        case 0: lop_buf_puts(b, "\\\""); break;
        case 1: /* a run of escaped backslashes, sometimes right before the closing quote */
            for (size_t m = rn(4) + 1; m; m--) lop_buf_puts(b, "\\\\");
            break;
        case 2: lop_buf_puts(b, rn(2) ? "\\n" : "\\u00e9"); break;
        case 3: lop_buf_puts(b, "\xc3\xa9"); break; /* UTF-8 */
        case 4: lop_buf_putc(b, "{}[],:"[rn(6)]); break;
        case 5: lop_buf_puts(b, "\\/"); break;
        default: lop_buf_putc(b, (char)('a' + rn(26))); break;
        }
    }
    lop_buf_putc(b, '"');
}

static void gen_value(lop_buf_t *b, int depth, bool nl);

static void gen_object_members(lop_buf_t *b, int depth, bool nl, size_t nmem)
{
    for (size_t k = 0; k < nmem; k++) {
        if (k) {
            lop_buf_putc(b, ',');
            ws(b, nl);
        }
        gen_string(b, 12);
        ws(b, nl);
        lop_buf_putc(b, ':');
        ws(b, nl);
        gen_value(b, depth + 1, nl);
        ws(b, nl);
    }
}

static void gen_value(lop_buf_t *b, int depth, bool nl)
{
    size_t kind = depth > 4 ? rn(5) : rn(8);
    static const char *const lits[] = {"true", "false", "null", "0", "-1", "12.5e+3", "1E-7", "123456789012345678"};
    switch (kind) {
    case 0:
    case 1: gen_string(b, 40); break;
    case 2:
    case 3: lop_buf_puts(b, lits[rn(8)]); break;
    case 4: lop_buf_puts(b, rn(2) ? "{}" : "[]"); break;
    case 5:
    case 6:
        lop_buf_putc(b, '{');
        ws(b, nl);
        gen_object_members(b, depth, nl, rn(5));
        lop_buf_putc(b, '}');
        break;
    default: {
        lop_buf_putc(b, '[');
        ws(b, nl);
        size_t n = rn(5);
        for (size_t k = 0; k < n; k++) {
            if (k) {
                lop_buf_putc(b, ',');
                ws(b, nl);
            }
            gen_value(b, depth + 1, nl);
            ws(b, nl);
        }
        lop_buf_putc(b, ']');
        break;
    }
    }
}

/* A random edit: replace, delete or insert a byte (from an alphabet that matters), or truncate. */
static void mutate(lop_buf_t *b)
{
    static const char alpha[] = "{}[]\",:\\ \n\x01tfn0-e.a";
    if (!b->len) return;
    size_t at = rn(b->len);
    switch (rn(4)) {
    case 0: b->data[at] = alpha[rn(sizeof alpha - 1)]; break;
    case 1:
        memmove(b->data + at, b->data + at + 1, b->len - at - 1);
        b->len--;
        break;
    case 2:
        lop_buf_putc(b, ' ');
        memmove(b->data + at + 1, b->data + at, b->len - at - 1);
        b->data[at] = alpha[rn(sizeof alpha - 1)];
        break;
    default: b->len = at; break;
    }
}

/* An exact-size heap copy, so that ASan sees any read past n. */
static char *exact(const char *p, size_t n)
{
    char *c = malloc(n ? n : 1);
    memcpy(c, p, n);
    return c;
}

/* ---- lop_jscan_value against the reference ---- */

static void check_one(const char *p0, size_t n, long iter)
{
    char *p = exact(p0, n);
    size_t s1 = 0, e1 = 0, s2 = 0, e2 = 0;
    int r1 = lop_jscan_value(p, n, 0, &s1, &e1), r2 = ref_value(p, n, 0, &s2, &e2);
    *(r2 == 0 ? &g_valid : &g_invalid) += 1;
    if (r1 != r2 || (r1 == 0 && (s1 != s2 || e1 != e2))) {
        fprintf(stderr, "iteration %ld: jscan %d [%zu,%zu) reference %d [%zu,%zu) on %.*s\n", iter, r1, s1, e1, r2, s2,
                e2, (int)n, p);
        T_CHECK(0);
    }
    if (r2 == 0 && lop_jscan_ws(p, n, e2) == n) { /* a top-level literal's end is its delimiter */
        T_EQ_INT(lop_jscan_skip_trusted(p, n, 0), e2);
        char c = p[s2];
        if (c == '{' || c == '[' || c == '"') {
            /* the tracker, over random pieces of the value */
            lop_jtrack_t *t = malloc(sizeof *t);
            lop_jtrack_begin(t, c);
            size_t at = s2 + 1, end = 0;
            bool done = false;
            while (!done && at < n) {
                size_t piece = 1 + rn(24), lim = at + piece < n ? at + piece : n;
                char *q = exact(p + at, lim - at);
                size_t i = 0;
                const char *bad = lop_jtrack_scan(t, q, lim - at, &i, &done);
                T_CHECK(bad == NULL);
                free(q);
                if (bad) break;
                end = at + i;
                at = lim;
            }
            T_CHECK(done);
            T_EQ_INT(end, e2);
            free(t);
        }
    }
    free(p);
}

static void test_jscan_value_matches_the_reference(void)
{
    lop_buf_t b = LOP_BUF_INIT;
    for (long iter = 0; iter < 40000; iter++) {
        lop_buf_reset(&b);
        ws(&b, true);
        gen_value(&b, 0, true);
        if (rn(3) == 0) ws(&b, true);
        size_t s, e;
        T_EQ_INT(ref_value(b.data, b.len, 0, &s, &e), 0); /* the generator makes valid JSON */
        check_one(b.data, b.len, iter);
        for (size_t m = rn(3) + 1; m; m--) mutate(&b);
        check_one(b.data, b.len, iter);
        /* every prefix of a short document */
        if (iter % 50 == 0 && b.len < 200)
            for (size_t k = 0; k <= b.len; k++) check_one(b.data, k, iter);
    }
    lop_buf_free(&b);
}

static void test_jscan_escapes_at_every_16_byte_offset(void)
{
    /* "xxx...\\\\...\"" with the backslash run at every offset and of every length to 6 */
    char s[96];
    for (size_t pad = 0; pad < 40; pad++)
        for (size_t run = 0; run <= 6; run++)
            for (int q = 0; q < 2; q++) {
                size_t n = 0;
                s[n++] = '[';
                s[n++] = '"';
                for (size_t k = 0; k < pad; k++) s[n++] = 'a';
                for (size_t k = 0; k < run; k++) s[n++] = '\\';
                s[n++] = '"';
                if (q)
                    for (size_t k = 0; k < 20; k++) s[n++] = 'b';
                s[n++] = '"';
                s[n++] = ']';
                check_one(s, n, (long)(pad * 100 + run * 2 + (size_t)q));
                check_one(s, n - 1, -1);
            }
    /* deep nesting: 10000 levels pass, 10001 fail, as the reference (and the tracker) say */
    for (int depth = 9999; depth <= 10001; depth++) {
        char *p = malloc((size_t)depth * 2);
        memset(p, '[', (size_t)depth);
        memset(p + depth, ']', (size_t)depth);
        check_one(p, (size_t)depth * 2, depth);
        free(p);
    }
}

/* lop_jsimd_close_end (16 bytes per step) against its definition, byte by byte, from every
 * start in random strings of the bytes that matter. */
static void test_jsimd_close_end_matches_its_definition(void)
{
    static const char alpha[] = "}}],\"\\ {x";
    char p[80];
    for (int iter = 0; iter < 3000; iter++) {
        size_t n = rn(sizeof p + 1);
        for (size_t k = 0; k < n; k++) p[k] = alpha[rn(sizeof alpha - 1)];
        char *c = exact(p, n);
        for (size_t i = 0; i <= n; i++) {
            size_t want = i;
            while (want < n && !(p[want] == '}' && (want + 1 == n || !strchr(",}]\"\\", p[want + 1])))) want++;
            size_t got = lop_jsimd_close_end(c, n, i);
            if (got != want) {
                fprintf(stderr, "close_end(%.*s, %zu, %zu) = %zu, want %zu\n", (int)n, p, n, i, got, want);
                T_CHECK(0);
            }
        }
        free(c);
    }
}

/* ---- watch streams ---- */

#define MAXD 64

typedef struct wsink {
    lop_buf_t got; /* the documents delivered, each followed by '\x1e' */
    int ndocs, stop_after, malformed, unchecked, retried;
} wsink_t;

static bool one_object(const char *doc, size_t len)
{
    size_t s, e;
    return len && doc[0] == '{' && lop_jscan_value(doc, len, 0, &s, &e) == 0 && lop_jscan_ws(doc, len, e) == len;
}

/* As the reflector: an unchecked document that is not exactly one object is refused; a checked
 * one that is not valid is malformed (the stream stops). */
static int wcollect(void *ud, const char *doc0, size_t len, bool checked)
{
    wsink_t *s = ud;
    char *doc = exact(doc0, len);
    bool ok = one_object(doc, len);
    free(doc);
    if (!checked) {
        s->unchecked++;
        if (!ok) {
            s->retried++;
            return LOP_DOC_RETRY;
        }
    } else if (!ok) {
        s->malformed++;
        lop_buf_puts(&s->got, "<malformed>");
        return 1;
    }
    lop_buf_append(&s->got, doc0, len);
    lop_buf_putc(&s->got, '\x1e');
    s->ndocs++;
    return s->stop_after && s->ndocs >= s->stop_after;
}

/* Feed st in random pieces (or all at once / byte by byte); the outcome as a string. */
/* A feeder: the outcome of decoding in[0..n) (limit, stop after k, split mode) as a string. */
typedef void (*feed_fn)(const char *in, size_t n, size_t limit, int stop_after, int mode, lop_buf_t *out);

/* Feed in (limit, stop after k) in split mode ref into o, then in every other mode once and in
 * random pieces (mode 2) twice more into a: every outcome must equal o's. a, o: scratch. */
static void modes_agree(feed_fn feed, const lop_buf_t *in, size_t limit, int stop_after, int ref, int iter,
                        const char *what, lop_buf_t *a, lop_buf_t *o)
{
    static const int modes[] = {0, 1, 2, 2, 2};
    feed(in->data, in->len, limit, stop_after, ref, o);
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (modes[i] == ref && i < 2) continue;
        feed(in->data, in->len, limit, stop_after, modes[i], a);
        if (strcmp(a->data, o->data) != 0) {
            fprintf(stderr, "iteration %d (%s, mode %d vs %d): %.*s\ngot  %s\nwant %s\n", iter, what, modes[i], ref,
                    (int)in->len, in->data, a->data, o->data);
            T_CHECK(0);
        }
    }
}

/* The size limit and the stop: with `limit` the input decodes to exp; with `too_small` (one less
 * than the longest object) every split agrees and fails (rc < 0); stopping after stop_after
 * objects agrees whichever way. a, o: scratch. */
static void limit_and_stop_agree(feed_fn feed, const lop_buf_t *in, size_t limit, size_t too_small, int stop_after,
                                 int ref, int iter, const char *what, const char *exp, lop_buf_t *a, lop_buf_t *o)
{
    char name[64];
    feed(in->data, in->len, limit, 0, 2, a);
    T_EQ_STR(a->data, exp);
    snprintf(name, sizeof name, "%s, limit", what);
    modes_agree(feed, in, too_small, 0, ref, iter, name, a, o);
    T_CHECK(strstr(o->data, "|rc=-") != NULL);
    snprintf(name, sizeof name, "%s, stop", what);
    modes_agree(feed, in, 0, stop_after, ref, iter, name, a, o);
}

/* Mutate *in once or twice; then every split mode must give the outcome of mode ref (an
 * all-tracked reference). */
static void mutated_agree(feed_fn feed, lop_buf_t *in, int ref, int iter, const char *what, lop_buf_t *a, lop_buf_t *o)
{
    for (size_t m = rn(2) + 1; m; m--) mutate(in);
    modes_agree(feed, in, 0, 0, ref, iter, what, a, o);
}

/* The outcome's end: rc, partial, and the cause of an error with its offset (only the cause when
 * the limit was passed: where that is found depends on the pieces). */
static void watch_outcome(lop_buf_t *out, const wsink_t *s, lop_rc_t rc, bool partial, const char *why)
{
    lop_buf_reset(out);
    lop_buf_append(out, s->got.data ? s->got.data : "", s->got.len);
    lop_buf_printf(out, "|rc=%d partial=%d", (int)rc, rc == LOP_OK && partial);
    if (rc == LOP_EINVAL)
        lop_buf_printf(out, " %s", strstr(why, "larger than the limit") ? "larger than the limit" : why);
}

/* The reference: every byte tracked from its document's '{' (the decoder before any document was
 * held for its newline), the stream in one piece. */
static void feed_watch_tracked(const char *st, size_t n, size_t max_doc, int stop_after, lop_buf_t *out)
{
    wsink_t s = {LOP_BUF_INIT, 0, stop_after, 0, 0, 0};
    lop_jtrack_t *t = malloc(sizeof *t);
    lop_rc_t rc = LOP_OK;
    bool partial = false;
    char why[128] = "";
    for (size_t i = 0; i < n && rc == LOP_OK && !partial;) {
        if (st[i] == ' ' || st[i] == '\n' || st[i] == '\r' || st[i] == '\t') {
            i++;
            continue;
        }
        const char *bad = NULL;
        size_t start = i;
        bool done = false;
        if (st[i] != '{') {
            bad = "expected '{' to start a document";
        } else {
            lop_jtrack_begin(t, '{');
            i++;
            bad = lop_jtrack_scan(t, st, n, &i, &done);
            if (!bad && i - start > (max_doc ? max_doc : (size_t)64 << 20)) bad = "document larger than the limit";
        }
        if (bad) {
            snprintf(why, sizeof why, "watch stream: %s at byte %zu", bad, i);
            rc = LOP_EINVAL;
        } else if (!done) {
            partial = true;
        } else if (wcollect(&s, st + start, i - start, true)) {
            rc = LOP_ECLOSED;
        }
    }
    watch_outcome(out, &s, rc, partial, why);
    free(t);
    lop_buf_free(&s.got);
}

/* mode 3: the all-tracked reference */
static void feed_watch(const char *st, size_t n, size_t max_doc, int stop_after, int mode, lop_buf_t *out)
{
    if (mode == 3) {
        feed_watch_tracked(st, n, max_doc, stop_after, out);
        return;
    }
    wsink_t s = {LOP_BUF_INIT, 0, stop_after, 0, 0, 0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(max_doc, wcollect, &s);
    lop_rc_t rc = LOP_OK;
    lop_err_t err;
    lop_err_clear(&err);
    for (size_t at = 0; at < n && rc == LOP_OK;) {
        size_t piece = mode == 0 ? n : mode == 1 ? 1 : 1 + rn(rn(2) ? 8 : 300);
        if (piece > n - at) piece = n - at;
        char *c = exact(st + at, piece);
        rc = lop_watchdecoder_feed(d, c, piece, &err);
        free(c);
        at += piece;
    }
    if (rc == LOP_OK) /* the stream's end: a document held for its newline is decoded now */
        rc = lop_watchdecoder_finish(d, &err);
    watch_outcome(out, &s, rc, lop_watchdecoder_partial(d), err.message);
    g_unchecked += s.unchecked;
    g_retried += s.retried;
    lop_buf_free(&s.got);
    lop_watchdecoder_free(d);
}

/* A valid stream in random pieces (a third of them byte by byte): after each piece, every
 * document whose closing brace has arrived (ends[k], one past it) has been delivered, as when
 * every byte was tracked — none waits for its newline or for the next piece. */
static void delivered_on_time(const char *st, size_t n, const size_t *ends, size_t nd, int iter)
{
    wsink_t s = {LOP_BUF_INIT, 0, 0, 0, 0, 0};
    lop_watchdecoder_t *d = lop_watchdecoder_new(0, wcollect, &s);
    bool bytes = rn(3) == 0;
    for (size_t at = 0; at < n;) {
        size_t piece = bytes ? 1 : 1 + rn(rn(2) ? 8 : 300);
        if (piece > n - at) piece = n - at;
        char *c = exact(st + at, piece);
        T_EQ_INT(lop_watchdecoder_feed(d, c, piece, NULL), LOP_OK);
        free(c);
        at += piece;
        size_t due = 0;
        while (due < nd && ends[due] <= at) due++;
        if ((size_t)s.ndocs != due) {
            fprintf(stderr, "iteration %d: %zu of %zu bytes fed, %d documents delivered, %zu due: %.*s\n", iter, at, n,
                    s.ndocs, due, (int)n, st);
            T_CHECK(0);
            break;
        }
    }
    T_CHECK(!lop_watchdecoder_partial(d));
    lop_buf_free(&s.got);
    lop_watchdecoder_free(d);
}

static void gen_event(lop_buf_t *b, bool nl)
{
    /* event-shaped, sometimes with newlines as whitespace inside (tracked after a refusal) */
    lop_buf_puts(b, "{\"type\":\"ADDED\",");
    ws(b, nl && rn(4) == 0);
    lop_buf_puts(b, "\"object\":{");
    gen_object_members(b, 1, nl && rn(4) == 0, rn(4));
    lop_buf_puts(b, "}}");
}

static void test_watch_streams_split_anywhere(void)
{
    static const char *const seps[] = {"\n", "\r\n", " \n", "", " ", "\n\n", "\t\r\n", " \r\n"};
    lop_buf_t st = LOP_BUF_INIT, want = LOP_BUF_INIT, a = LOP_BUF_INIT, o = LOP_BUF_INIT;
    for (int iter = 0; iter < 3000; iter++) {
        lop_buf_reset(&st);
        lop_buf_reset(&want);
        size_t nd = 1 + rn(6), maxlen = 0, ends[6];
        for (size_t k = 0; k < nd; k++) {
            size_t s0 = st.len;
            gen_event(&st, true);
            size_t dl = st.len - s0;
            ends[k] = st.len;
            maxlen = dl > maxlen ? dl : maxlen;
            lop_buf_append(&want, st.data + s0, dl);
            lop_buf_putc(&want, '\x1e');
            /* "" and " " only between documents (a document on the same line as the next) */
            const char *sep = seps[rn(8)];
            if (k == nd - 1 && !strchr(sep, '\n') && rn(2)) sep = "\n";
            lop_buf_puts(&st, sep);
        }
        lop_buf_puts(&want, "|rc=0 partial=0");
        char *exp = lop_xstrndup(want.data, want.len);
        delivered_on_time(st.data, st.len, ends, nd, iter);
        for (int mode = 0; mode < 5; mode++) {
            feed_watch(st.data, st.len, 0, 0, mode > 2 ? 2 : mode, &a);
            if (strcmp(a.data, exp) != 0) {
                fprintf(stderr, "iteration %d mode %d: stream %.*s\ngot  %s\nwant %s\n", iter, mode, (int)st.len,
                        st.data, a.data, exp);
                T_CHECK(0);
            }
        }
        /* exactly the longest event passes, one less fails at it; stop after k, whichever way */
        limit_and_stop_agree(feed_watch, &st, maxlen, maxlen - 1, 1 + (int)rn(nd), 3, iter, "stream", exp, &a, &o);
        free(exp);
        /* mutated streams: every split agrees with the all-tracked reference, offsets included */
        mutated_agree(feed_watch, &st, 3, iter, "stream", &a, &o);
    }
    lop_buf_free(&st);
    lop_buf_free(&want);
    lop_buf_free(&a);
    lop_buf_free(&o);
}

/* ---- list bodies, validation off ---- */

typedef struct lsink {
    lop_listdecoder_t *d;
    lop_buf_t got;
    int stop_after, n, failed, offered, refused;
} lsink_t;

/* As reflector_list.c on_item: build while validating; refuse an unchecked item that fails. */
static int lcollect(void *ud, const char *item0, size_t len, size_t *end)
{
    lsink_t *s = ud;
    char *item = exact(item0, len);
    lop_obj_t *o = NULL;
    lop_err_t err;
    lop_rc_t rc = end ? lop_obj_new_prefix(item, len, 0, NULL, NULL, end, &o, &err)
                      : lop_obj_new_item(item, len, 0, NULL, NULL, &o, &err);
    if (end) s->offered++;
    if (rc != LOP_OK) {
        free(item);
        if (end) {
            s->refused++;
            return LOP_LIST_RETRY;
        }
        s->failed++;
        lop_buf_puts(&s->got, "<failed>");
        return 1;
    }
    size_t il = end ? *end : len;
    T_CHECK(il <= len);
    /* the entry's JSON is the item's bytes (no managedFields, no defaults here) */
    if (o->json_len != il || memcmp(o->json, item, il) != 0) {
        fprintf(stderr, "built %.*s from %.*s\n", (int)o->json_len, o->json, (int)il, item);
        T_CHECK(0);
    }
    lop_buf_append(&s->got, item, il);
    lop_buf_printf(&s->got, "<%s>\x1e", o->name);
    lop_obj_unref(o);
    free(item);
    s->n++;
    return s->stop_after && s->n >= s->stop_after;
}

static void feed_list(const char *body, size_t n, size_t max_item, int stop_after, int mode, lop_buf_t *out)
{
    lsink_t s = {NULL, LOP_BUF_INIT, stop_after, 0, 0, 0, 0};
    s.d = lop_listdecoder_new(max_item, lcollect, &s);
    lop_listdecoder_set_validate(s.d, false);
    lop_rc_t rc = LOP_OK;
    lop_err_t err;
    for (size_t at = 0; at < n && rc == LOP_OK;) {
        size_t piece = mode == 0 ? n : mode == 1 ? 1 : 1 + rn(rn(2) ? 8 : 400);
        if (piece > n - at) piece = n - at;
        char *c = exact(body + at, piece);
        rc = lop_listdecoder_feed(s.d, c, piece, &err);
        free(c);
        at += piece;
    }
    if (rc == LOP_OK) rc = lop_listdecoder_finish(s.d, &err);
    lop_buf_reset(out);
    lop_buf_append(out, s.got.data ? s.got.data : "", s.got.len);
    lop_buf_printf(out, "|rc=%d items=%zu rv=%s", (int)rc, lop_listdecoder_items(s.d),
                   rc == LOP_OK ? lop_listdecoder_resource_version(s.d) : "");
    g_offered += s.offered;
    g_refused += s.refused;
    lop_buf_free(&s.got);
    lop_listdecoder_free(s.d);
}

static void gen_item(lop_buf_t *b, int k)
{
    lop_buf_putc(b, '{');
    ws(b, true);
    if (rn(2)) {
        size_t nm = 1 + rn(3);
        gen_object_members(b, 1, true, nm);
        lop_buf_putc(b, ',');
    }
    lop_buf_printf(b, "\"metadata\":{\"name\":\"n%d\"", k);
    if (rn(2)) {
        lop_buf_puts(b, ",\"labels\":{\"a\":");
        gen_string(b, 30);
        lop_buf_puts(b, "},\"x\":");
        gen_value(b, 2, true);
    }
    lop_buf_putc(b, '}');
    if (rn(2)) {
        lop_buf_putc(b, ',');
        gen_object_members(b, 1, true, 1 + rn(3));
    }
    lop_buf_putc(b, '}');
}

static void test_list_bodies_split_anywhere(void)
{
    lop_buf_t body = LOP_BUF_INIT, want = LOP_BUF_INIT, a = LOP_BUF_INIT, o = LOP_BUF_INIT;
    for (int iter = 0; iter < 2000; iter++) {
        lop_buf_reset(&body);
        lop_buf_reset(&want);
        lop_buf_puts(
            &body,
            "{\"kind\":\"ThingList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[");
        size_t ni = rn(7), maxlen = 0;
        for (size_t k = 0; k < ni; k++) {
            if (k) {
                ws(&body, true);
                lop_buf_putc(&body, ',');
            }
            ws(&body, true);
            size_t s0 = body.len;
            gen_item(&body, (int)k);
            size_t il = body.len - s0;
            maxlen = il > maxlen ? il : maxlen;
            lop_buf_append(&want, body.data + s0, il);
            lop_buf_printf(&want, "<n%zu>\x1e", k);
        }
        ws(&body, true);
        lop_buf_puts(&body, "]}");
        lop_buf_printf(&want, "|rc=0 items=%zu rv=9", ni);
        char *exp = lop_xstrndup(want.data, want.len);
        for (int mode = 0; mode < 5; mode++) {
            feed_list(body.data, body.len, 0, 0, mode > 2 ? 2 : mode, &a);
            if (strcmp(a.data, exp) != 0) {
                fprintf(stderr, "iteration %d mode %d: body %.*s\ngot  %s\nwant %s\n", iter, mode, (int)body.len,
                        body.data, a.data, exp);
                T_CHECK(0);
            }
        }
        if (ni) {
            /* the item limit: the longest item passes (with at least 64, for the list's own short
             * members), one less than it fails at it; stop after k, whichever way */
            limit_and_stop_agree(feed_list, &body, maxlen > 64 ? maxlen : 64, maxlen - 1, 1 + (int)rn(ni), 1, iter,
                                 "body", exp, &a, &o);
        }
        free(exp);
        mutated_agree(feed_list, &body, 1, iter, "body", &a, &o); /* byte by byte: all tracked */
    }
    lop_buf_free(&body);
    lop_buf_free(&want);
    lop_buf_free(&a);
    lop_buf_free(&o);
}

/* ---- objects ---- */

static void same_obj(const lop_obj_t *x, const lop_obj_t *y)
{
    T_CHECK(x->json_len == y->json_len && memcmp(x->json, y->json, x->json_len) == 0);
    T_EQ_STR(x->name, y->name);
    T_EQ_STR(x->namespace_, y->namespace_);
    T_EQ_STR(x->rv, y->rv);
    size_t xl, yl, xa, ya;
    const lop_kv_t *xk = lop_obj_labels(x, &xl), *yk = lop_obj_labels(y, &yl);
    T_EQ_INT(xl, yl);
    for (size_t i = 0; i < xl && i < yl; i++) {
        T_EQ_STR(xk[i].key, yk[i].key);
        T_EQ_STR(xk[i].value, yk[i].value);
    }
    lop_obj_annotations(x, &xa);
    lop_obj_annotations(y, &ya);
    T_EQ_INT(xa, ya);
}

static void test_prefix_build_equals_whole_build(void)
{
    lop_buf_t b = LOP_BUF_INIT;
    for (int iter = 0; iter < 5000; iter++) {
        lop_buf_reset(&b);
        gen_item(&b, iter);
        size_t n = b.len;
        if (rn(3) == 0) { /* managedFields somewhere in metadata */
            static const char mf[] = "\"managedFields\":[{\"manager\":\"m\"}]";
            char *m = strstr(b.data, "\"metadata\":{") + 12;
            size_t off = (size_t)(m - b.data);
            lop_buf_t c = LOP_BUF_INIT;
            lop_buf_append(&c, b.data, off);
            lop_buf_puts(&c, mf);
            lop_buf_putc(&c, ',');
            lop_buf_append(&c, b.data + off, n - off);
            lop_buf_reset(&b);
            lop_buf_append(&b, c.data, c.len);
            lop_buf_free(&c);
            n = b.len;
        }
        lop_buf_puts(&b, rn(2) ? ",{\"next\":1}]" : " garbage");
        char *whole = exact(b.data, n), *pre = exact(b.data, b.len);
        lop_obj_t *x = NULL, *y = NULL, *z = NULL;
        lop_err_t err;
        size_t end = 0;
        T_EQ_INT(lop_obj_new(whole, n, 0, &x, &err), LOP_OK);
        T_EQ_INT(lop_obj_new_prefix(pre, b.len, 0, NULL, NULL, &end, &y, &err), LOP_OK);
        T_EQ_INT(lop_obj_new(whole, n, LOP_OBJ_TRUSTED, &z, &err), LOP_OK);
        T_EQ_INT(end, n);
        if (x && y && z) {
            same_obj(x, y);
            same_obj(x, z);
            T_CHECK(strstr(x->json, "managedFields") == NULL);
        }
        lop_obj_unref(x);
        lop_obj_unref(y);
        lop_obj_unref(z);
        /* cut anywhere before its end: refused, never read past */
        size_t cut = rn(n);
        char *c = exact(b.data, cut);
        y = NULL;
        T_CHECK(lop_obj_new_prefix(c, cut, 0, NULL, NULL, &end, &y, &err) != LOP_OK);
        T_CHECK(y == NULL);
        free(c);
        free(whole);
        free(pre);
    }
    lop_buf_free(&b);
}

static void test_obj_key_matches_snprintf(void)
{
    static const char *const nss[] = {"", "d", "default", "kube-system"};
    static const char *const names[] = {"", "a", "web-0", "a-very-long-object-name-that-goes-on"};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            char json[256];
            snprintf(json, sizeof json, "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\"}}", nss[i], names[j]);
            lop_obj_t *o = NULL;
            T_EQ_INT(lop_obj_new(json, strlen(json), 0, &o, NULL), LOP_OK);
            if (!o) continue;
            char want[128];
            int wl = nss[i][0] ? snprintf(want, sizeof want, "%s/%s", nss[i], names[j])
                               : snprintf(want, sizeof want, "%s", names[j]);
            for (size_t len = 0; len <= (size_t)wl + 2; len++) {
                char got[128], ref[128];
                memset(got, 'X', sizeof got);
                memset(ref, 'X', sizeof ref);
                int gl = lop_obj_key(o, len ? got : NULL, len);
                int rl = nss[i][0] ? snprintf(len ? ref : NULL, len, "%s/%s", nss[i], names[j])
                                   : snprintf(len ? ref : NULL, len, "%s", names[j]);
                T_EQ_INT(gl, rl);
                T_CHECK(memcmp(got, ref, sizeof got) == 0); /* same bytes, nothing past len */
            }
            lop_obj_unref(o);
        }
}

static void test_both_paths_ran(void)
{
    printf("documents: %ld valid, %ld invalid; watch: %ld unchecked, %ld refused; list: %ld offered, %ld refused\n",
           g_valid, g_invalid, g_unchecked, g_retried, g_offered, g_refused);
    T_CHECK(g_valid && g_invalid && g_unchecked > g_retried && g_retried && g_offered > g_refused && g_refused);
}

int main(void)
{
    /* a fixed seed; JSON_DIFF_SEED explores others by hand */
    const char *seed = getenv("JSON_DIFF_SEED");
    if (seed && strtoull(seed, NULL, 0)) g_rng = strtoull(seed, NULL, 0);
    T_RUN(test_jscan_value_matches_the_reference);
    T_RUN(test_jscan_escapes_at_every_16_byte_offset);
    T_RUN(test_jsimd_close_end_matches_its_definition);
    T_RUN(test_watch_streams_split_anywhere);
    T_RUN(test_list_bodies_split_anywhere);
    T_RUN(test_prefix_build_equals_whole_build);
    T_RUN(test_obj_key_matches_snprintf);
    T_RUN(test_both_paths_ran);
    return T_DONE();
}
