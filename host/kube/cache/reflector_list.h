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

/* The same list in steps, for a reflector on the cache dispatcher that fetches its pages with
 * the listwatch's asynchronous list_stream_start (listwatch.h): begin; then, per page, fetch
 * lop_reflector_list_opts(l) feeding lop_reflector_list_on_bytes (ud = l) and call page_done with
 * the page's rc (collected = false), which says whether another page is to be fetched (its opts
 * then updated) or the list is done (*rc as lop_reflector_do_list returns it, the store replaced
 * on LOP_OK); free. Reflector thread (or turn) only. */
typedef struct lop_reflector_list lop_reflector_list_t;
typedef enum lop_list_step { LOP_LIST_NEXT_PAGE, LOP_LIST_DONE } lop_list_step_t;
lop_reflector_list_t *lop_reflector_list_begin(lop_reflector_t *r);
const lop_list_opts_t *lop_reflector_list_opts(const lop_reflector_list_t *l);
int lop_reflector_list_on_bytes(void *ud, const char *data, size_t len);
/* collected: the page was fetched with lw.list into the list's own body (blocking path only). */
lop_list_step_t lop_reflector_list_page_done(lop_reflector_list_t *l, lop_rc_t rc, bool collected, lop_rc_t *out,
                                             lop_err_t *err);
void lop_reflector_list_free(lop_reflector_list_t *l);

#endif
