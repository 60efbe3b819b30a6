// SPDX-License-Identifier: MIT
/*
 * A compressible heap, like a real program's: text, small integers,
 * pointers into itself and runs of zeros, 64 MiB of it. Each tick it
 * checks a checksum of all of it ("FAIL" and exit 1 when it changed).
 *
 *   heap [TICKS [MS]]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WORDS (8u << 20)	/* 64 MiB */

static uint64_t sum(const uint64_t *w)
{
	uint64_t s = 0;

	for (size_t i = 0; i < WORDS; i++)
		s = s * 31 + w[i];
	return s;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : -1;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	uint64_t *w = malloc(WORDS * 8), want;
	static const char text[] = "the quick brown fox jumps over the lazy dog; ";

	if (!w)
		return 2;
	for (size_t i = 0; i < WORDS; i++) {
		switch (i % 16) {
		case 0: case 1: case 2: case 3:
			memcpy(&w[i], text + (i % 5) * 8, 8);
			break;
		case 4: case 5:
			w[i] = (uint64_t)(uintptr_t)&w[(i * 7) % WORDS];
			break;
		case 6:
			w[i] = i % 1000;
			break;
		default:
			w[i] = 0;
		}
	}
	want = sum(w);
	for (long n = 0; ticks < 0 || n < ticks; n++) {
		if (sum(w) != want) {
			printf("FAIL heap checksum changed\n");
			return 1;
		}
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
