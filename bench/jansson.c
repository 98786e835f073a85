/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jansson.c — lopbench-jansson: MB/s of the project's C JSON library (jansson: json_loadb and
 * json_dumpb, compact) on the json-micro documents, the floor under the host's metadata parse.
 *
 *   lopbench-jansson FIXTURES_DIR SECONDS [LIST_ITEMS]
 * Documents: a Pod, a ConfigMap, and a list of Pods (1,000 by default), built from the fixture templates the
 * same way bench/json_micro.lua builds them. Output: one key=value line (<doc>_decode=MB/s ...).
 */
#include "bench_util.h"

#include <jansson.h>

static char *fixture(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *t = bu_fixture(path);
    if (!t) exit(1);
    return t;
}

static void measure(const char *name, const char *doc, double secs)
{
    size_t len = strlen(doc);
    long iters = 0;
    double t0 = bu_now(), t;
    json_t *j = NULL;
    do {
        for (int k = 0; k < 8; k++, iters++) {
            json_decref(j);
            j = json_loadb(doc, len, 0, NULL);
        }
        t = bu_now() - t0;
    } while (t < secs);
    if (!j) {
        fprintf(stderr, "jansson: %s does not parse\n", name);
        exit(1);
    }
    printf("%s_decode=%.1f ", name, (double)len * iters / t / 1e6);
    iters = 0;
    t0 = bu_now();
    size_t out = 0;
    do {
        for (int k = 0; k < 8; k++, iters++) {
            char *s = json_dumps(j, JSON_COMPACT);
            out = strlen(s);
            free(s);
        }
        t = bu_now() - t0;
    } while (t < secs);
    printf("%s_encode=%.1f ", name, (double)out * iters / t / 1e6);
    json_decref(j);
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: lopbench-jansson FIXTURES_DIR SECONDS [LIST_ITEMS]\n");
        return 2;
    }
    double secs = atof(argv[2]);
    int nitems = argc == 4 ? atoi(argv[3]) : 1000;
    char *pod = fixture(argv[1], "pod.json"), *cm = fixture(argv[1], "configmap.json");
    bu_buf_t list = {0};
    const char *head =
        "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[";
    bu_buf_add(&list, head, strlen(head));
    for (int i = 0; i < nitems; i++) {
        if (i) bu_buf_add(&list, ",", 1);
        bu_buf_add(&list, pod, strlen(pod));
    }
    bu_buf_add(&list, "]}", 2);
    measure("pod", pod, secs);
    measure("configmap", cm, secs);
    measure("list", list.p, secs);
    printf("\n");
    free(pod);
    free(cm);
    free(list.p);
    return 0;
}
