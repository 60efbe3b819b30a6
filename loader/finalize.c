// SPDX-License-Identifier: MIT
/*
 * The parent's last act of a restore. The core cannot unmap the hole it
 * runs from, so the loader does it from outside, as CRIU does: it
 * attaches to every restored thread while they wait in the core (with
 * seccomp suspended when a thread is under seccomp: the filters it
 * installs last must not refuse this), lets all run to their
 * rt_sigreturn and then through it (out of the hole, into the
 * application), and makes the last one unmap the hole with a syscall
 * injected at the core's own syscall instruction before letting it go.
 * Without ptrace permission the threads resume alone and the hole stays
 * (refused under seccomp).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "buf.h"
#include "loader.h"
#include "ptrace_util.h"

static int read_child(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec l = { buf, n }, r = { (void *)(uintptr_t)addr, n };

	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

static int write_child(pid_t pid, uint64_t addr, const void *buf, size_t n)
{
	struct iovec l = { (void *)buf, n }, r = { (void *)(uintptr_t)addr, n };

	return process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

static int list_tasks(pid_t pid, pid_t **out, uint32_t *n)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		return -1;
	*n = 0;
	*out = NULL;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.') {
			*out = xrealloc(*out, sizeof(pid_t) * (*n + 1));
			(*out)[(*n)++] = (pid_t)atoi(d->d_name);
		}
	closedir(dir);
	return 0;
}

static void detach_all(pid_t *tids, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		ptrace(PTRACE_DETACH, tids[i], NULL, NULL);
}

/* Seizes every thread; 0 on success, -1 if tracing is not allowed. */
static int seize_all(pid_t *tids, uint32_t n, unsigned long opts, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < n; i++)
		if (pt_seize(tids[i], opts, e) || pt_interrupt(tids[i], e)) {
			detach_all(tids, i + 1);
			return -1;
		}
	return 0;
}

static int send_control(int fd, char c)
{
	return write(fd, &c, 1) == 1 ? 0 : -1;
}

/* The thread that installs the filters all threads share goes first. */
static void put_first(pid_t child, const struct plan *p, pid_t *tids, uint32_t n)
{
	struct plan_thread t;

	if (p->first_thread >= p->nthreads ||
	    read_child(child, (uint64_t)(uintptr_t)(p->threads + p->first_thread), &t,
		       sizeof(t)))
		return;
	for (uint32_t k = 1; k < n; k++)
		if (tids[k] == t.new_tid) {
			tids[k] = tids[0];
			tids[0] = t.new_tid;
		}
}

/*
 * Every thread to its rt_sigreturn's entry, the first as put_first says,
 * then each through it: no program code runs until every thread has set
 * its credentials and sandbox, which it does last. A thread that fails
 * there has exited: the process is killed, never left half restored.
 */
static int resume_all(pid_t child, pid_t *tids, uint32_t n, struct ibcr_err *e)
{
	for (int half = 0; half < 2; half++)
		for (uint32_t i = 0; i < n; i++)
			if (half ? pt_run_to_syscall_exit(tids[i], e) :
				   pt_run_until_syscall_entry(tids[i], SYS_rt_sigreturn, e)) {
				char why[sizeof(e->msg)];

				snprintf(why, sizeof(why), "%s", e->msg);
				kill(child, SIGKILL);
				return ibcr_fail(e, "restored process %d: %s, before it resumed "
						 "(setting its credentials or sandbox failed?): "
						 "killed", (int)child, why);
			}
	return 0;
}

int finalize(pid_t child, uint64_t plan_addr, int control_fd, int verbose, int keep,
	     struct ibcr_err *e)
{
	const struct core_blob_head *head = (const void *)ibcr_core_blob;
	uint64_t a[6] = { 0 };
	struct plan p;
	pid_t *tids = NULL;
	uint32_t n = 0;
	int32_t go = 1;
	long ret;
	unsigned long opts;

	if (!plan_addr || read_child(child, plan_addr, &p, sizeof(p)) || p.magic != PLAN_MAGIC)
		return ibcr_fail(e, "restored process %d: cannot read its restore plan",
				 (int)child);
	opts = PTRACE_O_TRACESYSGOOD | ((p.flags & PLAN_SECCOMP) ? PTRACE_O_SUSPEND_SECCOMP : 0);
	if (list_tasks(child, &tids, &n) || !n || n != p.nthreads || seize_all(tids, n, opts, e)) {
		/* without it, the filters would apply to our hand-over and refuse it */
		if (keep) {
			kill(child, SIGKILL);
			free(tids);
			return ibcr_fail(e, "restored process %d: cannot trace it (%s) to hold its "
					 "forks while its memory is filled lazily: killed", (int)child,
					 e->msg[0] ? e->msg : "threads missing");
		}
		if (p.flags & PLAN_SECCOMP) {
			kill(child, SIGKILL);
			free(tids);
			return ibcr_fail(e, "restored process %d: cannot trace it with seccomp "
					 "suspended (%s) to install its seccomp filters: killed",
					 (int)child, e->msg[0] ? e->msg : "threads missing");
		}
		if (verbose)
			fprintf(stderr, "restart-loader: cannot trace the restored process "
				"(%s); its restore area stays mapped at %#llx\n",
				e->msg[0] ? e->msg : "threads missing",
				(unsigned long long)p.hole_start);
		free(tids);
		return send_control(control_fd, CT_GO);
	}
	if (send_control(control_fd, CT_TRACED) ||
	    write_child(child, plan_addr + offsetof(struct plan, go), &go, sizeof(go))) {
		detach_all(tids, n);
		free(tids);
		return ibcr_fail(e, "restored process %d: cannot release its threads",
				 (int)child);
	}
	put_first(child, &p, tids, n);
	if (resume_all(child, tids, n, e)) {
		free(tids);
		return -1;
	}
	/* keep: a lazy fill runs, every thread stays ours, stopped (lazyhold.c) */
	for (uint32_t i = 0; i + 1 < n && !keep; i++)
		ptrace(PTRACE_DETACH, tids[i], NULL, NULL);
	a[0] = p.hole_start;
	a[1] = p.hole_len;
	if (pt_inject_syscall(tids[n - 1], p.hole_start + head->syscall_insn,
			      SYS_munmap, a, &ret, e) || ret)
		fprintf(stderr, "restart-loader: warning: restore area at %#llx could not "
			"be unmapped\n", (unsigned long long)p.hole_start);
	if (!keep)
		ptrace(PTRACE_DETACH, tids[n - 1], NULL, NULL);
	free(tids);
	return 0;
}
