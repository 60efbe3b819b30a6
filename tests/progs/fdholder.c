// SPDX-License-Identifier: MIT
/*
 * Holds a descriptor of a kind the saver does not support on fd 3 and
 * ticks, so that the test can check a refused checkpoint leaves it
 * running. KIND is "pidfd" (of itself), "eventfd" (supported since),
 * or "socketpair" (its other end on fd 4).
 *
 *   fdholder KIND [TICKS [MS]]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long ticks = argc > 2 ? atol(argv[2]) : -1;
	long ms = argc > 3 ? atol(argv[3]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	int sv[2];

	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "pidfd")) {
		if (syscall(SYS_pidfd_open, getpid(), 0) != 3)
			return 2;
	} else if (!strcmp(argv[1], "eventfd")) {
		if (eventfd(0, 0) != 3)
			return 2;
	} else if (!strcmp(argv[1], "socketpair")) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || sv[0] != 3)
			return 2;
	} else {
		return 2;
	}
	for (long n = 0; ticks < 0 || n < ticks; n++) {
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
