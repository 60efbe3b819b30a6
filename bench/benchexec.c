// SPDX-License-Identifier: MIT
/*
 * benchexec: run one command and say how long it took and how much
 * memory it used, precisely enough for `make bench`.
 *
 *   benchexec [-n] [-o RESULT] [-s STAMP] [-p PIDFILE] -- COMMAND [ARG...]
 *
 * The command gets only fds 0-2 (the harness's shell may hold others,
 * which the saver would refuse or CRIU would dump).
 *
 * -n          no fork: write PIDFILE (our own pid) and exec the command
 *             (to start a workload in the background)
 * -s STAMP    CLOCK_REALTIME (ns) just before the fork, written to STAMP:
 *             the workload's "gap ... end_rt_ns=" lines use the same clock,
 *             so "restore until the program runs again" is end_rt_ns -
 *             stamp (not CLOCK_MONOTONIC: CRIU restores into a time
 *             namespace)
 * -p PIDFILE  the command's pid, written once it is started (the harness
 *             reads /proc/PID/status of a restart-loader while it waits
 *             for its program)
 * -o RESULT   on exit: "wall_ms=X maxrss_kb=R status=S" (wait4's
 *             ru_maxrss: the command's own peak RSS, or its largest reaped
 *             child's if that is larger; fine for saver and criu dump, not
 *             for restart-loader, whose child is the restored program)
 *
 * Exits with the command's status (128+N if killed by signal N).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void write_file(const char *path, const char *text)
{
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		fprintf(stderr, "benchexec: %s: %s\n", path, strerror(errno));
		exit(125);
	}
}

static void close_fds(void)
{
	if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0)
		return;
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
}

static long long rt_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *out = NULL, *stamp = NULL, *pidfile = NULL;
	int nofork = 0;
	char buf[256];
	struct rusage ru;
	long long t0, t1, rt0;
	int c, st, rc;
	pid_t pid;

	while ((c = getopt(argc, argv, "+no:s:p:")) != -1) {
		switch (c) {
		case 'n': nofork = 1; break;
		case 'o': out = optarg; break;
		case 's': stamp = optarg; break;
		case 'p': pidfile = optarg; break;
		default: goto usage;
		}
	}
	if (optind >= argc)
		goto usage;
	if (nofork) {
		snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
		write_file(pidfile, buf);
		close_fds();
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "benchexec: %s: %s\n", argv[optind], strerror(errno));
		return 127;
	}

	rt0 = rt_ns();
	t0 = now_ns();
	pid = fork();
	if (pid < 0) {
		perror("benchexec: fork");
		return 125;
	}
	if (pid == 0) {
		close_fds();
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "benchexec: %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	snprintf(buf, sizeof(buf), "%lld\n", rt0);
	write_file(stamp, buf);
	snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	write_file(pidfile, buf);
	while (wait4(pid, &st, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("benchexec: wait4");
			return 125;
		}
	}
	t1 = now_ns();
	rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	snprintf(buf, sizeof(buf), "wall_ms=%.1f maxrss_kb=%ld status=%d\n",
		 (double)(t1 - t0) / 1e6, ru.ru_maxrss, rc);
	write_file(out, buf);
	return rc;
usage:
	fprintf(stderr, "usage: benchexec [-n] [-o RESULT] [-s STAMP] [-p PIDFILE] -- COMMAND [ARG...]\n");
	return 2;
}
