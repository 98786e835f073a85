/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for host/runtime/scripts: loading script sets from directories and ConfigMaps. */
#include "host/runtime/scripts.h"
#include "t.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpl[] = "/tmp/luaop-scripts-XXXXXX";
static const char *dir;

static void write_file(const char *rel, const char *content)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    fputs(content, f);
    fclose(f);
}

static void test_dir_loads_nested_lua_files_only(void)
{
    char sub[512];
    snprintf(sub, sizeof sub, "%s/lib", dir);
    mkdir(sub, 0755);
    write_file("main.lua", "return 1\n");
    write_file("lib/util.lua", "return {}\n");
    write_file("README.md", "not a script");
    write_file(".hidden.lua", "ignored");
    lop_script_set_t *set = NULL;
    lop_err_t err;
    T_EQ_INT(lop_scripts_load_dir(dir, &set, &err), LOP_OK);
    if (!set) return;
    T_EQ_INT(set->nfiles, 2);
    T_EQ_STR(set->files[0].name, "lib/util.lua");
    T_EQ_STR(set->files[1].name, "main.lua");
    T_EQ_STR(lop_scripts_find(set, "main.lua")->data, "return 1\n");
    T_EQ_INT(strlen(set->version), 16);
    lop_script_set_free(set);
}

static void test_missing_main_is_an_error_naming_the_source(void)
{
    char tmpl2[] = "/tmp/luaop-scripts-empty-XXXXXX";
    const char *d2 = mkdtemp(tmpl2);
    lop_script_set_t *set = NULL;
    lop_err_t err;
    T_EQ_INT(lop_scripts_load_dir(d2, &set, &err), LOP_EINVAL);
    T_CHECK(set == NULL);
    T_CHECK(strstr(err.message, "main.lua") != NULL);
    T_CHECK(strstr(err.message, d2) != NULL);
    rmdir(d2);
    T_EQ_INT(lop_scripts_load_dir("/nonexistent/luaop", &set, &err), LOP_ENOTFOUND);
}

static void test_configmap_data_and_binary_data(void)
{
    /* "cmV0dXJuIDIK" is base64 of "return 2\n" */
    const char *cm = "{\"kind\":\"ConfigMap\",\"data\":{\"main.lua\":\"return 1\\n\",\"notes.txt\":\"x\"},"
                     "\"binaryData\":{\"b.lua\":\"cmV0dXJuIDIK\"}}";
    lop_script_set_t *set = NULL;
    lop_err_t err;
    T_EQ_INT(lop_scripts_load_configmap_json(cm, strlen(cm), "configmap ns/x", &set, &err), LOP_OK);
    if (!set) return;
    T_EQ_INT(set->nfiles, 2);
    T_EQ_STR(lop_scripts_find(set, "b.lua")->data, "return 2\n");
    T_EQ_STR(set->origin, "configmap ns/x");
    lop_script_set_free(set);

    const char *bad = "{\"data\":{\"other.lua\":\"return 1\"}}";
    T_EQ_INT(lop_scripts_load_configmap_json(bad, strlen(bad), "configmap ns/y", &set, &err), LOP_EINVAL);
    T_CHECK(strstr(err.message, "configmap ns/y") != NULL);
    T_EQ_INT(lop_scripts_load_configmap_json("{", 1, "configmap ns/z", &set, &err), LOP_EINVAL);
}

static void test_version_depends_on_content_not_source(void)
{
    lop_script_file_t a[] = {{"main.lua", "return 1", 8}, {"x.lua", "x", 1}};
    lop_script_file_t b[] = {{"x.lua", "x", 1}, {"main.lua", "return 1", 8}};
    lop_script_file_t c[] = {{"x.lua", "y", 1}, {"main.lua", "return 1", 8}};
    lop_script_set_t *sa = lop_scripts_from_files(a, 2, "a");
    lop_script_set_t *sb = lop_scripts_from_files(b, 2, "b");
    lop_script_set_t *sc = lop_scripts_from_files(c, 2, "c");
    T_EQ_STR(sa->version, sb->version);
    T_CHECK(strcmp(sa->version, sc->version) != 0);
    lop_script_set_free(sa);
    lop_script_set_free(sb);
    lop_script_set_free(sc);
}

int main(void)
{
    dir = mkdtemp(tmpl);
    T_RUN(test_dir_loads_nested_lua_files_only);
    T_RUN(test_missing_main_is_an_error_naming_the_source);
    T_RUN(test_configmap_data_and_binary_data);
    T_RUN(test_version_depends_on_content_not_source);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    return T_DONE();
}
