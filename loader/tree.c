// SPDX-License-Identifier: MIT
/*
 * Processes come back as the tree they were: the loader forks the roots
 * (processes whose parent is not in the image); every process, before it
 * restores itself, forks its own children, so parent and child are what
 * they were (with the saved pids where permitted). A child that was a
 * zombie is forked and exits at once with its saved status, for its
 * parent to reap. Sessions and process groups are set up again below the
 * roots; a root stays in the loader's own, so that it runs in the
 * foreground of the shell that restarted it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdkinds.h"
#include "loader.h"

void run_child(struct restore *rs);

void tree_link(struct job *j, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		j[i].parent = -1;
		for (uint32_t k = 0; k < n; k++)
			if (k != i && j[k].ps.rec.pid == j[i].ps.rec.ppid &&
			    !(j[k].ps.rec.flags & IBCR_PROCF_ZOMBIE))
				j[i].parent = (int)k;
	}
}

static const struct job *root_of(const struct job *j, uint32_t i)
{
	while (j[i].parent >= 0)
		i = (uint32_t)j[i].parent;
	return &j[i];
}

/*
 * Below a root: a session leader starts its session again, a group
 * leader its group; a member of another group joins it (the root's group
 * is the loader's now). What fails here (pids not kept) is said, not fatal.
 */
static void set_groups(const struct job *j, uint32_t i, pid_t loader_pgid, int verbose)
{
	const struct ibcr_proc *r = &j[i].ps.rec, *parent = &j[j[i].parent].ps.rec;
	const struct ibcr_proc *root = &root_of(j, i)->ps.rec;
	int rc = 0;

	if (r->sid == r->pid && r->sid != parent->sid)
		rc = setsid() < 0 ? -1 : 0;
	else if (r->pgid == r->pid && r->pgid != parent->pgid)
		rc = setpgid(0, 0);
	else if (r->pgid != parent->pgid)
		rc = setpgid(0, r->pgid == root->pgid ? loader_pgid : r->pgid);
	if (rc && verbose)
		fprintf(stderr, "restart-loader: pid %d: could not restore its session "
			"or process group (%s)\n", (int)r->pid, strerror(errno));
}

/*
 * Dies the way the zombie did. The signal goes by a raw tgkill to the
 * tid the kernel gives: after the raw clone3 of fork_as, musl's cached
 * TID is still the loader's, and raise() would kill the loader. No core
 * is dumped (not dumpable, no core size): the saver refuses a zombie
 * that dumped one, the only status that would need it.
 */
static __attribute__((noreturn)) void become_zombie(const struct job *j, uint32_t i,
						    pid_t loader_pgid, int verbose)
{
	const struct job *x = &j[i];
	int st = x->ps.rec.exit_status;

	set_groups(j, i, loader_pgid, verbose);	/* a zombie keeps its group */
	prctl(PR_SET_NAME, x->ps.rec.comm, 0, 0, 0);	/* what ps shows of it */
	if (WIFSIGNALED(st)) {
		struct rlimit none = { 0, 0 };
		sigset_t all;

		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		setrlimit(RLIMIT_CORE, &none);
		signal(WTERMSIG(st), SIG_DFL);
		sigfillset(&all);
		sigdelset(&all, WTERMSIG(st));
		sigprocmask(SIG_SETMASK, &all, NULL);
		syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), WTERMSIG(st));
		for (;;)
			pause();	/* a signal that stops (SIGSTOP...) kills no one: exit below */
	}
	_exit(WEXITSTATUS(st));
}

/* Tells the loader our pid: it did not fork us when we are not a root. */
static void announce(const struct job *x)
{
	struct st_child msg = { ST_CHILD, (int32_t)getpid() };

	if (write(x->rs.status_fd, &msg, sizeof(msg)) != sizeof(msg))
		_exit(127);
}

static int is_leader(const struct job *x)
{
	return x->ps.rec.pgid == x->ps.rec.pid;
}

static __attribute__((noreturn)) void run_process(struct job *j, uint32_t n, uint32_t i,
						  pid_t loader_pgid, int verbose);

/*
 * A group leader's group is made at once, by us as well as by itself
 * (whoever is first), so that a sibling forked next can join it; a
 * zombie has set its group up once it is one.
 */
static void fork_child(struct job *j, uint32_t n, uint32_t c, pid_t loader_pgid, int verbose)
{
	long slack = attrs_fork_slack(&j[c].ps);
	const struct ibcr_proc *r = &j[c].ps.rec;
	siginfo_t si;
	struct ibcr_err e = { "" };
	pid_t pid = fork_exact(&j[c], group_clone_flags(&j[c]), &e);

	if (pid < 0)
		child_fail(j[j[c].parent].rs.status_fd, &e);
	j[c].rs.exact_pid = 1;
	j[c].child = pid;	/* known here: a pidfd of it needs it (fdpidfd.c) */
	if (pid == 0) {
		if (is_zombie(&j[c]))
			become_zombie(j, c, loader_pgid, verbose);
		run_process(j, n, c, loader_pgid, verbose);
	}
	attrs_fork_slack_done(slack);
	if (j[c].rs.exact_pid && is_leader(&j[c]) && r->sid != r->pid &&
	    r->pgid != j[j[c].parent].ps.rec.pgid)
		setpgid(pid, pid);
	if (is_zombie(&j[c]))
		while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
			;
}

/*
 * A root that led a session without a terminal (a daemon) leads one
 * again: in the loader's, the terminal's signals would reach it. Any
 * other root joins the loader's group, the terminal's foreground.
 */
static int daemon_root(const struct ibcr_proc *r)
{
	return r->sid == r->pid && (r->flags & IBCR_PROCF_NOTTY);
}

static __attribute__((noreturn)) void run_process(struct job *j, uint32_t n, uint32_t i,
						  pid_t loader_pgid, int verbose)
{
	struct ibcr_err e = { "" };

	announce(&j[i]);
	group_wait_placed(&j[i].rs);	/* sharing a table: once it is placed */
	if (j[i].parent >= 0)
		set_groups(j, i, loader_pgid, verbose);
	else if (daemon_root(&j[i].ps.rec) && setsid() < 0 && verbose)
		fprintf(stderr, "restart-loader: pid %d: could not make its session again (%s)\n",
			(int)j[i].ps.rec.pid, strerror(errno));
	/* a session's terminal before its members: they get it when forked */
	if (pty_ctty_take(&j[i].rs, &e))
		child_fail(j[i].rs.status_fd, &e);
	cow_build_or_fail(j, n, i);	/* before the children inherit it */
	/* group leaders first: the others may join their groups */
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t c = 0; c < n; c++)
			if (j[c].parent == (int)i && is_leader(&j[c]) == !pass)
				fork_child(j, n, c, loader_pgid, verbose);
	run_child(&j[i].rs);
	_exit(127);	/* not reached */
}

static int high_pipe(int p[2], int base)
{
	for (int k = 0; k < 2; k++) {
		int fd = fcntl(p[k], F_DUPFD_CLOEXEC, base);

		if (fd < 0)
			return -1;
		close(p[k]);
		p[k] = fd;
	}
	return 0;
}

int tree_start(struct job *j, uint32_t n, int base, int verbose)
{
	struct ibcr_err e = { "" };
	pid_t pgid = getpgrp();
	long slack;

	/* every process's pipes first: descendants are forked far from here */
	for (uint32_t i = 0; i < n; i++) {
		int status[2], control[2];

		j[i].status_fd = j[i].control_fd = j[i].rs.status_fd = j[i].rs.control_fd = -1;
		if (is_zombie(&j[i]))
			continue;
		if (pipe2(status, O_CLOEXEC) || pipe2(control, O_CLOEXEC) ||
		    high_pipe(status, base) || high_pipe(control, base)) {
			perror("restart-loader: pipe");
			return -1;
		}
		j[i].status_fd = status[0];
		j[i].rs.status_fd = status[1];
		j[i].control_fd = control[1];
		j[i].rs.control_fd = control[0];
	}
	if (group_pipes(j, n, base)) {
		perror("restart-loader: the pipes of a shared descriptor table");
		return -1;
	}
	fflush(NULL);
	for (uint32_t i = 0; i < n; i++) {
		if (j[i].parent >= 0 || is_zombie(&j[i]))
			continue;	/* a zombie without parent here: nobody to reap it */
		slack = attrs_fork_slack(&j[i].ps);
		j[i].child = fork_root(&j[i], &j[i].rs.exact_pid, &e);
		if (j[i].child < 0) {
			fprintf(stderr, "restart-loader: %s\n", e.msg);
			return -1;
		}
		if (j[i].child == 0)
			run_process(j, n, i, pgid, verbose);
		attrs_fork_slack_done(slack);
	}
	for (uint32_t i = 0; i < n; i++) {
		if (j[i].rs.status_fd >= 0)
			close(j[i].rs.status_fd);
		if (j[i].rs.control_fd >= 0)
			close(j[i].rs.control_fd);
		group_close(&j[i].rs);	/* a leader gone: its members are told by EOF */
	}
	return 0;
}
