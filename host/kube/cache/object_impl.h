/* SPDX-License-Identifier: Apache-2.0 */
/* object_impl.h — what object.c and object_key.c share (not part of the object API). */
#ifndef LOP_KUBE_CACHE_OBJECT_IMPL_H
#define LOP_KUBE_CACHE_OBJECT_IMPL_H

#include "host/kube/cache/object.h"

/* The cache key's hash from o's namespace_ and name (stored in khash_ when o is built). */
uint32_t lop_obj_key_hash_of(const lop_obj_t *o);

#endif
