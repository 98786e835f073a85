/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scripts.h — loading a script set (lop_script_set_t, see engine.h) from its sources:
 * a directory (every *.lua file below it, names relative to it) or a ConfigMap object (every
 * data/binaryData key ending in ".lua"; ConfigMap keys cannot contain '/', so sets from
 * ConfigMaps are flat). "main.lua" must be present.
 *
 * The version is the first 16 hex digits of SHA-256 over the sorted (name, length, content)
 * triples, so the same files give the same version whatever their source.
 *
 * Ownership: loaders return a new set the caller frees with lop_script_set_free.
 * Thread-safety: no shared state.
 */
#ifndef LOP_RUNTIME_SCRIPTS_H
#define LOP_RUNTIME_SCRIPTS_H

#include "host/runtime/engine.h"

#include <stddef.h>

/* Limits that keep a bad source from exhausting memory. */
#define LOP_SCRIPTS_MAX_FILES 1024
#define LOP_SCRIPTS_MAX_BYTES (16u * 1024u * 1024u) /* all files together */

/* Load every *.lua under dir (recursively; hidden entries and symlink loops skipped).
 * Errors (LOP_EINVAL / LOP_ENOTFOUND with err->message naming the path): unreadable directory,
 * no main.lua, limits exceeded. */
LOP_MUST_CHECK lop_rc_t lop_scripts_load_dir(const char *dir, lop_script_set_t **out, lop_err_t *err);

/* Load from a ConfigMap given as JSON text (as returned by the API). binaryData values are
 * base64-decoded. origin names the source for messages ("configmap ns/name"). */
LOP_MUST_CHECK lop_rc_t lop_scripts_load_configmap_json(const char *json, size_t len, const char *origin,
                                                        lop_script_set_t **out, lop_err_t *err);

/* Build a set from in-memory files (copied). Computes the version. */
lop_script_set_t *lop_scripts_from_files(const lop_script_file_t *files, size_t n, const char *origin);

/* The file named name, or NULL. Borrowed from set. */
const lop_script_file_t *lop_scripts_find(const lop_script_set_t *set, const char *name);

void lop_script_set_free(lop_script_set_t *set);

#endif
