// SPDX-License-Identifier: MIT
/*
 * Memory protection keys (x86 PKU), for t_pkeys:
 *
 *   pkeys rights [TICKS [MS]]   reads its PKRU (rdpkru) once, then each
 *                                tick prints "tick N pid P pkru V" and
 *                                checks it still reads V
 *   pkeys region                 protects a page with a key of its own
 *                                (pkey_mprotect), prints "page A-B key K"
 *                                and waits: what saver must refuse
 *   pkeys alloc [TICKS [MS]]     allocates a key that denies writes, which
 *                                changes PKRU, then ticks like "rights"
 *
 * Prints "no pkeys" and exits 2 where the CPU or kernel has none.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint32_t rdpkru(void)
{
	uint32_t v;

	__asm__ volatile("rdpkru" : "=a"(v) : "c"(0) : "rdx");
	return v;
}

static void nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

static int tick(int ticks, long ms)
{
	uint32_t want = rdpkru();

	for (int i = 0; ticks <= 0 || i < ticks; i++) {
		uint32_t v = rdpkru();

		printf("tick %d pid %d pkru %#x\n", i, (int)getpid(), v);
		if (v != want) {
			printf("FAIL PKRU was %#x, now %#x\n", want, v);
			return 1;
		}
		fflush(stdout);
		nap(ms);
	}
	printf("DONE\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "rights";
	int ticks = argc > 2 ? atoi(argv[2]) : 0;
	long ms = argc > 3 ? atol(argv[3]) : 100;
	int key;

	unsigned int a, b, c, d;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(c & bit_OSPKE)) {
		printf("no pkeys\n");
		return 2;
	}
	if (!strcmp(mode, "rights"))	/* the default every process starts with */
		return tick(ticks, ms);
	key = pkey_alloc(0, PKEY_DISABLE_WRITE);
	if (key < 0) {
		perror("pkey_alloc");
		return 1;
	}
	if (!strcmp(mode, "alloc"))
		return tick(ticks, ms);
	if (!strcmp(mode, "region")) {
		long pg = sysconf(_SC_PAGESIZE);
		char *p = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED || pkey_mprotect(p, (size_t)pg, PROT_READ | PROT_WRITE, key)) {
			perror("pkey_mprotect");
			return 1;
		}
		printf("page %#lx-%#lx key %d\n", (unsigned long)p,
		       (unsigned long)(p + pg), key);
		for (;;)
			pause();
	}
	fprintf(stderr, "usage: pkeys rights|region|alloc [TICKS [MS]]\n");
	return 1;
}
