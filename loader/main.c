// SPDX-License-Identifier: MIT
/*
 * restart-loader: bring back the processes of an image.
 *
 *   restart-loader [-v] IMAGE
 *
 * The image is checked before anything changes. The loader then forks
 * the process to restore (with its saved PID where permitted), which
 * rebuilds itself from the image, and stays as its parent: it finishes
 * the hand-over (finalize.c), waits, and exits with its exit status, so
 * the restored program runs in the foreground of the calling shell.
 */
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loader.h"

void run_child(struct restore *rs);

static void usage(FILE *f)
{
	fprintf(f, "usage: restart-loader [-v] IMAGE\n"
		   "  -v  say what is done (PID restore, hand-over)\n");
}

/* fork() with the saved PID when permitted (CAP_CHECKPOINT_RESTORE). */
static pid_t fork_as(pid_t want, int *exact, int verbose)
{
	struct clone_args ca = { .exit_signal = SIGCHLD };
	pid_t tid = want;
	long pid;

	ca.set_tid = (uint64_t)(uintptr_t)&tid;
	ca.set_tid_size = 1;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid >= 0) {
		*exact = 1;
		return (pid_t)pid;
	}
	if (errno == EEXIST)
		fprintf(stderr, "restart-loader: pid %d is in use; restoring with a new "
			"pid\n", (int)want);
	else if (errno == EPERM || verbose)
		fprintf(stderr, "restart-loader: not permitted to restore pid %d (%s); "
			"restoring with a new pid\n", (int)want, strerror(errno));
	*exact = 0;
	return fork();
}

static int read_status(int fd, char *msg, size_t size)
{
	ssize_t n;

	do
		n = read(fd, msg, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		return -1;
	if (msg[0] == 'E') {
		n = read(fd, msg, size - 1);
		msg[n > 0 ? n : 0] = 0;
		return 'E';
	}
	return msg[0];
}

/* Exits the way the restored process did. */
static __attribute__((noreturn)) void exit_like(int st)
{
	if (WIFSIGNALED(st)) {
		/* no core dump of ours: the program's own was made, or not */
		struct rlimit none = { 0, 0 };

		setrlimit(RLIMIT_CORE, &none);
		signal(WTERMSIG(st), SIG_DFL);
		raise(WTERMSIG(st));
		_exit(128 + WTERMSIG(st));
	}
	_exit(WEXITSTATUS(st));
}

static int wait_child(pid_t child)
{
	int st;

	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR)
			return 127;
	return st;
}

static int supervise(pid_t child, int status_fd, int control_fd, int verbose)
{
	struct ibcr_err e = { "" };
	char msg[600];
	int c = read_status(status_fd, msg, sizeof(msg));

	if (c != 'R') {
		int st = wait_child(child);

		if (c == 'E')
			fprintf(stderr, "restart-loader: %s\n", msg);
		else
			fprintf(stderr, "restart-loader: restore failed: the new process "
				"ended (status %#x) before it was ready\n", st);
		return 1;
	}
	if (finalize(child, status_fd, control_fd, verbose, &e))
		fprintf(stderr, "restart-loader: %s\n", e.msg);
	close(status_fd);
	close(control_fd);
	/* Terminal signals reach the restored process itself; we just wait. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	exit_like(wait_child(child));
}

static int load(const char *path, struct img_reader *r, struct ibcr_process_state *ps,
		struct ibcr_err *e)
{
	if (imgr_open(r, path, e))
		return -1;
	if (r->hdr.arch != ibcr_host_arch())
		return ibcr_fail(e, "image %s is for %s; this is %s", path,
				 ibcr_arch_name(r->hdr.arch), ibcr_arch_name(ibcr_host_arch()));
	if (r->hdr.page_size != (uint32_t)getpagesize())
		return ibcr_fail(e, "image %s has %u-byte pages; this system %d", path,
				 r->hdr.page_size, getpagesize());
	if (r->hdr.nprocs != 1)
		return ibcr_fail(e, "image %s holds %u processes: restoring several is "
				 "not supported yet", path, r->hdr.nprocs);
	return imgr_load_process(r, 0, ps, e);
}

int main(int argc, char **argv)
{
	struct img_reader r;
	struct ibcr_process_state ps;
	struct restore rs = { .r = &r, .ps = &ps, .exe_fd = -1 };
	struct ibcr_err e = { "" };
	int status[2], control[2], opt;
	pid_t child;

	while ((opt = getopt(argc, argv, "vh")) != -1) {
		if (opt == 'v')
			rs.verbose = 1;
		else {
			usage(opt == 'h' ? stdout : stderr);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (load(argv[optind], &r, &ps, &e) || preflight(&rs, &e)) {
		fprintf(stderr, "restart-loader: %s\n", e.msg);
		return 1;
	}
	rs.set_creds = geteuid() == 0 &&
		       (ps.rec.uid[0] || ps.rec.uid[1] || ps.rec.gid[0] || ps.rec.gid[1]);
	if (pipe(status) || pipe(control)) {
		perror("restart-loader: pipe");
		return 1;
	}
	fflush(NULL);
	child = fork_as(ps.rec.pid, &rs.exact_pid, rs.verbose);
	if (child < 0) {
		perror("restart-loader: fork");
		return 1;
	}
	if (child == 0) {
		close(status[0]);
		close(control[1]);
		rs.status_fd = status[1];
		rs.control_fd = control[0];
		run_child(&rs);
	}
	close(status[1]);
	close(control[0]);
	return supervise(child, status[0], control[1], rs.verbose);
}
