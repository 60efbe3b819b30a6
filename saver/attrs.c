// SPDX-License-Identifier: MIT
/*
 * Process and thread attributes that the kernel keeps and a restore
 * must set again (docs/design-notes.md, "Process attributes"): from outside
 * where the kernel shows them (oom_score_adj, cgroup, scheduling,
 * affinity), by injected calls where only the process can ask
 * (subreaper, THP, membarrier, timer slack, parent-death signal).
 */
#include <errno.h>
#include <linux/prctl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "buf.h"
#include "saver.h"
#include "sched_attr.h"

#define MEMBARRIER_GET_REGISTRATIONS (1 << 9)	/* Linux 6.3 */
#define MEMBARRIER_REGISTER_SHIFT 1	/* a command's REGISTER_ is its bit << 1 */

/* A cgroup v2 path ("0::/path" in /proc/.../cgroup), malloc'd; "" when none. */
static int read_cgroup(const char *path, char **out, struct ibcr_err *e)
{
	char *s, *line, *save = NULL;

	if (proc_read(path, &s, NULL, e))
		return -1;
	*out = NULL;
	for (line = strtok_r(s, "\n", &save); line && !*out; line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, "0::", 3))
			*out = xstrdup(line + 3);
	free(s);
	if (!*out)
		*out = xstrdup("");	/* cgroup v1 only: nothing to restore */
	return 0;
}

/* Every thread in its process's cgroup: a threaded cgroup is not restored. */
static int capture_cgroup(struct target *t, struct ibcr_err *e)
{
	char path[80], *cg;
	int rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)t->pid);
	if (read_cgroup(path, &t->ps.cgroup, e))
		return -1;
	for (uint32_t i = 1; i < t->nthreads && !rc; i++) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/cgroup", (int)t->pid,
			 (int)t->tids[i]);
		if (read_cgroup(path, &cg, e))
			return -1;
		if (strcmp(cg, t->ps.cgroup))
			rc = ibcr_fail(e, "pid %d thread %d: in cgroup %s, its process in %s: "
				       "threaded cgroups are not supported yet", (int)t->pid,
				       (int)t->tids[i], cg, t->ps.cgroup);
		free(cg);
	}
	return rc;
}

static int read_oom(struct target *t, struct ibcr_err *e)
{
	char path[64], *s;

	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)t->pid);
	if (proc_read(path, &s, NULL, e))
		return -1;
	t->ps.pattrs.oom_score_adj = atoi(s);
	free(s);
	return 0;
}

/*
 * The registrations whose command works. MEMBARRIER_CMD_GET_REGISTRATIONS
 * names a private expedited one also when only SYNC_CORE or RSEQ was
 * registered (they set its state bit, not its ready bit), so each private
 * command is tried: it answers EPERM unless registered, and otherwise is
 * a barrier on the CPUs running the process's threads, which are all
 * stopped but this one. Before Linux 6.3 the global registration cannot
 * be seen (flag MEMBARRIER_OLD).
 */
static int read_membarrier(struct target *t, struct ibcr_err *e)
{
	static const uint32_t cmds[] = { IBCR_MEMBARRIER_PRIVATE_EXPEDITED >> 1,
					 IBCR_MEMBARRIER_SYNC_CORE >> 1,
					 IBCR_MEMBARRIER_RSEQ >> 1 };
	struct ibcr_pattrs *a = &t->ps.pattrs;
	long regs, r;

	if (inject_call(t, 0, SYS_membarrier, MEMBARRIER_GET_REGISTRATIONS, 0, 0, 0, &regs, e))
		return -1;
	if (regs == -ENOSYS)
		return 0;
	if (regs == -EINVAL) {
		a->flags |= IBCR_PATTRF_MEMBARRIER_OLD;
		regs = ~0l & ~(long)IBCR_MEMBARRIER_GLOBAL_EXPEDITED;
	} else if (regs < 0) {
		return ibcr_fail(e, "pid %d: reading its membarrier registrations: %s",
				 (int)t->pid, strerror((int)-regs));
	}
	a->membarrier = (uint32_t)regs & IBCR_MEMBARRIER_GLOBAL_EXPEDITED;
	for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
		uint32_t reg = cmds[k] << MEMBARRIER_REGISTER_SHIFT;

		if (!(regs & reg))
			continue;
		if (inject_call(t, 0, SYS_membarrier, cmds[k], 0, 0, 0, &r, e))
			return -1;
		if (!r)
			a->membarrier |= reg;
		else if (r != -EPERM && r != -EINVAL)
			return ibcr_fail(e, "pid %d: membarrier command %u: %s", (int)t->pid,
					 cmds[k], strerror((int)-r));
	}
	return 0;
}

#ifdef __x86_64__
#define ARCH_GET_XCOMP_PERM 0x1022
#define XFEATURE_MASK_XTILEDATA (1ULL << 18)
#endif

/*
 * x86 AMX is a process's once it asked (ARCH_REQ_XCOMP_PERM); only the
 * process can read what it asked for. The restore asks again.
 */
static int read_xcomp_perm(struct target *t, uint64_t scratch, struct ibcr_err *e)
{
#ifdef __x86_64__
	uint64_t perm = 0;
	long rc;

	if (inject_call(t, 0, SYS_arch_prctl, ARCH_GET_XCOMP_PERM, scratch, 0, 0, &rc, e))
		return -1;
	if (rc == 0 && read_target(t, scratch, &perm, sizeof(perm), e))
		return -1;
	if (rc == 0 && (perm & XFEATURE_MASK_XTILEDATA))
		t->ps.pattrs.flags |= IBCR_PATTRF_AMX;
#else
	(void)t;
	(void)scratch;
	(void)e;
#endif
	return 0;	/* an older kernel (EINVAL): no AMX to ask for */
}

static int read_process(struct target *t, uint64_t scratch, struct ibcr_err *e)
{
	int32_t sub = 0;
	long thp;

	if (read_oom(t, e) || capture_cgroup(t, e) ||
	    inject_call(t, 0, SYS_prctl, PR_GET_CHILD_SUBREAPER, scratch, 0, 0, NULL, e) ||
	    read_target(t, scratch, &sub, sizeof(sub), e) ||
	    inject_call(t, 0, SYS_prctl, PR_GET_THP_DISABLE, 0, 0, 0, &thp, e))
		return -1;
	if (sub)
		t->ps.pattrs.flags |= IBCR_PATTRF_SUBREAPER;
	if (thp < 0 || thp > 3)
		return ibcr_fail(e, "pid %d: PR_GET_THP_DISABLE answered %ld", (int)t->pid, thp);
	t->ps.pattrs.thp_disable = (uint32_t)thp;
	return read_membarrier(t, e) || read_xcomp_perm(t, scratch, e) ? -1 : 0;
}

/* Scheduling and affinity, which the kernel shows to anyone. */
static int read_sched(pid_t tid, struct ibcr_tattrs *a, struct ibcr_err *e)
{
	struct ibcr_sched_attr sa = { .size = sizeof(sa) };
	long n;

	if (syscall(SYS_sched_getattr, tid, &sa, sizeof(sa), 0))
		return ibcr_fail_errno(e, errno, "thread %d: reading its scheduling "
				       "attributes", (int)tid);
	a->sched_policy = sa.sched_policy;
	a->sched_flags = sa.sched_flags;
	/* every class has a nice value; sched_getattr shows only the fair ones' */
	errno = 0;
	a->sched_nice = getpriority(PRIO_PROCESS, (id_t)tid);
	if (errno)
		return ibcr_fail_errno(e, errno, "thread %d: reading its nice value", (int)tid);
	a->sched_priority = sa.sched_priority;
	a->sched_runtime = sa.sched_runtime;
	a->sched_deadline = sa.sched_deadline;
	a->sched_period = sa.sched_period;
	if (sa.size >= IBCR_SCHED_ATTR_VER1) {
		a->util_min = sa.sched_util_min;
		a->util_max = sa.sched_util_max;
		a->flags |= IBCR_TATTRF_UCLAMP;
	}
	n = syscall(SYS_sched_getaffinity, tid, sizeof(a->affinity), a->affinity);
	if (n < 0 && errno == EINVAL)
		return ibcr_fail(e, "thread %d: this machine has more than %d CPUs: not "
				 "supported yet", (int)tid, IBCR_AFFINITY_BYTES * 8);
	if (n < 0)
		return ibcr_fail_errno(e, errno, "thread %d: reading its CPU affinity", (int)tid);
	return 0;
}

static int is_rt(uint32_t policy)
{
	return policy == SCHED_FIFO || policy == SCHED_RR || policy == 6 /* DEADLINE */;
}

/*
 * Timer slack: the current value, and the default that PR_SET_TIMERSLACK
 * 0 goes back to, seen by setting 0 and putting the value back at once
 * (real-time threads have none: the kernel ignores both).
 */
static int read_slack(struct target *t, uint32_t i, struct ibcr_tattrs *a,
		      struct ibcr_err *e)
{
	long cur, def, r;

	if (inject_call(t, i, SYS_prctl, PR_GET_TIMERSLACK, 0, 0, 0, &cur, e))
		return -1;
	if (cur < 0)
		return ibcr_fail(e, "thread %d: PR_GET_TIMERSLACK: %s", (int)t->tids[i],
				 strerror((int)-cur));
	a->timer_slack_ns = (uint64_t)cur;
	if (is_rt(a->sched_policy))
		return 0;
	if (inject_call(t, i, SYS_prctl, PR_SET_TIMERSLACK, 0, 0, 0, NULL, e) ||
	    inject_call(t, i, SYS_prctl, PR_GET_TIMERSLACK, 0, 0, 0, &def, e) ||
	    inject_call(t, i, SYS_prctl, PR_SET_TIMERSLACK, (uint64_t)cur, 0, 0, NULL, e) ||
	    inject_call(t, i, SYS_prctl, PR_GET_TIMERSLACK, 0, 0, 0, &r, e))
		return -1;
	if (r != cur)
		return ibcr_fail(e, "thread %d: its timer slack changed from %ld to %ld while "
				 "being read", (int)t->tids[i], cur, r);
	a->timer_slack_default_ns = (uint64_t)def;
	a->flags |= IBCR_TATTRF_SLACK_DEFAULT;
	return 0;
}

static int read_thread(struct target *t, uint32_t i, uint64_t scratch, struct ibcr_err *e)
{
	struct ibcr_tattrs *a = &t->ps.tattrs[i];
	int32_t sig = 0;

	a->tid = t->tids[i];
	if (read_sched(t->tids[i], a, e) || read_slack(t, i, a, e) ||
	    inject_call(t, i, SYS_prctl, PR_GET_PDEATHSIG, scratch, 0, 0, NULL, e) ||
	    read_target(t, scratch, &sig, sizeof(sig), e))
		return -1;
	a->pdeath_sig = (uint32_t)sig;
	return 0;
}

int capture_attrs(struct target *t, uint64_t scratch, struct ibcr_err *e)
{
	t->ps.has_attrs = 1;
	t->ps.tattrs = xcalloc(t->nthreads, sizeof(struct ibcr_tattrs));
	if (read_process(t, scratch, e))
		return -1;
	for (uint32_t i = 0; i < t->nthreads; i++)
		if (read_thread(t, i, scratch, e))
			return -1;
	return 0;
}

/* Drops every `sig` from a thread's queues (its own, then the shared one). */
static int drop_signal(struct ibcr_thread_state *ts, int sig)
{
	uint32_t own = ts->rec.nsiginfo, total = own + ts->rec.nsiginfo_shared;
	uint32_t out = 0, own_left = 0;
	uint8_t *q = ts->siginfo;

	for (uint32_t i = 0; i < total; i++) {
		int32_t s;

		memcpy(&s, q + (size_t)i * IBCR_SIGINFO_SIZE, sizeof(s));
		if (s == sig)
			continue;
		memmove(q + (size_t)out * IBCR_SIGINFO_SIZE, q + (size_t)i * IBCR_SIGINFO_SIZE,
			IBCR_SIGINFO_SIZE);
		out++;
		own_left += i < own;
	}
	ts->rec.nsiginfo = own_left;
	ts->rec.nsiginfo_shared = out - own_left;
	return out != total;
}

static int is_stop(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/*
 * The stop state. A SIGSTOP still queued would stop the restore itself
 * (it cannot be blocked): the process is saved as stopped by it instead,
 * as it would be at its next step. In a stopped process every queued
 * stop signal is dropped: SIGCONT, the only way on, discards them all.
 */
void attrs_stop_state(struct target *t)
{
	for (uint32_t i = 0; i < t->nthreads; i++)
		for (int sig = 1; sig <= 31; sig++) {
			if (!is_stop(sig) || (sig != SIGSTOP && !t->stopped))
				continue;
			if (drop_signal(&t->ps.threads[i], sig) && !t->stopped) {
				t->stopped = 1;
				t->stop_sig = SIGSTOP;
			}
		}
	if (t->stopped) {
		t->ps.rec.flags |= IBCR_PROCF_STOPPED;
		t->ps.pattrs.stop_sig = (uint32_t)(t->stop_sig ? t->stop_sig : SIGSTOP);
	}
}

/* Whether pid is in /proc/PARENT/task/PARENT/children: forked by its main thread. */
static int main_thread_child(pid_t parent, pid_t pid, struct ibcr_err *e)
{
	char path[80], *s, *tok, *save = NULL;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)parent, (int)parent);
	if (proc_read(path, &s, NULL, e))
		return -1;
	for (tok = strtok_r(s, " \n", &save); tok && !found; tok = strtok_r(NULL, " \n", &save))
		found = atoi(tok) == pid;
	free(s);
	return found;
}

/*
 * A child in the image comes back forked by its parent's main thread
 * (loader/tree.c). The kernel sends a parent-death signal when the
 * thread that forked the child exits, so a child with one, forked by
 * another thread of its parent, would get it at another moment: refused.
 */
int attrs_check_tree(const struct target *t, uint32_t n, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct target *c = &t[i];
		uint32_t k, sig = 0;
		int main_child;

		for (k = 0; !c->zombie && k < c->nthreads; k++)
			sig = sig ? sig : c->ps.tattrs[k].pdeath_sig;
		for (k = 0; k < n && t[k].pid != c->ps.rec.ppid; k++)
			;
		if (!sig || k == n)
			continue;
		main_child = main_thread_child(t[k].pid, c->pid, e);
		if (main_child < 0)
			return -1;
		if (!main_child)
			return ibcr_fail(e, "pid %d: has a parent-death signal (%u) and was forked "
					 "by a thread of pid %d other than its main thread: it "
					 "would come back forked by the main thread, and get the "
					 "signal when that one exits", (int)c->pid, sig,
					 (int)t[k].pid);
	}
	return 0;
}
