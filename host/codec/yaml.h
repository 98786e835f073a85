/*
 * yaml.h — YAML manifests to JSON values (jansson), as kubectl reads them: a stream of
 * documents separated by `---`; plain scalars resolved with the YAML 1.2 core schema (null, ~,
 * true/false, integers incl. 0x/0o, floats incl. .inf/.nan; everything else a string); quoted
 * scalars are strings; anchors and aliases are expanded; empty documents skipped.
 *
 * Ownership: results are new jansson references the caller owns. Thread-safety: no shared state.
 */
#ifndef LOP_CODEC_YAML_H
#define LOP_CODEC_YAML_H

#include "host/util/err.h"

#include <jansson.h>
#include <stddef.h>

/* Parse every document of text. On success *docs is a JSON array of the documents.
 * On a syntax error returns LOP_EINVAL with err->message "<origin>:<line>:<col>: <problem>". */
lop_rc_t lop_yaml_load_all(const char *text, size_t len, const char *origin, json_t **docs, lop_err_t *err);

/* Same for a file (origin = path). */
lop_rc_t lop_yaml_load_file(const char *path, json_t **docs, lop_err_t *err);

#endif
