// SPDX-License-Identifier: MIT
/*
 * While the lazy fill runs, a fork must wait for it: the child's copy of
 * a page not yet there would be a zero page (the userfaultfd is not
 * inherited), and its fork event could not be made exact (the kernel
 * zaps a MADV_DONTNEED range after its event is read, so a fork in
 * another thread may see the range before or after; docs/design-notes.md,
 * "Lazy restore"). So every thread stops at every system call entry
 * until the fill ends; a clone without CLONE_VM (fork, clone3 too) is
 * kept at its entry until then. Threads made meanwhile are traced from
 * their start (PTRACE_O_TRACECLONE), signals pass on, group stops are
 * kept (PTRACE_LISTEN). execve needs no holding: the old memory goes,
 * the fill ends with it.
 */
#include <errno.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/ptrace.h>
#include <linux/sched.h>

#include "buf.h"
#include "lazy.h"
#include "lazyfill.h"

#define OPTS (PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | PTRACE_O_TRACEVFORK | \
	      PTRACE_O_TRACEEXEC)

enum { T_RUN, T_HELD, T_GONE };

struct tr {
	pid_t tid;
	int state;
};

struct hold {
	struct tr *t;
	size_t n, cap;
};

static struct tr *find(struct hold *h, pid_t tid, int add)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->t[i].tid == tid)
			return &h->t[i];
	if (!add)
		return NULL;
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 16;
		h->t = xrealloc(h->t, h->cap * sizeof(*h->t));
	}
	h->t[h->n] = (struct tr){ tid, T_RUN };
	return &h->t[h->n++];
}

static void on_wake(int sig)
{
	(void)sig;
}

/* A syscall entry that copies the mm (fork, vfork without CLONE_VM, clone3). */
static int copies_mm(pid_t tid)
{
	struct ptrace_syscall_info si;
	uint64_t flags;

	if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof(si), &si) <= 0 ||
	    si.op != PTRACE_SYSCALL_INFO_ENTRY)
		return 0;
#ifdef SYS_fork	/* aarch64 has only clone and clone3 */
	if (si.entry.nr == SYS_fork)
		return 1;
#endif
	if (si.entry.nr == SYS_clone)
		return !(si.entry.args[0] & CLONE_VM);
	if (si.entry.nr == SYS_clone3) {
		struct iovec l = { &flags, sizeof(flags) };
		struct iovec r = { (void *)(uintptr_t)si.entry.args[0], sizeof(flags) };

		/* unreadable: the kernel will refuse it (EFAULT); hold it anyway */
		if (process_vm_readv(tid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(flags))
			return 1;
		return !(flags & CLONE_VM);
	}
	return 0;
}

/* One stop of a tracee, dealt with while the fill runs. */
static void on_stop(struct hold *h, struct tr *t, int st)
{
	int sig = WSTOPSIG(st), ev = st >> 16;
	unsigned long msg;

	if (sig == (SIGTRAP | 0x80)) {
		if (copies_mm(t->tid)) {
			t->state = T_HELD;	/* until the fill ends */
			return;
		}
		ptrace(PTRACE_SYSCALL, t->tid, NULL, NULL);
		return;
	}
	if (ev == PTRACE_EVENT_CLONE || ev == PTRACE_EVENT_VFORK) {
		if (!ptrace(PTRACE_GETEVENTMSG, t->tid, NULL, &msg))
			find(h, (pid_t)msg, 1);
		ptrace(PTRACE_SYSCALL, t->tid, NULL, NULL);
		return;
	}
	if (ev == PTRACE_EVENT_EXEC) {
		/* every other thread is gone; this one may have taken the leader's tid */
		for (size_t i = 0; i < h->n; i++)
			if (h->t[i].tid != t->tid)
				h->t[i].state = T_GONE;
		ptrace(PTRACE_SYSCALL, t->tid, NULL, NULL);
		return;
	}
	if (ev == PTRACE_EVENT_STOP) {
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
			ptrace(PTRACE_LISTEN, t->tid, NULL, NULL);
		else
			ptrace(PTRACE_SYSCALL, t->tid, NULL, NULL);
		return;
	}
	if (ev)
		sig = 0;
	ptrace(PTRACE_SYSCALL, t->tid, NULL, (void *)(uintptr_t)sig);	/* passed on */
}

/* A signal-delivery stop keeps its signal when we let go of the thread. */
static void let_go(struct tr *t, int st)
{
	int sig = WSTOPSIG(st);

	if (sig == (SIGTRAP | 0x80) || (st >> 16))
		sig = 0;
	ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(uintptr_t)sig);
	t->state = T_GONE;
}

static size_t left(const struct hold *h)
{
	size_t n = 0;

	for (size_t i = 0; i < h->n; i++)
		n += h->t[i].state != T_GONE;
	return n;
}

/* Stops of every thread until the fill ends (or every thread is gone). */
static void hold_loop(struct lazy *lz, struct hold *h, pid_t child, int *st, int *exited)
{
	int ending = 0;

	while (left(h)) {
		int s;
		pid_t pid;
		struct tr *t;

		if (!ending && lazy_done(lz)) {
			ending = 1;
			__atomic_store_n(&lz->heard, 1, __ATOMIC_RELEASE);
			for (size_t i = 0; i < h->n; i++)
				if (h->t[i].state == T_HELD)
					let_go(&h->t[i], SIGTRAP | 0x80);
				else if (h->t[i].state == T_RUN)
					ptrace(PTRACE_INTERRUPT, h->t[i].tid, NULL, NULL);
			continue;
		}
		pid = waitpid(-1, &s, __WALL);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		t = find(h, pid, !WIFEXITED(s) && !WIFSIGNALED(s));
		if (WIFEXITED(s) || WIFSIGNALED(s)) {
			if (t)
				t->state = T_GONE;
			if (pid == child) {
				*st = s;
				*exited = 1;
			}
			continue;
		}
		if (ending)
			let_go(t, s);
		else if (t->state != T_GONE)
			on_stop(h, t, s);
	}
}

void lazy_hold(struct lazy *lz, pid_t child, int *st, int *exited)
{
	struct sigaction sa = { .sa_handler = on_wake };
	struct hold h = { 0 };
	char path[64];
	DIR *d;
	struct dirent *e;

	if (!lz)
		return;
	sigaction(LAZY_WAKE_SIG, &sa, NULL);	/* no SA_RESTART: waitpid returns */
	snprintf(path, sizeof(path), "/proc/%d/task", (int)child);
	if ((d = opendir(path))) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				find(&h, (pid_t)atoi(e->d_name), 1);
		closedir(d);
	}
	for (size_t i = 0; i < h.n; i++)
		if (ptrace(PTRACE_SETOPTIONS, h.t[i].tid, NULL, (void *)(uintptr_t)OPTS) ||
		    ptrace(PTRACE_SYSCALL, h.t[i].tid, NULL, NULL))
			h.t[i].state = T_GONE;
	lazy_resumed(lz);
	hold_loop(lz, &h, child, st, exited);
	__atomic_store_n(&lz->heard, 1, __ATOMIC_RELEASE);
	free(h.t);
}
