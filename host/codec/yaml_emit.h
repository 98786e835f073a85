/* SPDX-License-Identifier: Apache-2.0 */
/*
 * yaml_emit.h — JSON values (jansson) written as block-style YAML, for manifests luaop prints
 * (`luaop check --webhooks`). Strings and keys are written plain when YAML reads them back as
 * the same string (letters, digits, "._/-", starting with a letter or "/", not a YAML 1.1
 * boolean or null), else double-quoted with JSON escapes ("on", "1.0", "~" stay strings); empty
 * objects and arrays are written {} and []. Object members keep their jansson order. Round trip:
 * lop_yaml_load_all of the output gives an equal value.
 *
 * Thread-safety: no shared state.
 */
#ifndef LOP_CODEC_YAML_EMIT_H
#define LOP_CODEC_YAML_EMIT_H

#include "host/util/buf.h"

#include <jansson.h>

/* Append v as a YAML document (no "---" line) to out. */
void lop_yaml_emit(lop_buf_t *out, const json_t *v);

#endif
