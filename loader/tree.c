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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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

static int is_zombie(const struct job *x)
{
	return x->ps.rec.flags & IBCR_PROCF_ZOMBIE;
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

static __attribute__((noreturn)) void become_zombie(const struct job *x)
{
	int st = x->ps.rec.exit_status;

	prctl(PR_SET_NAME, x->ps.rec.comm, 0, 0, 0);	/* what ps shows of it */
	if (WIFSIGNALED(st)) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(WTERMSIG(st), SIG_DFL);
		raise(WTERMSIG(st));
	}
	_exit(WEXITSTATUS(st));
}

/* Tells the loader our pid: it did not fork us when we are not a root. */
static void announce(const struct job *x)
{
	char msg[5] = { 'C' };
	pid_t pid = getpid();

	memcpy(msg + 1, &pid, 4);
	if (write(x->rs.status_fd, msg, 5) != 5)
		_exit(127);
}

static __attribute__((noreturn)) void run_process(struct job *j, uint32_t n, uint32_t i,
						  pid_t loader_pgid, int verbose)
{
	announce(&j[i]);
	if (j[i].parent >= 0)
		set_groups(j, i, loader_pgid, verbose);
	for (uint32_t c = 0; c < n; c++) {
		pid_t pid;

		if (j[c].parent != (int)i)
			continue;
		pid = fork_as(&j[c], &j[c].rs.exact_pid, verbose);
		if (pid < 0) {
			perror("restart-loader: fork");
			_exit(127);
		}
		if (pid == 0) {
			if (is_zombie(&j[c]))
				become_zombie(&j[c]);
			run_process(j, n, c, loader_pgid, verbose);
		}
	}
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
	pid_t pgid = getpgrp();

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
	fflush(NULL);
	for (uint32_t i = 0; i < n; i++) {
		if (j[i].parent >= 0 || is_zombie(&j[i]))
			continue;	/* a zombie without parent here: nobody to reap it */
		j[i].child = fork_as(&j[i], &j[i].rs.exact_pid, verbose);
		if (j[i].child < 0) {
			perror("restart-loader: fork");
			return -1;
		}
		if (j[i].child == 0)
			run_process(j, n, i, pgid, verbose);
	}
	for (uint32_t i = 0; i < n; i++) {
		if (j[i].rs.status_fd >= 0)
			close(j[i].rs.status_fd);
		if (j[i].rs.control_fd >= 0)
			close(j[i].rs.control_fd);
	}
	return 0;
}
