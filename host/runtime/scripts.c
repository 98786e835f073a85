/* SPDX-License-Identifier: Apache-2.0 */
/* scripts.c — loading a script set from a directory or a ConfigMap object, with its content-hash
 * version (SHA-256 over the sorted files; see scripts.h). Runs on the caller's thread (start-up,
 * the reloader, `luaop check`); no shared state. No upstream counterpart. */
#include "host/runtime/scripts.h"

#include "host/util/base64.h"
#include "host/util/buf.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int file_cmp(const void *a, const void *b)
{
    return strcmp(((const lop_script_file_t *)a)->name, ((const lop_script_file_t *)b)->name);
}

/* Sort files by name and compute set->version. */
static void finish_set(lop_script_set_t *set)
{
    if (set->nfiles > 1) qsort(set->files, set->nfiles, sizeof *set->files, file_cmp);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    for (size_t i = 0; i < set->nfiles; i++) {
        const lop_script_file_t *f = &set->files[i];
        char len[32];
        int n = snprintf(len, sizeof len, ":%zu:", f->len);
        EVP_DigestUpdate(md, f->name, strlen(f->name));
        EVP_DigestUpdate(md, len, (size_t)n);
        EVP_DigestUpdate(md, f->data, f->len);
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    EVP_DigestFinal_ex(md, digest, &dlen);
    EVP_MD_CTX_free(md);
    for (int i = 0; i < 8; i++) snprintf(set->version + 2 * i, 3, "%02x", digest[i]);
}

static void add_file(lop_script_set_t *set, const char *name, const char *data, size_t len)
{
    set->files = lop_xrealloc(set->files, (set->nfiles + 1) * sizeof *set->files);
    lop_script_file_t *f = &set->files[set->nfiles++];
    f->name = lop_xstrdup(name);
    f->data = lop_xstrndup(data, len);
    f->len = len;
}

static size_t total_bytes(const lop_script_set_t *set)
{
    size_t n = 0;
    for (size_t i = 0; i < set->nfiles; i++) n += set->files[i].len;
    return n;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

static lop_rc_t read_file(const char *path, lop_buf_t *out, lop_err_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: %s", path, strerror(errno));
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        lop_buf_append(out, chunk, n);
        if (out->len > LOP_SCRIPTS_MAX_BYTES) {
            fclose(f);
            return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: larger than %u bytes", path, LOP_SCRIPTS_MAX_BYTES);
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: read error", path);
    return LOP_OK;
}

static lop_rc_t walk(lop_script_set_t *set, const char *root, const char *rel, int depth, lop_err_t *err)
{
    if (depth > 16) return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s/%s: nested too deeply", root, rel);
    lop_buf_t path = LOP_BUF_INIT;
    lop_buf_printf(&path, "%s%s%s", root, *rel ? "/" : "", rel);
    DIR *d = opendir(path.data);
    if (!d) {
        lop_rc_t rc = lop_err_set(err, errno == ENOENT ? LOP_ENOTFOUND : LOP_EINVAL, 0, NULL, "script directory %s: %s",
                                  path.data, strerror(errno));
        lop_buf_free(&path);
        return rc;
    }
    lop_rc_t rc = LOP_OK;
    struct dirent *e;
    while (rc == LOP_OK && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue; /* hidden files, ".", "..", ConfigMap "..data" links */
        lop_buf_t child = LOP_BUF_INIT, full = LOP_BUF_INIT;
        lop_buf_printf(&child, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        lop_buf_printf(&full, "%s/%s", root, child.data);
        struct stat st;
        if (stat(full.data, &st) != 0) {
            /* dangling symlink: not a script */
        } else if (S_ISDIR(st.st_mode)) {
            rc = walk(set, root, child.data, depth + 1, err);
        } else if (S_ISREG(st.st_mode) && has_suffix(e->d_name, ".lua")) {
            if (set->nfiles >= LOP_SCRIPTS_MAX_FILES) {
                rc =
                    lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: more than %d script files", root, LOP_SCRIPTS_MAX_FILES);
            } else {
                lop_buf_t data = LOP_BUF_INIT;
                rc = read_file(full.data, &data, err);
                if (rc == LOP_OK) add_file(set, child.data, data.data ? data.data : "", data.len);
                lop_buf_free(&data);
                if (rc == LOP_OK && total_bytes(set) > LOP_SCRIPTS_MAX_BYTES)
                    rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: scripts larger than %u bytes", root,
                                     LOP_SCRIPTS_MAX_BYTES);
            }
        }
        lop_buf_free(&child);
        lop_buf_free(&full);
    }
    closedir(d);
    lop_buf_free(&path);
    return rc;
}

static lop_rc_t check_main(lop_script_set_t *set, lop_err_t *err)
{
    if (!lop_scripts_find(set, "main.lua"))
        return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: no main.lua (the entry script)", set->origin);
    return LOP_OK;
}

lop_rc_t lop_scripts_load_dir(const char *dir, lop_script_set_t **out, lop_err_t *err)
{
    *out = NULL;
    lop_script_set_t *set = lop_xcalloc(1, sizeof *set);
    snprintf(set->origin, sizeof set->origin, "%s", dir);
    lop_rc_t rc = walk(set, dir, "", 0, err);
    if (rc == LOP_OK) {
        finish_set(set);
        rc = check_main(set, err);
    }
    if (rc != LOP_OK) {
        lop_script_set_free(set);
        return rc;
    }
    *out = set;
    return LOP_OK;
}

lop_rc_t lop_scripts_load_configmap_json(const char *json, size_t len, const char *origin, lop_script_set_t **out,
                                         lop_err_t *err)
{
    *out = NULL;
    json_error_t jerr;
    json_t *cm = json_loadb(json, len, 0, &jerr);
    if (!cm) return lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: invalid JSON: %s", origin, jerr.text);
    lop_script_set_t *set = lop_xcalloc(1, sizeof *set);
    snprintf(set->origin, sizeof set->origin, "%s", origin);
    lop_rc_t rc = LOP_OK;
    const char *key;
    json_t *val;
    json_t *data = json_object_get(cm, "data");
    json_object_foreach(data, key, val)
    {
        if (!has_suffix(key, ".lua")) continue;
        if (!json_is_string(val)) {
            rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: data.%s is not a string", origin, key);
            break;
        }
        add_file(set, key, json_string_value(val), json_string_length(val));
    }
    json_t *bin = json_object_get(cm, "binaryData");
    json_object_foreach(bin, key, val)
    {
        if (rc != LOP_OK) break;
        if (!has_suffix(key, ".lua")) continue;
        size_t n = 0;
        char *dec = json_is_string(val) ? lop_base64_decode(json_string_value(val), &n) : NULL;
        if (!dec) {
            rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: binaryData.%s is not valid base64", origin, key);
        } else {
            add_file(set, key, dec, n);
        }
        free(dec);
    }
    json_decref(cm);
    if (rc == LOP_OK && set->nfiles > LOP_SCRIPTS_MAX_FILES)
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: more than %d script files", origin, LOP_SCRIPTS_MAX_FILES);
    if (rc == LOP_OK && total_bytes(set) > LOP_SCRIPTS_MAX_BYTES)
        rc = lop_err_set(err, LOP_EINVAL, 0, NULL, "%s: scripts larger than %u bytes", origin, LOP_SCRIPTS_MAX_BYTES);
    if (rc == LOP_OK) {
        finish_set(set);
        rc = check_main(set, err);
    }
    if (rc != LOP_OK) {
        lop_script_set_free(set);
        return rc;
    }
    *out = set;
    return LOP_OK;
}

lop_script_set_t *lop_scripts_from_files(const lop_script_file_t *files, size_t n, const char *origin)
{
    lop_script_set_t *set = lop_xcalloc(1, sizeof *set);
    snprintf(set->origin, sizeof set->origin, "%s", origin ? origin : "memory");
    for (size_t i = 0; i < n; i++) add_file(set, files[i].name, files[i].data, files[i].len);
    finish_set(set);
    return set;
}

const lop_script_file_t *lop_scripts_find(const lop_script_set_t *set, const char *name)
{
    for (size_t i = 0; i < set->nfiles; i++)
        if (strcmp(set->files[i].name, name) == 0) return &set->files[i];
    return NULL;
}

void lop_script_set_free(lop_script_set_t *set)
{
    if (!set) return;
    for (size_t i = 0; i < set->nfiles; i++) {
        free(set->files[i].name);
        free(set->files[i].data);
    }
    free(set->files);
    free(set);
}
