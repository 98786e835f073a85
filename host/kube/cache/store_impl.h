/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_impl.h — what store.c shares with store_select.c, inside the cache only (not part of the
 * store's API; include store.h for that).
 *
 * Thread-safety: as store.h (takes the store's read lock).
 */
#ifndef LOP_KUBE_CACHE_STORE_IMPL_H
#define LOP_KUBE_CACHE_STORE_IMPL_H

#include "host/kube/cache/store.h"

#include <stdbool.h>

/* Fill out (overwritten, not appended to; sorted by key as lop_store_list) with every object of
 * namespace ns (NULL: all) for which pred(obj, arg) is true (pred NULL: every object). The list
 * holds new references the caller releases with lop_obj_list_free. */
void lop_store_collect_filtered(lop_store_t *s, const char *ns, bool (*pred)(const lop_obj_t *, const void *),
                                const void *arg, lop_obj_list_t *out);

#endif
