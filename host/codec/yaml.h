/* SPDX-License-Identifier: Apache-2.0 */
/*
 * yaml.h — YAML manifests to JSON values (jansson), as kubectl reads them: a stream of
 * documents separated by `---`; plain scalars resolved as sigs.k8s.io/yaml over go-yaml v2 does
 * (yaml.v2 resolve.go, what kubectl and the kube-apiserver use): null/~/empty; YAML 1.1 booleans
 * (y, yes, on, true / n, no, off, false in their lower, Capitalised and UPPER spellings);
 * integers as Go's strconv.ParseInt(s, 0, 64) reads them after dropping '_' (0x hex, 0o or a
 * leading 0 octal: 010 is 8, 0b binary); floats ([-+]?digits[.digits][e[-+]digits]; .inf/.nan
 * keep their text, JSON has none); everything else, unquoted dates included, a string. Quoted
 * scalars are strings; a plain mapping key resolves the same way and is then written as JSON text
 * (`y:` and `on:` are both the key "true", `010:` is "8": kubectl agrees); anchors and aliases
 * are expanded; empty documents skipped. spec/core/yaml_spec.lua compares with kubectl.
 *
 * Alias expansion is bounded ("billion laughs": `a: &a [x, x]`, `b: &b [*a, *a]`, ... doubles per
 * line, and a self-referencing `x: &a [*a, *a]` never ends). Every value an alias copies costs
 * 1 per node plus the bytes of each string and key it holds; the whole input may spend at most
 * lop_yaml_expansion_budget(len) = LOP_YAML_EXPANSION_FACTOR x len + LOP_YAML_EXPANSION_FLOOR
 * units on aliases, else the load fails with LOP_EINVAL naming the alias and the bound. Why these
 * numbers: real manifests use anchors to share a few blocks (a container spec, a label set) and
 * expand well under 10x; the 64 KiB floor keeps small files with many anchors working, and the
 * bound caps a bomb of n bytes at about 10n + 64 Ki nodes (a few MB of jansson values) instead of
 * exponential growth. Upstream refuses the same documents: sigs.k8s.io/yaml (go-yaml v2's
 * decoder, decode.go "document contains excessive aliasing", which allows aliases a shrinking
 * share of the decode operations), used by kubectl and the kube-apiserver for YAML bodies.
 *
 * Ownership: results are new jansson references the caller owns. Thread-safety: no shared state.
 */
#ifndef LOP_CODEC_YAML_H
#define LOP_CODEC_YAML_H

#include "host/util/err.h"

#include <jansson.h>
#include <stddef.h>

/* The bound on alias expansion (above), in units: nodes + string/key bytes copied by aliases. */
#define LOP_YAML_EXPANSION_FACTOR 10
#define LOP_YAML_EXPANSION_FLOOR  65536
size_t lop_yaml_expansion_budget(size_t input_len);

/* Parse every document of text. On success *docs is a JSON array of the documents.
 * On a syntax error returns LOP_EINVAL with err->message "<origin>:<line>:<col>: <problem>"; when aliases
 * expand beyond the bound, LOP_EINVAL with "<origin>:<line>: alias *<name>: YAML aliases expand beyond ...". */
LOP_MUST_CHECK lop_rc_t lop_yaml_load_all(const char *text, size_t len, const char *origin, json_t **docs,
                                          lop_err_t *err);

/* Same for a file (origin = path). */
LOP_MUST_CHECK lop_rc_t lop_yaml_load_file(const char *path, json_t **docs, lop_err_t *err);

#endif
