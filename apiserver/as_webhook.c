/* SPDX-License-Identifier: Apache-2.0 */
/* as_webhook.c — the HTTPS call of a webhook (k8s.io/apiserver pkg/util/webhook), with libcurl. */
#include "apiserver/as_webhook.h"

#include "host/util/base64.h"
#include "host/util/buf.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AS_WEBHOOK_MAX_RESPONSE (3u * 1024u * 1024u)

static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static size_t collect(char *data, size_t size, size_t nmemb, void *ud)
{
    lop_buf_t *b = ud;
    size_t n = size * nmemb;
    if (b->len + n > AS_WEBHOOK_MAX_RESPONSE) return 0; /* aborts the transfer */
    lop_buf_append(b, data, n);
    return n;
}

/* The URL to POST to and, for a service reference, the CURLOPT_CONNECT_TO entry in connect_to
 * ("" when none). False with cause set when the config names neither or an unmapped service. */
static bool target_of(lop_apiserver_t *srv, const json_t *cc, char *url, size_t un, char *connect_to, size_t cn,
                      char *cause, size_t n)
{
    connect_to[0] = '\0';
    const char *u = json_string_value(json_object_get(cc, "url"));
    if (u) {
        snprintf(url, un, "%s", u);
        return true;
    }
    json_t *svc = json_object_get(cc, "service");
    const char *ns = json_string_value(json_object_get(svc, "namespace"));
    const char *name = json_string_value(json_object_get(svc, "name"));
    const char *path = json_string_value(json_object_get(svc, "path"));
    json_t *pv = json_object_get(svc, "port");
    long port = json_is_integer(pv) ? (long)json_integer_value(pv) : 443;
    if (!ns || !name) {
        snprintf(cause, n, "clientConfig names neither a url nor a service");
        return false;
    }
    snprintf(url, un, "https://%s.%s.svc:%ld%s%s", name, ns, port, path && *path != '/' ? "/" : "", path ? path : "");
    for (size_t i = 0; i < srv->nwh_services; i++) {
        const struct as_svc_map *m = &srv->wh_services[i];
        if (!strcmp(m->ns, ns) && !strcmp(m->name, name)) {
            snprintf(connect_to, cn, "%s.%s.svc:%ld:%s", name, ns, port, m->target);
            return true;
        }
    }
    snprintf(cause, n, "failed to call webhook: Post \"%s\": service %s/%s is not mapped (--webhook-service)", url, ns,
             name);
    return false;
}

/* Trust clientConfig.caBundle (base64 PEM) when present. False with cause on a bad bundle. */
static bool set_ca(CURL *c, const json_t *cc, char **pem, char *cause, size_t n)
{
    const char *ca = json_string_value(json_object_get(cc, "caBundle"));
    *pem = NULL;
    if (!ca || !*ca) return true; /* the system roots */
    size_t len;
    *pem = lop_base64_decode(ca, &len);
    if (!*pem) {
        snprintf(cause, n, "failed to call webhook: clientConfig.caBundle is not valid base64");
        return false;
    }
    struct curl_blob blob = {.data = *pem, .len = len, .flags = CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
    curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
    return true;
}

/* The response body as a JSON object, or NULL with cause. */
static json_t *parse_response(const char *url, long status, const lop_buf_t *b, char *cause, size_t n)
{
    if (status != 200) {
        snprintf(cause, n, "the server responded with status code %ld from Post \"%s\"", status, url);
        return NULL;
    }
    json_error_t je;
    json_t *resp = json_loadb(b->data ? b->data : "", b->len, 0, &je);
    if (!json_is_object(resp)) {
        json_decref(resp);
        snprintf(cause, n, "received invalid webhook response: %s", b->len ? je.text : "empty body");
        return NULL;
    }
    return resp;
}

json_t *as_webhook_post(lop_apiserver_t *srv, const json_t *client_config, long timeout_s, const json_t *body,
                        char *cause, size_t n)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, curl_init_once);
    char url[2048], connect_to[600];
    if (!target_of(srv, client_config, url, sizeof url, connect_to, sizeof connect_to, cause, n)) return NULL;
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(cause, n, "failed to call webhook: cannot create a transfer");
        return NULL;
    }
    char *pem = NULL, *payload = json_dumps(body, JSON_COMPACT);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    struct curl_slist *conn = connect_to[0] ? curl_slist_append(NULL, connect_to) : NULL;
    lop_buf_t resp = LOP_BUF_INIT;
    json_t *out = NULL;
    if (set_ca(c, client_config, &pem, cause, n)) {
        char ebuf[CURL_ERROR_SIZE] = "";
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
        curl_easy_setopt(c, CURLOPT_PROXY, "");
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_s * 1000L);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
        if (conn) curl_easy_setopt(c, CURLOPT_CONNECT_TO, conn);
        CURLcode rc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (rc == CURLE_OPERATION_TIMEDOUT) /* Go's wording for the deadline (the curl text in brackets) */
            snprintf(cause, n, "failed to call webhook: Post \"%s\": context deadline exceeded (%s)", url, ebuf);
        else if (rc != CURLE_OK)
            snprintf(cause, n, "failed to call webhook: Post \"%s\": %s", url, ebuf[0] ? ebuf : curl_easy_strerror(rc));
        else
            out = parse_response(url, status, &resp, cause, n);
    }
    lop_buf_free(&resp);
    curl_slist_free_all(conn);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    free(payload);
    free(pem);
    return out;
}
