// SPDX-License-Identifier: MIT
/*
 * The freeze ends before the image is written: while the process is
 * stopped, a fork is injected into it (clone with no exit signal, traced
 * by us from its birth, so it never runs a single instruction). The
 * child's memory is a copy-on-write snapshot of the process at the
 * checkpoint; the saver reads pages from it while the process runs on,
 * then kills it, and has the process reap it with one more injected call
 * (wait4 with __WALL), since a child without exit signal is never
 * announced to its parent. Regions that a fork does not copy faithfully
 * (MADV_DONTFORK, MADV_WIPEONFORK, and shared memory, which the process
 * writes on) make the saver write while frozen.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guard.h"
#include "park.h"
#include "ptrace_util.h"
#include "saver.h"

/* Shared memory is no snapshot: the process writes on into it. */
static int forks_faithfully(const struct target *t)
{
	for (uint32_t i = 0; i < t->ps.nvmas; i++)
		if ((t->ps.vmas[i].madv & (IBCR_MADV_DONTFORK | IBCR_MADV_WIPEONFORK)) ||
		    t->ps.vmas[i].kind == IBCR_VMA_SHMEM)
			return 0;
	return 1;
}

/* Clone injected into the parked main thread; its child's pid in *child. */
static int inject_clone(struct target *t, long *ret, unsigned long *child,
			struct ibcr_err *e)
{
	struct ibcr_err e2 = { "" };
	struct park p;
	int st, rc;

	if (park_thread(t, t->pid, &p, e))
		return -1;
	{
		/* flags 0: fork, no signal; its own stack: if let go, it exits */
		const uint64_t a[6] = { 0, park_copy_sp(&p), 0, 0, 0, 0 };

		guard_snapshot(t, 0);
		rc = park_call(&p, SYS_clone, a, ret, child, e);
	}
	if (!rc && *ret > 0 && *child) {
		guard_snapshot(t, (pid_t)*child);
		while (waitpid((pid_t)*child, &st, __WALL) < 0 && errno == EINTR)
			;	/* its first stop, before it ever runs */
		/* if the saver dies, the copy must die too, never run on */
		if (ptrace(PTRACE_SETOPTIONS, (pid_t)*child, 0,
			   (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL)))
			rc = ibcr_fail_errno(e, errno, "pid %d: PTRACE_SETOPTIONS on its "
					     "snapshot %d", (int)t->pid, (int)*child);
		/* the snapshot holds the memory of the checkpoint, not our frames */
		if (!rc)
			rc = park_restore_copy(&p, (pid_t)*child, e);
	}
	if (park_release(&p, &e2) && !rc) {
		*e = e2;
		rc = -1;
	}
	return rc;
}

/* Returns 0 with t->mem_pid set, or 0 without it when there is no snapshot. */
int snapshot_create(struct target *t, struct ibcr_err *e)
{
	unsigned long child = 0;
	char path[64];
	long ret = 0;
	int rc;

	if (!forks_faithfully(t))
		return 0;
	if (ptrace(PTRACE_SETOPTIONS, t->pid, 0,
		   (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE)))
		return ibcr_fail_errno(e, errno, "pid %d: PTRACE_SETOPTIONS", (int)t->pid);
	rc = inject_clone(t, &ret, &child, e);
	ptrace(PTRACE_SETOPTIONS, t->pid, 0, (void *)(long)PTRACE_O_TRACESYSGOOD);
	if (ret > 0 && child)
		t->mem_pid = (pid_t)child;
	if (rc)
		return -1;
	if (ret < 0 || !child) {
		/* e.g. ENOMEM: no room to commit a copy; write while frozen */
		fprintf(stderr, "saver: note: pid %d: no snapshot (%s); the process stays "
			"stopped while the image is written\n", (int)t->pid,
			ret < 0 ? strerror((int)-ret) : "no child");
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)t->mem_pid);
	close(t->memfd);
	t->memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->memfd < 0)
		return ibcr_fail_errno(e, errno, "pid %d: opening its snapshot's memory",
				       (int)t->pid);
	return 0;
}

/*
 * The process runs again here: stop only its main thread, for as long as
 * one wait4 takes. Its registers are rewound first, as at the checkpoint,
 * so a syscall it was in resumes instead of returning -ERESTARTSYS.
 */
void snapshot_reap(struct target *t, pid_t child)
{
	const uint64_t a[6] = { (uint64_t)child, 0, __WALL, 0, 0, 0 };
	struct arch_gpregs r;
	struct ibcr_err e;
	struct park p;
	long ret;

	if (pt_seize(t->pid, PTRACE_O_TRACESYSGOOD, &e) || pt_interrupt(t->pid, &e))
		goto out;
	if (pt_getregs(t->pid, &r, &e) || (arch_rewind_syscall(&r) && pt_setregs(t->pid, &r, &e)))
		goto out;
	if (!park_thread(t, t->pid, &p, &e)) {
		park_call(&p, SYS_wait4, a, &ret, NULL, &e);
		park_release(&p, &e);
	}
out:
	ptrace(PTRACE_DETACH, t->pid, NULL, NULL);
}

/*
 * Once its pages are read the snapshot can go: killed now, its memory
 * is torn down (a millisecond per 64 MiB) while the image is synced,
 * and snapshot_destroy finds it dead.
 */
void snapshot_kill(struct target *t)
{
	if (t->mem_pid)
		kill(t->mem_pid, SIGKILL);
}

void snapshot_destroy(struct target *t)
{
	pid_t child = t->mem_pid;
	int st;

	if (!child)
		return;
	t->mem_pid = 0;
	kill(child, SIGKILL);
	while (waitpid(child, &st, __WALL) < 0 && errno == EINTR)
		;
	snapshot_reap(t, child);
	guard_snapshot_reaped(t);
}
