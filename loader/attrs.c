// SPDX-License-Identifier: MIT
/*
 * Process attributes, set by the child that becomes the restored
 * process before it enters the restore core (they belong to its mm or
 * signal struct, which the core keeps): cgroup first, then
 * oom_score_adj, subreaper, THP, membarrier. What belongs to threads
 * goes into the plan, for the core (freestanding/core/attrs.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "loader.h"

static int write_oom(int v, struct ibcr_err *e)
{
	char val[16];
	int n = snprintf(val, sizeof(val), "%d", v);
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "opening /proc/self/oom_score_adj");
	ok = write(fd, val, (size_t)n) == n;
	if (!ok)
		ibcr_fail_errno(e, errno, "setting oom_score_adj %d", v);
	close(fd);
	return ok ? 0 : -1;
}

/* Registered in the order that leaves the same state bits (membarrier.c). */
static int register_membarrier(uint32_t mask, struct ibcr_err *e)
{
	static const uint32_t order[] = {
		IBCR_MEMBARRIER_GLOBAL_EXPEDITED, IBCR_MEMBARRIER_PRIVATE_EXPEDITED,
		IBCR_MEMBARRIER_SYNC_CORE, IBCR_MEMBARRIER_RSEQ,
	};

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if ((mask & order[i]) && syscall(SYS_membarrier, order[i], 0, 0))
			return ibcr_fail_errno(e, errno, "registering membarrier command %#x",
					       order[i]);
	return 0;
}

#ifdef __x86_64__
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
#endif

/* The AMX permission the process had (attrs_check.c: this CPU has AMX). */
static int ask_amx(const struct ibcr_pattrs *a, struct ibcr_err *e)
{
	if (!(a->flags & IBCR_PATTRF_AMX))
		return 0;
#ifdef __x86_64__
	if (!syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA))
		return 0;
#else
	errno = ENOSYS;
#endif
	return ibcr_fail_errno(e, errno, "asking for AMX tile data as the saved process had "
			       "(ARCH_REQ_XCOMP_PERM)");
}

int attrs_child(const struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	const struct ibcr_pattrs *a = &ps->pattrs;

	if (!ps->has_attrs)
		return 0;
	if (cgroup_enter(rs, e) || write_oom(a->oom_score_adj, e))
		return -1;
	if ((a->flags & IBCR_PATTRF_SUBREAPER) && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
		return ibcr_fail_errno(e, errno, "PR_SET_CHILD_SUBREAPER");
	/* bit 0: disabled; the rest: its flags (PR_THP_DISABLE_EXCEPT_ADVISED) */
	if (a->thp_disable && prctl(PR_SET_THP_DISABLE, 1, a->thp_disable & ~1u, 0, 0))
		return ibcr_fail_errno(e, errno, "PR_SET_THP_DISABLE %u", a->thp_disable);
	return register_membarrier(a->membarrier, e) || ask_amx(a, e) ? -1 : 0;
}

/*
 * Limits that the restore itself needs room under: threads to create
 * (NPROC), signals to queue (SIGPENDING), a scheduling class to enter
 * (NICE, RTPRIO). They are the larger of ours and the saved until every
 * thread is set up, then the saved ones.
 */
static void plan_late_limits(struct plan *p)
{
	static const int late[] = { RLIMIT_NPROC, RLIMIT_SIGPENDING, RLIMIT_NICE,
				    RLIMIT_RTPRIO };

	for (size_t k = 0; k < sizeof(late) / sizeof(late[0]); k++) {
		int r = late[k];
		struct rlimit cur;

		if (getrlimit(r, &cur))
			continue;	/* then the saved ones, as always */
		memcpy(p->rlim_late[r], p->rlim[r], sizeof(p->rlim_late[r]));
		p->rlim_late_mask |= 1u << r;
		if (cur.rlim_cur > p->rlim[r][0])
			p->rlim[r][0] = cur.rlim_cur;
		if (cur.rlim_max > p->rlim[r][1])
			p->rlim[r][1] = cur.rlim_max;
	}
}

void attrs_plan(struct plan *p, const struct restore *rs)
{
	const struct ibcr_process_state *ps = rs->ps;

	plan_late_limits(p);
	if (!ps->has_attrs)
		return;
	for (uint32_t i = 0; i < ps->rec.nthreads; i++) {
		p->threads[i].attrs = ps->tattrs[i];
		p->threads[i].has_attrs = 1;
	}
}

/*
 * A thread's default timer slack is its creator's slack when it was
 * created. The core creates the other threads (freestanding/core/attrs.c); the
 * main thread is created by fork, here: with ours set to its default
 * for the fork. Returns ours, to put back, or -1.
 */
long attrs_fork_slack(const struct ibcr_process_state *child)
{
	long own = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);

	if (own < 0 || !child->has_attrs ||
	    !(child->tattrs[0].flags & IBCR_TATTRF_SLACK_DEFAULT) ||
	    !child->tattrs[0].timer_slack_default_ns ||
	    prctl(PR_SET_TIMERSLACK, child->tattrs[0].timer_slack_default_ns, 0, 0, 0))
		return -1;
	return own;
}

void attrs_fork_slack_done(long own)
{
	if (own >= 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)own, 0, 0, 0);
}
