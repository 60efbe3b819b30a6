// SPDX-License-Identifier: MIT
/*
 * Two processes sharing one descriptor table (clone with CLONE_FILES):
 * the parent P and its child C. After the restore (gate.h) the table is
 * still one: a file C opens is P's at once, a descriptor P closes is
 * gone for C, kcmp(KCMP_FILES) says they share, and the descriptors of
 * before (a file "a", a pipe between them) are still there for both.
 * C reports through its exit status.
 *
 *   fdtable
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gate.h"

#define KCMP_FILES 2

static int to_c[2], to_p[2], a_fd;
static pid_t parent;

static int child(void *arg)
{
	int fd;
	char cmd;

	(void)arg;
	for (;;) {
		if (read(to_c[0], &cmd, 1) != 1)
			return 10;
		if (cmd == 'o') {	/* open c, tell its number */
			fd = open("c", O_CREAT | O_RDWR, 0644);
			if (fd < 0 || write(to_p[1], &fd, sizeof(fd)) != sizeof(fd))
				return 11;
		} else if (cmd == 'x') {	/* the parent closed a: gone here too */
			if (fcntl(a_fd, F_GETFD) >= 0)
				return 12;
			if (syscall(SYS_kcmp, getpid(), parent, KCMP_FILES, 0, 0) != 0)
				return 13;
			return 0;
		}
	}
}

int main(void)
{
	static char stack[256 << 10];
	struct stat s1, s2;
	int fd, st;
	pid_t c;
	char x = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parent = getpid();
	check(pipe(to_c) == 0 && pipe(to_p) == 0, "pipes");
	check((a_fd = open("a", O_CREAT | O_RDWR, 0644)) >= 0 && write(a_fd, "a", 1) == 1, "a");
	c = clone(child, stack + sizeof(stack), CLONE_FILES | SIGCHLD, NULL);
	check(c > 0, "clone");
	check(write(to_c[1], "o", 1) == 1 && read(to_p[0], &fd, sizeof(fd)) == sizeof(fd),
	      "the child's first open");
	check(fcntl(fd, F_GETFD) >= 0, "the child's fd %d is not the parent's", fd);
	gate_wait();
	check(syscall(SYS_kcmp, getpid(), c, KCMP_FILES, 0, 0) == 0,
	      "the two processes do not share their descriptor table after the restore");
	check(pread(a_fd, &x, 1, 0) == 1 && x == 'a', "file a");
	check(write(to_c[1], "o", 1) == 1 && read(to_p[0], &fd, sizeof(fd)) == sizeof(fd),
	      "the child's open after the restore");
	check(fstat(fd, &s1) == 0 && stat("c", &s2) == 0 && s1.st_ino == s2.st_ino,
	      "the child's fd %d after the restore is not the parent's", fd);
	check(close(a_fd) == 0 && write(to_c[1], "x", 1) == 1, "closing a");
	check(waitpid(c, &st, 0) == c && WIFEXITED(st), "waiting for the child");
	check(WEXITSTATUS(st) == 0, "the child's check %d failed", WEXITSTATUS(st));
	gate_done();
	return 0;
}
