// SPDX-License-Identifier: MIT
/*
 * lazyparent MS PROGRAM [ARG...]: runs PROGRAM as its child and, once the
 * child has died, reaps it only MS milliseconds later: meanwhile its
 * zombie holds its pid, as with a parent that is slow to wait. Prints
 * "child PID" at the start, "reaped" at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long ms = argc > 2 ? atol(argv[1]) : -1;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	siginfo_t si;
	pid_t pid;

	if (ms < 0) {
		fprintf(stderr, "usage: lazyparent MS PROGRAM [ARG...]\n");
		return 2;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		execv(argv[2], argv + 2);
		_exit(127);
	}
	fprintf(stderr, "child %d\n", (int)pid);
	/* dead, not reaped: WNOWAIT leaves the zombie */
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	nanosleep(&ts, NULL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	fprintf(stderr, "reaped\n");
	return 0;
}
