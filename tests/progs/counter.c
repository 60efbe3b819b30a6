// SPDX-License-Identifier: MIT
/*
 * A single-threaded program with state in every kind of private memory:
 * heap (malloc), a large anonymous mapping, .data/.bss and the stack.
 * Each tick it prints "tick N pid P sum S" and checks that all of it
 * still holds exactly what it wrote, so a restore onto wrong memory is
 * caught by the program itself ("FAIL ..." and exit 1).
 *
 *   counter [TICKS [MS]]   stop after TICKS ticks (default: never), MS apart
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define HEAP_WORDS (1u << 20)		/* 8 MiB */
#define MAP_WORDS (4u << 20)		/* 32 MiB, half of it touched */

static uint64_t data_words[4096] = { 1 };	/* .data */
static uint64_t bss_words[4096];		/* .bss */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static void fill(uint64_t *w, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		w[i] = mix(seed + i);
}

static int check(const uint64_t *w, size_t n, uint64_t seed, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (w[i] != mix(seed + i)) {
			printf("FAIL %s word %zu changed\n", what, i);
			return -1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : -1;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	uint64_t stack_words[512];
	uint64_t *heap = malloc(HEAP_WORDS * 8);
	uint64_t *map = mmap(NULL, MAP_WORDS * 8, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	if (!heap || map == MAP_FAILED)
		return 2;
	fill(heap, HEAP_WORDS, 1);
	fill(map, MAP_WORDS / 2, 2);	/* the rest stays untouched */
	fill(data_words, 4096, 3);
	fill(bss_words, 4096, 4);
	fill(stack_words, 512, 5);
	for (long n = 0; ticks < 0 || n < ticks; n++) {
		if (check(heap, HEAP_WORDS, 1, "heap") || check(map, MAP_WORDS / 2, 2, "mmap") ||
		    check(data_words, 4096, 3, "data") || check(bss_words, 4096, 4, "bss") ||
		    check(stack_words, 512, 5, "stack"))
			return 1;
		for (size_t i = MAP_WORDS / 2; i < MAP_WORDS; i += 512)
			if (map[i]) {
				printf("FAIL untouched memory is not zero\n");
				return 1;
			}
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
