// SPDX-License-Identifier: MIT
/*
 * Before anything changes: can this restorer give the process its
 * attributes back exactly? Resource limits above our hard limits, an
 * oom_score_adj below what we may set, a scheduling class we may not
 * enter, CPUs this machine does not have, a cgroup that is not here:
 * each refuses the image, naming the process and the attribute, while
 * nothing is made yet. The kernel's own rules are applied as it applies
 * them (kernel/sched/syscalls.c, fs/proc/base.c); the restore core
 * checks the result again.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "loader.h"
#include "procfs.h"
#include "sched_attr.h"

#define CAP_SYS_NICE 23
#define CAP_SYS_RESOURCE 24

static const char *const limit_names[IBCR_RLIM_NLIMITS] = {
	"RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CORE",
	"RLIMIT_RSS", "RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_MEMLOCK", "RLIMIT_AS",
	"RLIMIT_LOCKS", "RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE", "RLIMIT_NICE",
	"RLIMIT_RTPRIO", "RLIMIT_RTTIME",
};

const char *attrs_limit_name(int r)
{
	return r >= 0 && r < IBCR_RLIM_NLIMITS ? limit_names[r] : "?";
}

/* Whether we hold capability `cap` (effective), from /proc/self/status. */
int attrs_have_cap(int cap)
{
	struct ibcr_err ignored;
	char *s, *p;
	unsigned long long eff = 0;

	if (proc_read("/proc/self/status", &s, NULL, &ignored))
		return 0;
	p = strstr(s, "\nCapEff:");
	if (p)
		eff = strtoull(p + 8, NULL, 16);
	free(s);
	return (int)((eff >> cap) & 1);
}

static uint64_t read_u64_file(const char *path, uint64_t dflt)
{
	struct ibcr_err ignored;
	char *s;
	uint64_t v;

	if (proc_read(path, &s, NULL, &ignored))
		return dflt;
	v = strtoull(s, NULL, 10);
	free(s);
	return v;
}

/* Raising a hard limit needs CAP_SYS_RESOURCE; no one passes fs.nr_open. */
static int check_limits(const struct ibcr_process_state *ps, struct ibcr_err *e)
{
	int cap = attrs_have_cap(CAP_SYS_RESOURCE);
	uint64_t nr_open = read_u64_file("/proc/sys/fs/nr_open", UINT64_MAX);

	for (int r = 0; r < IBCR_RLIM_NLIMITS; r++) {
		struct rlimit cur;
		uint64_t hard = ps->rec.rlim[r][1];

		if (ps->rec.rlim[r][0] > hard)
			return ibcr_fail(e, "pid %d: resource limit %s: soft %llu above hard "
					 "%llu", ps->rec.pid, limit_names[r],
					 (unsigned long long)ps->rec.rlim[r][0],
					 (unsigned long long)hard);
		if (getrlimit(r, &cur))
			return ibcr_fail_errno(e, errno, "reading our resource limit %s",
					       limit_names[r]);
		if (hard > cur.rlim_max && !cap)
			return ibcr_fail(e, "pid %d: resource limit %s: its hard limit %llu is "
					 "above ours (%llu), and raising it needs "
					 "CAP_SYS_RESOURCE", ps->rec.pid, limit_names[r],
					 (unsigned long long)hard,
					 (unsigned long long)cur.rlim_max);
		if (r == RLIMIT_NOFILE && hard != UINT64_MAX && hard > nr_open)
			return ibcr_fail(e, "pid %d: resource limit RLIMIT_NOFILE %llu is above "
					 "this system's fs.nr_open (%llu)", ps->rec.pid,
					 (unsigned long long)hard, (unsigned long long)nr_open);
	}
	return 0;
}

/*
 * Lowering oom_score_adj below the lowest a privileged writer set for us
 * (oom_score_adj_min, which nothing shows) needs CAP_SYS_RESOURCE: tried
 * on ourselves, and put back.
 */
static int check_oom(const struct ibcr_process_state *ps, struct ibcr_err *e)
{
	struct ibcr_err ignored;
	char *s, val[16];
	int cur, fd, n, ok;

	if (proc_read("/proc/self/oom_score_adj", &s, NULL, &ignored))
		return ibcr_fail(e, "reading our /proc/self/oom_score_adj: %s", ignored.msg);
	cur = atoi(s);
	free(s);
	if (ps->pattrs.oom_score_adj >= cur)
		return 0;
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return ibcr_fail_errno(e, errno, "opening our /proc/self/oom_score_adj");
	n = snprintf(val, sizeof(val), "%d", ps->pattrs.oom_score_adj);
	ok = write(fd, val, (size_t)n) == n;
	n = snprintf(val, sizeof(val), "%d", cur);
	if (ok && write(fd, val, (size_t)n) != n)
		ok = 0;
	close(fd);
	if (!ok)
		return ibcr_fail(e, "pid %d: oom_score_adj %d is below ours (%d), and "
				 "lowering it needs CAP_SYS_RESOURCE", ps->rec.pid,
				 ps->pattrs.oom_score_adj, cur);
	return 0;
}

/* Every CPU of every thread's affinity is online here. */
static int check_affinity(const struct ibcr_process_state *ps, struct ibcr_err *e)
{
	uint8_t online[IBCR_AFFINITY_BYTES] = { 0 };
	struct ibcr_err ignored;
	char *s, *p;

	if (proc_read("/sys/devices/system/cpu/online", &s, NULL, &ignored))
		return ibcr_fail(e, "reading /sys/devices/system/cpu/online: %s", ignored.msg);
	for (p = s; *p >= '0' && *p <= '9'; ) {
		unsigned long a = strtoul(p, &p, 10), b = a;

		if (*p == '-')
			b = strtoul(p + 1, &p, 10);
		for (unsigned long c = a; c <= b && c < IBCR_AFFINITY_BYTES * 8; c++)
			online[c / 8] |= (uint8_t)(1u << (c % 8));
		if (*p == ',')
			p++;
	}
	free(s);
	for (uint32_t i = 0; i < ps->rec.nthreads; i++)
		for (int c = 0; c < IBCR_AFFINITY_BYTES * 8; c++)
			if ((ps->tattrs[i].affinity[c / 8] >> (c % 8) & 1) &&
			    !(online[c / 8] >> (c % 8) & 1))
				return ibcr_fail(e, "pid %d thread %d: may run on CPU %d, which "
						 "this machine does not have online",
						 ps->rec.pid, ps->tattrs[i].tid, c);
	return 0;
}

/* The limit a thread of the restore has when it sets its class (attrs.c). */
static uint64_t early_soft(const struct ibcr_process_state *ps, int r)
{
	struct rlimit cur = { 0, 0 };

	getrlimit(r, &cur);
	return ps->rec.rlim[r][0] > cur.rlim_cur ? ps->rec.rlim[r][0] : cur.rlim_cur;
}

/*
 * Without CAP_SYS_NICE, the kernel's rules for an unprivileged
 * sched_setattr, from the class a restored thread starts in (ours, as
 * fork gives it) and with the limits it has then.
 */
static const char *sched_needs_cap(const struct ibcr_process_state *ps,
				   const struct ibcr_tattrs *a, const struct ibcr_sched_attr *own)
{
	uint64_t rtprio = early_soft(ps, RLIMIT_RTPRIO), nice = early_soft(ps, RLIMIT_NICE);
	uint32_t p = a->sched_policy;

	if (a->sched_nice < own->sched_nice && (uint64_t)(20 - a->sched_nice) > nice)
		return "a nice value below ours, beyond its RLIMIT_NICE";
	if ((p == SCHED_FIFO || p == SCHED_RR) && !rtprio && p != own->sched_policy)
		return "a real-time class with RLIMIT_RTPRIO 0";
	if ((p == SCHED_FIFO || p == SCHED_RR) && a->sched_priority > own->sched_priority &&
	    a->sched_priority > rtprio)
		return "a real-time priority above its RLIMIT_RTPRIO";
	if (p == SCHED_DEADLINE)
		return "SCHED_DEADLINE";
	if (own->sched_policy == SCHED_IDLE && p != SCHED_IDLE &&
	    (uint64_t)(20 - own->sched_nice) > nice)
		return "leaving SCHED_IDLE, beyond its RLIMIT_NICE";
	return NULL;
}

static int check_sched(const struct ibcr_process_state *ps, struct ibcr_err *e)
{
	struct ibcr_sched_attr own = { .size = sizeof(own) };

	if (attrs_have_cap(CAP_SYS_NICE))
		return 0;
	if (syscall(SYS_sched_getattr, 0, &own, sizeof(own), 0))
		return ibcr_fail_errno(e, errno, "reading our scheduling attributes");
	own.sched_nice = getpriority(PRIO_PROCESS, 0);	/* also in a real-time class */
	if ((own.sched_flags & SCHED_FLAG_RESET_ON_FORK) &&
	    (own.sched_policy == SCHED_FIFO || own.sched_policy == SCHED_RR ||
	     own.sched_policy == SCHED_DEADLINE || own.sched_nice < 0)) {
		own.sched_policy = SCHED_NORMAL;	/* what our children start with */
		own.sched_priority = 0;
		own.sched_nice = own.sched_nice < 0 ? 0 : own.sched_nice;
	}
	for (uint32_t i = 0; i < ps->rec.nthreads; i++) {
		const char *why = sched_needs_cap(ps, &ps->tattrs[i], &own);

		if (why)
			return ibcr_fail(e, "pid %d thread %d: its scheduling class (policy %u, "
					 "priority %u, nice %d) needs CAP_SYS_NICE: %s",
					 ps->rec.pid, ps->tattrs[i].tid, ps->tattrs[i].sched_policy,
					 ps->tattrs[i].sched_priority, ps->tattrs[i].sched_nice, why);
	}
	return 0;
}

/* The membarrier commands to register again, by what this kernel offers. */
static int check_membarrier(const struct ibcr_process_state *ps, struct ibcr_err *e)
{
	long have = ps->pattrs.membarrier ? syscall(SYS_membarrier, 0, 0, 0) : 0;

	if (have < 0)
		have = 0;
	if (ps->pattrs.membarrier & ~(uint64_t)have)
		return ibcr_fail(e, "pid %d: registered for membarrier commands %#x, this "
				 "kernel offers %#lx", ps->rec.pid, ps->pattrs.membarrier, have);
	return 0;
}

#ifdef __x86_64__
#define ARCH_GET_XCOMP_SUPP 0x1021
#define XFEATURE_MASK_XTILEDATA (1ULL << 18)
#endif

/* A process that asked for AMX can have it here (attrs.c asks). */
static int check_amx(const struct ibcr_process_state *ps, struct ibcr_err *e)
{
	if (!(ps->pattrs.flags & IBCR_PATTRF_AMX))
		return 0;
#ifdef __x86_64__
	uint64_t supp = 0;

	if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_SUPP, &supp))
		supp = 0;
	if (supp & XFEATURE_MASK_XTILEDATA)
		return 0;
#endif
	return ibcr_fail(e, "pid %d: asked for AMX tile data (ARCH_REQ_XCOMP_PERM), which "
			 "this CPU or kernel does not offer", ps->rec.pid);
}

int attrs_preflight(const struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;

	if (check_limits(ps, e))
		return -1;
	if (!ps->has_attrs)
		return 0;	/* an older image: nothing else was saved */
	return check_oom(ps, e) || check_affinity(ps, e) || check_sched(ps, e) ||
	       check_membarrier(ps, e) || check_amx(ps, e) || attrs_check_cgroup(rs, e);
}
