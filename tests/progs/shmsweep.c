// SPDX-License-Identifier: MIT
/*
 * Shared memory written on while the checkpoint is being written: a
 * parent maps MAP_SHARED anonymous memory and attaches a SysV segment
 * (both filled with random bytes, to be slow to compress), and forks a
 * child. Each sweeps its half of both over and over: generation g
 * writes g into the first word of every page of its half, after
 * checking that the page still holds g - 1. Its position (g, page) is in
 * its private memory, its progress in the shared pages: a restore whose
 * shared memory is not from the same moment as the private memory
 * fails the check at once ("FAIL ... holds ..."). The parent prints
 * "tick N pid P gen G" every MS ms and fails when the child has died.
 * After TICKS ticks both stop and the parent prints DONE.
 *
 *   shmsweep [TICKS [MS [MIB]]]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u
#define BATCH 64	/* pages between two naps */

struct area {
	volatile uint64_t *p;
	size_t npages;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fill(volatile uint64_t *p, size_t words, uint64_t st)
{
	for (size_t i = 0; i < words; i++) {
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = st ^ (st >> 33);
	}
}

/* One step of the sweep: pages [from, to) of both areas, generation g. */
static int step(struct area *a, size_t from, size_t to, uint64_t g, const char *who)
{
	for (int k = 0; k < 2; k++)
		for (size_t pg = from; pg < to && pg < a[k].npages; pg++) {
			volatile uint64_t *w = a[k].p + pg * (PAGE / 8);

			if (*w != g - 1) {
				printf("FAIL %s: %s page %zu holds generation %llu, not %llu\n", who,
				       k ? "SysV" : "anon", pg, (unsigned long long)*w,
				       (unsigned long long)(g - 1));
				fflush(stdout);
				return -1;
			}
			*w = g;
		}
	return 0;
}

static void nap(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 100, ms = argc > 2 ? atol(argv[2]) : 50;
	size_t bytes = (size_t)(argc > 3 ? atol(argv[3]) : 16) << 20, half;
	struct area a[2];
	volatile int *stop;
	int id, st, child;
	pid_t c;

	a[0].p = mmap(NULL, bytes + PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	id = shmget(IPC_PRIVATE, bytes, IPC_CREAT | 0600);
	a[1].p = id < 0 ? (void *)-1 : shmat(id, NULL, 0);
	if (a[0].p == MAP_FAILED || a[1].p == (void *)-1) {
		perror("shmsweep");
		return 2;
	}
	shmctl(id, IPC_RMID, NULL);	/* gone with its last process */
	stop = (volatile int *)(a[0].p + bytes / 8);	/* the page after the sweeps */
	a[0].npages = bytes / PAGE;
	a[1].npages = bytes / PAGE;
	fill(a[0].p, bytes / 8, 1);
	fill(a[1].p, bytes / 8, 2);
	for (int k = 0; k < 2; k++)
		for (size_t pg = 0; pg < a[k].npages; pg++)
			a[k].p[pg * (PAGE / 8)] = 0;
	half = a[0].npages / 2;
	c = fork();
	child = c == 0;
	{
		size_t lo = child ? half : 0, hi = child ? a[0].npages : half, at = lo;
		uint64_t g = 1;
		int64_t next = now_ms() + ms;
		long n = 0;

		while (!*stop) {
			size_t to = at + BATCH < hi ? at + BATCH : hi;

			if (step(a, at, to, g, child ? "child" : "parent"))
				return 1;
			at = to;
			if (at == hi) {
				at = lo;
				g++;
			}
			nap();
			if (child || now_ms() < next)
				continue;
			next += ms;
			if (waitpid(c, &st, WNOHANG) == c) {
				printf("FAIL the child ended (status %#x)\n", st);
				return 1;
			}
			printf("tick %ld pid %d gen %llu\n", n, (int)getpid(), (unsigned long long)g);
			fflush(stdout);
			if (++n >= ticks)
				*stop = 1;
		}
	}
	if (child)
		return 0;
	if (waitpid(c, &st, 0) != c || st) {
		printf("FAIL child status %#x\n", st);
		return 1;
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
