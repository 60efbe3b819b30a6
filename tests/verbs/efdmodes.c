/* SPDX-License-Identifier: MIT */
/*
 * Eventfds in both modes at the counts where a saver that has to test the
 * semaphore mode (kernels whose fdinfo does not show it) must take care:
 * 0, 1 and more, semaphore and not. Each tick it prints "tick N pid P";
 * at the end it checks every eventfd's mode and count by reading it: a
 * semaphore gives 1 per read until its count is used up, a counter its
 * whole count at once. "DONE" or "FAIL ..." (exit 1).
 *
 *   efdmodes TICKS MS
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static const struct { unsigned count; int sem; } want[] = {
	{ 0, 1 }, { 1, 1 }, { 5, 1 }, { 0, 0 }, { 1, 0 }, { 7, 0 },
};
#define N (int)(sizeof(want) / sizeof(want[0]))

static void check(int fd, int i)
{
	uint64_t v = 0, total = 0;
	unsigned reads = 0;

	while (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v)) {
		if (want[i].sem && v != 1) {
			printf("FAIL eventfd %d (semaphore): a read gave %llu\n", i,
			       (unsigned long long)v);
			exit(1);
		}
		total += v;
		reads++;
	}
	if (errno != EAGAIN || total != want[i].count ||
	    reads != (want[i].sem ? want[i].count : want[i].count ? 1u : 0u)) {
		printf("FAIL eventfd %d (%s): %u reads gave %llu (%s), want %u\n", i,
		       want[i].sem ? "semaphore" : "counter", reads, (unsigned long long)total,
		       errno == EAGAIN ? "then empty" : "then an error", want[i].count);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 50, ms = argc > 2 ? atol(argv[2]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	int fd[N];

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < N; i++) {
		fd[i] = eventfd(want[i].count, EFD_NONBLOCK | (want[i].sem ? EFD_SEMAPHORE : 0));
		if (fd[i] < 0) {
			printf("FAIL eventfd: %d\n", errno);
			return 1;
		}
	}
	for (long t = 0; t < ticks; t++) {
		printf("tick %ld pid %d\n", t, (int)getpid());
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < N; i++)
		check(fd[i], i);
	printf("DONE %d eventfds as they were\n", N);
	return 0;
}
