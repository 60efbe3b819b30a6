// SPDX-License-Identifier: MIT
/*
 * Each thread's own attributes, set by the thread itself before it
 * resumes: timer slack first (a real-time class zeroes it), then CPU
 * affinity, then the scheduling class; the parent-death signal after
 * the credentials, whose change clears it. Every one is read back and
 * compared: a restore that cannot give exactly what was saved stops
 * before the program runs. Also the limits the restore needed room
 * under (plan.h, rlim_late) and the default timer slack of the threads
 * the core creates (their creator's slack at the time).
 */
#include <linux/prctl.h>
#include <linux/sched.h>

#include "core.h"
#include "sched_attr.h"
#include "sys.h"

static void set_affinity(struct plan *p, const struct plan_thread *t)
{
	const struct ibcr_tattrs *a = &t->attrs;
	uint8_t got[IBCR_AFFINITY_BYTES];
	long rc = SYS(__NR_sched_setaffinity, 0, sizeof(a->affinity), a->affinity, 0, 0, 0);
	long n;

	if (rc)
		core_die(p, "thread %d: setting its CPU affinity: error %ld", t->tid, -rc);
	__builtin_memset(got, 0, sizeof(got));
	n = SYS(__NR_sched_getaffinity, 0, sizeof(got), got, 0, 0, 0);
	if (n < 0 || __builtin_memcmp(got, a->affinity, sizeof(got)))
		core_die(p, "thread %d: its CPU affinity is not the saved one here (the "
			 "CPUs it may use are not all available to it)", t->tid);
}

static void get_sched(struct plan *p, const struct plan_thread *t, struct ibcr_sched_attr *sa)
{
	long rc;

	__builtin_memset(sa, 0, sizeof(*sa));
	rc = SYS(__NR_sched_getattr, 0, sa, sizeof(*sa), 0, 0, 0);
	if (rc)
		core_die(p, "thread %d: reading its scheduling attributes: error %ld",
			 t->tid, -rc);
}

/*
 * The nice value first, with setpriority: every class keeps it (a
 * real-time or idle thread goes back to it if it leaves its class), and
 * sched_getattr shows it only for the fair ones. A fair thread's
 * sched_runtime is its slice: set only if it is not the default one (a
 * slice set by hand stays fixed when the default changes). Clamps only
 * where they differ from what the class gave.
 */
static void set_sched(struct plan *p, const struct plan_thread *t)
{
	const struct ibcr_tattrs *a = &t->attrs;
	struct ibcr_sched_attr cur, sa = {
		.size = sizeof(sa), .sched_policy = a->sched_policy,
		.sched_flags = a->sched_flags & (SCHED_FLAG_RESET_ON_FORK | SCHED_FLAG_RECLAIM |
						 SCHED_FLAG_DL_OVERRUN),
		.sched_nice = a->sched_nice, .sched_priority = a->sched_priority,
		.sched_runtime = a->sched_runtime, .sched_deadline = a->sched_deadline,
		.sched_period = a->sched_period,
	};
	int fair = a->sched_policy == SCHED_NORMAL || a->sched_policy == SCHED_BATCH ||
		   a->sched_policy == 7 /* SCHED_EXT */;
	long rc;

	get_sched(p, t, &cur);
	if (fair && cur.sched_runtime == a->sched_runtime)
		sa.sched_runtime = 0;
	rc = SYS(__NR_setpriority, 0 /* PRIO_PROCESS */, 0, a->sched_nice, 0, 0, 0);
	if (!rc)
		rc = SYS(__NR_sched_setattr, 0, &sa, 0, 0, 0, 0);
	if (rc)
		core_die(p, "thread %d: setting its scheduling class (policy %u priority %u "
			 "nice %d): error %ld", t->tid, a->sched_policy, a->sched_priority,
			 a->sched_nice, -rc);
	get_sched(p, t, &cur);
	if ((a->flags & IBCR_TATTRF_UCLAMP) &&
	    (cur.sched_util_min != a->util_min || cur.sched_util_max != a->util_max)) {
		sa.sched_flags |= SCHED_FLAG_KEEP_ALL | SCHED_FLAG_UTIL_CLAMP;
		sa.sched_util_min = a->util_min;
		sa.sched_util_max = a->util_max;
		rc = SYS(__NR_sched_setattr, 0, &sa, 0, 0, 0, 0);
		if (rc)
			core_die(p, "thread %d: setting its utilisation clamps %u-%u: error %ld",
				 t->tid, a->util_min, a->util_max, -rc);
		get_sched(p, t, &cur);
	}
	/* the raw getpriority answers 20 - nice */
	rc = SYS(__NR_getpriority, 0, 0, 0, 0, 0, 0);
	if (cur.sched_policy != a->sched_policy || cur.sched_priority != a->sched_priority ||
	    20 - rc != a->sched_nice ||
	    (cur.sched_flags & SCHED_FLAG_RESET_ON_FORK) !=
	    (a->sched_flags & SCHED_FLAG_RESET_ON_FORK))
		core_die(p, "thread %d: its scheduling class did not come back as saved",
			 t->tid);
}

void core_thread_attrs(struct plan *p, const struct plan_thread *t)
{
	long slack;

	if (!t->has_attrs)
		return;
	/* 0 would mean "the default": a real-time thread's 0 comes with its class */
	if (t->attrs.timer_slack_ns)
		sys_prctl(PR_SET_TIMERSLACK, t->attrs.timer_slack_ns, 0, 0, 0);
	set_affinity(p, t);
	set_sched(p, t);
	slack = sys_prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (slack != (long)t->attrs.timer_slack_ns)
		core_die(p, "thread %d: timer slack %ld, saved %lu", t->tid, slack,
			 (unsigned long)t->attrs.timer_slack_ns);
}

void core_thread_attrs_late(struct plan *p, const struct plan_thread *t)
{
	long rc;

	if (!t->has_attrs || !t->attrs.pdeath_sig)
		return;
	rc = sys_prctl(PR_SET_PDEATHSIG, t->attrs.pdeath_sig, 0, 0, 0);
	if (rc)
		core_die(p, "thread %d: PR_SET_PDEATHSIG %u: error %ld", t->tid,
			 t->attrs.pdeath_sig, -rc);
}

/* Before creating thread i: our slack is what it takes as its default. */
void core_slack_for_clone(const struct plan *p, uint32_t i)
{
	const struct plan_thread *t = &p->threads[i];

	if (t->has_attrs && (t->attrs.flags & IBCR_TATTRF_SLACK_DEFAULT) &&
	    t->attrs.timer_slack_default_ns)
		sys_prctl(PR_SET_TIMERSLACK, t->attrs.timer_slack_default_ns, 0, 0, 0);
}

void core_late_limits(struct plan *p)
{
	for (int r = 0; r < 16; r++) {
		long rc;

		if (!(p->rlim_late_mask & (1u << r)))
			continue;
		rc = SYS(__NR_prlimit64, 0, r, p->rlim_late[r], 0, 0, 0);
		if (rc)
			core_die(p, "restoring resource limit %d: error %ld", r, -rc);
	}
}
