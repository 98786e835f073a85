/* SPDX-License-Identifier: Apache-2.0 */
/* manager_health.c — the manager's liveness check for stuck workers (see manager.h). */
#include "host/runtime/manager_internal.h"

#include <stdio.h>

bool lop_manager_check_stuck(lop_manager_t *m, int64_t grace_ns, char *reason, size_t len)
{
    bool ok = true;
    pthread_mutex_lock(&m->mu);
    for (ctrl_entry_t *c = m->ctrls; c && ok; c = c->next) {
        if (c->deadline_ns <= 0) continue;
        lop_workqueue_stats_t st;
        lop_workqueue_stats(lop_controller_queue(c->ctrl), &st);
        int64_t grace = c->deadline_ns < grace_ns ? c->deadline_ns : grace_ns;
        if (st.longest_running_ns > c->deadline_ns + grace) {
            ok = false;
            snprintf(reason, len, "controller %s: a reconcile has run %.1fs (deadline %.1fs + grace %.1fs)", c->name,
                     (double)st.longest_running_ns / 1e9, (double)c->deadline_ns / 1e9, (double)grace / 1e9);
        }
    }
    pthread_mutex_unlock(&m->mu);
    if (!ok) return false;
    /* the event VMs: the predicate deadline plus as much again, at least a second */
    int64_t d = m->cfg.engine_opts.predicate_timeout_ns > 0 ? m->cfg.engine_opts.predicate_timeout_ns
                                                            : LOP_PREDICATE_TIMEOUT_DEFAULT_NS;
    int64_t extra = d > LOP_NS_PER_S ? d : LOP_NS_PER_S;
    return lop_scriptrt_event_check_stuck(m->rt, d + (extra < grace_ns ? extra : grace_ns), reason, len);
}
