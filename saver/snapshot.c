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
 * (MADV_DONTFORK, MADV_WIPEONFORK) are copied in the freeze
 * (noforkcopy.c), and so is shared memory, which the process writes on
 * (shmsnap.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guard.h"
#include "park.h"
#include "ptrace_util.h"
#include "saver.h"

/*
 * Shared memory is copied, then the clone injected and left running
 * (park_begin): every process of the image forks at once, which the
 * kernel does in each one's own context, on every CPU (a fork copies the
 * page tables: ~54 ms a GiB here), instead of one after the other.
 * 1: begun; 0: no snapshot for this one; -1: error.
 */
static int fork_begin(struct target *t, struct park *p, struct ibcr_err *e)
{
	uint64_t a[6] = { 0, 0, 0, 0, 0, 0 };	/* flags 0: fork, no signal */
	int rc;

	rc = nofork_copy_all(t, e);	/* what the fork would not copy */
	if (!rc)
		rc = shm_copy_all(t, e);	/* the process writes on into shared memory */
	if (rc)
		return rc < 0 ? -1 : 0;
	/* t->ptopts: our calls in it (and the clone) keep seccomp suspended */
	if (ptrace(PTRACE_SETOPTIONS, t->pid, 0, (void *)(t->ptopts | PTRACE_O_TRACECLONE)))
		return ibcr_fail_errno(e, errno, "pid %d: PTRACE_SETOPTIONS", (int)t->pid);
	if (park_thread(t, t->pid, p, e))
		return -1;
	a[1] = park_copy_sp(p);	/* its own stack: let go, the copy exits at once */
	guard_snapshot(t, 0);
	if (park_begin(p, SYS_clone, a, e)) {
		struct ibcr_err ignored;

		park_release(p, &ignored);
		return -1;
	}
	return 1;
}

static int fork_end(struct target *t, struct park *p, struct ibcr_err *e)
{
	unsigned long child = 0;
	long ret = 0;
	int rc = park_end(p, &ret, &child, e);

	ptrace(PTRACE_SETOPTIONS, t->pid, 0, (void *)t->ptopts);
	if (!rc && ret > 0 && child) {
		guard_snapshot(t, (pid_t)child);
		t->mem_pid = (pid_t)child;
	}
	if (rc)
		return -1;
	if (ret < 0 || !child) {
		/* e.g. ENOMEM: no room to commit a copy; write while frozen */
		fprintf(stderr, "saver: note: pid %d: no snapshot (%s); the process stays "
			"stopped while the image is written\n", (int)t->pid,
			ret < 0 ? strerror((int)-ret) : "no child");
		return 0;
	}
	return 0;
}

/* The snapshot, stopped before it ever runs, made to die with the saver. */
static int adopt(struct target *t, const struct park *p, struct ibcr_err *e)
{
	char path[64];
	int st;

	while (waitpid(t->mem_pid, &st, __WALL) < 0 && errno == EINTR)
		;	/* its first stop, before it ever runs */
	/* if the saver dies, the copy must die too, never run on */
	if (ptrace(PTRACE_SETOPTIONS, t->mem_pid, 0,
		   (void *)(t->ptopts | PTRACE_O_EXITKILL)))
		return ibcr_fail_errno(e, errno, "pid %d: PTRACE_SETOPTIONS on its snapshot %d",
				       (int)t->pid, (int)t->mem_pid);
	/* the snapshot holds the memory of the checkpoint, not our frames */
	if (park_restore_copy(p, t->mem_pid, e))
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)t->mem_pid);
	close(t->memfd);
	t->memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->memfd < 0)
		return ibcr_fail_errno(e, errno, "pid %d: opening its snapshot's memory",
				       (int)t->pid);
	return 0;
}

/* Sets t[i].mem_pid for each process that gets a snapshot; 0 or -1. */
int snapshot_create_all(struct target *t, uint32_t n, struct ibcr_err *e)
{
	struct park *pk = calloc(n + 1, sizeof(*pk));
	int *begun = calloc(n + 1, sizeof(*begun)), rc = 0;
	struct ibcr_err later;	/* after a first error: not the one to report */

	if (!pk || !begun) {
		free(pk);
		free(begun);
		return ibcr_fail(e, "no memory for the snapshots");
	}
	/*
	 * Last first: the children of a tree fork while the parent, which
	 * usually holds the shared memory, is copied (it stays stopped).
	 */
	for (uint32_t i = n; i-- > 0 && !rc; ) {
		int b = t[i].zombie ? 0 : fork_begin(&t[i], &pk[i], e);

		begun[i] = b > 0;
		rc = b < 0 ? -1 : 0;
	}
	/* every clone begun is ended, whatever failed meanwhile */
	for (uint32_t i = 0; i < n; i++)
		if (begun[i] && fork_end(&t[i], &pk[i], rc ? &later : e) && !rc)
			rc = -1;
	for (uint32_t i = 0; i < n; i++)
		if (t[i].mem_pid && adopt(&t[i], &pk[i], rc ? &later : e) && !rc)
			rc = -1;
	/* and every parked main thread put back */
	for (uint32_t i = 0; i < n; i++)
		if (begun[i] && park_release(&pk[i], rc ? &later : e) && !rc)
			rc = -1;
	free(pk);
	free(begun);
	return rc;
}

/* wait4 for child run by t's main thread, stopped by us, parked for it. */
static void parked_wait4(struct target *t, pid_t child, struct ibcr_err *e)
{
	const uint64_t a[6] = { (uint64_t)child, 0, __WALL, 0, 0, 0 };
	struct park p;
	long ret;

	if (!park_thread(t, t->pid, &p, e)) {
		park_call(&p, SYS_wait4, a, &ret, NULL, e);
		park_release(&p, e);
	}
}

/*
 * The process runs again here: stop only its main thread, for as long as
 * one wait4 takes (parked: the saver may die meanwhile). Its registers are
 * rewound first, as at the checkpoint, so a syscall it was in resumes
 * instead of returning -ERESTARTSYS. The guardian does the same.
 */
void snapshot_reap(struct target *t, pid_t child)
{
	struct arch_gpregs r;
	struct ibcr_err e;

	/*
	 * Not released yet (a process of a tree that stayed stopped while
	 * the image was written): still ours, stopped, its registers put
	 * back; a seize would fail and leave the child a zombie.
	 */
	if (!t->released) {
		parked_wait4(t, child, &e);
		return;
	}
	if (pt_seize(t->pid, t->ptopts | PTRACE_O_TRACESYSGOOD, &e) || pt_interrupt(t->pid, &e))
		goto out;
	if (pt_getregs(t->pid, &r, &e) || (arch_rewind_syscall(&r) && pt_setregs(t->pid, &r, &e)))
		goto out;
	parked_wait4(t, child, &e);
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
