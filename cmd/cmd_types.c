/* SPDX-License-Identifier: Apache-2.0 */
/* `luaop types`: LuaLS `---@meta` annotations from CRDs' openAPIV3Schemas (cmd/crdtypes.h), written
 * to a directory (--out) or stdout; --check compares instead of writing (the staleness check of
 * committed types, as tools/luals_types.lua --check does for the library's stubs). */
#include "cmd/cli.h"
#include "cmd/crdtypes.h"
#include "host/codec/yaml.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: luaop types --crd FILE [--crd FILE...] [--out DIR] [--check] [--spdx ID]\n"
               "LuaLS type annotations (---@meta) for every version of the CustomResourceDefinitions in the\n"
               "files (each may hold several YAML documents): DIR/<kind>_<version>.lua and DIR/objectmeta.lua.\n"
               "List DIR in .luarc.json's workspace.library so editors complete obj.spec.<field>.\n\n"
               "  --crd FILE   a YAML or JSON file with CRDs (repeatable; other documents are ignored)\n"
               "  --out DIR    write the files there (created if missing); default: all of them on stdout\n"
               "  --check      write nothing: exit 1 naming each file in DIR that differs (needs --out)\n"
               "  --spdx ID    add `-- SPDX-License-Identifier: ID` to each file\n");
}

/* The CRDs of path rendered into *files. false after printing why. */
static bool render_file(const char *path, const char *spdx, lop_crdtypes_file_t **files, size_t *n)
{
    json_t *docs = NULL;
    lop_err_t err;
    lop_err_clear(&err);
    if (lop_yaml_load_file(path, &docs, &err) != LOP_OK) {
        fprintf(stderr, "luaop types: --crd %s: %s\n", path, err.message);
        return false;
    }
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t i, found = 0;
    json_t *d;
    bool ok = true;
    json_array_foreach(docs, i, d)
    {
        const char *kind = json_string_value(json_object_get(d, "kind"));
        if (!kind || strcmp(kind, "CustomResourceDefinition") != 0) continue;
        found++;
        if (lop_crdtypes_render(d, base, spdx, files, n, &err) != LOP_OK) {
            fprintf(stderr, "luaop types: %s\n", err.message);
            ok = false;
            break;
        }
    }
    json_decref(docs);
    if (ok && !found) {
        fprintf(stderr, "luaop types: --crd %s: no CustomResourceDefinition in it\n", path);
        ok = false;
    }
    return ok;
}

/* Write (or with check, compare) every file under dir. The exit status. */
static int write_all(const char *dir, bool check, const lop_crdtypes_file_t *files, size_t n)
{
    if (!check && mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "luaop types: --out %s: %s\n", dir, strerror(errno));
        return 1;
    }
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        if (check) {
            size_t len = 0;
            char *have = lop_file_read(path, &len);
            if (!have || len != files[i].text.len || memcmp(have, files[i].text.data, len) != 0) {
                fprintf(stderr, "%s is stale: run luaop types\n", path);
                status = 1;
            }
            free(have);
            continue;
        }
        FILE *fp = fopen(path, "wb");
        if (!fp || fwrite(files[i].text.data, 1, files[i].text.len, fp) != files[i].text.len) {
            fprintf(stderr, "luaop types: %s: %s\n", path, strerror(errno));
            status = 1;
        }
        if (fp && fclose(fp) != 0) status = 1;
    }
    return status;
}

int lop_types_generate(const char *const *crds, size_t ncrds, const char *out, const char *spdx, bool check)
{
    lop_crdtypes_file_t *files = NULL;
    size_t n = 0;
    int status = -1;
    for (size_t i = 0; status < 0 && i < ncrds; i++)
        if (!render_file(crds[i], spdx, &files, &n)) status = 1;
    for (size_t i = 0; status < 0 && i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (!strcmp(files[i].name, files[j].name)) {
                fprintf(stderr, "luaop types: two CRDs make %s (the same kind and version)\n", files[i].name);
                status = 1;
                break;
            }
    if (status < 0) {
        lop_crdtypes_objectmeta(spdx, &files, &n);
        if (out) {
            status = write_all(out, check, files, n);
        } else {
            for (size_t i = 0; i < n; i++) fwrite(files[i].text.data, 1, files[i].text.len, stdout);
            status = 0;
        }
    }
    lop_crdtypes_files_free(files, n);
    return status;
}

int lop_cmd_types(int argc, char **argv)
{
    static const struct option opts[] = {{"crd", required_argument, NULL, 'c'}, {"out", required_argument, NULL, 'o'},
                                         {"check", no_argument, NULL, 'k'},     {"spdx", required_argument, NULL, 's'},
                                         {"help", no_argument, NULL, 'h'},      {NULL, 0, NULL, 0}};
    const char *out = NULL, *spdx = NULL;
    const char **crds = (const char **)lop_xmalloc((size_t)argc * sizeof *crds);
    size_t ncrds = 0;
    bool check = false;
    int c, status = -1;
    optind = 0;
    while (status < 0 && (c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        switch (c) {
        case 'c': crds[ncrds++] = optarg; break;
        case 'o': out = optarg; break;
        case 'k': check = true; break;
        case 's': spdx = optarg; break;
        case 'h':
            usage(stdout);
            status = 0;
            break;
        default:
            usage(stderr);
            status = 2;
            break;
        }
    }
    if (status < 0 && (ncrds == 0 || optind < argc || (check && !out))) {
        usage(stderr);
        status = 2;
    }
    if (status < 0) status = lop_types_generate(crds, ncrds, out, spdx, check);
    free(crds);
    return status;
}
