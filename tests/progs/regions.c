// SPDX-License-Identifier: MIT
/*
 * Many regions: N pages mapped as one range, every other page made
 * read-only, so the process has N separate regions (30000 in t_regions,
 * near the kernel's default limit of 65530). Each writable page holds its
 * own index. After the restore (gate.h) each page must hold its index
 * again, have its protection, and the process must have its N regions.
 * A plan budget short by a few bytes a region once made restart-loader
 * abort with "internal error: hole too small" for such a process.
 *
 *   regions N
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gate.h"

static long count_regions(uintptr_t lo, uintptr_t hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long s, e;
	char line[512];
	long n = 0;

	check(f != NULL, "opening /proc/self/maps");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s >= lo && e <= hi)
			n++;
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, pg = sysconf(_SC_PAGESIZE);
	uint8_t *p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	p = mmap(NULL, (size_t)(n * pg), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	check(p != MAP_FAILED, "mapping %ld pages", n);
	for (long i = 0; i < n; i++)
		memcpy(p + i * pg, &i, sizeof(i));
	for (long i = 1; i < n; i += 2)
		check(mprotect(p + i * pg, (size_t)pg, PROT_READ) == 0, "mprotect page %ld", i);
	check(count_regions((uintptr_t)p, (uintptr_t)(p + n * pg)) == n, "%ld regions before",
	      n);
	gate_wait();
	check(count_regions((uintptr_t)p, (uintptr_t)(p + n * pg)) == n,
	      "%ld regions after the restore, want %ld",
	      count_regions((uintptr_t)p, (uintptr_t)(p + n * pg)), n);
	for (long i = 0; i < n; i++) {
		long v;

		memcpy(&v, p + i * pg, sizeof(v));
		check(v == i, "page %ld holds %ld", i, v);
	}
	check(mprotect(p, (size_t)pg, PROT_READ | PROT_WRITE) == 0 && (p[0] = 1), "page 0 writable");
	gate_done();
	return 0;
}
