// SPDX-License-Identifier: MIT
/*
 * pidhog PID: holds PID (a process id, or a thread id of a process gone)
 * with a child made with exactly that id (clone3 set_tid; root), which
 * sleeps until killed, so that a restore finds that id taken. Prints
 * "hog PID" once it holds it, then waits for the child. Exit 1 if the
 * id cannot be had.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct clone_args ca = { .exit_signal = SIGCHLD };
	pid_t want = argc == 2 ? (pid_t)atoi(argv[1]) : 0, tid;
	long pid;

	if (want <= 0) {
		fprintf(stderr, "usage: pidhog PID\n");
		return 2;
	}
	tid = want;
	ca.set_tid = (uint64_t)(uintptr_t)&tid;
	ca.set_tid_size = 1;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		fprintf(stderr, "pidhog: pid %d: %s\n", (int)want, strerror(errno));
		return 1;
	}
	if (pid == 0) {
		for (;;)
			pause();
	}
	printf("hog %ld\n", pid);
	fflush(stdout);
	while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}
