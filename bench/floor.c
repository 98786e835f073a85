/*
 * floor.c — lopbench-floor URL: the resident memory below which no `luaop run` can go on this
 * machine's Debian libraries (startup-idle's "floor" row). It links the same shared libraries as
 * the luaop executable (bench/run.sh links them with --no-as-needed, so all are loaded even if
 * unused), skips GnuTLS's implicit initialisation as luaop does (host/main.c), initialises libcurl
 * (which initialises OpenSSL) and makes one GET of URL/version over one connection, as luaop does
 * first. Then it prints "ready" and blocks until its standard input closes, so the benchmark reads
 * its /proc/PID/smaps_rollup from outside exactly as it reads luaop's.
 *
 * No Lua VM, no threads, no cache, no HTTP server: everything luaop adds is above this figure.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

int _gnutls_global_init_skip(void);
int _gnutls_global_init_skip(void)
{
    return 1;
}

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: lopbench-floor URL\n");
        return 2;
    }
    char url[1024];
    snprintf(url, sizeof url, "%s/version", argv[1]);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    CURLcode rc = curl_easy_perform(c);
    printf("%s\n", rc == CURLE_OK ? "ready" : curl_easy_strerror(rc));
    fflush(stdout);
    char buf[64];
    while (fgets(buf, sizeof buf, stdin)) {
    }
    curl_easy_cleanup(c);
    curl_global_cleanup();
    return rc == CURLE_OK ? 0 : 1;
}
