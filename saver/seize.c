// SPDX-License-Identifier: MIT
/*
 * Attaching to every thread of a process and letting it go again. New
 * threads can appear while we attach (a thread in clone), so the task
 * list is re-read until a pass finds nothing new.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "procfs.h"
#include "ptrace_util.h"
#include "saver.h"

static int has_tid(const struct target *t, pid_t tid)
{
	for (uint32_t i = 0; i < t->nthreads; i++)
		if (t->tids[i] == tid)
			return 1;
	return 0;
}

static int seize_new(struct target *t, struct ibcr_err *e);

static int explain_seize_failure(pid_t pid, int err, struct ibcr_err *e)
{
	char path[64], *status = NULL, *tp;
	int tracer = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (err == EPERM && !proc_read(path, &status, NULL, e) &&
	    (tp = strstr(status, "TracerPid:")))
		tracer = atoi(tp + 10);
	free(status);
	if (err == ESRCH)
		return ibcr_fail(e, "pid %d: no such process", (int)pid);
	if (tracer)
		return ibcr_fail(e, "pid %d: cannot attach: already traced by pid %d",
				 (int)pid, tracer);
	if (err == EPERM)
		return ibcr_fail(e, "pid %d: cannot attach: permission denied "
				 "(another user's process, or ptrace restricted by "
				 "kernel.yama.ptrace_scope)", (int)pid);
	return ibcr_fail_errno(e, err, "pid %d: cannot attach", (int)pid);
}

/*
 * One pass over /proc/PID/task; returns how many threads were new. Each
 * new thread is seized and interrupted, and only then are they waited
 * for, together: a busy thread stops only once it gets a CPU, and 24
 * busy threads on 2 CPUs, waited for one by one, took seconds.
 */
static int seize_pass(struct target *t, struct ibcr_err *e)
{
	uint32_t first = t->nthreads;
	int added = seize_new(t, e);

	for (uint32_t i = first; added > 0 && i < t->nthreads; i++)
		if (pt_interrupt_wait(t->tids[i], e))
			return -1;
	return added;
}

static int seize_new(struct target *t, struct ibcr_err *e)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int added = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	dir = opendir(path);
	if (!dir)
		return explain_seize_failure(t->pid, errno == ENOENT ? ESRCH : errno, e);
	while ((d = readdir(dir))) {
		pid_t tid = (pid_t)atoi(d->d_name);

		if (tid <= 0 || has_tid(t, tid))
			continue;
		if (pt_seize(tid, PTRACE_O_TRACESYSGOOD, e)) {
			if (errno == ESRCH && tid != t->pid)
				continue;	/* the thread exited meanwhile */
			closedir(dir);
			return explain_seize_failure(tid == t->pid ? t->pid : tid, errno, e);
		}
		t->tids = xrealloc(t->tids, sizeof(pid_t) * (t->nthreads + 1));
		t->seized = xrealloc(t->seized, sizeof(int) * (t->nthreads + 1));
		t->tids[t->nthreads] = tid;
		t->seized[t->nthreads] = 1;
		t->nthreads++;
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL)) {
			ibcr_fail_errno(e, errno, "thread %d: PTRACE_INTERRUPT", (int)tid);
			closedir(dir);
			return -1;
		}
		added++;
	}
	closedir(dir);
	return added;
}

#define PF_KTHREAD 0x00200000	/* the kernel's task flag, field 9 of stat */

/* Refuses, with the reason, what cannot be a target; before any change. */
int target_check(pid_t pid, struct ibcr_err *e)
{
	char path[64], *stat = NULL, *p;
	unsigned long flags = 0;
	int rc = 0, fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (access(path, F_OK))
		return ibcr_fail(e, "pid %d: no such process", (int)pid);
	if (proc_read(path, &stat, NULL, e))
		return -1;
	p = strrchr(stat, ')');
	if (p)
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags);
	if (p && (p[2] == 'Z' || p[2] == 'X'))
		rc = ibcr_fail(e, "pid %d: the process is a zombie", (int)pid);
	else if (flags & PF_KTHREAD)
		rc = ibcr_fail(e, "pid %d: is a kernel thread: only user processes can "
			       "be checkpointed", (int)pid);
	free(stat);
	if (!rc && pid == getpid())
		rc = ibcr_fail(e, "pid %d: cannot checkpoint the saver itself", (int)pid);
	if (rc)
		return rc;
	/* /proc/PID/mem opens only with ptrace-attach rights: ask now */
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return explain_seize_failure(pid, errno == EACCES ? EPERM : errno, e);
	close(fd);
	return 0;
}

/* Stopped by job control (state T) before we came: it stays so. */
static int is_stopped(pid_t pid)
{
	char path[64], *s = NULL, *p;
	struct ibcr_err ignored;
	int stopped = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!proc_read(path, &s, NULL, &ignored) && (p = strrchr(s, ')')))
		stopped = p[2] == 'T';
	free(s);
	return stopped;
}

int target_seize(struct target *t, struct ibcr_err *e)
{
	char path[64];
	int added;

	t->stopped = is_stopped(t->pid);
	/* The main thread first: a failure there is the process's failure. */
	if (pt_seize(t->pid, PTRACE_O_TRACESYSGOOD, e))
		return explain_seize_failure(t->pid, errno, e);
	t->tids = xmalloc(sizeof(pid_t));
	t->seized = xmalloc(sizeof(int));
	t->tids[0] = t->pid;
	t->seized[0] = 1;
	t->nthreads = 1;
	pt_group_stop_signal();
	if (pt_interrupt(t->pid, e))
		return -1;
	do {
		added = seize_pass(t, e);
		if (added < 0)
			return -1;
	} while (added);
	/* in a group stop (also one a stop signal on its way in began): its signal */
	t->stop_sig = pt_group_stop_signal();
	if (t->stop_sig)
		t->stopped = 1;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)t->pid);
	t->memfd = open(path, O_RDWR | O_CLOEXEC);
	if (t->memfd < 0)
		return ibcr_fail_errno(e, errno, "pid %d: opening %s", (int)t->pid, path);
	return 0;
}

void target_release(struct target *t, int how)
{
	if (t->released)
		return;
	if (how == RELEASE_KILL && t->nthreads)
		kill(t->pid, SIGKILL);
	if (how == RELEASE_STOP)
		kill(t->pid, SIGSTOP);
	else if (how == RELEASE_RUN && t->stopped)	/* by its own stop signal */
		kill(t->pid, t->stop_sig ? t->stop_sig : SIGSTOP);
	for (uint32_t i = 0; i < t->nthreads; i++)
		if (t->seized[i])
			ptrace(PTRACE_DETACH, t->tids[i], NULL, NULL);
	t->released = 1;
}

/*
 * After --kill: until the process has let go of its files (it is a
 * zombie, or gone). The kernel frees a process's memory before it
 * closes its descriptors, so a large one still holds its ports for a
 * while after SIGKILL; a restart right after the saver returns must not
 * find them taken by the original.
 */
void target_wait_dead(const struct target *t)
{
	char path[64], buf[512];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)t->pid);
	for (int i = 0; i < 60000; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		const char *state;
		struct timespec ms = { 0, 1000000 };

		if (fd >= 0)
			close(fd);
		if (n <= 0)
			return;		/* reaped */
		buf[n] = 0;
		state = strrchr(buf, ')');
		if (!state || state[1] != ' ' || state[2] == 'Z' || state[2] == 'X')
			return;
		nanosleep(&ms, NULL);
	}
}
