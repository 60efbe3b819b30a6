// SPDX-License-Identifier: MIT
/*
 * A descriptor leading outside the image, as a process started by a job
 * scheduler or ssh holds one: a pipe to a helper process that this
 * program forks and that is not checkpointed with it (saver without
 * --tree); the helper copies what it reads to "helper.out". The pipe's
 * write end is at fd FD. After the restore (gate.h) MODE says what must
 * be at FD (saver --external-fd FD:MODE):
 *
 *   close    nothing (EBADF)
 *   null     /dev/null, write-only as the pipe end was
 *   inherit  restart-loader's own fd FD: "inherited by PID" is written to it
 *   std      the pipe is also fd 2: FD must share fd 2's open file
 *            description after the restore (a std stream, rebound), and
 *            "via fd FD" is written through it
 *   none     no check (the checkpoint is refused)
 *
 *   outside MODE FD
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gate.h"

#define KCMP_FILE 0

static void helper(int r)
{
	char b[256];
	ssize_t k;
	FILE *out = fopen("helper.out", "w");

	if (!out)
		_exit(1);
	while ((k = read(r, b, sizeof(b))) > 0) {
		fwrite(b, 1, (size_t)k, out);
		fflush(out);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[1] : "";
	int fd = argc > 2 ? atoi(argv[2]) : -1, p[2];
	char msg[64];
	struct stat st;
	pid_t h;

	setvbuf(stdout, NULL, _IOLBF, 0);
	check(fd > 2 && pipe(p) == 0, "usage: outside MODE FD (FD > 2)");
	check((h = fork()) >= 0, "fork");
	if (!h) {
		close(p[1]);
		helper(p[0]);
	}
	close(p[0]);
	check(dup2(p[1], fd) == fd, "dup2 to fd %d", fd);
	if (!strcmp(mode, "std"))
		check(dup2(p[1], 2) == 2, "dup2 to fd 2");
	close(p[1]);
	check(write(fd, "before\n", 7) == 7, "writing to the helper");
	gate_wait();
	if (!strcmp(mode, "close")) {
		check(fcntl(fd, F_GETFD) < 0, "fd %d is open after the restore", fd);
	} else if (!strcmp(mode, "null")) {
		check(fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3),
		      "fd %d is not /dev/null", fd);
		check((fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY, "fd %d is not write-only", fd);
		check(write(fd, "x", 1) == 1, "writing to /dev/null");
	} else if (!strcmp(mode, "inherit")) {
		snprintf(msg, sizeof(msg), "inherited by %d\n", (int)getpid());
		check(write(fd, msg, strlen(msg)) == (ssize_t)strlen(msg), "writing to fd %d", fd);
	} else if (!strcmp(mode, "std")) {
		check(syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, 2, fd) == 0,
		      "fd %d does not share fd 2's open file description", fd);
		snprintf(msg, sizeof(msg), "via fd %d\n", fd);
		check(write(fd, msg, strlen(msg)) == (ssize_t)strlen(msg), "writing to fd %d", fd);
	} else {
		check(!strcmp(mode, "none"), "unknown mode %s", mode);
		check(write(fd, "after\n", 6) == 6, "writing to the helper after the refusal");
	}
	gate_done();
	return 0;
}
