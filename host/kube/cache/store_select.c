/* SPDX-License-Identifier: Apache-2.0 */
/* store_select.c — listing the store through a label selector (host/meta/selector.h). Kept apart
 * from store.c so that only users of selectors link the selector implementation. */
#include "host/kube/cache/store_impl.h"

static const char *label_lookup(void *ud, const char *key) { return lop_obj_label(ud, key); }

static bool matches(const lop_obj_t *o, const void *arg)
{
    return lop_label_selector_match(arg, label_lookup, (void *)o);
}

void lop_store_list_selector(lop_store_t *s, const char *ns, const lop_label_selector_t *sel, lop_obj_list_t *out)
{
    lop_store_collect_filtered(s, ns, sel ? matches : NULL, sel, out);
}
