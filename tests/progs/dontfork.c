// SPDX-License-Identifier: MIT
/*
 * A parent that cannot be snapshotted (a MADV_DONTFORK mapping of a file:
 * a fork would not copy it, and only anonymous ones are copied in the
 * freeze instead, so a live checkpoint keeps the tree stopped while it
 * writes) and a child that could be. The child checks at the end that it
 * has no child of its own: a snapshot the saver made of it and never
 * reaped would be one (a zombie without exit signal, seen with __WALL).
 *
 *   dontfork [TICKS [MS]]     prints "tick N", then "DONE" or "FAIL ..."
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int child(long ticks, long ms)
{
	int st;
	pid_t p;

	for (long i = 0; i < ticks; i++)
		sleep_ms(ms);
	p = waitpid(-1, &st, WNOHANG | __WALL);
	if (p > 0) {
		printf("FAIL child: it has a child %d it never made\n", (int)p);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 60, ms = argc > 2 ? atol(argv[2]) : 50;
	size_t len = 4096;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	char *m = fd < 0 ? MAP_FAILED : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	int st;
	pid_t c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (m == MAP_FAILED || madvise(m, len, MADV_DONTFORK)) {
		perror("dontfork: mmap/madvise of its own executable");
		return 1;
	}
	close(fd);
	m[0] ^= 1;	/* a private copy of the page */
	c = fork();
	if (c < 0) {
		perror("dontfork: fork");
		return 1;
	}
	if (c == 0)
		return child(ticks, ms);
	for (long i = 0; i < ticks; i++) {
		printf("tick %ld\n", i);
		sleep_ms(ms);
	}
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL parent: child %d ended with status %#x\n", (int)c, st);
		return 1;
	}
	printf("DONE\n");
	return 0;
}
