// SPDX-License-Identifier: MIT
/*
 * Memory in transparent huge pages: 32 MiB (or MIB) on a 2 MiB boundary,
 * MADV_HUGEPAGE, filled with a pattern. Each tick the program checks the
 * bytes and prints how much of the region its smaps shows in huge pages,
 * so a test can compare before the checkpoint and right after the
 * restore ("FAIL" and exit 1 when a byte changed).
 *
 *   thp TICKS MS [MIB]
 *
 * Lines: "region ADDR", then "tick N thp_kb=K pid P", "DONE pid P".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "smaps.h"

#define HUGE (2ul << 20)

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* AnonHugePages of the region starting at addr, in kB; -1 when absent. */
static long thp_kb(uintptr_t addr)
{
	char val[512];
	long kb;

	if (smaps_field(addr, "AnonHugePages:", val, sizeof(val)) ||
	    sscanf(val, "%ld", &kb) != 1)
		return -1;
	return kb;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 50;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	size_t size = (argc > 3 ? (size_t)atol(argv[3]) : 32) << 20;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	uint8_t *raw = mmap(NULL, size + HUGE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (raw == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	/* its own region on a 2 MiB boundary: the slack around it unmapped */
	p = (uint64_t *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
	if ((uint8_t *)p > raw)
		munmap(raw, (size_t)((uint8_t *)p - raw));
	munmap((uint8_t *)p + size, (size_t)(raw + size + HUGE - ((uint8_t *)p + size)));
	if (madvise(p, size, MADV_HUGEPAGE)) {
		perror("madvise(MADV_HUGEPAGE)");
		return 2;
	}
	for (size_t i = 0; i < size / 8; i++)
		p[i] = mix(i);
	printf("region %p\n", (void *)p);
	for (long n = 0; n < ticks; n++) {
		for (size_t i = 0; i < size / 8; i++)
			if (p[i] != mix(i)) {
				printf("FAIL word %zu changed\n", i);
				return 1;
			}
		printf("tick %ld thp_kb=%ld pid %d\n", n, thp_kb((uintptr_t)p), (int)getpid());
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
