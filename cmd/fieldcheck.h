/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fieldcheck.h — `luaop check --crd`'s static field check (issue 23 part 2): warn where a script
 * reads or writes a field of a controller's `for_` kind that the kind's CRD schema
 * (openAPIV3Schema of the for_ version) does not have, e.g. `m.spec.sise`. The API server would
 * prune such a field on a write, and a read of it is always nil.
 *
 * What is seen, per file of the script set, by a scan of its tokens (comments and strings are
 * skipped; no scopes, no data flow across files):
 *  - the object variables: `local m[, err] = <...>.get(<args>)` whose arguments name the kind as a
 *    string literal ("Memcached") or as a name the file assigns that literal to
 *    (`local API, KIND = "...", "Memcached"`, `_M.KIND = "Memcached"`); then, repeated until
 *    nothing changes, the parameter P of `f(m, function(P)` (a status.update mutate function) and
 *    the parameter at the same position of a function the same file defines
 *    (`local function observe(o, ...)` called as `observe(m, ...)`);
 *  - the chains `<var>.spec.<a>.<b>...` and `<var>.status....`, including `(<var>.spec or {}).<a>`.
 * A chain is followed through properties and additionalProperties (a map key is any name) and
 * stops at preserve-unknown, int-or-string, arrays and objects without a structure. Names are
 * tracked per file, not per scope: a name reused for another kind in the same file can warn
 * wrongly; an object reached another way (a list's items, a table field, another file, an
 * index `obj["spec"]`) is not checked.
 *
 * Thread-safety: pure functions; writes to out only.
 */
#ifndef LOP_CMD_FIELDCHECK_H
#define LOP_CMD_FIELDCHECK_H

#include "host/runtime/engine.h"

#include <jansson.h>
#include <stdio.h>

/* Check every file of set against the schemas of the for_ kinds of decls[0..n) found in crds (an
 * array of decoded documents; other kinds are skipped). Each warning goes to out as
 * `<prefix><file>:<line>: warning: <Kind> <apiVersion> has no field <path> (<hint>)`. prefix is
 * put before each file name ("" or "DIR/"). Returns the number of warnings. */
size_t lop_fieldcheck(FILE *out, const char *prefix, const lop_script_set_t *set, const lop_ctrl_decl_t *decls,
                      size_t n, const json_t *crds);

#endif
