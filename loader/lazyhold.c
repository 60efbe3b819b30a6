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
 * the fill ends with it. A tree's processes are held in one loop (the
 * loader's main thread traces them all: waitpid(-1) is the only wait
 * that sees every tracee), each thread let go when its own process's
 * fill ends.
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

/* A traced thread; li: its process's fill in hold.lz, -1 not known yet. */
struct tr {
	pid_t tid, tgid;	/* tgid 0: not known yet */
	int state, li;
};

struct hold {
	struct tr *t;
	size_t n, cap;
	struct lazy **lz;	/* the fills, one per process that has one */
	uint8_t *ended;		/* per fill: its threads let go */
	size_t nlz, nended;
};

static struct tr *find(struct hold *h, pid_t tid)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->t[i].tid == tid)
			return &h->t[i];
	return NULL;
}

/* The thread tid, added or told its fill and thread group where not known. */
static struct tr *add(struct hold *h, pid_t tid, int li, pid_t tgid)
{
	struct tr *t = find(h, tid);

	if (t) {
		if (t->li < 0)
			t->li = li;
		if (!t->tgid)
			t->tgid = tgid;
		return t;
	}
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 16;
		h->t = xrealloc(h->t, h->cap * sizeof(*h->t));
	}
	h->t[h->n] = (struct tr){ tid, tgid, T_RUN, li };
	return &h->t[h->n++];
}

/* The thread group of tid, from /proc; 0 when it cannot be read. */
static pid_t tgid_of(pid_t tid)
{
	char path[64], line[128];
	FILE *f;
	int tgid = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return (pid_t)tgid;
}

/* Its fill is over, and its thread let go (one of unknown fill: all are). */
static int ended(const struct hold *h, const struct tr *t)
{
	return t->li >= 0 ? h->ended[t->li] : h->nended == h->nlz;
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
		/* a thread, or a vfork's child (its mm too, its own group) */
		if (!ptrace(PTRACE_GETEVENTMSG, t->tid, NULL, &msg))
			add(h, (pid_t)msg, t->li, tgid_of((pid_t)msg));
		ptrace(PTRACE_SYSCALL, t->tid, NULL, NULL);
		return;
	}
	if (ev == PTRACE_EVENT_EXEC) {
		/*
		 * every other thread of its group is gone; this one may have
		 * taken the leader's tid (then its own vanished unreported)
		 */
		for (size_t i = 0; i < h->n; i++)
			if (h->t[i].tid != t->tid && h->t[i].tgid == t->tid)
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

/* Fill li is over: its threads are let go, held ones at once, others at their next stop. */
static void end_fill(struct hold *h, size_t li)
{
	h->ended[li] = 1;
	h->nended++;
	__atomic_store_n(&h->lz[li]->heard, 1, __ATOMIC_RELEASE);
	for (size_t i = 0; i < h->n; i++) {
		struct tr *t = &h->t[i];

		if (!ended(h, t))
			continue;
		if (t->state == T_HELD)
			let_go(t, SIGTRAP | 0x80);
		else if (t->state == T_RUN)
			ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
	}
}

/* A fill that ended since we looked: 1 when one did. */
static int ends_seen(struct hold *h)
{
	for (size_t li = 0; li < h->nlz; li++)
		if (!h->ended[li] && lazy_done(h->lz[li])) {
			end_fill(h, li);
			return 1;
		}
	return 0;
}

/* An end reaped: the thread's, and a root's status for wait_all. */
static void reaped(struct hold *h, struct job *j, uint32_t n, pid_t pid, int s)
{
	struct tr *t = find(h, pid);

	if (t)
		t->state = T_GONE;
	for (uint32_t k = 0; k < n; k++)
		if (j[k].child == pid && j[k].parent < 0 && !j[k].exited) {
			j[k].st = s;
			j[k].exited = 1;
		}
}

/* Stops of every thread until every fill ends (or every thread is gone). */
static void hold_loop(struct hold *h, struct job *j, uint32_t n)
{
	while (left(h)) {
		int s;
		pid_t pid;
		struct tr *t;

		if (ends_seen(h))
			continue;
		pid = waitpid(-1, &s, __WALL);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (WIFEXITED(s) || WIFSIGNALED(s)) {
			reaped(h, j, n, pid, s);
			continue;
		}
		/* a new thread's first stop may come before its creator's event */
		t = add(h, pid, -1, 0);
		if (ended(h, t))
			let_go(t, s);
		else if (t->state != T_GONE)
			on_stop(h, t, s);
	}
}

/* The threads of process `child`, traced with fill li: 0, or -1 if none could be. */
static void trace_threads(struct hold *h, pid_t child, int li)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	size_t from = h->n;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)child);
	if ((d = opendir(path))) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				add(h, (pid_t)atoi(e->d_name), li, child);
		closedir(d);
	}
	for (size_t i = from; i < h->n; i++)
		if (ptrace(PTRACE_SETOPTIONS, h->t[i].tid, NULL, (void *)(uintptr_t)OPTS) ||
		    ptrace(PTRACE_SYSCALL, h->t[i].tid, NULL, NULL))
			h->t[i].state = T_GONE;
}

void lazy_hold_all(struct job *j, uint32_t n)
{
	struct sigaction sa = { .sa_handler = on_wake };
	struct hold h = { 0 };

	h.lz = xcalloc(n + 1, sizeof(*h.lz));	// NOLINT(bugprone-sizeof-expression): of pointers
	h.ended = xcalloc(n + 1, 1);
	sigaction(LAZY_WAKE_SIG, &sa, NULL);	/* no SA_RESTART: waitpid returns */
	for (uint32_t k = 0; k < n; k++)
		if (j[k].lazy) {
			/* from now on its end is signalled to us (lazy.c, fill_main) */
			__atomic_store_n(&j[k].lazy->holder, (pid_t)syscall(SYS_gettid),
					 __ATOMIC_SEQ_CST);
			h.lz[h.nlz] = j[k].lazy;
			trace_threads(&h, j[k].child, (int)h.nlz++);
		}
	for (size_t li = 0; li < h.nlz; li++)
		lazy_resumed(h.lz[li]);
	if (h.nlz)
		hold_loop(&h, j, n);
	for (size_t li = 0; li < h.nlz; li++)
		__atomic_store_n(&h.lz[li]->heard, 1, __ATOMIC_RELEASE);
	free(h.t);
	free(h.lz);
	free(h.ended);
}
