// SPDX-License-Identifier: MIT
/*
 * A region whose advice flips between MADV_HUGEPAGE and MADV_NOHUGEPAGE
 * as fast as the program can check it, so that a checkpoint's freeze
 * lands after a flip that the saver's early read of smaps missed (the
 * flags it guessed from that read are then wrong: saver/vmflags.c).
 * Before and after every flip the program reads its own smaps: the region
 * must show the flag it set last, or it prints "FAIL ..." and exits 1.
 * A restore that brought back a stale flag is caught at the next check:
 * whatever instruction the checkpoint interrupted, the flag the program
 * set last before it is the one the kernel had at the freeze. Between
 * flips it spins 0.5 ms with no file open.
 *
 *   flipflags TICKS MS   "tick N pid P flips F" every MS ms, "DONE pid P"
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGES 16

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Whether the region starting at p shows VmFlags mnemonic `flag` (-1: no such region). */
static int has_flag(const void *p, const char *flag)
{
	char line[512], head[32];
	int in = 0, found = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f) {
		printf("FAIL opening /proc/self/smaps: %s\n", strerror(errno));
		exit(1);
	}
	snprintf(head, sizeof(head), "%lx-", (unsigned long)(uintptr_t)p);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, head, strlen(head)))
			in = 1;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			for (char *t = strtok(line + 8, " \n"); t; t = strtok(NULL, " \n"))
				found |= !strcmp(t, flag);
			break;
		}
	}
	fclose(f);
	return in ? found : -1;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : -1, n = 0, flips = 0;
	double ms = argc > 2 ? atof(argv[2]) : 50, next;
	size_t pg = (size_t)getpagesize(), len = PAGES * pg;
	/* guard pages around it: it never merges with a neighbour */
	uint8_t *g = mmap(NULL, len + 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *p;
	int want = 0;

	if (g == MAP_FAILED)
		return 2;
	p = mmap(g + pg, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0);
	if (p == MAP_FAILED)
		return 2;
	for (size_t i = 0; i < len / 8; i++)
		p[i] = i * 0x9e3779b97f4a7c15ull;
	setvbuf(stdout, NULL, _IOLBF, 0);
	next = now_ms() + ms;
	while (ticks < 0 || n < ticks) {
		const char *flag = want ? "hg" : "nh";

		/* first the flag set last: a checkpoint in the spin below resumes here */
		if (flips && has_flag(p, flag) != 1) {
			printf("FAIL region %p no longer shows %s after flip %ld\n", (void *)p,
			       flag, flips);
			return 1;
		}
		want = !want;
		flag = want ? "hg" : "nh";
		if (madvise(p, len, want ? MADV_HUGEPAGE : MADV_NOHUGEPAGE)) {
			printf("FAIL madvise %s: %s\n", flag, strerror(errno));
			return 1;
		}
		if (has_flag(p, flag) != 1) {
			printf("FAIL region %p does not show %s after flip %ld\n", (void *)p, flag,
			       flips);
			return 1;
		}
		flips++;
		/*
		 * Half the time without smaps open: the saver refuses a
		 * process holding a file of its own under /proc, and the test
		 * needs checkpoints that succeed.
		 */
		for (double t = now_ms() + 0.5; now_ms() < t;)
			;
		if (now_ms() < next)
			continue;
		for (size_t i = 0; i < len / 8; i++)
			if (p[i] != i * 0x9e3779b97f4a7c15ull) {
				printf("FAIL region %p changed at word %zu\n", (void *)p, i);
				return 1;
			}
		printf("tick %ld pid %d flips %ld\n", n++, (int)getpid(), flips);
		next += ms;
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
