// SPDX-License-Identifier: MIT
/*
 * Terminals above fd 2, as a shell holds them: fd 3 opened as /dev/tty,
 * fd 255 a dup of fd 2 (bash's), fd 10 the terminal opened by its name.
 * Run on a terminal (e.g. under script(1)); each tick it checks that
 * fds 3, 10 and 255 are the terminal of fd 0 (TIOCGDEV) and that fd 255
 * still shares fd 2's open file description (kcmp), then writes
 * "tick N pid P" on fd 1 and "fd3 N", "fd10 N", "fd255 N" on the others.
 * Mismatch: "FAIL ..." on fd 1 and exit 1. Writes its pid to PIDFILE.
 *
 *   ttyfd PIDFILE TICKS MS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define KCMP_FILE 0

static void fail(const char *what)
{
	printf("FAIL %s\n", what);
	fflush(stdout);
	exit(1);
}

static unsigned tty_dev(int fd)
{
	unsigned dev = 0;

	if (ioctl(fd, TIOCGDEV, &dev))
		return 0;
	return dev;
}

static void setup(const char *pidfile)
{
	char *name = ttyname(0);
	FILE *f;
	int fd;

	if (!name || open("/dev/tty", O_RDWR) != 3 || fcntl(2, F_DUPFD, 255) != 255)
		fail("cannot set up the terminal fds (run on a terminal)");
	fd = open(name, O_RDWR | O_NOCTTY);
	if (fd < 0 || dup2(fd, 10) != 10 || close(fd))
		fail("cannot open the terminal by name");
	f = fopen(pidfile, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		fail("cannot write the pid file");
}

static void check(void)
{
	static const int fds[] = { 3, 10, 255 };
	unsigned dev = tty_dev(0);
	long k;

	if (!dev)
		fail("fd 0 is not a terminal");
	for (int i = 0; i < 3; i++)
		if (tty_dev(fds[i]) != dev) {
			printf("FAIL fd %d is not the terminal of fd 0\n", fds[i]);
			fflush(stdout);
			exit(1);
		}
	k = syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, 2, 255);
	if (k != 0 && !(k < 0 && (errno == ENOSYS || errno == EPERM)))
		fail("fd 255 no longer shares fd 2's open file description");
}

int main(int argc, char **argv)
{
	long ticks, ms;

	if (argc != 4) {
		fprintf(stderr, "usage: ttyfd PIDFILE TICKS MS\n");
		return 2;
	}
	ticks = atol(argv[2]);
	ms = atol(argv[3]);
	setup(argv[1]);
	for (long n = 0; n < ticks; n++) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

		check();
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
		dprintf(3, "fd3 %ld\n", n);
		dprintf(10, "fd10 %ld\n", n);
		dprintf(255, "fd255 %ld\n", n);
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
