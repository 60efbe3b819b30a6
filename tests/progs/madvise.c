// SPDX-License-Identifier: MIT
/*
 * Regions with madvise and mlock state that a restore must give back:
 * each is mapped on its own, filled with its own pattern, advised, and
 * every tick the program checks both the bytes and the region's VmFlags
 * in /proc/self/smaps ("FAIL ..." and exit 1 on a difference).
 *
 *   madvise MODE TICKS MS
 *     MODE all       also DONTFORK and WIPEONFORK regions and a
 *                    MAP_DROPPABLE one (no fork snapshot is possible:
 *                    the saver writes while frozen); every tick a forked
 *                    child checks what a fork gives it: no DONTFORK
 *                    region, zeros in the WIPEONFORK and DROPPABLE ones
 *     MODE forksafe  only what a fork copies: HUGEPAGE, NOHUGEPAGE,
 *                    DONTDUMP, MERGEABLE, mlock (the saver writes from a
 *                    snapshot)
 *
 * A DROPPABLE region's pages may be dropped by the kernel under memory
 * pressure (they read as zeros then): each of its pages must hold its
 * pattern or be all zeros.
 *
 * Lines: "region NAME ADDR FLAG" once at the start (FLAG is "-" when the
 * kernel refused the advice: then it is not checked), "tick N pid P",
 * "DONE pid P".
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "smaps.h"

#define PAGES 16
#ifndef MAP_DROPPABLE
#define MAP_DROPPABLE 0x08	/* Linux 6.11 */
#endif
#define DROPPABLE -2		/* not an advice: mapped MAP_DROPPABLE */

struct region {
	const char *name;
	int advice;		/* MADV_*, or -1: mlock, DROPPABLE, 0: none */
	const char *flag;	/* its VmFlags mnemonic */
	int forksafe;
	const char *implied;	/* flags of others it has too, or NULL */
	uint64_t *p;
	int on;			/* the advice took */
};

static struct region regions[] = {
	{ "plain", 0, NULL, 1, NULL, NULL, 0 },
	{ "dontfork", MADV_DONTFORK, "dc", 0, NULL, NULL, 0 },
	{ "wipeonfork", MADV_WIPEONFORK, "wf", 0, NULL, NULL, 0 },
	{ "hugepage", MADV_HUGEPAGE, "hg", 1, NULL, NULL, 0 },
	{ "nohugepage", MADV_NOHUGEPAGE, "nh", 1, NULL, NULL, 0 },
	{ "dontdump", MADV_DONTDUMP, "dd", 1, NULL, NULL, 0 },
	{ "mergeable", MADV_MERGEABLE, "mg", 1, NULL, NULL, 0 },
	{ "locked", -1, "lo", 1, NULL, NULL, 0 },
	/* the kernel makes it WIPEONFORK and DONTDUMP too */
	{ "droppable", DROPPABLE, "dp", 0, " wf dd ", NULL, 0 },
};
#define NREG (sizeof(regions) / sizeof(regions[0]))

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

#define WORDS (PAGES * 4096 / 8)

/* The VmFlags line of the region starting at addr, or "" when absent. */
static void vmflags_of(uintptr_t addr, char *out, size_t len)
{
	smaps_field(addr, "VmFlags:", out, len);
}

static int has_flag(const char *flags, const char *flag)
{
	char pat[8];

	snprintf(pat, sizeof(pat), " %s", flag);
	for (const char *p = flags; (p = strstr(p, pat)); p++)
		if (p[3] == ' ' || p[3] == '\n' || p[3] == 0)
			return 1;
	return 0;
}

/* Word i of region r holds its pattern (or a dropped page's zero). */
static int intact(size_t r, size_t i)
{
	const uint64_t *page = regions[r].p + i / 512 * 512;

	if (regions[r].p[i] == mix(r * WORDS + i))
		return 1;
	if (regions[r].advice != DROPPABLE)
		return 0;
	for (size_t k = 0; k < 512; k++)
		if (page[k])
			return 0;
	return 1;
}

static int implied(const struct region *g, const char *flag)
{
	char pat[8];

	snprintf(pat, sizeof(pat), " %s ", flag);
	return g->implied && strstr(g->implied, pat);
}

static int check(void)
{
	for (size_t r = 0; r < NREG; r++) {
		struct region *g = &regions[r];
		char flags[512];

		if (!g->p)
			continue;
		for (size_t i = 0; i < WORDS; i++)
			if (!intact(r, i)) {
				printf("FAIL %s: word %zu changed\n", g->name, i);
				return -1;
			}
		vmflags_of((uintptr_t)g->p, flags, sizeof(flags));
		if (!flags[0]) {
			printf("FAIL %s: no VmFlags for %p\n", g->name, (void *)g->p);
			return -1;
		}
		if (g->on && !has_flag(flags, g->flag)) {
			printf("FAIL %s: VmFlags without %s:%s", g->name, g->flag, flags);
			return -1;
		}
		/* the others stay off: none leaks onto a neighbour */
		for (size_t k = 0; k < NREG; k++)
			if (k != r && regions[k].flag && !implied(g, regions[k].flag) &&
			    has_flag(flags, regions[k].flag)) {
				printf("FAIL %s: VmFlags with %s:%s", g->name,
				       regions[k].flag, flags);
				return -1;
			}
	}
	return 0;
}

/* What a fork gives a child: checked in one, which says why it fails. */
static int child_view(void)
{
	for (size_t r = 0; r < NREG; r++) {
		const struct region *g = &regions[r];
		char flags[512];

		if (!g->p || !g->on)
			continue;
		vmflags_of((uintptr_t)g->p, flags, sizeof(flags));
		if (g->advice == MADV_DONTFORK && flags[0]) {
			printf("FAIL child: the DONTFORK region is there\n");
			return 1;
		}
		for (size_t i = 0; (g->advice == MADV_WIPEONFORK || g->advice == DROPPABLE) &&
				   i < WORDS; i++)
			if (g->p[i]) {
				printf("FAIL child: %s word %zu is not zero\n", g->name, i);
				return 1;
			}
	}
	return 0;
}

static int check_fork(void)
{
	int st = 0;
	pid_t c;

	fflush(stdout);
	c = fork();
	if (c == 0)
		_exit(child_view());
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL the forked child's view (status %#x)\n", st);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int forksafe = argc > 1 && !strcmp(argv[1], "forksafe");
	long ticks = argc > 2 ? atol(argv[2]) : 50;
	long ms = argc > 3 ? atol(argv[3]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t r = 0; r < NREG; r++) {
		struct region *g = &regions[r];

		if (forksafe && !g->forksafe)
			continue;
		g->p = mmap(NULL, WORDS * 8, PROT_READ | PROT_WRITE,
			    (g->advice == DROPPABLE ? MAP_DROPPABLE : MAP_PRIVATE) | MAP_ANONYMOUS,
			    -1, 0);
		if (g->p == MAP_FAILED && g->advice == DROPPABLE) {
			g->p = NULL;	/* before 6.11: said below */
			printf("region %s - -\n", g->name);
			continue;
		}
		if (g->p == MAP_FAILED) {
			perror("mmap");
			return 2;
		}
		for (size_t i = 0; i < WORDS; i++)
			g->p[i] = mix(r * WORDS + i);
		if (g->advice > 0)
			g->on = !madvise(g->p, WORDS * 8, g->advice);
		else if (g->advice == -1)
			g->on = !mlock(g->p, WORDS * 8);
		else if (g->advice == DROPPABLE)
			g->on = 1;
		printf("region %s %p %s\n", g->name, (void *)g->p,
		       g->flag ? (g->on ? g->flag : "-") : "none");
	}
	if (check())
		return 1;
	for (long n = 0; n < ticks; n++) {
		printf("tick %ld pid %d\n", n, (int)getpid());
		nanosleep(&ts, NULL);
		if (check() || (!forksafe && check_fork()))
			return 1;
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
