// SPDX-License-Identifier: MIT
/*
 * bigmem MB [MS [TICKS]]: MB MiB of anonymous memory, every 8-byte word
 * a function of its address, written once; a tick every MS ms (default
 * 50), "tick N pid P", with a running sum kept across ticks in locals;
 * after TICKS ticks (default: never) it checks everything, prints DONE
 * and exits.
 * On SIGUSR1 it checks every word and prints "verified K" (the K-th
 * check) or "FAIL ..." and exits 1: a saver that left it with wrong
 * memory, registers or signal mask (the check never comes) is caught.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t check_asked;

static void on_usr1(int sig)
{
	(void)sig;
	check_asked = 1;
}

static uint64_t word(uint64_t i)
{
	i ^= i >> 31;
	i *= 0x9e3779b97f4a7c15ull;
	return i ^ (i >> 29);
}

int main(int argc, char **argv)
{
	size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 0, n = mb << 17;
	long ms = argc > 2 ? atol(argv[2]) : 50, ticks = argc > 3 ? atol(argv[3]) : -1;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	uint64_t *w, sum = 0, want = 0;
	long checks = 0;

	if (!mb) {
		fprintf(stderr, "usage: bigmem MB [MS]\n");
		return 2;
	}
	w = mmap(NULL, n * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w == MAP_FAILED)
		return 2;
	for (size_t i = 0; i < n; i++)
		w[i] = word(i);
	signal(SIGUSR1, on_usr1);
	for (long t = 0;; t++) {
		if (t == ticks)
			check_asked = 1;
		if (check_asked) {
			check_asked = 0;
			for (size_t i = 0; i < n; i++)
				if (w[i] != word(i)) {
					printf("FAIL word %zu is %#llx, not %#llx\n", i,
					       (unsigned long long)w[i], (unsigned long long)word(i));
					return 1;
				}
			printf("verified %ld\n", ++checks);
			if (t == ticks) {
				printf("DONE\n");
				return 0;
			}
		}
		sum += (uint64_t)t;
		want += (uint64_t)t;
		if (sum != want) {
			printf("FAIL tick state %llu, not %llu\n", (unsigned long long)sum,
			       (unsigned long long)want);
			return 1;
		}
		printf("tick %ld pid %d\n", t, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
}
