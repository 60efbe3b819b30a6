// SPDX-License-Identifier: MIT
/*
 * POSIX timers in the plan (the core makes them: core/timers.c), and the
 * check that this kernel can give them their ids: Linux 6.17 takes the
 * id asked for (PR_TIMER_CREATE_RESTORE_IDS); older ones hand ids in
 * order, so the core makes fillers up to each id, a bounded number.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "loader.h"
#include "core/plan.h"

#define PR_TIMER_CREATE_RESTORE_IDS 77
#define PR_TIMER_CREATE_RESTORE_IDS_GET 2

static int fill_ids(void)
{
	const char *f = getenv("IBCR_TIMER_FILL");

	if (f && !strcmp(f, "1"))
		return 1;
	/* EINVAL before Linux 6.17 */
	return prctl(PR_TIMER_CREATE_RESTORE_IDS, PR_TIMER_CREATE_RESTORE_IDS_GET, 0, 0,
		     0) < 0;
}

int timers_preflight(const struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;

	if (!ps->nptimers || !fill_ids())
		return 0;
	if (ps->ptimers[ps->nptimers - 1].id >= PLAN_TIMER_FILL_MAX)
		return ibcr_fail(e, "pid %d: POSIX timer %d: this kernel (before Linux 6.17, "
				 "no PR_TIMER_CREATE_RESTORE_IDS) hands timer ids in order, "
				 "and ids from %d up are not made", ps->rec.pid,
				 ps->ptimers[ps->nptimers - 1].id, PLAN_TIMER_FILL_MAX);
	return 0;
}

size_t timers_plan_size(const struct restore *rs)
{
	return (rs->ps->nptimers + 1) * sizeof(struct plan_timer) + 64;
}

void plan_timers(struct plan *p, struct arena *a, const struct restore *rs)
{
	const struct ibcr_process_state *ps = rs->ps;
	struct plan_timer *pt = arena_take(a, timers_plan_size(rs) - 64, 8);

	for (uint32_t i = 0; i < ps->nptimers; i++) {
		pt[i] = (struct plan_timer){ .t = ps->ptimers[i] };
		for (uint32_t k = 0; k < ps->rec.nthreads; k++)
			if ((ps->ptimers[i].notify & IBCR_SIGEV_THREAD_ID) &&
			    ps->threads[k].rec.tid == ps->ptimers[i].tid)
				pt[i].thread = k;
	}
	p->timers = pt;
	p->ntimers = ps->nptimers;
	if (ps->nptimers && fill_ids())
		p->flags |= PLAN_TIMER_FILL;
}
