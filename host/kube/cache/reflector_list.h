/* SPDX-License-Identifier: Apache-2.0 */
/* reflector_list.h — the reflector's list (reflector_list.c), which its loop (reflector.c) calls to
 * sync. Not a public header. */
#ifndef LOP_KUBE_CACHE_REFLECTOR_LIST_H
#define LOP_KUBE_CACHE_REFLECTOR_LIST_H

#include "host/kube/cache/reflector.h"

/* One list (every page; the pager's and the unavailable-resourceVersion fallbacks), replacing the
 * store and delivering the changes, then marking the reflector synced. Runs on the reflector's
 * thread. LOP_OK, LOP_ECLOSED when stopped, or the failing rc with err set. */
LOP_MUST_CHECK lop_rc_t lop_reflector_do_list(lop_reflector_t *r, lop_err_t *err);

#endif
