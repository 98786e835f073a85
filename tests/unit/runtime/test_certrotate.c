/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/runtime/webhook/certrotate (the rotation rules of self-managed webhook
 * certificates) and the caBundle injection of certrotator: each rule as a table case; a life
 * cycle on a fake clock (no sleeping) in which every change keeps the serving certificate trusted
 * by the bundle clients already had; the injection touches only what differs. */
#include "host/codec/certgen.h"
#include "host/runtime/webhook/certrotate.h"
#include "host/runtime/webhook/certrotator.h"
#include "host/util/clock.h"
#include "t.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOW 1000000

/* A healthy state at NOW: CA made 100 s ago for 10000 s, serving made 10 s ago for 1000 s. */
static lop_certrotate_state_t healthy(void)
{
    return (lop_certrotate_state_t){.ca_ok = true,
                                    .ca_made = NOW - 100,
                                    .ca_expires = NOW + 9900,
                                    .tls_ok = true,
                                    .tls_made = NOW - 10,
                                    .tls_expires = NOW + 990,
                                    .tls_by_current = true,
                                    .tls_issuer_expires = NOW + 9900};
}

static void test_rules(void)
{
    int64_t next;
    lop_certrotate_state_t st = healthy();
    T_EQ_INT(lop_certrotate_decide(&st, NOW, &next), LOP_CERTROTATE_NONE);
    T_EQ_INT(next, NOW - 10 + 800); /* fresh: the next check is the serving renewal at 4/5 */

    st = healthy();
    st.ca_ok = false;
    T_EQ_INT(lop_certrotate_decide(&st, NOW, &next), LOP_CERTROTATE_CREATE);
    st = healthy();
    st.ca_expires = NOW;
    T_EQ_INT(lop_certrotate_decide(&st, NOW, &next), LOP_CERTROTATE_CREATE);

    /* the CA at 4/5 of its life: 10000 s lifetime made at NOW-100 -> renew at NOW+7900 */
    st = healthy();
    st.tls_made = NOW + 7800, st.tls_expires = NOW + 8800; /* keep the serving rule quiet */
    T_EQ_INT(lop_certrotate_decide(&st, NOW + 7899, &next), LOP_CERTROTATE_NONE);
    T_EQ_INT(next, NOW + 7900);
    T_EQ_INT(lop_certrotate_decide(&st, NOW + 7900, &next), LOP_CERTROTATE_ROTATE_CA);

    st = healthy();
    st.tls_ok = false; /* missing, broken, or for other names */
    T_EQ_INT(lop_certrotate_decide(&st, NOW, &next), LOP_CERTROTATE_ISSUE_SERVING);
    st = healthy();
    st.tls_expires = NOW;
    T_EQ_INT(lop_certrotate_decide(&st, NOW, &next), LOP_CERTROTATE_ISSUE_SERVING);
    st = healthy();
    st.tls_issuer_expires = 0; /* signed by no CA of the bundle */
    st.tls_by_current = false;
    T_EQ_INT(lop_certrotate_decide(&st, NOW, &next), LOP_CERTROTATE_ISSUE_SERVING);

    /* signed by the previous CA: waits out the overlap (min(1 h, 10000/10) = 1000 s) */
    T_EQ_INT(lop_certrotate_overlap_s(10000), 1000);
    T_EQ_INT(lop_certrotate_overlap_s(10LL * 365 * 86400), LOP_CERTROTATE_OVERLAP_MAX_S);
    st = healthy();
    st.tls_by_current = false;
    st.tls_issuer_expires = NOW + 5000;
    st.old_ca_expires_min = NOW + 5000;
    T_EQ_INT(lop_certrotate_decide(&st, NOW, &next), LOP_CERTROTATE_NONE);
    T_EQ_INT(next, NOW - 100 + 1000);
    /* ... even past its own renewal point (only the new CA could sign it) */
    T_EQ_INT(lop_certrotate_decide(&st, NOW + 850, &next), LOP_CERTROTATE_NONE);
    T_EQ_INT(next, NOW + 900);
    T_EQ_INT(lop_certrotate_decide(&st, NOW + 900, &next), LOP_CERTROTATE_ISSUE_SERVING);
    /* ... but not past its expiry */
    st.tls_expires = NOW + 500;
    T_EQ_INT(lop_certrotate_decide(&st, NOW + 400, &next), LOP_CERTROTATE_NONE);
    T_EQ_INT(next, NOW + 500);
    T_EQ_INT(lop_certrotate_decide(&st, NOW + 500, &next), LOP_CERTROTATE_ISSUE_SERVING);

    /* the serving certificate at 4/5 of its life: made NOW-10 for 1000 s -> NOW+790 */
    st = healthy();
    T_EQ_INT(lop_certrotate_decide(&st, NOW + 789, &next), LOP_CERTROTATE_NONE);
    T_EQ_INT(lop_certrotate_decide(&st, NOW + 790, &next), LOP_CERTROTATE_ISSUE_SERVING);

    /* an older CA of the bundle expires: pruned then, not before */
    st = healthy();
    st.old_ca_expires_min = NOW + 300;
    T_EQ_INT(lop_certrotate_decide(&st, NOW, &next), LOP_CERTROTATE_NONE);
    T_EQ_INT(next, NOW + 300);
    T_EQ_INT(lop_certrotate_decide(&st, NOW + 300, &next), LOP_CERTROTATE_PRUNE);
}

static size_t bundle_count(const char *bundle)
{
    size_t n = 0, len;
    const char *pos = bundle;
    while (lop_pem_next_cert(&pos, &len)) n++;
    return n;
}

/* Whether cert is signed by a CA of bundle that is still valid at now. */
static bool trusted_by(const char *bundle, const char *cert, int64_t now)
{
    const char *pos = bundle, *pem;
    size_t len;
    bool ok = false;
    while (!ok && (pem = lop_pem_next_cert(&pos, &len)) != NULL) {
        char *one = strndup(pem, len);
        lop_cert_info_t ci;
        ok = lop_cert_info(one, &ci, NULL) == LOP_OK && ci.not_after > now && lop_cert_signed_by(cert, one);
        free(one);
    }
    return ok;
}

static const lop_certrotate_config_t CFG = {
    .sans = "DNS:svc.ns.svc,DNS:svc.ns.svc.cluster.local", .ca_validity_s = 1000, .cert_validity_s = 600};

/* Step a fake clock through several CA generations: each change is the one the rules call for,
 * and no client breaks: the serving certificate is always trusted by the bundle clients held
 * before the change (except the first creation) and by the bundle after it. */
static void test_life_cycle_on_a_fake_clock(void)
{
    lop_fake_clock_t fc;
    lop_fake_clock_init(&fc, 0);
    lop_cert_secret_t s = {0};
    lop_err_t err;
    bool changed = false;
    int64_t next = 0;
    char what[128];
    int64_t t0 = lop_clock_wall(&fc.base) / LOP_NS_PER_S;
    T_EQ_INT(lop_certrotate_apply(&CFG, &s, t0, &changed, &next, what, sizeof what, &err), LOP_OK);
    T_CHECK(changed);
    T_EQ_STR(what, "create");
    T_CHECK(s.ca_crt && s.ca_key && s.tls_crt && s.tls_key && bundle_count(s.ca_crt) == 1);
    T_EQ_INT(next, t0 + 480); /* the serving certificate's 4/5 */
    T_CHECK(trusted_by(s.ca_crt, s.tls_crt, t0));

    int rotations = 0, issues = 0, prunes = 0, max_bundle = 1;
    for (int i = 0; i < 300; i++) {
        lop_fake_clock_step(&fc, 10 * LOP_NS_PER_S);
        int64_t now = lop_clock_wall(&fc.base) / LOP_NS_PER_S;
        char *old_bundle = strdup(s.ca_crt), *old_tls = strdup(s.tls_crt);
        T_EQ_INT(lop_certrotate_apply(&CFG, &s, now, &changed, &next, what, sizeof what, &err), LOP_OK);
        T_CHECK(next > now);
        T_CHECK(trusted_by(s.ca_crt, s.tls_crt, now));
        if (strcmp(old_tls, s.tls_crt) != 0) T_CHECK(trusted_by(old_bundle, s.tls_crt, now));
        if (changed) {
            rotations += strstr(what, "rotate-ca") != NULL;
            issues += strstr(what, "issue-serving") != NULL;
            prunes += strstr(what, "prune") != NULL;
            T_CHECK(strstr(what, "create") == NULL);
        }
        int n = (int)bundle_count(s.ca_crt);
        if (n > max_bundle) max_bundle = n;
        free(old_bundle);
        free(old_tls);
    }
    /* 3000 s: CAs made at 0, 800, 1600, 2400 (rotated at 4/5 of 1000 s) */
    T_EQ_INT(rotations, 3);
    T_CHECK(issues >= 4);
    T_EQ_INT(prunes, 3);
    T_EQ_INT(max_bundle, 2);
    lop_cert_secret_free(&s);
}

/* A Secret with the serving certificate for other names, or a key that is not its own, gets a
 * new one from the same CA; an unchanged Secret is left alone. */
static void test_repairs(void)
{
    lop_cert_secret_t s = {0};
    lop_err_t err;
    bool changed;
    int64_t next;
    char what[64];
    T_EQ_INT(lop_certrotate_apply(&CFG, &s, NOW, &changed, &next, what, sizeof what, &err), LOP_OK);
    char *ca = strdup(s.ca_crt);
    T_EQ_INT(lop_certrotate_apply(&CFG, &s, NOW + 1, &changed, &next, what, sizeof what, &err), LOP_OK);
    T_CHECK(!changed);
    lop_certrotate_config_t other = CFG;
    other.sans = "DNS:renamed.ns.svc";
    T_EQ_INT(lop_certrotate_apply(&other, &s, NOW + 2, &changed, &next, what, sizeof what, &err), LOP_OK);
    T_CHECK(changed);
    T_EQ_STR(what, "issue-serving");
    T_EQ_STR(s.ca_crt, ca);
    lop_cert_info_t ci;
    T_EQ_INT(lop_cert_info(s.tls_crt, &ci, &err), LOP_OK);
    T_EQ_STR(ci.sans, "DNS:renamed.ns.svc");
    free(s.tls_key);
    s.tls_key = strdup(s.ca_key);
    T_EQ_INT(lop_certrotate_apply(&other, &s, NOW + 3, &changed, &next, what, sizeof what, &err), LOP_OK);
    T_EQ_STR(what, "issue-serving");
    T_CHECK(lop_cert_key_matches(s.tls_crt, s.tls_key));
    free(s.ca_key);
    s.ca_key = strdup("not a key");
    T_EQ_INT(lop_certrotate_apply(&other, &s, NOW + 4, &changed, &next, what, sizeof what, &err), LOP_OK);
    T_EQ_STR(what, "create");
    T_CHECK(strcmp(s.ca_crt, ca) != 0);
    free(ca);
    lop_cert_secret_free(&s);
}

static void test_injection(void)
{
    json_t *cfg = json_loads("{\"kind\":\"ValidatingWebhookConfiguration\",\"webhooks\":["
                             "{\"name\":\"a\",\"clientConfig\":{\"service\":{\"name\":\"s\"}}},"
                             "{\"name\":\"b\",\"clientConfig\":{\"caBundle\":\"T0xE\"}}]}",
                             0, NULL);
    T_CHECK(lop_cainject_webhook_config(cfg, "TkVX"));
    json_t *whs = json_object_get(cfg, "webhooks");
    for (size_t i = 0; i < 2; i++)
        T_EQ_STR(
            json_string_value(json_object_get(json_object_get(json_array_get(whs, i), "clientConfig"), "caBundle")),
            "TkVX");
    T_EQ_STR(json_string_value(json_object_get(
                 json_object_get(json_object_get(json_array_get(whs, 0), "clientConfig"), "service"), "name")),
             "s");
    T_CHECK(!lop_cainject_webhook_config(cfg, "TkVX")); /* the same: nothing to write */
    json_decref(cfg);

    json_t *crd = json_loads("{\"spec\":{\"conversion\":{\"strategy\":\"Webhook\",\"webhook\":{"
                             "\"conversionReviewVersions\":[\"v1\"],\"clientConfig\":{\"url\":\"https://x\"}}}}}",
                             0, NULL);
    T_CHECK(lop_cainject_crd(crd, "TkVX"));
    T_CHECK(!lop_cainject_crd(crd, "TkVX"));
    json_t *cc = json_object_get(
        json_object_get(json_object_get(json_object_get(crd, "spec"), "conversion"), "webhook"), "clientConfig");
    T_EQ_STR(json_string_value(json_object_get(cc, "caBundle")), "TkVX");
    T_EQ_STR(json_string_value(json_object_get(cc, "url")), "https://x");
    json_decref(crd);
    json_t *none = json_loads("{\"spec\":{\"conversion\":{\"strategy\":\"None\"}}}", 0, NULL);
    T_CHECK(!lop_cainject_crd(none, "TkVX"));
    T_CHECK(!json_object_get(json_object_get(json_object_get(none, "spec"), "conversion"), "webhook"));
    json_decref(none);

    /* the Secret's base64 data back to PEM; absent and empty keys are NULL */
    json_t *sec = json_loads("{\"data\":{\"ca.crt\":\"Q0E=\",\"tls.crt\":\"\"}}", 0, NULL);
    lop_cert_secret_t s;
    lop_cert_secret_from_json(sec, &s);
    T_EQ_STR(s.ca_crt, "CA");
    T_CHECK(!s.ca_key && !s.tls_crt && !s.tls_key);
    lop_cert_secret_free(&s);
    json_decref(sec);
}

int main(void)
{
    T_RUN(test_rules);
    T_RUN(test_life_cycle_on_a_fake_clock);
    T_RUN(test_repairs);
    T_RUN(test_injection);
    return T_DONE();
}
